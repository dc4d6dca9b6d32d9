#!/usr/bin/env bash
# fulldisk.sh - on a full disk writers get ENOSPC, and `rm` through the
# mount still works (issue 10 item 11): the store gives back its reserve
# to let a delete through, and what the deletes free makes room for new
# writes again; also with the daemon detached (it goes to "/") on a store
# named by a relative path. The store lives on its own small tmpfs, filled
# to the last block. Usage: see lib.sh. Exit: 0, 1, 77 (also when tmpfs
# cannot be mounted: not root).
. "$(dirname "$0")/lib.sh"

if ! small_disk; then
  echo "cannot mount a tmpfs (not root?): skipped"
  exit 77
fi
export STATEFS_DB=$small/state.db
allow_log 'the disk is full'     # the daemon says when it used the reserve
allow_log "No space left|database or disk is full|disk has room again"

# put N: a 256 KiB value through the mount; fails when close does.
put() {
  head -c 262144 /dev/urandom | dd of="$mnt/s/n/$1" bs=64k status=none 2>/dev/null
}
# Values of 256 KiB until the disk refuses one; n: how many fit.
fill_values() {
  n=0
  while put "k$n"; do
    n=$((n + 1))
    [ "$n" -lt 200 ] || fail "12 MiB took more than 200 values of 256 KiB"
  done
}
# What the store left free, filled too: not a block to spare.
fill_rest() { # what the check says
  dd if=/dev/zero of="$small/filler" bs=4k status=none 2>/dev/null || true
  expect_eq "$(df --output=avail -B1 "$small" | tail -n 1 | tr -d ' ')" 0 "$1"
}

mount_fs
mkdir -p "$mnt/s/n"
fill_values
[ "$n" -gt 16 ] || fail "only $n values fit"
fill_rest "free bytes"
ok "a full disk: writes fail with ENOSPC ($n values fit)"

# Deletes go through, one after another, a dozen of them.
for i in $(seq 0 11); do
  rm "$mnt/s/n/k$i" || fail "rm k$i on a full disk"
done
for i in $(seq 0 11); do
  [ ! -e "$mnt/s/n/k$i" ] || fail "k$i is still there"
done
expect_eq "$(ls "$mnt/s/n" | wc -l)" $((n - 12)) "the other values"
ok "rm through the mount works on a full disk"

# What the deletes freed takes new writes, still without a free block on
# the disk but the store's own (as far as the log fits in what the reserve
# gave back: two more values here).
for i in 1 2; do
  put "again$i" || fail "write $i after the deletes"
  expect_eq "$(stat -c %s "$mnt/s/n/again$i")" 262144 "new value $i"
done
unmount_fs
rm "$small/filler"
mount_fs
expect_eq "$(ls "$mnt/s/n" | wc -l)" $((n - 10)) "values after a remount"
for i in 12 $((n - 1)); do
  expect_eq "$(stat -c %s "$mnt/s/n/k$i")" 262144 "k$i after a remount"
done
unmount_fs
ok "what the deletes freed is used again; nothing else changed"

# The same with the daemon detached (no -f) and the store named by a
# relative path: detached, it goes to "/", and the reserve it gives back
# must still be the one beside the store, not "/rel.db-reserve" (the
# engine keeps the store's path absolute from the open on).
rm -f "$small"/state.db*
(cd "$small" && "$STATEFS_BIN" "${mode_opts[@]}" -o db=rel.db "$mnt") ||
  fail "the detached daemon did not start"
wait_mounted
dpid=$(pgrep -f -x ".*-o db=rel\.db $mnt") || fail "no detached daemon"
expect_eq "$(readlink "/proc/$dpid/cwd")" / "the detached daemon's directory"
[ -e "$small/rel.db-reserve" ] || fail "no reserve beside the store"
mkdir -p "$mnt/s/n"
fill_values
fill_rest "free bytes (detached)"
for i in $(seq 0 3); do
  rm "$mnt/s/n/k$i" || fail "rm k$i on a full disk (detached, relative path)"
done
[ ! -e "$small/rel.db-reserve" ] || fail "the reserve was not given back"
[ ! -e /rel.db-reserve ] || fail "a reserve in /"
fusermount3 -u "$mnt"
for _ in $(seq 600); do
  kill -0 "$dpid" 2>/dev/null || break
  nap 0.05
done
! kill -0 "$dpid" 2>/dev/null || fail "the detached daemon did not exit"
ok "detached, with a relative store path: rm on a full disk works"

# A store that no process holds open, on a full disk: its first opener
# sizes the shared-memory file (PATH-shm, 32 KiB), which needs room. The
# open gives back the reserve for it; before, it failed ("disk I/O
# error"): no mount, no statectl, not even a read, and nothing could
# delete to make room.
rm -f "$small"/rel.db* "$small/filler"
mount_fs
mkdir -p "$mnt/s/n"
echo kept > "$mnt/s/n/k"
head -c 262144 /dev/urandom > "$mnt/s/n/big"
unmount_fs
[ -e "$small/state.db-reserve" ] || fail "no reserve beside the closed store"
fill_rest "free bytes (a closed store)"
mount_fs
expect_eq "$(< "$mnt/s/n/k")" kept "a value read on a full disk"
rm "$mnt/s/n/big" || fail "rm on a full disk, the store opened there"
expect_eq "$(ls "$mnt/s/n")" k "the values after the rm"
unmount_fs
ok "a closed store opens on a full disk: reads and rm work"
