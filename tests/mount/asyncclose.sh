#!/usr/bin/env bash
# asyncclose.sh - -o async_close: close(2) returns before the commit, and
# what it still promises (docs/filesystem.md, "-o async_close"):
#  - through the mount a closed file reads back at once, whole; another
#    process (the engine on its own connection: helper) sees it once an
#    fsync of any file returns, once the mount has been idle, and after
#    unmount: every file whose close returned, written by one writer or
#    by four at once, values, counters and queue items; rm among them,
#    answered before its commit too;
#  - a shell's dup'd descriptor still gives one whole value, and a writer
#    killed by a signal still stores nothing (the FLUSH check is kept),
#    while a child killed without writing cancels nothing;
#  - kill -9 of the daemon loses at most the uncommitted closes and rm:
#    what the store holds afterwards is whole, the store passes its
#    checks, every close that an fsync covered is there and every rm it
#    covered is not;
#  - a commit that fails (a full disk) after its closes returned is
#    logged and told by fsync, with the error, once to the next fsync and
#    once to each descriptor open at the time; the values are not in the
#    store.
#  - where it cannot hold (PostgreSQL, one thread) the daemon says so and
#    a close is in the store when it returns.
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"
: "${STATEFS_FILEOPS:?}"

allow_log 'Transport endpoint is not connected|async_close changes nothing here'
# MOUNT-OPTIONS... : the daemon warns that the option changes nothing, and
# every close is stored when it returns.
changes_nothing() {
  local why=$1
  shift
  mount_fs "$@"
  grep -q "async_close changes nothing here: $why" "$work/daemon.err" ||
    fail "no warning that -o async_close changes nothing ($*)"
  mkdir -p "$mnt/s/w"
  for i in 1 2 3; do echo "v$i" > "$mnt/s/w/k$i"; done
  for i in 1 2 3; do
    expect_eq "$(helper get s w "k$i")" "v$i" "a close stored when it returns ($*)"
  done
  unmount_fs
}
if [ -n "$pg" ]; then
  changes_nothing "on PostgreSQL" -o async_close
  ok "on PostgreSQL -o async_close is said to change nothing, and closes are stored"
  exit 0
fi
changes_nothing "one thread" -o async_close -o threads=1
ok "with one thread -o async_close is said to change nothing, and closes are stored"

