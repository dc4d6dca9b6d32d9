#!/usr/bin/env bash
# kv.sh - /<scope>/<ns>/<key> with the everyday tools: echo >, cat, ls -l,
# stat, cp, mv (replacing, so sed -i works), rm, rm -r, mkdir -p, rmdir,
# tee -a, dd conv=notrunc, truncate, O_APPEND, fsync, the stored mtime
# (touch sets it to now), df, and .drain read with jq. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs
cd "$mnt"

# The fixed directories, and nothing else, in a fresh store.
expect_eq "$(ls)" "$(printf 'counter\nexec\nqueue')" "a fresh root"

# mkdir persists; echo > and cat.
mkdir -p app/cfg
echo hello > app/cfg/greeting
expect_eq "$(cat app/cfg/greeting)" hello "cat after echo >"
expect_eq "$(helper get app cfg greeting)" hello "the store holds it"
ok "echo > and cat"

# ls -l and stat: size is the value's length, mtime when it was written.
before=$(date +%s)
printf '%s' 12345 > app/cfg/five
after=$(date +%s)
set -- $(ls -l app/cfg/five)
expect_eq "$1" "-rw-------" "mode (the owner only, umask 077)"
expect_eq "$5" 5 "ls -l size"
expect_eq "$(stat -c %s app/cfg/five)" 5 "stat size"
mt=$(stat -c %Y app/cfg/five)
[ "$mt" -ge "$before" ] && [ "$mt" -le "$after" ] || fail "mtime $mt not in [$before, $after]"
expect_eq "$(stat -c %F app/cfg)" directory "a namespace is a directory"
# touch sets a value's mtime to now (make, find -newer), its bytes kept;
# before, it was ignored. The store keeps whole seconds: wait for the next.
while [ "$(date +%s)" -le "$mt" ]; do nap 0.1; done
touch app/cfg/five
mt2=$(stat -c %Y app/cfg/five)
[ "$mt2" -gt "$mt" ] || fail "touch: mtime $mt2, written at $mt"
expect_eq "$(helper get app cfg five)" 12345 "touch keeps the bytes"
# An imported time keeps its nanoseconds; one before 1970 shows as it is,
# a second below with the nanoseconds above it (it showed -1 ns for
# -1.5 s: the nanoseconds were negative).
helper kvtimed app cfg t1969 v -1500000000
helper kvtimed app cfg t1970 v 1500000001
expect_eq "$(stat -c %.9Y app/cfg/t1969),$(stat -c %.9Y app/cfg/t1970)" \
  "-1.500000000,1.500000001" "imported times"
rm app/cfg/t1969 app/cfg/t1970
ok "ls -l and stat, touch; imported times"

