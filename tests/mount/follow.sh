#!/usr/bin/env bash
# follow.sh - following a log or a queue live with standard tools (issue
# 12): exec/<s>/<ns>/<key>/.follow and queue/<q>/.follow read as JSON Lines
# (like .drain) of what is there, then of every new entry or item as
# another process appends or pushes it, blocking for more. cat, tail -f and
# tail -n +1 -f all follow; a follower takes nothing (the queue keeps its
# items, .pop still gets them); an interrupted follower just stops; a
# follower blocked at SIGTERM is answered; grep -r and find never touch
# .follow. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

command -v jq > /dev/null || fail "jq is not installed (scripts/deps)"
log=$mnt/exec/run/log/events
q=$mnt/queue/jobs
pids=()
stop_followers() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done
  pids=()
}

# until_lines FILE N: waits (up to a minute) until FILE has N lines.
until_lines() {
  for _ in $(seq 600); do
    [ "$(wc -l < "$1")" -ge "$2" ] && return 0
    nap 0.1
  done
  fail "$1 has $(wc -l < "$1") lines, want $2: $(cat "$1")"
}

values() { # FILE
  jq -r '.value | rtrimstr("\n")' "$1" | tr '\n' ' '
}

mount_fs
mkdir -p "$log"
echo first > "$log/new"
echo second > "$log/new"

# Three followers of one log, started with two entries there.
cat "$log/.follow" > "$work/cat" & pids+=($!)
stdbuf -oL tail -f "$log/.follow" > "$work/tail" & pids+=($!)
stdbuf -oL tail -n +1 -f "$log/.follow" > "$work/tail1" & pids+=($!)
until_lines "$work/cat" 2
until_lines "$work/tail" 2
until_lines "$work/tail1" 2
# Another process appends; one more through the mount.
helper lappend run log events third
for f in cat tail tail1; do until_lines "$work/$f" 3; done
echo fourth > "$log/new"
for f in cat tail tail1; do
  until_lines "$work/$f" 4
  expect_eq "$(values "$work/$f")" "first second third fourth " "$f follows"
done
expect_eq "$(jq -r .name "$work/cat" | tr '\n' ' ')" "$(ls "$log" | tr '\n' ' ')" \
  "names are the entries' files"
stop_followers
expect_eq "$(ls "$log" | wc -l)" 4 "the log keeps its entries"
ok "cat, tail -f and tail -n +1 -f follow a log as another process appends"

# A log of more than a page (1 MiB) rendered: tail -f reads up to the
# size it was told, never at the end, so a follower must grow the size
# once its reader has had all it rendered (it showed the same size for
# ever, and tail -f never saw a new entry).
big=$mnt/exec/run/log/big
mkdir -p "$big"
for _ in 1 2; do head -c 600000 /dev/zero | tr '\0' y > "$big/new"; done
stdbuf -oL tail -f "$big/.follow" > "$work/tailbig" & pids+=($!)
until_lines "$work/tailbig" 2
helper lappend run log big after
for _ in $(seq 600); do
  [[ $(< "$work/tailbig") == *'"value":"after"'* ]] && break
  nap 0.1
done
[[ $(< "$work/tailbig") == *'"value":"after"'* ]] ||
  fail "tail -f of a log of 1.2 MB never showed the entry appended ($(grep -c '' "$work/tailbig") lines)"
expect_eq "$(grep -c '' "$work/tailbig")" 3 "tail -f's lines"
stop_followers
ok "tail -f follows a log of more than a page"

# A queue: pending items, then each push; nothing is taken.
helper qpush jobs a b
cat "$q/.follow" > "$work/qcat" & pids+=($!)
until_lines "$work/qcat" 2
helper qpush jobs c
echo d > "$q/new"
until_lines "$work/qcat" 4
expect_eq "$(values "$work/qcat")" "a b c d " "the follower saw every push"
expect_eq "$(ls "$q" | wc -l)" 4 "and took nothing"
expect_eq "$(cat "$q/.pop")" a ".pop still gets the head"
helper qpush jobs e
until_lines "$work/qcat" 5
expect_eq "$(values "$work/qcat")" "a b c d e " "a pop elsewhere changes nothing"
stop_followers
expect_eq "$(helper qlen jobs)" 4 "the queue after following"
ok "a follower sees a queue's pushes and takes nothing"

# Interrupted: stops, takes nothing, logs nothing. Never listed, so grep -r
# and find go through without blocking on it.
rc=0
timeout -s INT 1 cat "$log/.follow" > /dev/null || rc=$?
expect_eq "$rc" 124 "an interrupted follower"
ls -a "$log" | grep follow >/dev/null && fail ".follow is listed"
timeout 60 grep -rq fourth "$mnt/exec" || fail "grep -r did not find the entry"
expect_eq "$(timeout 60 find "$mnt" -name '.follow' | wc -l)" 0 "find sees no .follow"
ok "an interrupted follower stops; grep -r and find never touch .follow"

# A follower blocked when the daemon is told to stop gets an answer
# (ENOTCONN, as a .wait reader: docs/filesystem.md) and the daemon exits 0.
# It follows an empty queue (any name is one), so its first READ blocks; it is known to be
# blocked in the daemon by fuse_blocked's protocol, not by a sleep.
bash -c 'exec 3< "$1" && : > "$2" && exec cat <&3' _ "$mnt/queue/idle/.follow" \
  "$work/fopen" > /dev/null 2> "$work/ferr" & follower=$!
fuse_blocked "$follower" "$work/fopen"
cd /
signal_fs TERM
rc=0
wait "$follower" || rc=$?
expect_eq "$rc,$(cat "$work/ferr")" "1,cat: -: Transport endpoint is not connected" \
  "a follower blocked at SIGTERM"
ok "a follower blocked at SIGTERM is answered"
