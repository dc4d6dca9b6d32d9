#!/usr/bin/env bash
# sdkpython.sh - a VGI Python SDK worker's storage code (sdkworker.py: the
# SDK's statements, Debian's python3 and its stock sqlite3 module) on an
# encrypted store through the SQLite extension, while the store is mounted:
# values it puts are what the next cat reads, and the reverse; its log
# entries and counters show under the mount; a queue popped at once by the
# worker and through .pop delivers every item exactly once; a canary it
# writes is in no file of the store, while it runs and after; a worker
# killed with SIGKILL loses no acknowledged append; a wrong or missing key
# fails with statefs's sentences; without the extension the store is "not a
# database". Usage: see lib.sh; also needs STATEFS_SQLITE_EXT (the
# extension), STATEFS_LEAKCHECK (tests/crypt/leakcheck) and /usr/bin/python3.
# Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

[ "$mode" = encrypted ] || fail "the extension is for encrypted stores: run with STATEFS_TEST_MODE=encrypted"
: "${STATEFS_SQLITE_EXT:?}" "${STATEFS_LEAKCHECK:?}"
py=/usr/bin/python3
worker=$(cd "$(dirname "$0")" && pwd)/sdkworker.py
[ -x "$py" ] || fail "$py is missing (scripts/deps test installs python3)"
"$py" -c 'import sqlite3; sqlite3.connect(":memory:").enable_load_extension' ||
  fail "$py has no enable_load_extension: use Debian's python3"
# In the sanitizer build python3 needs the sanitizer's runtime first to load
# the extension; python's own leaks are not ours to check.
if [ -n "${STATEFS_TEST_PRELOAD:-}" ]; then
  printf '#!/bin/sh\nLD_PRELOAD=%s ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 exec %s "$@"\n' \
    "$STATEFS_TEST_PRELOAD" "$py" >"$work/python3"
  chmod +x "$work/python3"
  py=$work/python3
fi

hx() { printf %s "$1" | od -An -v -tx1 | tr -d ' \n'; }
unhx() { printf %s "$1" | sed 's/../\\x&/g' | xargs -0 printf %b; }

# The worker, as a coprocess: w CMD ARGS... sends a line and sets $reply.
start_worker() {
  coproc W { exec "$py" "$worker" "$STATEFS_SQLITE_EXT" "$STATEFS_DB" 2>>"$work/worker.err"; }
  wpid=$W_PID
  w_read
  expect_eq "$reply" ready "the worker starts"
}
w_read() {
  IFS= read -r -t 120 reply <&"${W[0]}" ||
    fail "no answer from the worker: $(cat "$work/worker.err")"
}
w() {
  echo "$*" >&"${W[1]}"
  w_read
}

mount_fs
start_worker

# Values: what the SDK puts is what the next cat reads, also when the same
# key is rewritten at once; what the mount writes, the SDK reads.
for i in $(seq 30); do
  v="value $i of key $((i % 4)) $RANDOM"
  w put "$(hx py)" "$(hx cfg)" "$(hx "k$((i % 4))")" "$(hx "$v")"
  expect_eq "$reply" ok "put $i"
  expect_eq "$(cat "$mnt/py/cfg/k$((i % 4))")" "$v" "cat after put $i"
done
printf 'from the shell' >"$mnt/py/cfg/shell"
w get "$(hx py)" "$(hx cfg)" "$(hx shell)"
expect_eq "$reply" "$(hx 'from the shell')" "the SDK reads what the mount wrote"
w scan "$(hx py)" "$(hx cfg)"
expect_eq "$reply" "$(for k in k0 k1 k2 k3 shell; do printf '%s,' "$(hx $k)"; done | sed 's/,$//')" "the SDK's scan"
expect_eq "$(ls "$mnt/py/cfg" | tr '\n' ' ')" "k0 k1 k2 k3 shell " "ls of the namespace"
ok "the SDK's puts and gets, and the next cat"

