#!/usr/bin/env bash
# twohost.sh - two hosts on one PostgreSQL store, simulated as two daemons
# on two mountpoints (A = $mnt, B = $work/b) plus statectl and the helper:
#  - a value written through A is read through B by the next cat (new,
#    replaced, longer, shorter, removed), and by statectl;
#  - 4 producers and 4 consumers split across both mounts move 5,000
#    items through .wait, each delivered exactly once;
#  - 8 writers split across both mounts add to one counter: exact;
#  - a .wait blocked in B returns after a push through A, and while it
#    waits neither daemon sends the server a statement (counted by
#    pg_stat_statements, for a role of this test's own), but the periodic
#    claim recovery;
#  - a .follow of a log in B shows an append through A (NOTIFY, not
#    polling);
#  - kill -9 of A while it holds claims: B keeps serving, and A's items
#    come back (through B's recovery) after their lease, not before.
# Usage: see lib.sh (STATEFS_TEST_MODE=postgres or postgres-plain).
# Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

[ -n "$pg" ] || fail "two hosts share a store on PostgreSQL: run with a postgres mode"
b=$work/b
allow_log 'Transport endpoint is not connected'

# A role of this test's own (it owns the schema), so that the server's
# statement counts are this test's alone.
role=$schema dbname=
for kv in $STATEFS_TEST_PG; do
  [ "${kv%%=*}" = dbname ] && dbname=${kv#*=}
done
psql -X -q -v ON_ERROR_STOP=1 "$STATEFS_TEST_PG" \
  -c "CREATE ROLE $role LOGIN; GRANT CREATE ON DATABASE $dbname TO $role" ||
  fail "cannot create a role"
drop_role_at_exit=$role
STATEFS_DB=$(sed -E "s/([?&])user=[^&]*/\\1user=$role/" <<<"$STATEFS_DB")
export STATEFS_DB
have_pgss=$(psql -X -At "$STATEFS_TEST_PG" -c "SELECT count(*) FROM
  pg_extension WHERE extname = 'pg_stat_statements'")

mount_fs
mount_other "$b"

# --- one value, two hosts: the next cat sees the last close --------------
mkdir -p "$mnt/app/cfg"
for v in one two "a much longer value than the others" x; do
  echo "$v" > "$mnt/app/cfg/k"
  expect_eq "$(cat "$b/app/cfg/k")" "$v" "B reads what A wrote ($v)"
  echo "$v back" > "$b/app/cfg/k"
  expect_eq "$(cat "$mnt/app/cfg/k")" "$v back" "A reads what B wrote ($v)"
done
expect_eq "$(helper get app cfg k)" "x back" "a third process reads it"
rm "$mnt/app/cfg/k"
cat "$b/app/cfg/k" 2>/dev/null && fail "B still reads a value A removed"
ok "a value written through A is read through B by the next cat"

# --- a host whose connections are read-only -------------------------------
# (the role's or the database's default_transaction_read_only): `echo v >
# k` there is told EROFS at its close, which the shell ignores, so the
# daemon logs it; nothing is stored.
allow_log 'read-only transaction|not stored at its close: Read-only file system'
mkdir -p "$mnt/app/ro"
echo old > "$mnt/app/ro/k"
b_pid=$other_pid
# Claim recovery locks rows (SELECT FOR UPDATE) even when nothing has
# expired, which a read-only host refuses: at the open it says nothing,
# and the periodic pass (each second here) logs it once, not each time.
PGOPTIONS="-c default_transaction_read_only=on" mount_other "$work/ro" -o lease=1s
echo new > "$work/ro/app/ro/k"
expect_eq "$(cat "$mnt/app/ro/k")" old "a value written on a read-only host"
grep -q "a key was not stored at its close: Read-only file system" \
  "$work/daemon.err" || fail "the read-only host did not log the lost close"
for _ in $(seq 600); do
  grep -q "claim recovery: store is read-only" "$work/daemon.err" && break
  nap 0.05
done
expect_eq "$(grep -c "claim recovery" "$work/daemon.err")" 1 \
  "claim recovery's lines from the read-only host after its first pass"
sleep 2 # two more passes, at least on a machine that is not stalled
expect_eq "$(grep -c "claim recovery" "$work/daemon.err")" 1 \
  "claim recovery's lines from the read-only host after more passes"
fusermount3 -u "$work/ro" || fail "cannot unmount the read-only host"
wait "$other_pid" || fail "the read-only host exited badly"
other_pid=$b_pid
ok "a read-only host: its failed close is logged, nothing stored"

# --- 4 producers and 4 consumers on both mounts: 5,000 items, once each -----
per=${TWOHOST_PER:-1250}
mkdir -p "$mnt/queue/work"
produce() { # DIR N
  for j in $(seq "$per"); do echo "p$2-$j" > "$1/queue/work/new"; done
}
consume() { # DIR N: until a STOP (read, a builtin: no process per item)
  local v
  while IFS= read -r v < "$1/queue/work/.wait"; do
    [ "$v" = STOP ] && return 0
    echo "$v" >> "$work/got.$2"
  done
  return 1
}
cpids=() ppids=()
for c in 1 2 3 4; do
  dir=$mnt; [ $((c % 2)) = 0 ] && dir=$b
  consume "$dir" $c & cpids+=($!)
done
for p in 1 2 3 4; do
  dir=$mnt; [ $((p % 2)) = 0 ] && dir=$b
  produce "$dir" $p & ppids+=($!)
done
for p in "${ppids[@]}"; do wait "$p" || fail "a producer failed"; done
for c in 1 2 3 4; do echo STOP > "$mnt/queue/work/new"; done
for c in "${cpids[@]}"; do wait "$c" || fail "a consumer failed"; done
cat "$work"/got.* | sort > "$work/got"
for p in 1 2 3 4; do for j in $(seq "$per"); do echo "p$p-$j"; done; done |
  sort > "$work/want"
expect_eq "$(wc -l < "$work/got")" $((4 * per)) "items delivered"
cmp -s "$work/got" "$work/want" || fail "an item was lost or delivered twice"
expect_eq "$(helper qlen work)" 0 "the queue is empty"
expect_eq "$(helper qinflight work)" 0 "nothing is left in flight"
ok "4 producers, 4 consumers on two mounts: $((4 * per)) items, each once"

# --- 8 writers on both mounts, one counter ---------------------------------
adds=100
mkdir -p "$mnt/counter/app/stats"
echo 0 > "$mnt/counter/app/stats/n"
add() { for _ in $(seq "$adds"); do echo +1 > "$1/counter/app/stats/n"; done; }
wpids=()
for w in 1 2 3 4 5 6 7 8; do
  dir=$mnt; [ $((w % 2)) = 0 ] && dir=$b
  add "$dir" & wpids+=($!)
done
for w in "${wpids[@]}"; do wait "$w" || fail "a writer failed"; done
expect_eq "$(cat "$b/counter/app/stats/n")" $((8 * adds)) "the counter"
expect_eq "$(helper cget app stats n)" $((8 * adds)) "the counter, read by a third process"
ok "8 writers on two mounts: $((8 * adds)) adds, exact"

# --- .wait in B, a push through A; nothing polls the server meanwhile -------
mkdir -p "$mnt/queue/w"
cat "$b/queue/w/.wait" > "$work/waited" & waiter=$!
sleep 1 # B's reader is kept, B listens
if [ "$have_pgss" = 1 ]; then
  psql -X -q "$STATEFS_TEST_PG" -c "SELECT pg_stat_statements_reset(
    (SELECT oid FROM pg_roles WHERE rolname = '$role'))" >/dev/null
  idle_s=3
  sleep $idle_s
  # claim recovery is periodic (every lease/10, at least a second, at most a
  # minute: with the default lease, once a minute): sfs_recover, then the
  # sweep of orphaned time rows (core/pg/claim.c); anything else is polling
  read -r other gc < <(psql -X -At -F ' ' "$STATEFS_TEST_PG" -c "SELECT
    coalesce(sum(calls) FILTER (WHERE query NOT LIKE '%sfs_recover%'
      AND query NOT LIKE 'WITH kc AS (%'), 0),
    coalesce(sum(calls) FILTER (WHERE query LIKE '%sfs_recover%'), 0)
    FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
    WHERE r.rolname = '$role'")
  expect_eq "$other" 0 "statements while a .wait waited ${idle_s}s"
  [ "$gc" -le 4 ] || fail "$gc claim recoveries in ${idle_s}s"
  ok "no statement reached the server while B waited (${idle_s}s; $gc recoveries)"
else
  echo "skip - pg_stat_statements is not in $dbname: idle traffic not counted"
fi
kill -0 "$waiter" 2>/dev/null || fail "the .wait returned before anything was pushed"
t0=$(date +%s%N)
echo ping > "$mnt/queue/w/new"
for _ in $(seq 200); do kill -0 "$waiter" 2>/dev/null || break; nap 0.05; done
wait "$waiter" || fail "the .wait failed"
t1=$(date +%s%N)
expect_eq "$(cat "$work/waited")" ping "B's .wait got A's push"
ok "a .wait in B woke $(( (t1 - t0) / 1000000 )) ms after a push through A"

# --- a log followed in B, appended to through A ---------------------------
mkdir -p "$mnt/exec/run/log/events"
echo first > "$mnt/exec/run/log/events/new"
cat "$b/exec/run/log/events/.follow" > "$work/followed" & follower=$!
for _ in $(seq 200); do [ -s "$work/followed" ] && break; nap 0.05; done
echo second > "$mnt/exec/run/log/events/new"
for _ in $(seq 200); do [ "$(grep -c '' "$work/followed")" -ge 2 ] && break; nap 0.05; done
kill "$follower" 2>/dev/null; wait "$follower" 2>/dev/null || true
expect_eq "$(jq -r '.value | rtrimstr("\n")' "$work/followed" | tr '\n' ' ')" \
  "first second " \
  "B's follower got A's append"
ok "a .follow in B shows an append through A"

# --- kill -9 of A while it holds claims -------------------------------------
# (both with a short lease: B's recovery, every lease/10 but at least a
# second, is what brings A's items back)
lease=8
unmount_fs
fusermount3 -u "$b"
wait "$other_pid" || fail "B exited badly"
mount_fs -o lease=${lease}s
mount_other "$b" -o lease=${lease}s
mkdir -p "$mnt/queue/jobs"
for i in 1 2 3; do echo "job $i" > "$mnt/queue/jobs/new"; done
n1=$(cat "$mnt/queue/jobs/.claim")
n2=$(cat "$mnt/queue/jobs/.claim")
until_ns=$(psql_store "SELECT max(lease_until) FROM statefs_claim")
server_ns() {
  psql -X -At "$STATEFS_TEST_PG" -c \
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint"
}
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
fusermount3 -u "$mnt" 2>/dev/null || true
# B keeps serving: values, pushes, a claim of the item A did not take
echo after-the-kill > "$b/app/cfg/alive"
expect_eq "$(cat "$b/app/cfg/alive")" after-the-kill "B writes and reads"
n3=$(cat "$b/queue/jobs/.claim")
expect_eq "$(cat "$b/queue/jobs/inflight/$n3")" "job 3" "B claims the free item"
rm "$b/queue/jobs/inflight/$n3"
# Not before the lease: while the server's clock is before its end, A's
# items are in flight (whatever B's recovery does meanwhile).
checked=0
while :; do
  pending=$(ls "$b/queue/jobs" | tr '\n' ' ')
  now=$(server_ns)
  [ "$now" -ge "$until_ns" ] && break
  expect_eq "$pending" "" "A's items before the end of their lease"
  checked=$((checked + 1))
  sleep 0.5
done
[ "$checked" -gt 0 ] || echo "note - the lease had ended before the first look"
# After it: back, through B's periodic recovery, under their names.
for _ in $(seq 300); do
  [ "$(ls "$b/queue/jobs" | tr '\n' ' ')" = "$n1 $n2 " ] && break
  nap 0.1
done
expect_eq "$(ls "$b/queue/jobs" | tr '\n' ' ')" "$n1 $n2 " "A's items after their lease"
expect_eq "$(cat "$b/queue/jobs/.pop")" "job 1" "and B takes them, in order"
ok "kill -9 of A: B kept serving; A's claims came back after the lease (looked $checked times before)"
