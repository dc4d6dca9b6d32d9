#!/usr/bin/env bash
# writers.sh - a writer that dies of a signal commits nothing: not its
# partial value, not the empty value of a killed `> k`, not a create, not
# part of a counter token, a queue item or a log entry; not at the close of
# a process that shares its file, nor at RELEASE. A writer that exits
# normally without closing commits; so do the cases the daemon cannot tell
# from a close (docs/filesystem.md, "Killed writers": a handled SIGTERM
# that exits, _exit after a partial write). Killed here: single-threaded
# shells (the issue's repro, word for word), a process with five threads,
# abort(), an unhandled SIGTERM. Closes that are not the last (a parent's
# or the shell's descriptor still holds the file) push one queue item or
# log entry per redirection.
# A child killed that never wrote to the file (it only inherited the
# descriptor) cancels nothing: its parent's value is stored.
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"
: "${STATEFS_FILEOPS:?}"
ulimit -c 0   # abort() below: no core file

mount_fs
cd "$mnt"
mkdir -p s/n counter/s/c exec/s/n/k
victims=()
kill_victims() { for p in "${victims[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap 'rc_=$?; set +e; kill_victims; (exit $rc_); cleanup' EXIT

# Runs a writer in the background and waits until it has written: the
# command creates $work/ready (or fileops prints "ready" there).
start_writer() { # command...
  # ready.out too: the child truncates it only once it runs, and the
  # previous writer's "ready" read before that would send the signal to
  # a bash child not yet exec'd, which ignores a signal its parent traps
  # (TERM): the writer then never dies (CI hung here twice).
  rm -f "$work/ready" "$work/ready.out"
  "$@" > "$work/ready.out" 2>&1 &
  victim=$!
  victims+=("$victim")
  for _ in $(seq 600); do
    [ -e "$work/ready" ] || grep -q ready "$work/ready.out" 2>/dev/null && return 0
    kill -0 "$victim" 2>/dev/null || break
    nap 0.05
  done
  cat "$work/ready.out" >&2
  fail "the writer did not get ready: $*"
}
killed() { # SIGNAL: kills the writer and waits for it
  kill -"$1" "$victim"
  wait "$victim" 2>/dev/null || true
}
value() { cat "s/n/$1"; }

# The issue's repro, as written: the shell's redirection dups fd 3 and
# closes the dup after printf, while fd 3 still holds the file.
printf OLD > s/n/k
start_writer sh -c "exec 3>$mnt/s/n/k; printf half >&3; : > $work/ready; exec sleep 30"
killed 9
expect_eq "$(value k)" OLD "a killed writer's partial value"
start_writer sh -c "exec 3>$mnt/s/n/k; : > $work/ready; exec sleep 30"
killed 9
expect_eq "$(value k)" OLD "a killed \`> k\` (no RELEASE commit either)"
start_writer sh -c "exec 3>>$mnt/s/n/k; printf more >&3; : > $work/ready; exec sleep 30"
killed 9
expect_eq "$(value k)" OLD "a killed \`>> k\`"
start_writer sh -c "exec 3>$mnt/s/n/new; printf x >&3; : > $work/ready; exec sleep 30"
killed 9
[ ! -e s/n/new ] || fail "a killed writer's create was made"
helper get s n new >/dev/null 2>&1 && fail "a killed writer's create is in the store"
ok "killed shells: values, empty values, appends, creates"

# The file shared with a process that survives: the survivor's later
# close commits nothing, and its writes fail (EIO) instead of vanishing.
start_writer sh -c "exec 3>$mnt/s/n/k; printf half >&3
  (while [ ! -e $work/go ]; do sleep 0.05; done
   printf more >&3 2>/dev/null || : > $work/eio) &
  : > $work/ready; exec sleep 30"
killed 9
: > "$work/go"
for _ in $(seq 600); do [ -e "$work/eio" ] && break; nap 0.05; done
[ -e "$work/eio" ] || fail "the survivor's write after the kill did not fail"
expect_eq "$(value k)" OLD "a value shared with a survivor"
# A killed writer's create while a survivor still holds the file (so no
# RELEASE yet): not there, by path or in the listing, before or after.
start_writer sh -c "exec 3>$mnt/s/n/made; printf x >&3
  sleep 30 & echo \$! > $work/survivor
  : > $work/ready; exec sleep 30"
survivor=$(cat "$work/survivor")
victims+=("$survivor")
killed 9
[ ! -e s/n/made ] || fail "a killed writer's create shows while a survivor holds it"
case " $(ls s/n | tr '\n' ' ') " in *" made "*) fail "a killed writer's create is listed";; esac
kill -9 "$survivor"
for _ in $(seq 600); do kill -0 "$survivor" 2>/dev/null || break; nap 0.05; done
[ ! -e s/n/made ] || fail "a killed writer's create shows after its survivor"
helper get s n made >/dev/null 2>&1 && fail "a killed writer's create is in the store"
ok "a killed writer's file shared with a survivor"

