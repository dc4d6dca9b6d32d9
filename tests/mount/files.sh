#!/usr/bin/env bash
# files.sh - values as files, where tools expect a filesystem:
#   - attributes of an open handle: fsx's first probe (ftruncate 0 and
#     100000, fstat), lseek(SEEK_END) and fstat after unsaved writes, a
#     write after SEEK_END appends, fstat of a deleted file says st_nlink 0,
#     a file open O_RDWR reads its own bytes after rm or a replacing mv,
#     and a shorter value stored meanwhile whole, without zeros,
#     an O_DSYNC write is in the store before the close;
#   - copy_file_range on a handle before its commit, looping until done,
#     and cp (coreutils uses copy_file_range) of a value in the mount;
#   - create, close, unlink 2,000 times (O_CREAT|O_EXCL), nothing left; a
#     file unlinked while still open after its creation stays deleted;
#   - O_CREAT without O_EXCL never fails with ENOENT: 8 processes racing
#     `echo +1 >` to make a counter, 300 times: every add lands;
#   - rmdir of a namespace whose only file is being created: ENOTEMPTY;
#   - a 1-byte pwrite at 64 MiB - 1 on 8 handles pins no 64 MiB; the bound
#     on buffered bytes (-o max_buffered): ENOBUFS, the store unchanged;
#   - two shells appending (>>) to one new key: every line lands, whole;
#   - tail -f on a value follows appends through the mount and by another
#     process;
#   - truncate(1) racing puts by another process never loses a put;
#   - a listing longer than the kernel's replies, read with a small
#     getdents buffer while files come and go and LOOKUPs turn READDIR into
#     READDIRPLUS, lists every file present throughout exactly once, and
#     seekdir to a telldir offset lists the same entries again.
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"
: "${STATEFS_FILEOPS:?}"
fileops() { "$STATEFS_FILEOPS" "$@"; }
field() { sed -n "s/^$1 //p"; }   # the value of "name value" lines
bg=()
reap_bg() { for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap 'rc_=$?; set +e; reap_bg; (exit $rc_); cleanup' EXIT

# hold NAME PATH BYTES [sync]: a file held open (fileops hold; O_DSYNC
# with sync) until `release NAME`; waits until fileops has written and
# said so in $work/hold.NAME ("ready", or the write's errno).
hold() {
  fileops hold "$2" "$3" "$work/go.$1" ${4:-} > "$work/hold.$1" &
  bg+=($!)
  eval "held_$1=$!"
  for _ in $(seq 600); do [ -s "$work/hold.$1" ] && return 0; nap 0.05; done
  fail "fileops hold $2 said nothing"
}
release() { # NAME
  local pid=held_$1
  touch "$work/go.$1"
  wait "${!pid}" || fail "fileops hold $1: $(cat "$work/hold.$1")"
}
said() { head -n1 "$work/hold.$1"; }

mount_fs
cd "$mnt"
mkdir -p s/n counter/s/c

# Attributes through a handle.
out=$(fileops handle "$mnt/s/n/h") || fail "fileops handle: $out"
expect_eq "$(field probe <<< "$out")" 100000 "fsx's probe: fstat after ftruncate"
expect_eq "$(field seek_end <<< "$out")" 11 "lseek(SEEK_END) before the commit"
expect_eq "$(field fstat <<< "$out")" 11 "fstat before the commit"
expect_eq "$(cat s/n/h)" "hello worldX" "a write after SEEK_END appends"
out=$(fileops deleted "$mnt/s/n/d") || fail "fileops deleted: $out"
expect_eq "$(field nlink <<< "$out")" 0 "fstat of a deleted file: st_nlink"
expect_eq "$(field size <<< "$out")" 3 "fstat of a deleted file: st_size"
# A listing of the directory gives the open file's unsaved length too:
# the kernel takes READDIRPLUS's size for its own (fsx beside `ls -l`).
printf 0123456789 > s/n/l
out=$(fileops listed "$mnt/s/n/l") || fail "fileops listed: $out"
expect_eq "$(field fstat <<< "$out")" 100 "fstat after a listing"
expect_eq "$(field seek_end <<< "$out")" 100 "lseek(SEEK_END) after a listing"
expect_eq "$(stat -c %s s/n/l)" 101 "the write at SEEK_END appended"
expect_eq "$(tail -c 1 s/n/l)" Z "the write at SEEK_END appended: its byte"
# A file being created is listed, as from creat(2) on a local filesystem.
mkdir s/pc
exec 4> s/pc/new
printf x >&4
expect_eq "$(ls s/pc)" new "a file being created is listed"
expect_eq "$(ls -l s/pc | awk 'NR == 2 { print $5 }')" 1 \
  "a file being created: its size in ls -l"
rmdir s/pc 2> /dev/null && fail "rmdir of a namespace holding a file being created"
exec 4>&-
expect_eq "$(ls s/pc)" new "listed once, created"
rm s/pc/new
# Created while a listing is open: listed once. The directory is opened
# (OPENDIR) while the file is being created, the create committed, then
# the listing read; before, the name came from both and was listed twice.
exec 4> s/pc/new
printf x >&4
coproc LS { python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
print("open", flush=True)
sys.stdin.readline()
print(" ".join(sorted(e.name for e in os.scandir(fd))), flush=True)' s/pc; }
read -r line <&"${LS[0]}"
exec 4>&-
echo go >&"${LS[1]}"
read -r line <&"${LS[0]}"
wait "$LS_PID" || fail "the listing of a create committed after OPENDIR failed"
expect_eq "$line" new "a create committed after OPENDIR: listed once"
rm s/pc/new
# seekdir to what telldir said, after entries before it were removed and
# added, resumes after that entry, as on ext4 and tmpfs: the offset names
# the entry. Before, it was a count, so the listing skipped as many
# unread entries as had been removed (600 keys: past the pages kept).
mkdir s/sd
python3 - s/sd <<'PY' || fail "seekdir after removals and additions"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class dirent(ctypes.Structure):
    _fields_ = [('ino', ctypes.c_uint64), ('off', ctypes.c_int64),
                ('reclen', ctypes.c_ushort), ('type', ctypes.c_ubyte),
                ('name', ctypes.c_char * 256)]
libc.opendir.restype = ctypes.c_void_p
libc.readdir.restype = ctypes.POINTER(dirent)
libc.readdir.argtypes = libc.telldir.argtypes = [ctypes.c_void_p]
libc.closedir.argtypes = libc.rewinddir.argtypes = [ctypes.c_void_p]
libc.telldir.restype = ctypes.c_long
libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
d = sys.argv[1]
for i in range(600):
    os.close(os.open('%s/k%03d' % (d, i), os.O_WRONLY | os.O_CREAT, 0o600))
def rest(h):
    out = []
    while True:
        e = libc.readdir(h)
        if not e:
            return out
        out.append(e.contents.name.decode())
h = libc.opendir(d.encode())
got = []
while len(got) < 102:
    got.append(libc.readdir(h).contents.name.decode())
loc = libc.telldir(h)
first = set(got) | set(rest(h))
removed = [n for n in got if n.startswith('k')][:20]
for n in removed:
    os.unlink(d + '/' + n)
for i in range(5):
    os.close(os.open('%s/a%d' % (d, i), os.O_WRONLY | os.O_CREAT, 0o600))
libc.seekdir(h, loc)
want = sorted(first - set(got))
tail = sorted(n for n in rest(h) if not n.startswith('a'))
if tail != want:
    sys.exit('after seekdir: %d entries, want %d; missing %s' %
             (len(tail), len(want), sorted(set(want) - set(tail))[:5]))
# The same offset after a rewind and a second pass as far (which counts
# other entries now): the listing resumes after that entry all the same.
libc.rewinddir(h)
for _ in range(102):
    libc.readdir(h)
libc.seekdir(h, loc)
tail = sorted(n for n in rest(h) if not n.startswith('a'))
libc.closedir(h)
if tail != want:
    sys.exit('after rewinddir and seekdir: %d entries, want %d; missing %s' %
             (len(tail), len(want), sorted(set(want) - set(tail))[:5]))
PY
# A namespace renamed while it is listed goes on being listed, as an open
# directory does on a local filesystem; before, the listing read its old
# address from then on and ended there (216 of 585 names here).
python3 - s/sd s/sd-moved <<'PY' || fail "listing a namespace renamed meanwhile"
import os, sys
it = os.scandir(sys.argv[1])
seen = [next(it).name for _ in range(50)]
os.rename(sys.argv[1], sys.argv[2])
seen += [e.name for e in it]
want = sorted(os.listdir(sys.argv[2]))
if sorted(seen) != want:
    sys.exit('listed %d of %d after the rename' % (len(seen), len(want)))
PY
rm -r s/sd-moved
# A file open for reading and writing (O_RDWR) keeps its bytes when it
# is deleted or replaced, as an unlinked file does: before, its reads
# showed zeros (the store's bytes were gone) or the new value's.
printf abcdef > s/n/rw
exec 5<> s/n/rw
rm s/n/rw
expect_eq "$(cat <&5)" abcdef "an O_RDWR file read after rm"
exec 5>&-
printf abcdef > s/n/rw
printf NEW > s/n/rw.new
exec 5<> s/n/rw
mv s/n/rw.new s/n/rw
expect_eq "$(cat <&5)" abcdef "an O_RDWR file read after mv replaced it"
exec 5>&-
expect_eq "$(cat s/n/rw)" NEW "the value that replaced it"
# ... and with no changes of its own reads a shorter value stored by
# another file of the mount without zeros at its end (before: "XY\0\0").
printf abcdef > s/n/rw
exec 5<> s/n/rw
printf XY > s/n/rw
expect_eq "$(cat <&5 | od -An -c | tr -d ' \n')" XY "an O_RDWR file read after a shorter value was stored"
exec 5>&-
rm s/n/rw
# A write through an O_DSYNC (or O_SYNC) file is stored when write(2)
# returns, as fsync would store it; before, only at the close.
hold dsync "$mnt/s/n/dsync" 5 sync
expect_eq "$(said dsync)" ready "an O_DSYNC write"
expect_eq "$(helper get s n dsync | wc -c)" 5 "an O_DSYNC write is stored before the close"
release dsync
rm s/n/dsync
# The mtime an open writer shows (fstat, stat, ls -l) is never later than
# the one stored at its close: whole seconds, as the store keeps. Before,
# it was the write's time to the nanosecond, so it went back at the close.
python3 - s/n/mt <<'PY' || fail "mtime went back at the close"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
shown = []
for i in range(3):
    os.write(fd, b'x')
    shown += [os.fstat(fd).st_mtime_ns, os.stat(sys.argv[1]).st_mtime_ns]
os.close(fd)
stored = os.stat(sys.argv[1]).st_mtime_ns
if max(shown) > stored:
    sys.exit('shown %d while open, %d after the close' % (max(shown), stored))
PY
rm s/n/mt
ok "fstat, SEEK_END, fstat after a delete, listings of open files, O_DSYNC"

# copy_file_range, and cp.
out=$(fileops copy "$mnt/s/n/src" "$mnt/s/n/dst") || fail "fileops copy: $out"
expect_eq "$(field copied <<< "$out")" 10000 "copy_file_range until done"
cmp -s s/n/src s/n/dst || fail "copy_file_range copied other bytes"
head -c 3000000 /dev/urandom > "$work/big"
cp "$work/big" s/n/big
cp s/n/big s/n/big2
cmp -s "$work/big" s/n/big2 || fail "cp within the mount"
ok "copy_file_range and cp"

# Create, close, unlink.
out=$(fileops churn "$mnt/s/n/lock" 2000) || fail "fileops churn: $out"
expect_eq "$(field failures <<< "$out")" 0 "create, close, unlink: failures (first: $(field first <<< "$out"))"
[ ! -e s/n/lock ] || fail "the lock file is back"
helper get s n lock > /dev/null 2>&1 && fail "the lock file is in the store"
out=$(fileops unlinkopen "$mnt/s/n/tmp") || fail "fileops unlinkopen: $out"
expect_eq "$(field exists <<< "$out")" 0 "a file unlinked while open after its creation, after its close"
helper get s n tmp > /dev/null 2>&1 && fail "the unlinked file is in the store"
ok "create, close, unlink"

# 8 processes released at once do `echo +1 >` on a counter that does not
# exist yet, 300 times (the old mount gave ENOENT in a few of them).
out=$(fileops race "$mnt/counter/s/c" 300 8) || fail "fileops race: $out"
expect_eq "$(field failures <<< "$out")" 0 "racing creates that failed (first: $(field first <<< "$out"))"
expect_eq "$(field wrong <<< "$out")" 0 "counters that lost an add"
ok "O_CREAT without O_EXCL: no ENOENT, every add lands"

# rmdir of a namespace whose only file is being created.
mkdir s/m
hold m "$mnt/s/m/k" 0
expect_eq "$(said m)" ready "a file being created"
expect_op ENOTEMPTY rmdir s/m
release m
[ -d s/m ] && [ -e s/m/k ] || fail "the namespace or its file vanished"
rm s/m/k
rmdir s/m
ok "rmdir of a namespace with a file being created: ENOTEMPTY"

# Sparse writes hold what was written, not the hole.
out=$(fileops sparse "$mnt/s/n" 8 "$daemon_pid") || fail "fileops sparse: $out"
expect_eq "$(field size <<< "$out")" $((64 << 20)) "fstat after a pwrite at 64 MiB - 1"
rss=$(field rss <<< "$out")
if [ "${STATEFS_TEST_ASAN:-0}" = 1 ]; then
  # ASan's shadow memory and quarantine are resident too: no bound to check
  ok "sparse writes: $rss kB resident with 8 handles (not bounded under ASan)"
else
  [ "$rss" -lt 65536 ] || fail "8 handles with 1 byte at 64 MiB - 1 hold $rss kB"
  ok "sparse writes: $rss kB resident with 8 handles"
fi

# Two shells append to one new key.
( for i in $(seq 150); do echo "A$i-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" >> s/n/app; done ) & a1=$!
( for i in $(seq 150); do echo "B$i-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" >> s/n/app; done ) & a2=$!
wait "$a1" || fail "an appender failed"
wait "$a2" || fail "an appender failed"
expect_eq "$(wc -l < s/n/app)" 300 "lines appended by two shells"
expect_eq "$(grep -cvE '^(A[0-9]+-a{39}|B[0-9]+-b{39})$' s/n/app)" 0 "torn lines"
expect_eq "$(grep -c '^A' s/n/app)" 150 "the first shell's lines"
ok "O_APPEND from two shells: every line whole"

# tail -f follows a value: appends through the mount and by another
# process (the engine's append), whatever the timing (it polls).
echo start > s/n/t
tail -f -s 0.2 s/n/t > "$work/tail.out" 2>&1 & tailpid=$!
bg+=("$tailpid")
for i in 1 2 3; do echo "mount$i" >> s/n/t; sleep 0.3; done
helper append s n t "$(printf 'engine1\n')"
want=$(printf 'start\nmount1\nmount2\nmount3\nengine1')
for _ in $(seq 300); do
  [ "$(cat "$work/tail.out")" = "$want" ] && break
  sleep 0.2
done
expect_eq "$(cat "$work/tail.out")" "$want" "what tail -f printed"
kill "$tailpid"
wait "$tailpid" 2>/dev/null || true
ok "tail -f follows a value"

# truncate(1) through the mount racing puts by another process.
echo x > s/n/r
helper putcheck s n r 600 > "$work/lost" & hp=$!
bg+=("$hp")
tpids=()
for _ in 1 2; do
  ( while kill -0 "$hp" 2>/dev/null; do
      truncate -s 10 s/n/r && truncate -s 40 s/n/r || exit 1
    done ) & tpids+=($!)
done
bg+=("${tpids[@]}")
wait "$hp" || fail "a truncate through the mount lost $(cat "$work/lost") puts"
for p in "${tpids[@]}"; do wait "$p" || fail "truncate -s failed"; done
ok "truncate never loses a put"

cd /
unmount_fs

# The bound on what handles hold before their commit.
mount_fs -o max_value=1M,max_buffered=2M
cd "$mnt"
mkdir -p s/n
hold w1 "$mnt/s/n/b1" 1048576
expect_eq "$(said w1)" ready "the first 1 MiB held"
hold w2 "$mnt/s/n/b2" 1048576
expect_eq "$(said w2)" ready "the second 1 MiB held"
expect_op ENOBUFS write s/n/b3 x
[ ! -e s/n/b3 ] || fail "a refused create was made"
hold w3 "$mnt/s/n/b4" 10
expect_eq "$(said w3)" "write ENOBUFS" "a write past the bound"
# the copy an O_RDWR file keeps of its deleted value counts too: past the
# bound it is not kept, and the file's reads fail instead of showing the
# store's bytes (none, or a new value's)
allow_log 'is over -o max_buffered: not kept'
helper put s n kept abc
exec 5<> s/n/kept
rm s/n/kept
out=$(cat <&5 2>&1) && fail "an O_RDWR file whose deleted bytes are over the bound read: $out"
[[ $out == *"Input/output error"* ]] || fail "the read over the bound said: $out"
exec 5>&-
release w1
release w2
release w3
printf abc > s/n/kept
exec 5<> s/n/kept
rm s/n/kept
expect_eq "$(cat <&5)" abc "an O_RDWR file whose deleted bytes are within the bound"
exec 5>&-
[ ! -e s/n/b4 ] || fail "a handle refused at the bound was committed"
expect_eq "$(sed -n 2p "$work/hold.w3")" "close ENOBUFS" "the close of a refused handle"
expect_eq "$(stat -c %s s/n/b1)" 1048576 "b1 committed"
expect_op OK write s/n/b3 x
ok "the bound on buffered bytes: ENOBUFS"

# A value refused past max_value is not stored, and every later call on
# its descriptor says so, close and fsync included.
printf old > s/n/r
expect_eq "$(fileops refused "$mnt/s/n/r" 1048576)" \
  "write 0 pwrite EFBIG write EFBIG fsync EFBIG close EFBIG" "a refused handle"
expect_eq "$(cat s/n/r)" old "the value after a refused handle"
ok "a refused write: later writes, fsync and close fail with EFBIG, nothing stored"

# A listing of 1,500 files (several pages of the daemon, 4 KiB replies of
# which the reader takes 1,000 bytes at a time: the kernel asks again from
# the first entry it dropped), with files created and removed between the
# calls (their names sort first, where a count would shift) and a LOOKUP
# of a name the kernel has not seen every 5th call (its next call is a
# READDIRPLUS, in the middle of a page read as names only).
mkdir -p list/n
for i in $(seq 0 9); do helper put list n "u0000$i" x; done
out=$(fileops listing list/n 1500 10) || fail "listing under changes: $out"
expect_eq "$(echo "$out" | field seeks)" 20 "seekdir"
ok "a listing under changes: $(echo "$out" | field listed) entries, each once"

cd /
unmount_fs
