#!/usr/bin/env bash
# corrupt.sh - a page of an encrypted store that fails authentication
# (on PostgreSQL: a sealed value the server changed, and one it moved to
# another key, and a dead letter's sealed bytes changed): reading the value
# gives EIO, the daemon logs a line naming the cause, keeps running and
# keeps serving the rest (the other dead letters list and read). (Plaintext carries
# no authentication; this runs on encrypted stores only.)
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

case $mode in
encrypted|postgres) ;;
*) fail "tampering is detected on encrypted stores only" ;;
esac

mount_fs
mkdir -p "$mnt/app/cfg"
echo small > "$mnt/app/cfg/small"
# A value of 200 pages: the middle of the file is one of its pages.
head -c 800000 /dev/urandom | base64 -w0 > "$work/big"
cp "$work/big" "$mnt/app/cfg/big"
unmount_fs     # the last close checkpoints the WAL into the file

if [ -n "$pg" ]; then
  # What an operator of the server can do: flip a byte of a value, and
  # put one key's sealed value under another key.
  echo other > "$work/other"
  psql_store "UPDATE function_state SET value = set_byte(value, 100,
    get_byte(value, 100) # 165) WHERE key = 'big'::bytea"
  mount_fs
  echo moved > "$mnt/app/cfg/moved"
  unmount_fs
  psql_store "UPDATE function_state SET value = (SELECT value FROM
    function_state WHERE key = 'small'::bytea) WHERE key = 'moved'::bytea"
  # and three dead letters, the middle one's seal changed
  mount_fs
  for v in a b c; do echo $v > "$mnt/queue/dq/$v"; done
  for _ in 1 2 3; do
    n=$(cat "$mnt/queue/dq/.claim")
    mv "$mnt/queue/dq/inflight/$n" "$mnt/queue/dq/dead/"
  done
  unmount_fs
  dead=($(psql_store "SELECT lpad(id::text, 19, '0') FROM statefs_dead
    ORDER BY id"))   # as the mount names them
  psql_store "UPDATE statefs_dead SET item = set_byte(item, 30,
    get_byte(item, 30) # 1) WHERE id = ${dead[1]}::bigint"
else
  # One byte in each page of the file's second half, where the value's
  # pages are (the schema and the small value sit at the file's start):
  # one byte in its middle missed them once, under the sanitizer on a
  # loaded machine, where the file's middle held some other page.
  size=$(stat -c %s "$STATEFS_DB")
  page=4096
  for ((off = (size / 2 / page) * page + 100; off < size; off += page)); do
    printf '\xa5' | dd of="$STATEFS_DB" bs=1 seek=$off conv=notrunc status=none
  done
fi
allow_log 'failed authentication'

mount_fs
expect_op EIO read "$mnt/app/cfg/big"
grep -Eq 'error: .*(authentic|corrupt|tamper)' "$work/daemon.err" ||
  fail "no log line naming the cause: $(cat "$work/daemon.err")"
ok "EIO and a log line naming the cause"
if [ -n "$pg" ]; then
  expect_op EIO read "$mnt/app/cfg/moved"
  ok "a value moved to another key does not open"
  expect_eq "$(ls "$mnt/queue/dq/dead" | tr '\n' ' ')" "${dead[*]} " \
    "dead/ lists every dead letter, the damaged one too"
  expect_eq "$(cat "$mnt/queue/dq/dead/${dead[0]}" "$mnt/queue/dq/dead/${dead[2]}")" \
    "a
c" "the other dead letters read"
  expect_op EIO read "$mnt/queue/dq/dead/${dead[1]}"
  ok "a damaged dead letter gives EIO, the others read"
fi
expect_eq "$(cat "$mnt/app/cfg/small")" small "the rest is served"
ls "$mnt/app/cfg" > /dev/null || fail "listing after the failure"
unmount_fs
ok "the daemon survives"
