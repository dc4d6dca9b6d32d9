#!/usr/bin/env bash
# fsrand.sh - fsrand.c through the mount: random writes (holes included),
# truncations, reads, copy_file_range, fstat, SEEK_END, O_APPEND, fsync,
# close and reopen on one value, checked against a model after every
# operation; fsx's properties in our own program (fsx from xfstests is
# how the mount is judged: `fsx -N 100000 -R -W` on a key, see
# docs/filesystem.md). Two seeds of values up to 256 KiB (fsx's default),
# and one run on a value of up to 4 MiB with an eighth as many operations
# (at a quarter, its run took 11.6 s of the daemon's CPU on an encrypted
# store, against 1.4 s per seed). FSRAND_OPS (default 4000) sets
# the operations per run. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"
: "${STATEFS_FSRAND:?}"
ops=${FSRAND_OPS:-4000}

mount_fs
mkdir -p "$mnt/s/n"
for seed in 1 2; do
  "$STATEFS_FSRAND" "$mnt/s/n/v$seed" "$ops" "$seed" || fail "fsrand seed $seed"
done
"$STATEFS_FSRAND" "$mnt/s/n/big" $((ops / 8)) 3 $((4 << 20)) || fail "fsrand on a 4 MiB value"
helper verify > /dev/null || fail "the store's integrity check"
ok "random operations on values match the model"
unmount_fs
