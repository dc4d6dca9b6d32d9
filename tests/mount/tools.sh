#!/usr/bin/env bash
# tools.sh - tools that walk the whole mount change nothing (grep -r,
# find -exec cat, xargs, tar c, cp -r, rsync, diff -r, ls -lR, du: no pop,
# no drain, queue lengths and key counts the same before and after), and
# tar and rsync round trips of values and counters through the mount;
# mknod of a regular file (tar --xattrs) makes an empty one; fallocate.
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs
cd "$mnt"

# Some of everything.
mkdir -p app/cfg app/data counter/app/stats exec/run/log/k
for i in 1 2 3; do echo "value $i" > app/cfg/k$i; done
printf 'line one\nline two\n' > app/data/text
seq 1 3000 > app/data/numbers
echo 42 > counter/app/stats/done
echo 7 > counter/app/stats/failed
for i in 1 2; do echo "entry $i" > exec/run/log/k/e; done
helper qpush q1 a b c
helper qpush q2 d e
helper worker exec1 12 "worker twelve"
state() {
  echo "$(helper qlen q1) $(helper qlen q2) $(helper kvcount app cfg)" \
       "$(helper kvcount app data) $(helper dump | md5sum)"
}
before=$(state)

grep -r "value" . > /dev/null
grep -rl "nothing matches this" . && fail "grep found something"
find . -type f -exec cat {} + > /dev/null
find . -type f -print0 | xargs -0 cat > /dev/null
find . -name '.*' -type f | grep . >/dev/null && fail "find lists a special file"
ls -laR > /dev/null
du -a > /dev/null
tar -cf "$work/all.tar" .
cp -r . "$work/copy"
rsync -a . "$work/rsync/"
diff -r . "$work/copy" || fail "diff -r mount copy"
diff -r "$work/copy" "$work/rsync" || fail "diff -r copy rsync"
expect_eq "$(state)" "$before" "the walks changed nothing"
[ -z "$(find "$work/copy" -name '.*')" ] || fail "a special file was copied"
expect_eq "$(cat "$work/copy/queue/q1/"* | tr -d '\n')" abc "queue items peeked"
expect_eq "$(ls "$work/copy/exec1/worker")" 12 "worker ids in decimal"
ok "grep -r, find, xargs, tar c, cp -r, rsync, diff -r, ls -lR, du change nothing"

# tar round trip: values and counters out and back in under new names.
tar -C "$mnt" -cf "$work/kv.tar" app
tar -C "$mnt" --transform 's,^app,app2,' -xf "$work/kv.tar"
diff -r app app2 || fail "tar round trip of values"
tar -C "$mnt/counter" -cf "$work/c.tar" app
tar -C "$mnt/counter" --transform 's,^app,app2,' -xf "$work/c.tar"
diff -r counter/app counter/app2 || fail "tar round trip of counters"
expect_eq "$(helper cget app2 stats done)" 42 "counter restored by tar x"
ok "tar c / tar x"

# mknod of a regular file (tar x --xattrs makes each file with it, then
# opens it): an empty value or counter, EEXIST when there is one. Before,
# every mknod was EPERM and tar --xattrs extracted nothing.
expect_op OK mkreg app/cfg/made
expect_eq "$(helper get app cfg made; echo .)" . "mknod made an empty value"
expect_op EEXIST mkreg app/cfg/made
expect_op OK mkreg counter/app/stats/made
expect_eq "$(helper cget app stats made)" 0 "mknod made a counter at 0"
expect_op EEXIST mkreg counter/app/stats/made
expect_op EPERM mkreg queue/q/made
rm app/cfg/made counter/app/stats/made
ok "mknod of a regular file"

# fallocate(1) and posix_fallocate: the value made that long (zeros), or
# left as it is with --keep-size and when it is longer; punching a hole
# is EOPNOTSUPP. Before, every fallocate was EOPNOTSUPP and `fallocate
# -l` left an empty file.
fallocate -l 100000 app/cfg/alloc || fail "fallocate -l"
expect_eq "$(stat -c %s app/cfg/alloc)" 100000 "the size fallocate made"
cmp -s app/cfg/alloc <(head -c 100000 /dev/zero) || fail "fallocate made other bytes than zeros"
printf abc > app/cfg/alloc
fallocate -n -l 1M app/cfg/alloc || fail "fallocate --keep-size"
fallocate -o 1 -l 1 app/cfg/alloc || fail "fallocate inside the value"
expect_eq "$(cat app/cfg/alloc)" abc "a value fallocate had nothing to add to"
fallocate -p -o 0 -l 1 app/cfg/alloc 2>/dev/null && fail "a punched hole"
python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"de"); os.posix_fallocate(fd, 0, 8); os.close(fd)' app/cfg/alloc
expect_eq "$(od -An -c app/cfg/alloc | tr -s ' ')" " a b c d e \\0 \\0 \\0" "posix_fallocate after a write"
rm app/cfg/alloc
ok "fallocate"

