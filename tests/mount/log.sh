#!/usr/bin/env bash
# log.sh - /exec/<scope>/<ns>/<key>/<id>: creating a file appends one
# entry (the name given names it for the creating process only: rsync -a
# and install work), entries sort in append order for ls and globs,
# entries are read-only, rm and rm -r (rm -r /exec/<scope> clears the
# family), entries written by another process, the Go SDK's "log"
# namespace. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs
cd "$mnt"
k=exec/run1/log/batch

mkdir -p $k
[ -d $k ] || fail "mkdir -p of a log key"
for i in 1 2 3; do echo "entry $i" > $k/whatever; done
expect_eq "$(ls $k | wc -l)" 3 "three entries"
expect_eq "$(cat $k/* | tr '\n' ,)" "entry 1,entry 2,entry 3," "cat * in append order"
# The name given names the newest entry for this shell alone (see below).
[ -e $k/whatever ] || fail "the creator's name of its entry"
ls $k/whatever > /dev/null 2>&1 && fail "the created name is kept for others"
helper lappend run1 log batch "entry 4"
expect_eq "$(cat $k/* | tail -n1)" "entry 4" "another process's append"
ls $k | sort -c || fail "ls order"
last=$(ls $k | tail -n1)
[[ $last =~ ^[0-9]{19}$ ]] || fail "entry name $last"
expect_eq "$(stat -c %s $k/$last)" 7 "entry size"
expect_eq "$(ls exec/run1)" log "namespaces of the scope"
ok "append and list"

expect_op EACCES write $k/$last changed
expect_op EACCES append $k/$last more
expect_eq "$(cat $k/$last)" "entry 4" "the entry is unchanged"
ok "entries are read-only"

# A key is listed while it has entries; an empty mkdir'd one too.
mkdir $k-empty
expect_eq "$(ls exec/run1/log | tr '\n' ,)" "batch,batch-empty," "log keys"
rmdir $k-empty
expect_eq "$(ls exec/run1/log)" batch "rmdir of an empty log key"
rmdir $k 2>/dev/null && fail "rmdir of a log key with entries"
rm $k/$last
expect_eq "$(ls $k | wc -l)" 3 "rm of an entry"
ok "log keys"

# rm -r /exec/<scope> clears the family; other scopes are untouched.
mkdir -p exec/run2/log/k
echo keep > exec/run2/log/k/e
rm -r exec/run1
[ ! -e exec/run1 ] || fail "rm -r /exec/run1"
expect_eq "$(ls exec)" run2 "other scopes stay"
expect_eq "$(cat exec/run2/log/k/*)" keep "their entries stay"
ok "rm -r"

# tar of a log key keeps the order; extracting appends in that order.
tar -C exec/run2/log -cf "$work/log.tar" k
for i in a b c; do echo "$i" > exec/run2/log/k/n; done
mkdir -p exec/run3/log
tar -C exec/run3/log -xf "$work/log.tar" 2>/dev/null || true
tar -C exec/run3/log -xf "$work/log.tar" --no-overwrite-dir 2>/dev/null || true
expect_eq "$(cat exec/run3/log/k/* | sed -n 1p)" keep "tar x appends"
ok "tar"

# A writer that goes on after an fsync (a logger syncing each line, a
# commit at a FLUSH while another descriptor stays open): each commit is
# one entry, and the next starts where the first write after it lands:
# where the last one ended in the file (its offset runs on; before, the
# next entry was padded with that many zero bytes), or at 0 after an
# lseek back (a program rewriting its file).
mkdir -p exec/run4/log/synced
python3 - exec/run4/log/synced/new <<'PY' || fail "a writer that fsyncs each line"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
for line in (b"one\n", b"two\n", b"three\n"):
    os.write(fd, line)
    os.fsync(fd)
os.write(fd, b"four\n")
os.close(fd)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
os.write(fd, b"five-long\n")
os.fsync(fd)
os.lseek(fd, 0, os.SEEK_SET)
os.write(fd, b"six\n")
os.close(fd)
PY
expect_eq "$(cat exec/run4/log/synced/* | tr '\0' @ | tr '\n' ,)" \
  "one,two,three,four,five-long,six," "one entry per commit, no zeros"
ok "a writer that fsyncs each entry"

# A file's name stays an alias of the entry its close appended, for the
# process that created it (docs/filesystem.md, "Names of new entries and
# items"): rsync -a and install -m into a log key exit 0 (before: 23 and
# 1, their stat, chmod and rename after the close were ENOENT) and append
# one entry per file; a second process does not see the names.
src=$work/src
mkdir -p "$src" exec/run5/log/k
printf 'one\n' > "$src/a"
printf 'two\0two' > "$src/b"
: > "$src/c"
rsync -a "$src/" exec/run5/log/k/ || fail "rsync -a into a log key: exit $?"
entries=(exec/run5/log/k/*)
expect_eq "${#entries[@]}" 3 "rsync -a: one entry per file"
for i in 0 1 2; do
  f=$src/$(printf '%s\n' a b c | sed -n "$((i + 1))p")
  cmp -s "${entries[$i]}" "$f" || fail "rsync -a: entry $i is not $f's bytes"
done
install -m 644 "$src/a" exec/run5/log/k/ ||
  fail "install -m 644 into a log key: exit $?"
expect_eq "$(ls exec/run5/log/k | wc -l)" 4 "install: one entry"
echo 1 > exec/run5/log/k/job
echo 2 > exec/run5/log/k/job
[ -e exec/run5/log/k/job ] || fail "the creator does not see its alias"
stat exec/run5/log/k/job > /dev/null 2>&1 && fail "another process sees it"
expect_eq "$(ls exec/run5/log/k | grep -cx '[0-9]\{19\}')" 6 \
  "> twice from one shell: two entries, listed by id alone"
ok "names of new entries: rsync, install, aliases"

cd /
unmount_fs
