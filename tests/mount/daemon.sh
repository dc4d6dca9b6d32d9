#!/usr/bin/env bash
# daemon.sh - the statefs command: -h, -V, bad command lines (exit 1 and
# "see -h"), SIGTERM/SIGINT/SIGHUP and fusermount3 -u (clean unmount,
# exit 0), detaching only once mounted (and failing loudly when the store
# will not open), mount(8) with -t fuse.statefs and an fstab line, -o ro,
# -o threads (the bound; on SQLite one thread reads /dev/fuse at a time),
# the default store and key made on first use, keys never in argv, the
# environment or the log, no core dumps. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

bin=$STATEFS_BIN
csv_mode=
case $mode in *plain) csv_mode=plaintext, ;; esac

# The daemon of a detached mount: not our child, found by its command line.
daemon_of() {
  pgrep -f -- " $1( |\$)" | head -n1 || true
}
wait_gone() { # 60 s: a hang, not a slow exit
  for _ in $(seq 1200); do
    kill -0 "$1" 2>/dev/null || return 0
    nap 0.05
  done
  fail "pid $1 still running"
}

help=$("$bin" -h)
grep -q '^usage: .*statefs \[options\] \[STORE\] MOUNTPOINT' <<<"$help" || fail "-h"
grep -q 'max_value=SIZE' <<<"$help" || fail "-h lists the options"
grep -q 'allow_other' <<<"$help" || fail "-h lists the FUSE options"
[ "$(grep -c -- "^ *-o allow_other " <<<"$help")" = 1 ] || fail "-h lists -o allow_other once (it listed ours and libfuse's)"
grep -q '^statefs [0-9]' <<<"$("$bin" -V)" || fail "-V"
for args in "" "-o plaintext,keyfile=/k $mnt" "-o max_value=12Q $mnt" \
            "-o max_value=0 $mnt" "a b c" "-o db=/a /b $mnt" \
            "-o threads=0 $mnt" "-o threads=65 $mnt" "-o threads=two $mnt" \
            "-o threads=+3 $mnt" "-o umask=+22 $mnt"; do
  rc=0
  out=$("$bin" $args 2>&1) || rc=$?
  expect_eq "$rc" 1 "exit of statefs $args"
  [[ $out == *"see -h"* ]] || fail "no 'see -h' for '$args': $out"
done
rc=0
out=$("$bin" -o "threads= 3" "$mnt" 2>&1) || rc=$?
expect_eq "$rc" 1 "exit of statefs -o 'threads= 3'"
[[ $out == *"not a number of threads"* ]] || fail "no sentence for 'threads= 3': $out"
rc=0
out=$("$bin" -f -o key=SECRETKEYVALUE "$mnt" 2>&1) || rc=$?
expect_eq "$rc" 1 "-o key= is refused"
[[ $out == *SECRETKEYVALUE* ]] && fail "the key was echoed: $out"
[[ $out == *keyfile* ]] || fail "no hint at keyfile: $out"
rc=0
out=$("$bin" -f -o nosuchoption "$mnt" 2>&1) || rc=$?
expect_eq "$rc" 1 "an unknown option"
expect_eq "$out" "statefs: error: fuse: unknown option(s): \`-o nosuchoption'" \
  "an unknown option, said in one line"
# ... also when the line is longer than the daemon's log buffer (1 KiB):
# it said nothing at all, and nothing more from that thread
long=$(printf 'x%.0s' $(seq 2000))
rc=0
out=$("$bin" -f -o "$long" "$mnt" 2>&1) || rc=$?
expect_eq "$rc" 1 "a long unknown option"
[[ $out == "statefs: error: fuse: unknown option(s): \`-o xxx"* && $out == *"xxx'" ]] ||
  fail "a long unknown option is said: $out"
# in two lines: "statefs: error: " and 1,023 bytes, then the rest
expect_eq "${#out}" "$((16 + 1023 + 1 + 16 + ${#long} + 30 - 1023))" "the whole of it, in two lines"
mountpoint -q "$mnt" && fail "mounted after a bad command line"
# max_value: what -h says is the truth, and 1G is refused saying why
grep -q 'at most 953M' <<<"$help" || fail "-h gives the largest max_value"
for v in 1G 2GiB 1000000001; do
  rc=0
  out=$("$bin" -f -o max_value=$v "$mnt" 2>&1) || rc=$?
  expect_eq "$rc" 1 "exit of -o max_value=$v"
  [[ $out == *"more than SQLite stores in one value (1000000000 bytes, 953M at most); see -h"* ]] ||
    fail "-o max_value=$v: $out"
