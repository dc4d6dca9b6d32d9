#!/usr/bin/env bash
# errors.sh - bad input gets its errno and leaves the store exactly as it
# was (a dump of every row before and after): EPERM for symlinks, hard
# links, device nodes, fifos and misplaced files; EACCES for writing log
# entries, queue items and special files; EFBIG over max_value; EINVAL for
# counter garbage and names that are no name; ENOTEMPTY, ENODATA, ENOENT,
# EXDEV, EBUSY, EISDIR. The daemon survives all of it.
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs -o max_value=4K
cd "$mnt"
mkdir -p app/cfg counter/app/stats exec/s/log/k
echo v > app/cfg/k
echo 5 > counter/app/stats/c
echo e > exec/s/log/k/new
helper qpush q item
entry=$(ls exec/s/log/k)
item=$(ls queue/q)
before=$(helper dump)

expect_op EPERM symlink app/cfg/link k
expect_op EPERM link app/cfg/hard app/cfg/k
expect_op EPERM mknod app/cfg/dev
expect_op EPERM mkfifo app/cfg/fifo
expect_op EPERM write file-at-root x
expect_op EPERM write app/file-in-a-scope x
expect_op EPERM mkdir app/cfg/dir-in-a-namespace
# No extended attributes and no O_TMPFILE: EOPNOTSUPP, what ext4 mounted
# without them says (tar --xattrs, cp -a and rsync -X go on without).
expect_op EOPNOTSUPP getxattr app/cfg/k user.x
expect_op EOPNOTSUPP setxattr app/cfg/k user.x
expect_op EOPNOTSUPP listxattr app/cfg/k
expect_op EOPNOTSUPP getxattr "exec/s/log/k/$entry" user.x
expect_op EOPNOTSUPP tmpfile app/cfg
expect_op EPERM mkreg exec/s/log/k/made
expect_op EINVAL truncate counter/app/stats/c 3
expect_op EPERM mkdir queue/q/dir
expect_op EPERM unlink queue/q/.pop
expect_op EPERM unlink app/cfg/.drain
expect_op EPERM rename queue/q/.pop queue/q/x
expect_op EPERM rename app/cfg/k app/cfg/.drain
expect_op EBUSY rmdir exec
expect_op EBUSY rmdir queue/q/inflight
expect_op EBUSY rmdir queue/q/dead
ok "EPERM, EBUSY"

expect_op EACCES write "exec/s/log/k/$entry" x
expect_op EACCES append "exec/s/log/k/$entry" x
expect_op EACCES write "queue/q/$item" x
for s in queue/q/.pop queue/q/.drain queue/q/.wait app/cfg/.drain; do
  expect_op EACCES openw $s
done
expect_op EACCES truncate "exec/s/log/k/$entry" 0
expect_op EACCES readtrunc "exec/s/log/k/$entry"
ok "EACCES"

big=$(head -c 5000 /dev/zero | tr '\0' x)
expect_op EFBIG write app/cfg/k "$big"
expect_op EFBIG write app/cfg/new-key "$big"
expect_op EFBIG append app/cfg/k "$big"
expect_op EFBIG truncate app/cfg/k 5000
expect_op EFBIG write queue/q/new "$big"
expect_op EFBIG write exec/s/log/k/new "$big"
[ ! -e app/cfg/new-key ] || fail "a refused create left a key"
expect_op OK write app/cfg/fits "$(head -c 4096 /dev/zero | tr '\0' y)"
rm app/cfg/fits
ok "EFBIG over max_value=4K"

for bad in abc 1.5 + 99999999999999999999; do
  expect_op EINVAL write counter/app/stats/c "$bad"
done
expect_op EINVAL write 'app/cfg/a%zz' x
expect_op EINVAL write 'app/cfg/a%2f' x
expect_op EINVAL write 'app/cfg/%61' x
expect_op EINVAL mkdir '%x0'
expect_op EINVAL rename app/cfg/k 'app/cfg/bad%'
ok "EINVAL"

expect_op ENOTEMPTY rmdir app/cfg
expect_op ENOTEMPTY rmdir app
expect_op ENOTEMPTY rmdir exec/s/log/k
expect_op ENOTEMPTY rmdir queue/q
expect_op ENODATA read queue/empty/.pop
expect_op ENOENT read app/cfg/missing
expect_op ENOENT read queue/q/0000000000000000999
expect_op ENOENT write no-scope/ns/k x
expect_op ENOENT unlink app/cfg/missing
expect_op EXDEV rename app/cfg/k counter/app/stats/k
expect_op EXDEV rename "exec/s/log/k/$entry" exec/s/log/k/0000000000000000777
# into another family under a name it cannot hold there: EXDEV all the
# same (mv then copies: a push, an entry), not EINVAL
expect_op EXDEV rename app/cfg/k queue/q/job
expect_op EXDEV rename app/cfg/k exec/s/log/k/job
item=$(ls queue/q | head -n 1)
expect_op EXDEV rename "queue/q/$item" queue/other/job
expect_op EINVAL rename "queue/q/$item" queue/q/job # an item keeps its name
# a scope or namespace that would change level: EPERM while it holds
# anything (it was EXDEV, and mv's copy stopped at its first child and left
# the target half made); an empty one EXDEV, which mv copies
mkdir -p lv1/n lv2/n
echo v > lv2/n/k
expect_op EPERM rename lv2 lv1/lv2
expect_op EPERM rename lv2/n lvn
[ ! -e lv1/lv2 ] && [ ! -e lvn ] && [ "$(cat lv2/n/k)" = v ] || fail "a refused level change changed something"
expect_op EXDEV rename lv1/n lvn
mkdir lv3
mv lv3 lv1/lv3
[ -d lv1/lv3 ] && [ ! -e lv3 ] || fail "mv of an empty scope into a scope"
rm -r lv1 lv2
expect_op EISDIR write app/cfg x
expect_op ENOTDIR mkdir app/cfg/k/x
ok "ENOTEMPTY, ENODATA, ENOENT, EXDEV, EPERM, EISDIR, ENOTDIR"

expect_eq "$(helper dump)" "$before" "the store after all the refusals"
expect_eq "$(cat app/cfg/k)" v "the value"
ok "the store is as it was"

cd /
unmount_fs

if [ -z "$pg" ]; then
  # The store's file replaced under the mount (`mv other.db state.db`, a
  # checkpoint put back by hand): the mount goes on with the file it
  # opened, which has no name any more, so what it committed from then on
  # was acknowledged and lost at the unmount (`echo v > k` exited 0,
  # nothing logged). A write now fails with EIO and the log says why;
  # reads go on, from the file the mount opened.
  allow_log 'is no longer the file this process opened'
  cp "$STATEFS_DB" "$work/other.db"   # the store, closed: a whole copy
  mount_fs
  mv "$work/other.db" "$STATEFS_DB"
  expect_op EIO write "$mnt/app/cfg/k2" lost
  grep -q "$STATEFS_DB is no longer the file this process opened (removed, renamed or replaced)" \
    "$work/daemon.err" || fail "no log line naming the replaced store: $(cat "$work/daemon.err")"
  expect_eq "$(cat "$mnt/app/cfg/k")" v "a read after the replacement"
  unmount_fs
  ok "a write to a store replaced under the mount: EIO and a log line"
fi
