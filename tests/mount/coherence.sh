#!/usr/bin/env bash
# coherence.sh - what another process changes through the engine is seen
# through the mount at the next cat, stat and ls: content, size (a longer
# value is not cut at the old size), adds and deletes, counters, queue
# items and log entries. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs
cd "$mnt"
mkdir -p app/cfg

echo short > app/cfg/k
expect_eq "$(cat app/cfg/k)" short "written through the mount"
stat app/cfg/k > /dev/null
# A listing's attributes are trusted for FS_TTL_LIST (20 ms: long enough
# for ls -l to stat what it listed); LOOKUP's and GETATTR's never.
ls -l app/cfg > /dev/null
sleep 0.05
helper put app cfg k "a much longer value than before"
expect_eq "$(cat app/cfg/k)" "a much longer value than before" "next cat"
expect_eq "$(stat -c %s app/cfg/k)" 31 "next stat"
set -- $(ls -l app/cfg/k)
expect_eq "$5" 31 "next ls -l"
helper put app cfg k "tiny"
expect_eq "$(cat app/cfg/k)" tiny "a shorter value"
expect_eq "$(wc -c < app/cfg/k)" 4 "no stale tail"
ok "values"

# Repeatedly: change, then look at once.
for i in $(seq 30); do
  helper put app cfg k "round $i"
  expect_eq "$(cat app/cfg/k)" "round $i" "round $i"
done
ok "30 rounds of change-then-cat"

# Adds and deletes show in the next ls; a deleted key is gone for cat.
helper put app cfg added yes
expect_eq "$(ls app/cfg | tr '\n' ,)" "added,k," "an add"
expect_eq "$(cat app/cfg/added)" yes "cat of an added key"
helper del app cfg added
expect_eq "$(ls app/cfg | tr '\n' ,)" "k," "a delete"
cat app/cfg/added 2>/dev/null && fail "cat of a deleted key"
expect_op ENOENT read app/cfg/added
helper put app cfg added again
expect_eq "$(cat app/cfg/added)" again "re-added"
helper put other ns key v
expect_eq "$(ls | tr '\n' ,)" "app,counter,exec,other,queue," "a new scope"
ok "adds and deletes"

# Counters, queue items, log entries.
mkdir -p counter/app/stats
echo 5 > counter/app/stats/c
helper cset app stats c 123456
expect_eq "$(cat counter/app/stats/c)" 123456 "a counter"
expect_eq "$(stat -c %s counter/app/stats/c)" 7 "its size"
ls queue/jobs > /dev/null
helper qpush jobs one two
expect_eq "$(ls queue/jobs | wc -l)" 2 "queue items"
expect_eq "$(cat queue/jobs/.pop)" one "pop of an item pushed elsewhere"
helper lappend s log k entry
expect_eq "$(cat exec/s/log/k/*)" entry "a log entry"
ok "counters, queues, logs"

# O_EXCL holds among every client of the store (lock files): a second
# mount of the store (another host on PostgreSQL) and the engine see the
# name taken while the first create is still open, and its value is the
# winner's. bash's noclobber (set -C) opens with O_CREAT|O_EXCL.
mount_other "$work/b"
mkdir -p app/locks
(set -C; exec 5> app/locks/l; printf A >&5; : > "$work/held"; sleep 3) &
holder=$!
until [ -e "$work/held" ]; do nap 0.05; done
(set -C; : > "$work/b/app/locks/l") 2> /dev/null &&
  fail "an O_EXCL create in another mount of a name being created"
expect_eq "$(helper get app locks l)" "" "the name is taken in the store"
wait "$holder"
expect_eq "$(cat "$work/b/app/locks/l")" A "the winner's value"
(set -C; : > app/locks/l) 2> /dev/null && fail "O_EXCL of an existing key"
# the same for a counter (its O_EXCL was mount-local: both won)
mkdir -p counter/app/locks
(set -C; exec 5> counter/app/locks/c; printf 7 >&5; : > "$work/cheld"
 until [ -e "$work/cgo" ]; do sleep 0.05; done) &
holder=$!
until [ -e "$work/cheld" ]; do nap 0.05; done
(set -C; echo 9 > "$work/b/counter/app/locks/c") 2> /dev/null &&
  fail "an O_EXCL create of a counter in another mount while it is being created"
expect_eq "$(helper cget app locks c)" 0 "the counter is taken in the store"
: > "$work/cgo"
wait "$holder"
expect_eq "$(cat "$work/b/counter/app/locks/c")" 7 "the winner's counter"
ok "O_EXCL across mounts, values and counters"

cd /
unmount_fs