done
# a lease too long for the engine is said to be that, not "not a duration"
for v in 36501d 876001h 99999999999999999999; do
  rc=0
  out=$("$bin" -f -o lease=$v "$mnt" 2>&1) || rc=$?
  expect_eq "$rc" 1 "exit of -o lease=$v"
  [[ $out == *": -o lease=$v is longer than a lease can be (100 years, 36500d); see -h" ]] ||
    fail "-o lease=$v: $out"
done
mount_fs -o max_value=953M
unmount_fs
ok "-h, -V and bad command lines"

# -o threads=N: at most N threads serve requests (counted after eight
# writers at once, against a one-thread mount after the same), and one
# thread answers while a .wait reader waits, then gives it its item.
eight_writers() {
  local i j pids=()
  for i in 1 2 3 4 5 6 7 8; do
    mkdir -p "$mnt/s/w$i"
    (for j in $(seq 25); do echo "$j" > "$mnt/s/w$i/k$j" || exit 1; done) &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || fail "a writer failed"; done
}
mount_fs -o threads=1
eight_writers
one=$(ls /proc/$daemon_pid/task | wc -l)
cat "$mnt/queue/jobs/.wait" > "$work/waited" &
w=$!
mkdir -p "$mnt/s/n"
echo v > "$mnt/s/n/k"
expect_eq "$(cat "$mnt/s/n/k")" v "one thread answers while a reader waits"
echo item > "$mnt/queue/jobs/new"
wait $w || fail "the waiting reader failed"
expect_eq "$(cat "$work/waited")" item "the waiting reader got the item"
unmount_fs
mount_fs -o threads=3
eight_writers
n=$(ls /proc/$daemon_pid/task | wc -l)
(( n <= one + 3 )) || fail "-o threads=3: $n threads (one thread: $one)"
expect_eq "$(cat "$mnt/s/w8/k25")" 25 "the writers' last file"
unmount_fs
ok "-o threads"