# O_APPEND (>> and tee -a), dd conv=notrunc, truncate.
echo one > app/cfg/log
echo two >> app/cfg/log
echo three | tee -a app/cfg/log >/dev/null
expect_eq "$(cat app/cfg/log)" "$(printf 'one\ntwo\nthree')" ">> and tee -a"
printf 'XY' | dd of=app/cfg/log bs=1 seek=1 conv=notrunc status=none
expect_eq "$(head -n1 app/cfg/log)" oXY "dd conv=notrunc"
truncate -s 2 app/cfg/log
expect_eq "$(cat app/cfg/log)" oX "truncate -s 2"
truncate -s 4 app/cfg/log
expect_eq "$(od -An -c app/cfg/log | tr -s ' ')" " o X \\0 \\0" "truncate grows with zeros"
: > app/cfg/log
expect_eq "$(stat -c %s app/cfg/log)" 0 ": > empties"
expect_eq "$(helper get app cfg log | wc -c)" 0 "the store holds the empty value"
# A descriptor whose only change is its O_TRUNC: alone it empties the
# value at its close; a value another writer stored after the open stays,
# as on a local filesystem (the cut came first).
echo old > app/cfg/cut
exec 3> app/cfg/cut
exec 3>&-
expect_eq "$(stat -c %s app/cfg/cut)" 0 "exec 3>k; exec 3>&- empties"
echo old > app/cfg/cut
exec 3> app/cfg/cut
echo hello > app/cfg/cut
# While the first descriptor is still open, the mount shows the newer
# value, not the first descriptor's cut (nor, below, its create).
expect_eq "$(cat app/cfg/cut)" hello "the stored value, the cut still open"
expect_eq "$(stat -c %s app/cfg/cut)" 6 "its size, the cut still open"
exec 3>&-
expect_eq "$(cat app/cfg/cut)" hello "a value stored after another descriptor's O_TRUNC"
expect_eq "$(helper get app cfg cut)" hello "the same in the store"
exec 3> app/cfg/made
echo hello > app/cfg/made
expect_eq "$(cat app/cfg/made)" hello "the stored value, its create still open"
expect_eq "$(stat -c %s app/cfg/made)" 6 "its size, the create still open"
echo more >> app/cfg/made
expect_eq "$(cat app/cfg/made)" "hello
more" "an append to it, the create still open"
exec 3>&-
expect_eq "$(cat app/cfg/made)" "hello
more" "a value stored after another descriptor's create"
rm app/cfg/made
# fd 3 does not make the close of the command's own file look held: it
# commits at its close (a program that inherited fd 3, too), so the store
# has it at once.
exec 3> app/cfg/made
/bin/echo hello > app/cfg/made
expect_eq "$(helper get app cfg made)" hello "stored at the close, fd 3 open"
expect_eq "$(cat app/cfg/made)" hello "shown at the close, fd 3 open"
echo again > app/cfg/made
expect_eq "$(helper get app cfg made)" again "a builtin's, fd 3 open"
exec 3>&-
rm app/cfg/made
# O_RDONLY|O_TRUNC cuts the value, as Linux does on ext4 and tmpfs
# (before, the mount ignored the O_TRUNC of a read-only open).
echo old > app/cfg/rtrunc
expect_eq "$(fsop -v readtrunc app/cfg/rtrunc)" OK "O_RDONLY|O_TRUNC reads nothing"
expect_eq "$(stat -c %s app/cfg/rtrunc)" 0 "O_RDONLY|O_TRUNC cuts"
expect_eq "$(cat app/cfg/rtrunc)" "" "O_RDONLY|O_TRUNC cut, read back"
rm app/cfg/rtrunc
ok "append, dd conv=notrunc, truncate"

# A value is replaced whole: a reader never sees a half. A second reader
# opened during a write keeps its snapshot.
seq 1 20000 > "$work/big"
cp "$work/big" app/cfg/big
cmp "$work/big" app/cfg/big || fail "cp round trip"
exec 3< app/cfg/big
seq 20001 30000 > app/cfg/big
cmp - "$work/big" <&3 || fail "an open reader kept its snapshot"
exec 3<&-
expect_eq "$(head -n1 app/cfg/big)" 20001 "the new value after close"
ok "cp, snapshots"

# fsync: a value written with conv=fsync is in the store (and the store
# is synced; durability itself is the engine's test).
echo synced | dd of=app/cfg/s conv=fsync status=none
expect_eq "$(helper get app cfg s)" synced "dd conv=fsync"
ok "fsync"

# mv: key to key replacing the target (atomic), sed -i, across namespaces.
echo a > app/cfg/x
echo b > app/cfg/y
mv app/cfg/x app/cfg/y
expect_eq "$(cat app/cfg/y)" a "mv replaces"
[ ! -e app/cfg/x ] || fail "mv left the source"
printf 'colour=red\nsize=3\n' > app/cfg/ini
sed -i 's/red/blue/' app/cfg/ini
expect_eq "$(head -n1 app/cfg/ini)" colour=blue "sed -i"
expect_eq "$(ls app/cfg | grep -c sed)" 0 "sed's temporary file is gone"
mkdir app/other
mv app/cfg/y app/other/y
expect_eq "$(cat app/other/y)" a "mv across namespaces"
expect_eq "$(helper get app other y)" a "moved in the store"
ok "mv and sed -i"