# Logs: the SDK's appends are entries under exec/, in order.
ids=()
for i in $(seq 5); do
  w append "$(hx py)" "$(hx log)" "$(hx batch)" "$(hx "entry $i")"
  ids+=("$reply")
  expect_eq "$(cat "$mnt/exec/py/log/batch/$(printf %019d "$reply")")" "entry $i" "log entry $i"
done
expect_eq "$(ls "$mnt/exec/py/log/batch" | sed 's/^0*//' | tr '\n' ' ')" "${ids[*]} " "the log's entries"
printf more >"$mnt/exec/py/log/batch/new"
w logscan "$(hx py)" "$(hx log)" "$(hx batch)"
expect_eq "${reply##*:}" "$(hx more)" "the SDK reads an entry the mount appended"
ok "the SDK's appends and log scans"

# Counters, both ways.
for i in $(seq 10); do
  w cadd "$(hx py)" "$(hx stats)" "$(hx hits)" 3
  expect_eq "$(cat "$mnt/counter/py/stats/hits")" "$((3 * i))" "counter after add $i"
done
echo +5 >"$mnt/counter/py/stats/hits"
w cget "$(hx py)" "$(hx stats)" "$(hx hits)"
expect_eq "$reply" 35 "the SDK reads the mount's add"
ok "the SDK's counters"

# The SDK's framework namespaces of packed ids (pack_int_key: 8 bytes,
# little-endian) show the ids in decimal; ls sorts names as text, and a
# listing in the store's order (ls -U) follows the key bytes, so low bytes
# first: 256 (00 01 ..), 7 (07 00 ..), -2 (fe ff ..).
le() { "$py" -c 'import sys; print(int(sys.argv[1]).to_bytes(8, "little", signed=True).hex())' "$1"; }
agg=$(hx _vgi/aggregate_state)
for g in 7 256 -2; do
  w put "$(hx py)" "$agg" "$(le "$g")" "$(hx "group $g")"
done
expect_eq "$(ls "$mnt/py/_vgi%2Faggregate_state" | tr '\n' ' ')" "-2 256 7 " "aggregate groups in decimal"
expect_eq "$(ls -U "$mnt/py/_vgi%2Faggregate_state" | tr '\n' ' ')" "256 7 -2 " "the store's order"
expect_eq "$(ls "$mnt/py/_vgi%2Faggregate_state" | sort -n | tr '\n' ' ')" "-2 7 256 " "numeric order"
expect_eq "$(cat "$mnt/py/_vgi%2Faggregate_state/-2")" "group -2" "the const args' synthetic group"
printf 'from the mount' >"$mnt/py/_vgi%2Faggregate_state/42"
w get "$(hx py)" "$agg" "$(le 42)"
expect_eq "$reply" "$(hx 'from the mount')" "the SDK reads group 42 written through the mount"
cat "$mnt/py/_vgi%2Faggregate_state/%x0700000000000000" 2>/dev/null &&
  fail "the hex spelling of group 7 is an alias"
ok "the Python SDK's packed ids in decimal, one name each"

# A queue the SDK fills and that the SDK and the mount drain at once.
"$py" -c 'for i in range(1, 401): print(("item-%d" % i).encode().hex())' >"$work/items"
mapfile -t items <"$work/items"
for b in 0 100 200 300; do
  w push "$(hx pyq)" "${items[@]:$b:100}"
  expect_eq "$reply" 100 "push batch $b"
done
( while item=$(cat "$mnt/queue/pyq/.pop" 2>/dev/null); do
    printf '%s\n' "$item"
  done >"$work/mount_popped" ) &
popper=$!
echo "popall $(hx pyq) 2" >&"${W[1]}"
: >"$work/sdk_popped.hex"
while w_read && [ "$reply" != end ]; do
  echo "$reply" >>"$work/sdk_popped.hex"
done
"$py" -c 'import sys
for line in sys.stdin: print(bytes.fromhex(line).decode())' <"$work/sdk_popped.hex" >"$work/sdk_popped"
wait "$popper" || true
sort "$work/sdk_popped" "$work/mount_popped" >"$work/all_popped"
expect_eq "$(wc -l <"$work/all_popped")" 400 "items delivered"
expect_eq "$(sort -u "$work/all_popped" | wc -l)" 400 "distinct items delivered"
expect_eq "$(sort "$work/all_popped" | md5sum)" "$(seq 400 | sed 's/^/item-/' | sort | md5sum)" "the items pushed"
echo "sdk popped $(wc -l <"$work/sdk_popped"), the mount $(wc -l <"$work/mount_popped")"
ok "400 items, each delivered once, to the SDK or through .pop"