# rsync -a round trip (temporary file, chmod, utimes, rename on the way in).
rsync -a app/ "$work/rs/"
rsync -a "$work/rs/" app3/
diff -r app app3 || fail "rsync -a round trip"
expect_eq "$(ls -a app3/cfg | grep -c '^\.')" 2 "no rsync temporary left"
# nothing to copy the second time: the times rsync gave are kept (they
# were not: every file was copied again at every run)
out=$(rsync -ai app/ app3/)
grep '^>f' <<<"$out" && fail "the second rsync copied again: $out"
diff -r app app3 || fail "second rsync"
ok "rsync -a"

# Times given: touch -d of a value and of a new one, cp -a (futimens on
# an open file, before its close), a write after them (its own time),
# and times past what the store's int64 ns hold (2262, 1677), stored as
# the nearest they hold, as ext4 clamps to its range (EINVAL before, so
# tar x and rsync -a of such a file failed)
printf v > app/cfg/timed
touch -d "2020-01-02 03:04:05.6" app/cfg/timed
expect_eq "$(stat -c %Y app/cfg/timed)" "$(date -d '2020-01-02 03:04:05' +%s)" "touch -d of a value"
touch -d "1999-12-31 23:59:59" app/cfg/timed-new
expect_eq "$(stat -c %Y app/cfg/timed-new)" "$(date -d '1999-12-31 23:59:59' +%s)" "touch -d making a value"
printf src > "$work/src"
touch -d "2010-05-05 05:05:05" "$work/src"
cp -a "$work/src" app/cfg/timed-cp
expect_eq "$(stat -c %Y app/cfg/timed-cp)" "$(stat -c %Y "$work/src")" "cp -a"
expect_eq "$(cat app/cfg/timed-cp)" src "cp -a's bytes"
before=$(date +%s)
printf w >> app/cfg/timed
[ "$(stat -c %Y app/cfg/timed)" -ge "$before" ] || fail "a write after touch -d kept the time given"
touch -d "3000-01-01" app/cfg/timed
expect_eq "$(stat -c %Y app/cfg/timed)" 9223372036 "touch -d 3000-01-01: the latest second"
touch -d "1600-01-01 UTC" app/cfg/timed
expect_eq "$(stat -c %Y app/cfg/timed)" -9223372036 "touch -d 1600-01-01: the earliest second"
# A write after a later time given (a file from a host whose clock was
# ahead) has its own time too, and rsync -a from the mount, which skips
# files of the same size and time, copies the change.
mkdir "$work/bak"
touch -d "2100-01-01" app/cfg/timed
rsync -a app/cfg/timed "$work/bak/"
printf xy > app/cfg/timed  # the same length
[ "$(stat -c %Y app/cfg/timed)" -le "$(date +%s)" ] ||
  fail "a write after touch -d 2100 kept the time given"
rsync -a app/cfg/timed "$work/bak/"
expect_eq "$(cat "$work/bak/timed")" xy "rsync -a of a value written after touch -d 2100"
# The epoch given is kept as a time (1970-01-01, as a local file system
# keeps it), not as "unknown", which a row another SDK wrote has and
# which the mount shows as the epoch too (before 2026-12-04 touch -d @0
# stored 0, which reads as unknown: statectl and export left it out)
printf v > app/cfg/epoch
touch -d @0 app/cfg/epoch
expect_eq "$(stat -c %Y app/cfg/epoch)" 0 "touch -d @0"
expect_eq "$(stat -c %y app/cfg/epoch)" "$(date -d @0 '+%Y-%m-%d %H:%M:%S.000000000 %z')" "touch -d @0, to the nanosecond"
expect_eq "$(helper kvmtime app cfg epoch)" 0 "the store's time of a value given the epoch"
helper kvtimed app cfg sdk v 0
expect_eq "$(helper kvmtime app cfg sdk)" unknown "the store's time of a value another SDK wrote"
expect_eq "$(stat -c %Y app/cfg/sdk)" 0 "a value another SDK wrote shows the epoch"
rm app/cfg/timed app/cfg/timed-new app/cfg/timed-cp app/cfg/epoch app/cfg/sdk
ok "times given: touch -d, cp -a; a write after them, also after a later time; the epoch"

cd /
unmount_fs