# RENAME_EXCHANGE (renameat2; `mv --exchange` in coreutils 9.5): two
# values swap, each with its bytes and time, in the store too; a reader
# open on one follows it; a file still being written follows its
# descriptor; both must exist, and only values or counters swap.
echo one > app/cfg/e1
printf 'two\n2\n' > app/cfg/e2
touch -d @1000000000 app/cfg/e1
exec 3< app/cfg/e1
expect_op OK exchange app/cfg/e1 app/cfg/e2
expect_eq "$(cat app/cfg/e1)" "$(printf 'two\n2')" "exchanged: e1"
expect_eq "$(cat app/cfg/e2)" one "exchanged: e2"
expect_eq "$(stat -c %Y app/cfg/e2)" 1000000000 "the time went with it"
expect_eq "$(helper get app cfg e1)" "$(printf 'two\n2')" "exchanged in the store"
expect_eq "$(cat <&3)" one "an open reader follows its file"
exec 3<&-
echo w > app/other/w
expect_op OK exchange app/cfg/e2 app/other/w
expect_eq "$(cat app/other/w)" one "exchanged across namespaces"
expect_eq "$(helper get app cfg e2)" w "exchanged across namespaces, store"
exec 4> app/cfg/e3
echo three >&4
expect_op OK exchange app/cfg/e3 app/cfg/e1
expect_eq "$(cat app/cfg/e3)" "$(printf 'two\n2')" "exchanged with a file being written"
exec 4>&-
expect_eq "$(cat app/cfg/e1)" three "the written file's close stores it under its new name"
expect_eq "$(helper get app cfg e1)" three "... in the store"
expect_op ENOENT exchange app/cfg/e1 app/cfg/absent
expect_op EINVAL exchange app/cfg/e1 app/other
expect_eq "$(cat app/cfg/e1)" three "a refused exchange changes nothing"
rm app/cfg/e1 app/cfg/e2 app/cfg/e3 app/other/w
ok "RENAME_EXCHANGE"

# Directories: mv of a namespace and of a scope, rmdir refuses non-empty,
# mkdir of empty ones persists across a remount.
mv app/other app/renamed
expect_eq "$(cat app/renamed/y)" a "namespace renamed"
mkdir app2
mv app2 app3
[ -d app3 ] || fail "scope renamed"
mkdir -p far/ns
echo far > far/ns/k
mv far/ns app3/moved
expect_eq "$(helper get app3 moved k)" far "a namespace moved to another scope"
rm -r app3/moved far
rmdir app/renamed 2>/dev/null && fail "rmdir of a non-empty namespace"
expect_op ENOTEMPTY rmdir app/renamed
mkdir -p empty/ns
cd /
unmount_fs
mount_fs
cd "$mnt"
[ -d empty/ns ] || fail "an empty namespace persists"
[ -d app3 ] || fail "an empty scope persists"
rmdir empty/ns empty app3
[ ! -e empty ] || fail "rmdir"
# A directory removed while a shell is in it is an empty directory with
# no link, as on ext4 and tmpfs: ls works, stat says 0 links, a create
# there is ENOENT. Before, its GETATTR was ENOENT, so fstat and ls failed.
mkdir -p gone/ns
(
  cd gone/ns
  rmdir ../ns ../../gone
  ls -a . >/dev/null || fail "ls in a removed namespace"
  expect_eq "$(ls -a .)" "" "ls -a in a removed namespace (the kernel: nothing, not even . and ..)"
  expect_eq "$(stat -c %h .)" 0 "links of a removed namespace"
  expect_op ENOENT write k x
)
[ ! -e gone ] || fail "a create in a removed namespace made it again"
ok "directories"

# cp -r and rm -r.
cp -r app "$work/copy"
mkdir -p copied
cp -r "$work/copy/cfg" copied/
diff -r "$work/copy/cfg" copied/cfg || fail "cp -r in and out"
rm -r copied
[ ! -e copied ] || fail "rm -r"
expect_eq "$(helper kvcount copied cfg)" 0 "rm -r emptied the store"
ok "cp -r, rm -r"

# .drain: JSON Lines, atomically, and the namespace is empty afterwards;
# it is never listed.
mkdir -p jobs/results
for i in 1 2 3; do echo "r$i" > jobs/results/k$i; done
ls -a jobs/results | grep drain >/dev/null && fail ".drain is listed"
expect_eq "$(jq -r .value jobs/results/.drain | tr -d '\n')" r1r2r3 "jq over .drain"
expect_eq "$(ls jobs/results | wc -l)" 0 "drained"
expect_eq "$(cat jobs/results/.drain | wc -c)" 0 "an empty drain reads nothing"
ok ".drain"

# df: the store's size used, the disk's space available.
df -P "$mnt" | tail -n1 | awk '{ exit !($2 > 0 && $4 > 0) }' || fail "df"
ok "df"

cd /
unmount_fs