# On a SQLite store the pool's threads read /dev/fuse one at a time
# (fs/loop.c): after eight writers, and at every look while the mount
# idles, at most one thread is in read(2) on the device, and one is.
# (libfuse's pool, PostgreSQL's, has every idle thread there.)
readers_of_fuse() { # FD: the daemon's threads in read(2) on it now
  local t nr arg n=0
  for t in /proc/$daemon_pid/task/*; do
    read -r nr arg _ < "$t/syscall" 2>/dev/null || continue
    [ "$nr" = 0 ] && [ "$arg" = "$1" ] && n=$((n + 1))
  done
  echo $n
}
if [ -z "$pg" ]; then
  mount_fs
  fd=$(find /proc/$daemon_pid/fd -lname /dev/fuse -printf '%f')
  [ -n "$fd" ] || fail "the daemon has no /dev/fuse open"
  fd=$(printf '0x%x' "$fd")
  eight_writers
  seen_one=
  for _ in $(seq 50); do
    r=$(readers_of_fuse "$fd")
    (( r <= 1 )) || fail "$r threads read /dev/fuse at once"
    [ "$r" = 1 ] && seen_one=1
    sleep 0.02
  done
  [ -n "$seen_one" ] || fail "no thread reads /dev/fuse"
  unmount_fs
  ok "one reader of /dev/fuse at a time"
fi

# Signals in the foreground: a clean unmount and status 0.
for sig in TERM INT HUP; do
  mount_fs
  signal_fs $sig
  mountpoint -q "$mnt" && fail "still mounted after SIG$sig"
done
# SIGTERM while ls -l runs in a queue's directory: the daemon exits. With
# d0648fc (reverted) its timer asked the kernel to drop item entries, and
# the kernel made it wait, unkillable, for the directory's lock, which an
# ls's request nobody would answer held: the daemon never exited (SIGKILL
# neither) until the ls was killed (helper-56: 2 runs of 3). Kept against
# any notification to the kernel that comes back.
mount_fs
helper qpush listed $(seq -f "i%g" 200)
lsers=()
for opt in -l -f -f -f; do # -f: mostly in getdents, under the lock
  ( while :; do ls $opt "$mnt/queue/listed" > /dev/null 2>&1; done ) &
  lsers+=($!)
done
nap 2.5
kill -TERM "$daemon_pid"
SECONDS=0
while kill -0 "$daemon_pid" 2>/dev/null && [ "$SECONDS" -lt 30 ]; do
  nap 0.2
done
hung=$(kill -0 "$daemon_pid" 2>/dev/null && echo 1 || true)
for p in "${lsers[@]}"; do # each loop stopped, then its ls, then it
  kill -STOP "$p" 2>/dev/null || true
  pkill -KILL -P "$p" || true
  kill -KILL "$p" 2>/dev/null || true
done
wait "${lsers[@]}" 2>/dev/null || true
[ -z "$hung" ] || fail "the daemon did not exit 30 s after SIGTERM with ls -l running in a queue"
reap_fs "SIGTERM with ls -l running in a queue"
mountpoint -q "$mnt" && fail "still mounted after SIGTERM with ls -l running"
# Out of descriptors (its ulimit -n lowered under the three it has
# first): a value still goes in, and SIGTERM still unmounts with status 0.
# The pools end their threads with pthread_cancel, for which glibc opens
# libgcc_s at the first call and aborts when it cannot: the daemon died
# of SIGABRT, leaving the mount dead (ENOTCONN). Under the sanitizer,
# without its leak check: LeakSanitizer needs descriptors of its own at
# the exit (/proc/PID/task) and makes it fail.
# Started with a soft limit under the hard one (systemd's 1024), the
# daemon raises it to the hard one: a pidfd per process with aliases.
soft=$(ulimit -S -n)
ulimit -S -n 256
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mount_fs
ulimit -S -n "$soft"
read -r -a lim < <(grep '^Max open files' "/proc/$daemon_pid/limits")
expect_eq "${lim[3]}" "$(ulimit -H -n)" "the daemon's soft limit on descriptors is its hard one"
mkdir -p "$mnt/app/cfg"
prlimit --pid "$daemon_pid" --nofile=3:3
if [ -z "$pg" ]; then
  expect_op OK write "$mnt/app/cfg/nofds" v
  expect_eq "$(cat "$mnt/app/cfg/nofds")" v "a value written out of descriptors"
fi
signal_fs TERM
mountpoint -q "$mnt" && fail "still mounted after SIGTERM out of descriptors"
# A mount point whose daemon was killed (ENOTCONN): a new daemon says
# what to do, before it opens the store, and mounts once it is done.
allow_log 'Transport endpoint is not connected'
mount_fs
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
rc=0
# (before, it could mount over the dead one and serve: timeout ends it)
out=$(timeout 60 "$bin" -f "${mode_opts[@]}" "$mnt" 2>&1) || rc=$?
expect_eq "$rc" 1 "a start on a dead mount point"
[[ $out == *"fusermount3 -u $mnt"* ]] || fail "no remedy for a dead mount point: $out"
fusermount3 -u "$mnt"
mount_fs
# A second daemon on a live mount point: refused before its store is
# opened (it used to mount on top without a word, hiding the first).
allow_log 'already the mount point of a running statefs'
mkdir -p "$mnt/app/first"
rc=0
out=$(timeout 60 "$bin" -f "${mode_opts[@]}" "$mnt" 2>&1) || rc=$?
expect_eq "$rc" 1 "a start on a live mount point"
[[ $out == *"already the mount point of a running statefs"* ]] ||
  fail "no sentence for a live mount point: $out"
expect_eq "$(grep -c " $mnt " /proc/self/mountinfo)" 1 "mounts on the mount point"
[ -d "$mnt/app/first" ] || fail "the first mount is not the one seen"
limits=$(grep 'Max core file size' /proc/$daemon_pid/limits)
[[ $limits =~ core\ file\ size\ +0\ +0 ]] || fail "core dumps: $limits"
unmount_fs
# Two daemons started at once on one mount point: one mounts, the other
# is refused. Both used to find it free and both mounted, one over the
# other (about one round in two).
for round in 1 2 3 4 5 6 7 8; do
  "$bin" -f "${mode_opts[@]}" "$mnt" 2>"$work/race1.err" & r1=$!
  "$bin" -f "${mode_opts[@]}" "$mnt" 2>"$work/race2.err" & r2=$!
  end=$((SECONDS + 60)) # a hang, not a slow start
  n=0 gone=
  while [ $SECONDS -lt $end ]; do
    n=$(grep -c " $mnt " /proc/self/mountinfo) || n=0
    [ "$n" -lt 2 ] || break
    if ! kill -0 "$r1" 2>/dev/null; then gone=$r1 stays=$r2 err_of=1; break; fi
    if ! kill -0 "$r2" 2>/dev/null; then gone=$r2 stays=$r1 err_of=2; break; fi
    nap 0.05
  done
  [ "$n" -lt 2 ] || { fusermount3 -u "$mnt"; fusermount3 -u "$mnt"
    wait "$r1" "$r2" 2>/dev/null; fail "round $round: two daemons started at once both mounted"; }
  [ -n "$gone" ] || fail "round $round: neither of two daemons started at once ended"
  rc=0; wait "$gone" || rc=$?
  expect_eq "$rc" 1 "round $round: the second of two daemons started at once"
  grep -q "already the mount point of a running statefs" "$work/race$err_of.err" ||
    fail "round $round: $(cat "$work/race$err_of.err")"
  for _ in $(seq 1200); do mountpoint -q "$mnt" && break; nap 0.05; done
  expect_eq "$(grep -c " $mnt " /proc/self/mountinfo)" 1 "round $round: mounts of two daemons started at once"
  fusermount3 -u "$mnt"
  rc=0; wait "$stays" || rc=$?
  expect_eq "$rc" 0 "round $round: the daemon that mounted, at its unmount"
done
# A mount point that holds a file: the mount says it hides it (it hid it
# without a word), and the file is there again after the unmount.
echo under > "$mnt/under"
: >"$work/under.err"
"$bin" -f "${mode_opts[@]}" "$mnt" 2>>"$work/under.err" & r1=$!
for _ in $(seq 1200); do mountpoint -q "$mnt" && break; nap 0.05; done
mountpoint -q "$mnt" || fail "no mount over a directory holding a file: $(<"$work/under.err")"
[ ! -e "$mnt/under" ] || fail "the file under the mount point shows through the mount"
[[ $(<"$work/under.err") == *"is not empty: its 1 entry is hidden under the store while it is mounted"* ]] ||
  fail "a mount over a directory holding a file said nothing: $(<"$work/under.err")"
fusermount3 -u "$mnt"
rc=0; wait "$r1" || rc=$?
expect_eq "$rc" 0 "the daemon mounted over a file, at its unmount"
expect_eq "$(<"$mnt/under")" under "the file under the mount point, after the unmount"
rm "$mnt/under"
# The mount point locked by another process (flock, here this shell's,
# on a descriptor the daemon does not inherit): the daemon says what it
# waits for, and mounts once it is let go. It waited without a word.
exec {lock_fd}<"$mnt"
flock -n "$lock_fd" || fail "cannot lock $mnt"
: >"$work/held.err"
"$bin" -f "${mode_opts[@]}" "$mnt" 2>>"$work/held.err" {lock_fd}<&- & r1=$!
end=$((SECONDS + 60)) # a hang, not a slow start
until [[ $(<"$work/held.err") == *"is locked by another process"* ]]; do
  [ $SECONDS -lt $end ] || { exec {lock_fd}<&-; kill "$r1"; fail "a daemon waiting for a lock of the mount point said nothing: $(cat "$work/held.err")"; }
  nap 0.05
done
exec {lock_fd}<&-
for _ in $(seq 1200); do mountpoint -q "$mnt" && break; nap 0.05; done
mountpoint -q "$mnt" || fail "no mount once the lock was let go: $(cat "$work/held.err")"
fusermount3 -u "$mnt"
rc=0; wait "$r1" || rc=$?
expect_eq "$rc" 0 "the daemon that waited for the lock, at its unmount"
# A store inside the mount point (in it, in a directory the open would
# make, through a dangling symlink, the default store under a home inside
# it): refused before
# anything is opened or made. It mounted, and the daemon hung at once in
# its own mount (its checks of the store's file and directory went
# through it), and so did any findmnt or mount(8) that looked at the
# store's path: only an abort through fusectl ended it, which is what
# this test does if a daemon mounts.
abort_mount() { # DIR: ends a daemon hung in its own mount
  local dev
  [ -e /sys/fs/fuse/connections ] || return 0
  grep -q fusectl /proc/self/mountinfo ||
    mount -t fusectl fusectl /sys/fs/fuse/connections 2>/dev/null
  dev=$(awk -v d="$1" '$5 == d { split($3, m, ":"); print m[2] }' /proc/self/mountinfo)
  [ -z "$dev" ] || echo 1 > "/sys/fs/fuse/connections/$dev/abort"
  fusermount3 -u -z "$1" 2>/dev/null
}
if [ -z "$pg" ]; then
  allow_log 'is inside the mount point'
  ln -s "$mnt/linked.db" "$work/link.db" # dangling: the open makes its target
  for inside in "db=$mnt/state.db" "db=$mnt/new/dir/state.db" "db=$work/link.db" "default"; do
    : >"$work/inside.err"
    if [ "$inside" = default ]; then
      (unset STATEFS_DB; XDG_STATE_HOME=$mnt/state exec "$bin" -f "${mode_opts[@]}" "$mnt") 2>>"$work/inside.err" & r1=$!
    else
      "$bin" -f "${mode_opts[@]}" -o "$inside" "$mnt" 2>>"$work/inside.err" & r1=$!
    fi
    end=$((SECONDS + 60)) # a hang, not a slow start
    while kill -0 "$r1" 2>/dev/null && ! in_mountinfo "$mnt" && [ $SECONDS -lt $end ]; do
      nap 0.05
    done
    if in_mountinfo "$mnt"; then
      abort_mount "$mnt"
      wait "$r1" 2>/dev/null
      fail "$inside: a store inside the mount point was mounted: $(<"$work/inside.err")"
    fi
    rc=0; wait "$r1" || rc=$?
    expect_eq "$rc" 1 "$inside: a start with the store inside the mount point"
    [[ $(<"$work/inside.err") == *"is inside the mount point $mnt"* ]] ||
      fail "$inside: no sentence for a store inside the mount point: $(<"$work/inside.err")"
    expect_eq "$(ls -A "$mnt")" "" "$inside: what a refused start left in the mount point"
  done
  rm "$work/link.db"
fi
ok "SIGTERM, SIGINT, SIGHUP, fusermount3 -u; no core dumps"

# Detached: statefs returns once the mount is up.
"$bin" "${mode_opts[@]}" "$mnt" 2>>"$work/daemon.err" || fail "detached start"
mountpoint -q "$mnt" || fail "not mounted when statefs returned"
mkdir -p "$mnt/app/cfg"
echo detached > "$mnt/app/cfg/k"
pid=$(daemon_of "$mnt")
[ -n "$pid" ] || fail "no daemon for $mnt"
kill -TERM "$pid"
wait_gone "$pid"
mountpoint -q "$mnt" && fail "still mounted after SIGTERM to the detached daemon"
expect_eq "$(helper get app cfg k)" detached "written through the detached mount"
ok "detached"

# mount(8): -t fuse.statefs, and a line of fstab. mount(8) runs
# /sbin/mount.fuse, which runs `statefs STORE MOUNTPOINT -o OPTIONS` from
# the system's PATH (mount sets its own): in a private mount namespace,
# /usr/local/sbin is made to hold our statefs, as if it were installed.
export bin mnt csv_mode work
if ! unshare -m --propagation private true 2>/dev/null; then
  echo "skip - mount(8) and fstab: no private mount namespace here"
else
unshare -m --propagation private bash -euo pipefail -c '
  mkdir -p "$work/sbin"
  ln -s "$bin" "$work/sbin/statefs"
  mount --bind "$work/sbin" /usr/local/sbin
  gone() { for _ in $(seq 1200); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done; return 1; }
  mount -t fuse.statefs -o "${csv_mode}db=$STATEFS_DB" statefs "$mnt"
  [ "$(cat "$mnt/app/cfg/k")" = detached ] || { echo "FAIL: read via mount -t"; exit 1; }
  [ "$(findmnt -n -o FSTYPE "$mnt")" = fuse.statefs ] || { echo "FAIL: type"; exit 1; }
  pid=$(pgrep -f -- " $mnt( |\$)" | head -n1) || true
  umount "$mnt"
  gone "$pid" || { echo "FAIL: daemon left after umount"; exit 1; }
  echo "$STATEFS_DB $mnt fuse.statefs ${csv_mode}noauto 0 0" > "$work/fstab"
  mount -T "$work/fstab" "$mnt"
  [ "$(cat "$mnt/app/cfg/k")" = detached ] || { echo "FAIL: read via fstab"; exit 1; }
  [ "$(findmnt -n -o SOURCE "$mnt")" = "$STATEFS_DB" ] || { echo "FAIL: source"; exit 1; }
  pid=$(pgrep -f -- " $mnt( |\$)" | head -n1) || true
  umount "$mnt"
  gone "$pid" || { echo "FAIL: daemon left after umount"; exit 1; }
' 2>>"$work/daemon.err" || fail "mount(8) and fstab (see the daemon's stderr)"
ok "mount -t fuse.statefs and fstab"
fi

# -o ro: reads work, every change is EROFS, the store is untouched.
before=$(helper dump)
mount_fs -o ro
expect_eq "$(cat "$mnt/app/cfg/k")" detached "read-only read"
expect_op EROFS write "$mnt/app/cfg/k" x
expect_op EROFS write "$mnt/app/cfg/new" x
expect_op EROFS mkdir "$mnt/app/d"
expect_op EROFS unlink "$mnt/app/cfg/k"
expect_op EROFS read "$mnt/queue/q/.pop"
unmount_fs
expect_eq "$(helper dump)" "$before" "the store after a read-only mount"
ok "-o ro"

# -o ro of a store on a read-only medium (a tmpfs remounted ro: its
# superblock is read-only), closed cleanly: it mounts, and ls and cat
# read it, with no -wal or -shm made (the daemon refused it at start:
# "cannot create PATH-wal: Read-only file system"). A read-only bind
# mount of the store's writable directory is no such medium: refused as
# before while no process has the store open, and while another daemon
# writes the store every read sees its writes (an immutable open, as
# 8d8bc1b's, read stale pages there, then "malformed").
if [ -z "$pg" ] && [ "$(id -u)" = 0 ] && mkdir "$work/rofs" "$work/robind" &&
   mount -t tmpfs -o size=8m,mode=0700 tmpfs "$work/rofs" 2>/dev/null; then
  trap 'rc=$?; set +e; umount -l "$work/rofs" "$work/robind" 2>/dev/null
    (exit $rc); cleanup' EXIT
  [ ! -e "$STATEFS_DB-wal" ] || fail "the store was not closed cleanly"
  cp "$STATEFS_DB" "$work/rofs/state.db"
  mount -o remount,ro "$work/rofs"
  # a read-write mount says -o ro reads it (it said "cannot create
  # PATH-wal: ... the first process to open the store, even to read it,
  # makes its -wal and -shm files")
  # a start with OPTS that must not mount, and must say WANT
  start_refused() { # OPTS WANT WHAT
    local rc=0 out
    out=$("$bin" -o "$1" "$mnt" 2>&1) || rc=$?
    if mountpoint -q "$mnt"; then
      fusermount3 -u "$mnt"
      fail "$3: mounted"
    fi
    if [ "$rc" -eq 0 ] || [[ $out != *"$2"* ]]; then
      fail "$3: $rc $out"
    fi
  }
  start_refused "${csv_mode}db=$work/rofs/state.db" \
    "store is read-only: $work/rofs/state.db is on a read-only file system: only a read-only open can use it (-o ro mounts it read-only)" \
    "a read-write mount of a store on a read-only medium"
  mount_fs -o "${csv_mode}ro,db=$work/rofs/state.db"
  expect_eq "$(cat "$mnt/app/cfg/k")" detached "a read on a read-only medium"
  [[ $(ls "$mnt/app/cfg") == *k* ]] || fail "ls on a read-only medium"
  expect_op EROFS write "$mnt/app/cfg/new" x
  unmount_fs
  if [ -e "$work/rofs/state.db-wal" ] || [ -e "$work/rofs/state.db-shm" ]; then
    fail "a -wal or -shm on a read-only medium"
  fi
  umount "$work/rofs"
  mount --bind "$work/store" "$work/robind"
  mount -o remount,bind,ro "$work/robind"
  # -o ro through DIR with no process on the store: refused as any store
  # whose -wal cannot be made, never opened immutable
  ro_refused() { # DIR WHAT
    start_refused "${csv_mode}ro,db=$1/state.db" \
      "cannot create $1/state.db-wal: Read-only file system" \
      "-o ro through $2, no process on the store (mounted: opened immutable)"
  }
  ro_refused "$work/robind" "a read-only bind mount"
  mount_other "$work/m2"
  echo w0 > "$work/m2/app/cfg/b0"
  mount_fs -o "${csv_mode}ro,db=$work/robind/state.db"
  expect_eq "$(cat "$mnt/app/cfg/b0")" w0 "a read through a read-only bind mount"
  for i in $(seq 1 30); do
    echo "w$i" > "$work/m2/app/cfg/b$i"
    expect_eq "$(cat "$mnt/app/cfg/b$i")" "w$i" "a new key through a read-only bind mount"
  done
  names=("$mnt"/app/cfg/b*)
  expect_eq "${#names[@]}" 31 "ls through a read-only bind mount"
  unmount_fs
  fusermount3 -u "$work/m2"
  wait "$other_pid" || fail "the other daemon exited non-zero"
  umount "$work/robind"
  # An overlay of the store's directory alone is read-only, superblock
  # and all, but its lower directory is written through its own mount:
  # no medium either (immutable there missed every key written since).
  # (Not read while written: an overlay may keep not seeing a -wal made
  # in its lower directory after it looked for one, which overlayfs
  # leaves undefined.)
  mkdir "$work/ov" "$work/ovempty"
  if mount -t overlay overlay -o "ro,lowerdir=$work/store:$work/ovempty" \
     "$work/ov" 2>/dev/null; then
    trap 'rc=$?; set +e; umount -l "$work/rofs" "$work/robind" "$work/ov" \
      2>/dev/null; (exit $rc); cleanup' EXIT
    ro_refused "$work/ov" "a read-only overlay"
    umount "$work/ov"
  fi
  ok "-o ro on a read-only medium, and through a read-only bind mount and overlay"
fi

if [ "$mode" = encrypted ]; then
  # A key file that is not a regular file: refused for what it is, at
  # once (a FIFO used to hang the start), not for its mode.
  mkfifo -m 600 "$work/fifo.key"
  mkdir -m 700 "$work/dir.key"
  for k in fifo dir; do
    rc=0
    out=$(timeout 60 "$bin" -f -o keyfile="$work/$k.key" "$mnt" 2>&1) || rc=$?
    expect_eq "$rc" 1 "a $k as the key file"
    [[ $out == *"key file $work/$k.key is a "*", not a regular file"* ]] ||
      fail "a $k as the key file: $out"
    [[ $out == *"accessible by other users"* ]] && fail "a $k key file, under the wrong heading: $out"
    mountpoint -q "$mnt" && fail "mounted with a $k as the key file"
  done
  ok "a FIFO or a directory as the key file is refused"

fi

if [ "$mode" = encrypted ] || [ "$mode" = postgres ]; then
  # A store that will not open: statefs says why and mounts nothing.
  head -c 32 /dev/urandom > "$work/other.key"
  chmod 600 "$work/other.key"
  rc=0
  out=$("$bin" -o keyfile="$work/other.key" "$mnt" 2>&1) || rc=$?
  expect_eq "$rc" 1 "a wrong key"
  [[ $out == *"wrong key"* ]] || fail "no 'wrong key' in: $out"
  [[ $out == *"wrong key: wrong key"* ]] && fail "the status said twice: $out"
  mountpoint -q "$mnt" && fail "mounted with a wrong key"
  ok "a wrong key fails before detaching"
fi

if [ "$mode" = encrypted ]; then

  # The default store, made on first use with a new key file (a user
  # with neither yet).
  (
    unset STATEFS_DB
    export XDG_CONFIG_HOME=$work/new/config XDG_STATE_HOME=$work/new/state
    "$bin" "$mnt" 2>"$work/first.err" || fail "first use"
  )
  [ -f "$work/new/state/statefs/state.db" ] || fail "no default store"
  [ -f "$work/new/config/statefs/key" ] || fail "no default key"
  expect_eq "$(stat -c %a "$work/new/config/statefs/key")" 600 "key file mode"
  grep -q "$work/new/config/statefs/key" "$work/first.err" ||
    fail "no notice: $(cat "$work/first.err")"
  pid=$(daemon_of "$mnt")
  fusermount3 -u "$mnt"
  wait_gone "$pid"
  ok "the default store and key on first use"

  # A store named by -o db that does not exist is made (the daemon makes
  # what it is pointed at) and, detached or not, the daemon says so: a
  # mistyped path mounted a new empty store without a word. A store that
  # exists is not announced.
  (
    unset STATEFS_DB
    export XDG_CONFIG_HOME=$work/new/config XDG_STATE_HOME=$work/new/state
    "$bin" -o db="$work/new/typo.db" "$mnt" 2>"$work/typo.err" || fail "a named new store"
    pid=$(daemon_of "$mnt")
    fusermount3 -u "$mnt"
    wait_gone "$pid"
    grep -q "created a new empty encrypted store at $work/new/typo.db: no store was there" "$work/typo.err" ||
      fail "no notice of the store made: $(cat "$work/typo.err")"
    "$bin" -o db="$work/new/typo.db" "$mnt" 2>"$work/typo.err" || fail "a named store again"
    pid=$(daemon_of "$mnt")
    fusermount3 -u "$mnt"
    wait_gone "$pid"
    [ ! -s "$work/typo.err" ] || fail "a store that exists announced: $(cat "$work/typo.err")"
    # a log line is one line: a newline in the path it names is written
    # \x0a (it ended the line early, the rest a line of its own), and a
    # C1 control in UTF-8 (CSI, C2 9B) \xc2\x9b (it reached the terminal)
    "$bin" -o db="$work/new/odd"$'\n'"name"$'\xc2\x9b'"2J.db" "$mnt" 2>"$work/odd.err" || fail "a store at a path with a newline"
    pid=$(daemon_of "$mnt")
    fusermount3 -u "$mnt"
    wait_gone "$pid"
    grep -qxF "statefs: created a new empty encrypted store at $work/new/odd\x0aname\xc2\x9b2J.db: no store was there" "$work/odd.err" ||
      fail "the notice of a path with a newline, in one line: $(cat "$work/odd.err")"
  )
  ok "a named store that does not exist: made, and said"

  # A key in STATEFS_KEY: used, and gone from the daemon's environment.
  key=$(head -c 32 /dev/urandom | base64)
  STATEFS_KEY=$key STATEFS_DB=$work/envkey.db "$bin" -f "$mnt" 2>>"$work/daemon.err" &
  daemon_pid=$!
  wait_mounted
  mkdir -p "$mnt/s/n"
  echo secret-data > "$mnt/s/n/k"
  tr '\0' '\n' < /proc/$daemon_pid/environ | grep "$key" >/dev/null && fail "the key is in the daemon's environment"
  tr '\0' '\n' < /proc/$daemon_pid/cmdline | grep "$key" >/dev/null && fail "the key is in argv"
  unmount_fs
  expect_eq "$(STATEFS_KEY=$key STATEFS_DB=$work/envkey.db helper get s n k)" secret-data "readable with the key"
  grep -q "$key" "$work/daemon.err" && fail "the key is in the log"
  ok "STATEFS_KEY: used, not left in the environment, argv or log"

  # Nor in the environment of a detaching daemon's parent, which waits
  # for the child's word: the child is made to wait on a stopped mount
  # (its store lies there), and meanwhile the parent's environment is
  # looked at (it kept the key until 2026-12-03; helper-40's find).
  mount_fs
  mkdir -p "$mnt/s/n" "$work/m2"
  kill -STOP "$daemon_pid"
  STATEFS_KEY=$key "$bin" -o db="$mnt/s/n/x.db" "$work/m2" 2>"$work/m2.err" &
  parent=$!
  wiped=0 end=$((SECONDS + 30))
  while [ $SECONDS -lt $end ] && kill -0 "$parent" 2>/dev/null; do
    # builtins only: the parent has forked, and its environment
    { children=$(< "/proc/$parent/task/$parent/children")
      mapfile -d '' vars < "/proc/$parent/environ"; } 2>/dev/null || break
    if [ -n "$children" ] && [[ ${vars[*]} != *"$key"* ]]; then
      wiped=1
      break
    fi
    nap 0.05
  done
  kill -CONT "$daemon_pid"
  wait "$parent" || true
  if mountpoint -q "$work/m2"; then
    # it went on once the mount woke: its store there keeps that busy
    pid=$(daemon_of "$work/m2")
    fusermount3 -u "$work/m2"
    [ -z "$pid" ] || wait_gone "$pid"
  fi
  [ "$wiped" = 1 ] || fail "the key stayed in the waiting parent's environment"
  unmount_fs
  ok "STATEFS_KEY: not left in a detaching daemon's waiting parent"
fi
