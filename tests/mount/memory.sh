#!/usr/bin/env bash
# memory.sh - the daemon gives memory back: after large values are written
# through the mount and deleted, its resident size returns to a small
# multiple of its idle size (it was 200 MiB after 30 values of 16 MiB:
# glibc kept freed blocks in per-thread arenas and SQLite its 64 MiB page
# cache, docs/filesystem.md "Memory"). Prints the numbers. MEMORY_VALUES
# (default 8: 128 MiB, twice the page cache's bound, so a daemon that kept
# either would fail; 16 cost 18 s of CPU per mode) values of 16 MiB;
# `meson test --benchmark memory` runs the same for 100 (bench/meson.build).
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"
if [ "${STATEFS_TEST_ASAN:-0}" = 1 ]; then
  # what it measures is the allocator's: ASan's quarantine keeps freed
  # blocks resident, its shadow memory grows with them
  echo "resident memory is ASan's under the sanitizer: skipped"
  exit 77
fi
n=${MEMORY_VALUES:-8}
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$daemon_pid/status"; }

mount_fs
mkdir -p "$mnt/s/n"
ls "$mnt/s/n" > /dev/null
idle=$(rss)
head -c 16M /dev/urandom > "$work/v"
for i in $(seq "$n"); do cp "$work/v" "$mnt/s/n/v$i"; done
cmp -s "$work/v" "$mnt/s/n/v$n" || fail "a 16 MiB value read back"
written=$(rss)
rm "$mnt"/s/n/v*
# Under -o async_close (STATEFS_TEST_EXTRA_OPTS) rm returns before its
# commit: the fsync makes it, and until then the open transaction holds
# up to the page cache's bound.
case "${STATEFS_TEST_EXTRA_OPTS:-}" in
*async_close*) sync "$mnt/s/n" ;;
esac
deleted=$(rss)
echo "daemon RSS: idle $idle kB, after writing $n x 16 MiB $written kB," \
     "after deleting them $deleted kB"
[ "$deleted" -le $((4 * idle)) ] ||
  fail "after deleting, the daemon holds $deleted kB (idle: $idle kB)"
ok "the daemon's memory returns to $deleted kB (idle $idle kB)"
unmount_fs
