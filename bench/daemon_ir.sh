#!/usr/bin/env bash
# daemon_ir.sh - what the daemon executes per create and per unlink,
# plaintext and encrypted: instructions counted by callgrind (load does not
# change them), split by library, and the pages sealed and opened per file
# (calls of cp_seal / cp_open). For the encryption's cost beyond the
# cipher, where timings on this shared machine cannot resolve it.
#
# Usage: bench/daemon_ir.sh [STATEFS [N]]
#   STATEFS: the daemon (default build/mountd/statefs); N files (500).
# Each mode: the daemon under valgrind --tool=callgrind on a tmpfs store;
# 300 files created and removed to warm it, 700 left in the namespace,
# then N creates (open O_CREAT|O_EXCL, write 100 bytes, close) and N
# unlinks, the counters zeroed before and dumped after each phase.
# Needs /dev/fuse, valgrind, python3. Measures and prints; asserts nothing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
statefs=${1:-$top/build/mountd/statefs}
n=${2:-500}
[ -c /dev/fuse ] || { echo "daemon_ir: no /dev/fuse: skipped"; exit 77; }
w=$(mktemp -d /dev/shm/daemon_ir.XXXXXX)
pid=
cleanup() {
  set +e
  mountpoint -q "$w/m" && fusermount3 -u -z "$w/m"
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
  rm -rf "$w"
}
trap cleanup EXIT

cr='import os, sys
d, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(a, b):
    fd = os.open(f"{d}/f{i}", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
    os.write(fd, b"x" * 100)
    os.close(fd)'
rm_='import os, sys
d, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(a, b):
    os.unlink(f"{d}/f{i}")'
# Exclusive instructions by library, and calls of some functions, per file.
sum_='import collections, sys
path, n = sys.argv[1], int(sys.argv[2])
by_ob, calls = collections.Counter(), collections.Counter()
ob = cfn = None
after_calls = False
for line in open(path):
    line = line.rstrip("\n")
    if line.startswith("ob="):
        ob = line[3:].split("/")[-1].split(".so")[0]
    elif line.startswith("cfn="):
        cfn = line[4:]
    elif line.startswith("calls="):
        calls[cfn] += int(line[6:].split()[0])
        after_calls = True
    elif line[:1].isdigit() or line[:1] in "+-*":
        if after_calls:
            after_calls = False
        else:
            p = line.split()
            if len(p) >= 2:
                by_ob[ob] += int(p[1])
tot = sum(by_ob.values())
print("  instructions/file %8.0f:" % (tot / n), " ".join(
    "%s %.0f" % (o, c / n) for o, c in by_ob.most_common() if c / n >= 50))
print("  pages sealed/file %.2f, opened/file %.2f" % (
    calls["cp_seal"] / n, calls["cp_open"] / n))'

for mode in plain encrypted; do
  d=$w/d.$mode m=$w/m
  rm -rf "$d"; mkdir -p "$d" "$m"
  opts=(); [ $mode = plain ] && opts=(-o plaintext)
  HOME=$d XDG_CONFIG_HOME=$d/config XDG_STATE_HOME=$d/state \
    STATEFS_DB=$d/state.db valgrind --tool=callgrind -q \
    --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$w/cg.$mode" "$statefs" -f "${opts[@]}" "$m" \
    2>"$w/err.$mode" &
  pid=$!
  for _ in $(seq 600); do mountpoint -q "$m" && break; sleep 0.1; done
  mountpoint -q "$m" || { cat "$w/err.$mode"; exit 1; }
  mkdir -p "$m/bench/small"
  python3 -c "$cr" "$m/bench/small" 0 300
  python3 -c "$rm_" "$m/bench/small" 0 300
  python3 -c "$cr" "$m/bench/small" 300 1000
  echo "$mode ($n files, $(basename "$statefs"))"
  for op in create unlink; do
    callgrind_control -z "$pid" >/dev/null 2>&1
    if [ $op = create ]; then s=$cr; else s=$rm_; fi
    python3 -c "$s" "$m/bench/small" 1000 $((1000 + n))
    callgrind_control -d $op "$pid" >/dev/null 2>&1
    f=$(ls -t "$w"/cg.$mode.* | head -1)
    echo " $op"
    python3 -c "$sum_" "$f" "$n"
  done
  fusermount3 -u "$m"
  wait "$pid" || true
  pid=
done
