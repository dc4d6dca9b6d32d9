#!/usr/bin/env bash
# drains.sh - a .drain gives back what it did not deliver (issue 10 item
# 6): a reader that stops after its first 4 KiB, of a namespace's .drain
# and of a queue's, takes exactly the rows it read whole; the rest is back
# (entries in their namespace, items at their places, same names). A
# reader slower than the lease loses the rest, one reading a page in
# small pieces for longer than the lease keeps it. A daemon killed during a namespace's drain loses nothing: the lease gives
# everything back. Large values stream a page at a time: the daemon's
# memory during a drain of six 10 MB values grows by less than the store's
# page cache and the namespace once. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

command -v jq > /dev/null || fail "jq is not installed (scripts/deps)"
ns=$mnt/app/cfg
q=$mnt/queue/jobs

# The keys (or ids) of the complete lines of a partial read.
whole_lines() { # FILE FIELD
  local n
  n=$(grep -c '' "$1" || true)
  [ -z "$(tail -c 1 "$1")" ] || n=$((n - 1)) # the last line cut short
  head -n "$n" "$1" | jq -r ".$2"
}

mount_fs
mkdir -p "$ns"
for i in $(seq -w 1 30); do
  head -c 500 /dev/zero | tr '\0' "v" > "$ns/k$i"
  helper qpush jobs "item$i-$(head -c 250 /dev/zero | tr '\0' w)"
done
all_keys=$(ls "$ns" | tr '\n' ' ')
all_items=$(ls "$q" | tr '\n' ' ')

head -c 4096 "$ns/.drain" > "$work/got"
got=$(whole_lines "$work/got" key | tr '\n' ' ')
[ -n "$got" ] || fail "nothing delivered whole in 4 KiB"
kleft=$(ls "$ns" | tr '\n' ' ')
expect_eq "$got$kleft" "$all_keys" "delivered, then what is back, is every key"
for k in $kleft; do
  expect_eq "$(cat "$ns/$k")" "$(head -c 500 /dev/zero | tr '\0' v)" "$k is back whole"
done
ok "a namespace drain stopped after 4 KiB gives back the rest ($(echo $got | wc -w) taken)"

head -c 4096 "$q/.drain" > "$work/gotq"
got=$(whole_lines "$work/gotq" name | tr '\n' ' ')
qleft=$(ls "$q" | tr '\n' ' ')
expect_eq "$got$qleft" "$all_items" "delivered, then what is back, is every item"
expect_eq "$(ls "$q/inflight" | wc -l)" 0 "nothing left in flight"
head=$(ls "$q" | sed -n 1p)
expect_eq "$(cut -c1-6 "$q/$head")" "item$(printf %02d $((10#$head)))" \
  "the first item back is the one with its id"
ok "a queue drain stopped after 4 KiB gives back the rest"

# What is left drains for real, whole and in order.
expect_eq "$(jq -r .key "$ns/.drain" | tr '\n' ' ')" "$kleft" "the namespace's rest"
expect_eq "$(ls "$ns" | wc -l)" 0 "the namespace drained"
expect_eq "$(jq -r .name "$q/.drain" | tr '\n' ' ')" "$qleft" "the queue's rest"
expect_eq "$(ls "$q" | wc -l)" 0 "the queue drained"

# An item of a drain's claim settled by someone else (rm under inflight/,
# which acks whatever claim holds it) does not keep the drain from acking
# the rows its reader got whole: none of them comes back.
helper qpush shared $(seq 300)
exec 3< "$mnt/queue/shared/.drain"
dd bs=10 count=1 status=none <&3 > /dev/null
rm "$mnt/queue/shared/inflight/0000000000000000050"
cat <&3 > /dev/null || { exec 3<&-; fail "the rest of the drain"; }
exec 3<&-
expect_eq "$(ls "$mnt/queue/shared" | wc -l),$(ls "$mnt/queue/shared/inflight" | wc -l)" \
  "0,0" "nothing delivered came back, nothing left in flight"
ok "a drain acks what it delivered when another process acked one of its items"
unmount_fs

# A reader that stops longer than the lease loses the rest to recovery and
# is told so (ENOENT), also when it stopped at a page's end, with every
# row it had acked: 300 items are two pages (256 rows a page), dd reads
# the first whole (a short read ends at the page's end), and the read
# after the pause must fail, not end the stream as if it were whole.
mount_fs -o lease=1s
helper qpush stall $(seq 300)
exec 3< "$mnt/queue/stall/.drain"
dd bs=1M count=1 status=none <&3 > "$work/page1"
expect_eq "$(grep -c '' "$work/page1")" 256 "the first page, whole"
nap 2.5 # past the lease
if cat <&3 > /dev/null 2> "$work/err"; then
  exec 3<&-
  fail "a drain whose lease ran out read as ended: $(ls "$mnt/queue/stall" | wc -l) items went back unseen"