# What the store holds, read by one process (helper dump) rather than a
# process per key: store[KEY] is the value of KEY in namespace NS of scope
# SCOPE, both in hex.
hexof() { # TEXT: REPLY is its bytes in hex, as helper dump prints them
  local i c
  REPLY=x
  for ((i = 0; i < ${#1}; i++)); do
    printf -v c %02x "'${1:i:1}"
    REPLY+=$c
  done
}
declare -A store
load() { # SCOPE NS
  local fam sc ns k v rest s_hex n_hex
  hexof "$1"; s_hex=$REPLY
  hexof "$2"; n_hex=$REPLY
  store=()
  while read -r fam sc ns k v rest; do
    [ "$sc" = "$s_hex" ] && [ "$ns" = "$n_hex" ] && store[$k]=$v
  done < <(helper dump)
  return 0
}
absent() { # HELPER-ARGS...: whether helper get or cget finds nothing
  helper "$@" > /dev/null 2>&1
  [ $? = 2 ]
}
stored_as() { # KEY VALUE: 0 when KEY holds VALUE, 1 when absent; fails else
  local k
  hexof "$1"; k=$REPLY
  [ -n "${store[$k]+x}" ] || return 1
  hexof "$2"
  [ "${store[$k]}" = "$REPLY" ] || fail "$1 holds the hex ${store[$k]}, not '$2'"
}

mount_fs -o async_close
mkdir -p "$mnt/s/n" "$mnt/s/m" "$mnt/counter/s/c"

# --- one writer: back at once through the mount; fsync, idle, unmount ------
# (Each file is a process or two here: counts stay small, as the suite
# runs under the sanitizers and beside other tests.)
for i in $(seq 60); do
  expect_eq "$(fsop write "$mnt/s/n/k$i" "value $i")" OK "close of k$i"
done
for i in $(seq 60); do
  expect_eq "$(cat "$mnt/s/n/k$i")" "value $i" "k$i through the mount"
done
expect_eq "$(ls "$mnt/s/n" | wc -l)" 60 "the listing"
sync "$mnt/s/n/k60" || fail "fsync after 60 closes"
load s n
for i in $(seq 60); do
  stored_as "k$i" "value $i" || fail "k$i is not in the store after fsync"
done
ok "60 closes read back at once through the mount and are stored by an fsync"

# rm under the option (answered before its commit too): gone from the
# mount at once, from the store once an fsync returns.
for i in $(seq 30); do
  expect_eq "$(fsop unlink "$mnt/s/n/k$i")" OK "rm k$i"
done
expect_eq "$(ls "$mnt/s/n" | wc -l)" 30 "the listing after 30 rm"
expect_eq "$(fsop unlink "$mnt/s/n/k1")" ENOENT "rm of a removed key"
sync "$mnt/s/n/k60" || fail "fsync after 30 rm"
load s n
for i in $(seq 60); do
  if [ "$i" -le 30 ]; then
    ! stored_as "k$i" "value $i" || fail "k$i is still in the store after rm"
  else
    stored_as "k$i" "value $i" || fail "k$i is gone from the store"
  fi
done
ok "30 rm: gone through the mount and from the store"

# Idle: nothing more comes, the commit follows by itself (within a
# millisecond of quiet; a minute allows for a loaded machine). The same
# for an rm, of a key and of a counter.
fsop write "$mnt/s/m/idle" "idle value" > /dev/null
for _ in $(seq 1200); do
  [ "$(helper get s m idle 2>/dev/null)" = "idle value" ] && break
  nap 0.05
done
expect_eq "$(helper get s m idle)" "idle value" "a close, the mount idle"
fsop write "$mnt/counter/s/c/gone" 7 > /dev/null
sync "$mnt/counter/s/c/gone" || fail "fsync of a counter"
expect_eq "$(fsop unlink "$mnt/s/n/k31")" OK "rm k31"
expect_eq "$(fsop unlink "$mnt/counter/s/c/gone")" OK "rm of a counter"
for _ in $(seq 1200); do
  absent get s n k31 && absent cget s c gone && break
  nap 0.05
done
absent get s n k31 || fail "k31 is in the store after its rm, the mount idle"
absent cget s c gone || fail "a counter is in the store after its rm, the mount idle"
ok "a close and an rm are stored once the mount is idle"

# --- dup'd descriptors and killed writers: the FLUSH check still holds ------
{ echo a; echo b; } > "$mnt/s/m/dup"
expect_eq "$(cat "$mnt/s/m/dup")" "$(printf 'a\nb')" "a redirected block"
printf OLD > "$mnt/s/m/v"
sh -c "exec 3>$mnt/s/m/v; printf half >&3; : > $work/ready; exec sleep 30" &
victim=$!
until [ -e "$work/ready" ]; do nap 0.05; done
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
expect_eq "$(cat "$mnt/s/m/v")" OLD "a killed writer's partial value"
sync "$mnt/s/m/v" || fail "fsync"
expect_eq "$(helper get s m dup)" "$(printf 'a\nb')" "the redirected block in the store"
expect_eq "$(helper get s m v)" OLD "the killed writer's value in the store"
ok "a redirected block is one value; a killed writer stores nothing"
# A child killed by a signal that never wrote cancels nothing, after a
# writer that closed its last descriptor before (head, which closes its
# stdin, stdout and stderr itself) has been reaped: such a writer leaves the
# handle's writers at that close. Before, it stayed, and once reaped
# counted as a writer gone that the dying `yes` might have been a thread
# of: 12 scripts in 100 failed at `echo end` (EIO) and stored nothing.
for i in $(seq 20); do
  bash -c 'echo start; yes | head -n 1; echo end' > "$mnt/s/m/yes$i" 2>&1 ||
    fail "script $i, whose \`yes\` died of SIGPIPE, failed"
  expect_eq "$(cat "$mnt/s/m/yes$i")" "$(printf 'start\ny\nend')" "script $i's value"
done
ok "20 scripts whose \`yes\` died of SIGPIPE after head wrote: each value whole"

# --- four writers at once, counters and queue items; then unmount --------
writer() { # NAME
  local i
  for i in $(seq 30); do
    [ "$(fsop write "$mnt/s/m/$1.$i" "$1 $i")" = OK ] || { echo "$1.$i" >> "$work/failed"; return; }
  done
}
writer a & wa=$!
writer b & wb=$!
writer c & wc=$!
writer d & wd=$!
for _ in $(seq 20); do
  expect_eq "$(fsop write "$mnt/counter/s/c/n" +1)" OK "a counter add"
  expect_eq "$(fsop write "$mnt/queue/q/new" item)" OK "a push"
done
wait "$wa" "$wb" "$wc" "$wd"
[ ! -e "$work/failed" ] || fail "closes failed: $(cat "$work/failed")"
unmount_fs
load s m
for w in a b c d; do
  for i in $(seq 30); do
    stored_as "$w.$i" "$w $i" || fail "$w.$i is not in the store after unmount"
  done
done
expect_eq "$(helper cget s c n)" 20 "the counter after unmount"
expect_eq "$(helper qlen q)" 20 "the queue after unmount"
ok "four writers, 20 adds and 20 pushes: all stored at unmount"

# --- kill -9 of the daemon in the middle of closes -------------------------
kill_daemon() { # the store passes its checks afterwards
  kill -9 "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=
  fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  helper verify > /dev/null || fail "the store fails its checks after kill -9"
}
# One process closing file after file (the closes the daemon may not have
# committed yet), the 200th fsync'd; the kill lands once 400 returned.
mount_fs -o async_close
mkdir -p "$mnt/s/x"
"$STATEFS_FILEOPS" stream "$mnt/s/x" 200 > "$work/acked" 2>&1 &
wr=$!
until grep -q '^synced' "$work/acked" && [ "$(wc -l < "$work/acked")" -ge 400 ]; do
  kill -0 "$wr" 2>/dev/null || fail "the writer stopped: $(tail -n 1 "$work/acked")"
  nap 0.05
done
kill_daemon
wait "$wr" 2>/dev/null || true
load s x
stored=0 acked=0
for i in $(grep -E '^[0-9]+$' "$work/acked"); do
  acked=$((acked + 1))
  if stored_as "k$i" "value $i"; then
    stored=$((stored + 1))
  else
    [ "$i" -gt 200 ] || fail "k$i, covered by the fsync, is not in the store"
  fi
done
ok "kill -9: $stored of $acked closes stored, each whole, every fsync'd one"

# The same for rm: ten covered by an fsync of their directory are gone
# from the store, each of the ten after it is gone or still whole.
mount_fs -o async_close
mkdir -p "$mnt/s/r"
for i in $(seq 20); do fsop write "$mnt/s/r/k$i" "value $i" > /dev/null; done
sync "$mnt/s/r/k20" || fail "fsync before the rm"
for i in $(seq 20); do
  expect_eq "$(fsop unlink "$mnt/s/r/k$i")" OK "rm k$i"
  [ "$i" != 10 ] || sync "$mnt/s/r" || fail "fsync of the directory"
done
kill_daemon
load s r
gone=0
for i in $(seq 20); do
  if ! stored_as "k$i" "value $i"; then
    gone=$((gone + 1))
  elif [ "$i" -le 10 ]; then
    fail "k$i, its rm covered by the fsync, is in the store"
  fi
done
ok "kill -9 after 20 rm: $gone gone from the store, every fsync'd one, the rest whole"

# An rm answered while its commit waits (a test hook pauses the daemon
# before it): killed there, the daemon leaves the key in the store, as a
# crash loses a close not yet committed.
helper put s r held "held value"
export STATEFS_TEST_COMMIT_DELAY_MS=600000
mount_fs -o async_close
unset STATEFS_TEST_COMMIT_DELAY_MS
expect_eq "$(fsop unlink "$mnt/s/r/held")" OK "rm before its commit"
kill_daemon
expect_eq "$(helper get s r held)" "held value" "the key whose rm was not committed"
ok "an rm answered before its commit: a kill -9 then leaves the key"

# --- a commit that fails after its closes returned ---------------------------
if ! small_disk; then
  echo "cannot mount a tmpfs (not root?): the full disk is skipped"
  exit 0
fi
allow_log 'the disk is full|No space left|database or disk is full|disk has room again|were not stored'
export STATEFS_DB=$small/state.db
mount_fs -o async_close
mkdir -p "$mnt/s/f"
fsop write "$mnt/s/f/anchor" a > /dev/null
fsop write "$mnt/s/f/open" a > /dev/null
# A file's and a directory's descriptor open all along (fileops syncs):
# each is told too, once.
"$STATEFS_FILEOPS" syncs "$mnt/s/f/open" "$work/go.syncs" > "$work/syncs.out" &
syncs=$!
"$STATEFS_FILEOPS" syncs "$mnt/s/f" "$work/go.syncs" > "$work/syncs.dir" &
syncs_dir=$!
until [ -s "$work/syncs.out" ] && [ -s "$work/syncs.dir" ]; do nap 0.05; done
expect_eq "$(cat "$work/syncs.out")" ready "a file's descriptor held open"
expect_eq "$(cat "$work/syncs.dir")" ready "a directory's descriptor held open"
# Values of 256 KiB, each followed by an fsync of another file, until an
# fsync says the disk is full; the close of every value returned 0. The
# value whose commit failed is gone from the mount and the store alike.
n=0 err=
while [ "$n" -lt 200 ]; do
  head -c 262144 /dev/urandom | dd of="$mnt/s/f/k$n" bs=64k status=none ||
    fail "the close of k$n failed (a commit comes after it)"
  n=$((n + 1))
  err=$(sync "$mnt/s/f/anchor" 2>&1) || break
  err=
done
[ -n "$err" ] || fail "no fsync failed after $n values of 256 KiB on 12 MiB"
case $err in
*"No space left"*) ;;
*) fail "the fsync failed with: $err" ;;
esac
sync "$mnt/s/f/anchor" || fail "the next fsync failed too: the error is told once"
touch "$work/go.syncs"
wait "$syncs" || fail "fileops syncs: $(cat "$work/syncs.out")"
wait "$syncs_dir" || fail "fileops syncs (directory): $(cat "$work/syncs.dir")"
expect_eq "$(sed 1d "$work/syncs.out" | tr '\n' ' ')" "held ENOSPC again 0 reopened 0 " \
  "fsyncs of a descriptor open when the commit failed, then of a new one"
expect_eq "$(sed 1d "$work/syncs.dir" | tr '\n' ' ')" "held ENOSPC again 0 reopened 0 " \
  "fsyncs of a directory's descriptor open when the commit failed, then of a new one"
grep -q "were not stored" "$work/daemon.err" || fail "the daemon did not log the lost closes"
last=$((n - 1))
helper get s f "k$last" > /dev/null 2>&1 && fail "k$last is in the store"
[ ! -e "$mnt/s/f/k$last" ] || fail "k$last shows in the mount"
helper get s f "k$((last - 1))" > /dev/null || fail "k$((last - 1)), fsync'd, is not in the store"
ok "a full disk: fsync says ENOSPC once per descriptor open then, after $n closes returned; the lost value is gone"