# A canary through every family, searched for in the store's files while
# the worker and the daemon have them open, and after.
canary=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
w put "$canary" "$canary" "$canary" "$canary"
w append "$canary" "$canary" "$canary" "$canary"
w cadd "$canary" "$canary" "$canary" 7
w push "$canary" "$canary" "$canary"
w get "$canary" "$canary" "$canary"
expect_eq "$reply" "$canary" "the canary reads back"
mkdir "$work/control"
unhx "$canary" >"$work/control/plain"
"$STATEFS_LEAKCHECK" "$work/control" "$canary" >/dev/null &&
  fail "the canary search does not find a plaintext canary"
"$STATEFS_LEAKCHECK" "$work/store" "$canary" ||
  fail "plaintext in the store's files while the SDK writes"
ok "no canary in any file of the store while it is in use"

# Crash safety: a second worker appends until killed with SIGKILL; every
# append it acknowledged (printed after its commit) is there.
echo "crash $(hx crash) $(hx log) $(hx k)" |
  "$py" "$worker" "$STATEFS_SQLITE_EXT" "$STATEFS_DB" >"$work/crash.out" 2>>"$work/worker.err" &
cpid=$!
for _ in $(seq 1200); do
  [ "$(grep -c '^[0-9]' "$work/crash.out")" -ge 300 ] && break
  kill -0 "$cpid" 2>/dev/null || fail "the crash worker died: $(cat "$work/crash.out" "$work/worker.err")"
  nap 0.1
done
kill -9 "$cpid"
wait "$cpid" 2>/dev/null || true
grep -E '^[0-9]+$' "$work/crash.out" >"$work/acked"
mapfile -t acked <"$work/acked"
[ ${#acked[@]} -ge 300 ] || fail "the crash worker acknowledged ${#acked[@]} appends"
ls "$mnt/exec/crash/log/k" | sed 's/^0*//' | sort >"$work/present"
lost=$(sort "$work/acked" | comm -23 - "$work/present")
[ -z "$lost" ] || fail "acknowledged appends gone after SIGKILL: $lost"
w check
expect_eq "$reply" ok "integrity_check after the crash"
ok "a worker killed with SIGKILL: ${#acked[@]} acknowledged appends, all there"

echo quit >&"${W[1]}"
wait "$wpid" || fail "the worker exited $?"
cd /
unmount_fs
"$STATEFS_LEAKCHECK" "$work/store" "$canary" || fail "plaintext in the store's files"
helper verify >/dev/null || fail "the store does not verify"
ok "after the worker and the daemon closed it: no canary, every page authenticates"

# A wrong key, a missing key, and no extension.
out=$(STATEFS_KEY=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n') \
      "$py" "$worker" "$STATEFS_SQLITE_EXT" "$STATEFS_DB" </dev/null) && fail "a wrong key opened the store"
case $out in
*"wrong key: the key given does not open $STATEFS_DB"*) ;;
*) fail "wrong key: got [$out]" ;;
esac
out=$(XDG_CONFIG_HOME=$work/nokey "$py" "$worker" "$STATEFS_SQLITE_EXT" "$STATEFS_DB" </dev/null) &&
  fail "the extension loaded without a key"
case $out in
*"statefs: no key was found: none given, STATEFS_KEY and STATEFS_KEY_FILE are not set, and the default key file $work/nokey/statefs/key does not exist"*) ;;
*) fail "no key: got [$out]" ;;
esac
out=$("$py" -c 'import sqlite3, sys
try:
    sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM work_queue")
except sqlite3.Error as e:
    print(e)' "$STATEFS_DB")
expect_eq "$out" "file is not a database" "without the extension"
ok "wrong key, no key and no extension: statefs's sentences, SQLite's"