fi
exec 3<&-
grep -q 'No such file or directory' "$work/err" || fail "not ENOENT: $(cat "$work/err")"
expect_eq "$(ls "$mnt/queue/stall" | wc -l)" 44 "the rest is back"
rm "$mnt"/queue/stall/*
unmount_fs
ok "a drain that outlived its lease fails its next read"

# A reader that keeps reading keeps its drain, also inside one page: 200
# items are one page, read 64 bytes at a time for longer than the lease
# (2 s) with pauses of a tenth of a second. Before, the lease was
# extended only when a new page was rendered: it ran out under the
# reader, its acks failed (a warning), the items came back to the queue
# while it read them, and its last read failed with ENOENT.
# Drains queue Q of 200 items through mount DIR, 64 bytes at a time for
# 3 s (after the first read, the daemon's clock is stepped by STEP
# seconds, when given), then the rest: every item once, none back.
slow_drain() { # DIR Q WHAT [STEP]
  local chunk t0
  helper qpush "$2" $(seq 200)
  exec 3< "$1/queue/$2/.drain"
  : > "$work/$2"
  read -r -N 64 -u 3 chunk || { exec 3<&-; fail "the first read of the drain $3"; }
  printf '%s' "$chunk" >> "$work/$2"
  [ -z "${4:-}" ] || echo "$4" > "$work/shift"
  t0=$(now_ns)
  while [ $(($(now_ns) - t0)) -lt 3000000000 ]; do
    read -r -N 64 -u 3 chunk || break
    printf '%s' "$chunk" >> "$work/$2"
    nap 0.1
  done
  cat <&3 >> "$work/$2" || { exec 3<&-; fail "the last read of the drain $3"; }
  exec 3<&-
  expect_eq "$(jq -r .value "$work/$2" | sort -u | wc -l),$(grep -c '' "$work/$2")" \
    "200,200" "every item once $3"
  expect_eq "$(helper qlen "$2"),$(ls "$1/queue/$2/inflight" | wc -l)" "0,0" \
    "nothing came back, nothing in flight $3"
}
mount_fs -o lease=2s
slow_drain "$mnt" slow "of a slow reader"
unmount_fs
ok "a reader reading one page for longer than the lease keeps its drain"

# The same when the daemon's wall clock is stepped back an hour while the
# reader reads (clockshift.c): the drain's heartbeats are timed on the
# monotonic clock. They were timed on the wall clock, which then said no
# third of a lease had passed for an hour: on PostgreSQL, whose server
# clock did not move, the lease ran out under the reader (on SQLite the
# store's clock is the daemon's, and the step lengthened the lease).
printf '#!/bin/sh\nASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 CLOCKSHIFT_FILE=%s LD_PRELOAD=%s exec %s "$@"\n' \
  "$work/shift" "$STATEFS_CLOCKSHIFT" "$STATEFS_BIN" > "$work/statefs-shifted"
chmod +x "$work/statefs-shifted"
echo 0 > "$work/shift"
STATEFS_BIN=$work/statefs-shifted mount_other "$work/stepped" -o lease=2s
slow_drain "$work/stepped" stepback "with the clock stepped back" -3600
fusermount3 -u "$work/stepped"
ok "a wall clock stepped back under a drain's reader keeps its drain"

# The daemon killed while a namespace's drain waits to answer: nothing is
# lost, the lease (2 s) gives it back. The daemon holds its answer until
# the reader is interrupted (a test hook), so the kill lands between the
# take and the answer however slow the machine is; waits are hang
# detectors (60 s), and the entries are back only after the lease.
export STATEFS_TEST_DELIVER_DELAY_MS=600000 # a test hook of the daemon
mount_fs -o lease=2s
unset STATEFS_TEST_DELIVER_DELAY_MS
for i in 1 2 3; do echo "value $i" > "$ns/d$i"; done
tdrain=$(now_ns)
cat "$ns/.drain" > /dev/null 2>&1 & reader=$!
for _ in $(seq 1200); do [ -z "$(ls "$ns")" ] && break; nap 0.05; done
expect_eq "$(ls "$ns" | wc -l)" 0 "the drain took every entry"
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
wait "$reader" 2>/dev/null || true
fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"
mount_fs -o lease=2s
for _ in $(seq 600); do [ "$(ls "$ns" | wc -l)" = 3 ] && break; nap 0.1; done
[ "$(now_ns)" -ge $((tdrain + 2000000000)) ] || fail "back before the lease ended"
expect_eq "$(ls "$ns" | tr '\n' ' ')" "d1 d2 d3 " "every entry is back"
expect_eq "$(cat "$ns/d2")" "value 2" "whole"
rm "$ns"/d*
unmount_fs
ok "a daemon killed during a namespace drain loses nothing"

# Large values stream, a page at a time: six of 10 MB through a drain.
# The daemon may grow by the store's page cache (64 MiB) and a value or
# two in flight, but not by the namespace several times over (taking it
# all at once and rendering it whole grew it by 190 MB). Encrypted only:
# the property does not depend on it, and the values take a while.
[ "$mode" = encrypted ] || exit 0
mount_fs
for i in 1 2 3 4 5 6; do head -c 10000000 /dev/urandom > "$ns/big$i"; done
echo 5 > "/proc/$daemon_pid/clear_refs" # the peak (VmHWM) from now
before=$(awk '/VmHWM/ {print $2}' "/proc/$daemon_pid/status")
jq -r '.value_b64 | length' "$ns/.drain" > "$work/lens"
expect_eq "$(sort -u "$work/lens" | tr '\n' ' '),$(wc -l < "$work/lens")" \
  "13333336 ,6" "six values, whole"
peak=$(awk '/VmHWM/ {print $2}' "/proc/$daemon_pid/status")
grew=$((peak - before))
echo "daemon memory: $before kB before the drain, peak $peak kB (+$grew kB)"
# (under ASan the peak is the allocator's: its quarantine keeps freed blocks)
[ "${STATEFS_TEST_ASAN:-0}" = 1 ] || [ "$grew" -lt 150000 ] ||
  fail "the daemon grew by $grew kB draining 60 MB"
expect_eq "$(ls "$ns" | wc -l)" 0 "drained"
unmount_fs
ok "large values stream through a drain (+$((grew / 1024)) MiB for 60 MB)"
