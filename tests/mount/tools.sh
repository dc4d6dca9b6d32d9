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
rsync -a app/ app3/   # nothing to do the second time
diff -r app app3 || fail "second rsync"
ok "rsync -a"

cd /
unmount_fs