# A child killed by a signal that only inherited the descriptor and never
# wrote to it changes nothing: the writer's value is stored whole, as a
# local filesystem keeps it (a child killing itself; `yes` killed by
# SIGPIPE with its stderr on the file).
(echo line1; sh -c 'kill -9 $$'; echo line2) > s/n/out ||
  fail "a write after a child's death by a signal failed"
expect_eq "$(value out)" "$(printf 'line1\nline2')" "a value whose non-writing child was killed"
bash -c 'echo start; yes | head -n 1; echo end' > s/n/log 2>&1 ||
  fail "the script whose \`yes\` died of SIGPIPE failed"
expect_eq "$(value log)" "$(printf 'start\ny\nend')" "a value whose \`yes\` died of SIGPIPE"
helper get s n log > "$work/log.stored"
expect_eq "$(cat "$work/log.stored")" "$(printf 'start\ny\nend')" "the same in the store"
ok "a child killed without writing does not cancel its parent's value"

# Counters, queue items, log entries.
echo 5 > counter/s/c/n
start_writer sh -c "exec 3>$mnt/counter/s/c/n; printf +1 >&3; : > $work/ready; exec sleep 30"
killed 9
expect_eq "$(cat counter/s/c/n)" 5 "a killed +12 after its +1"
start_writer sh -c "exec 3>$mnt/queue/q/new; printf '{\"job\":' >&3; : > $work/ready; exec sleep 30"
killed 9
expect_eq "$(helper qlen q)" 0 "a killed writer's queue item"
start_writer sh -c "exec 3>$mnt/exec/s/n/k/new; printf partial >&3; : > $work/ready; exec sleep 30"
killed 9
expect_eq "$(ls exec/s/n/k | wc -l)" 0 "a killed writer's log entry"
ok "killed writers of counters, queue items and log entries"

# Other deaths by signal: five threads (the FLUSH comes from whichever
# thread exits last), abort(), an unhandled SIGTERM.
start_writer "$STATEFS_FILEOPS" die "$mnt/s/n/k" threads threads
killed 9
expect_eq "$(value k)" OLD "a killed multi-threaded writer"
"$STATEFS_FILEOPS" die "$mnt/s/n/k" aborted abort > /dev/null 2>&1 || true
expect_eq "$(value k)" OLD "a writer that called abort()"
start_writer "$STATEFS_FILEOPS" die "$mnt/s/n/k" termed kill
killed TERM
expect_eq "$(value k)" OLD "a writer killed by SIGTERM"
ok "threads, abort(), SIGTERM"

# What commits: exiting normally without closing; and what cannot be
# told from it: _exit() after a partial write, a handled SIGTERM.
sh -c "exec 3>$mnt/s/n/k; printf whole >&3; exit 0"
expect_eq "$(value k)" whole "exit without close"
"$STATEFS_FILEOPS" die "$mnt/s/n/k" partial _exit > /dev/null
expect_eq "$(value k)" partial "_exit after a write (cannot be told apart)"
start_writer sh -c "trap 'exit 0' TERM; exec 3>$mnt/s/n/k; printf handled >&3
  : > $work/ready; while :; do sleep 0.05 3>&-; done"
killed TERM
expect_eq "$(value k)" handled "a handled SIGTERM (cannot be told apart)"
ok "normal exits commit"

# Closes that are not the last, each a queue item's or a log entry's
# split: the commands of `(a; b) > new` and of a script under `exec 3>new`
# exit holding their parent's descriptor (only the parent's fdinfo tells),
# the shell's own dup of fd 3 closes while fd 3 holds the file. One item
# or entry per redirection, whole, pushed at the shell's last close.
(/usr/bin/printf a; /usr/bin/printf b) > queue/held/new
sh -c "exec 3>$mnt/queue/held/new; /usr/bin/printf x >&3; printf y >&3
  /usr/bin/printf z >&3; exec 3>&-"
(/usr/bin/printf e1; printf e2) > exec/s/n/k/new
expect_eq "$(helper qlen held)" 2 "one item per redirection"
expect_eq "$(cat queue/held/* | tr -d '\n')" abxyz "the items, whole"
expect_eq "$(ls exec/s/n/k | wc -l)" 1 "one log entry"
expect_eq "$(cat exec/s/n/k/*)" e1e2 "the entry, whole"
ok "closes while a parent or the shell holds the file"

# The mount is still fine, and the store intact.
echo after > s/n/k
expect_eq "$(value k)" after "a write after the kills"
helper verify >/dev/null || fail "the store's integrity check"

cd /
unmount_fs
