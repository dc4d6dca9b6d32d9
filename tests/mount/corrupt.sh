#!/usr/bin/env bash
# corrupt.sh - a page of an encrypted store that fails authentication:
# reading the value on it gives EIO, the daemon logs a line naming the
# cause, keeps running and keeps serving the rest. (Plaintext pages carry
# no authentication; this runs on an encrypted store only.)
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

[ "$mode" = encrypted ] || fail "tampering is detected on encrypted stores only"

mount_fs
mkdir -p "$mnt/app/cfg"
echo small > "$mnt/app/cfg/small"
# A value of 200 pages: the middle of the file is one of its pages.
head -c 800000 /dev/urandom | base64 -w0 > "$work/big"
cp "$work/big" "$mnt/app/cfg/big"
unmount_fs     # the last close checkpoints the WAL into the file

size=$(stat -c %s "$STATEFS_DB")
off=$((size / 2 + 100))
printf '\xa5' | dd of="$STATEFS_DB" bs=1 seek=$off conv=notrunc status=none
allow_log 'failed authentication'

mount_fs
expect_op EIO read "$mnt/app/cfg/big"
grep -Eq 'error: .*(authentic|corrupt|tamper)' "$work/daemon.err" ||
  fail "no log line naming the cause: $(cat "$work/daemon.err")"
ok "EIO and a log line naming the cause"
expect_eq "$(cat "$mnt/app/cfg/small")" small "the rest is served"
ls "$mnt/app/cfg" > /dev/null || fail "listing after the failure"
unmount_fs
ok "the daemon survives"
