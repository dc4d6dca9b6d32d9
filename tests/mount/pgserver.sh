#!/usr/bin/env bash
# pgserver.sh - what the PostgreSQL server keeps and survives:
#  - a canary written through the mount as a value, a log entry, a pending
#    and an in-flight queue item appears nowhere in a pg_dump of the store
#    nor in the server's data directory or log, raw, as hex or as base64;
#    a plaintext store's canary does (the control that proves the search);
#  - the server restarted (immediate: as a crash) in the middle of three
#    write streams through the mount: the daemon reconnects by itself,
#    every write whose close returned 0 is there afterwards, nothing that
#    failed was reported as success, and a .wait is woken by a push after
#    the restart (the listening connection came back too);
#  - after a restart, and after pg_terminate_backend of the daemon's
#    connections while they were idle: the first .pop and .claim succeed
#    (they run on new connections), and a .wait blocked across it keeps
#    waiting and returns the item pushed after;
#  - a .pop whose ack failed after the delivery (the server refusing
#    writes) is acked once the server takes writes again, not delivered
#    again when its lease ends; so are a .drain's rows, and the drain's
#    close does not give them back;
#  - a push and an append refused at the writer's close (the server
#    refusing writes) store nothing at a later close of the same file by
#    a process that wrote nothing.
# It restarts the server, so it runs on a server of its own, started by
# scripts/with-pg beside the one the other PostgreSQL tests share (which
# run meanwhile). Runs only where scripts/with-pg started the shared server
# (STATEFS_TEST_PGDATA set: the server binaries are here); with another
# server it is skipped.
# Usage: see lib.sh (STATEFS_TEST_MODE=postgres). Exit: 0, 1, 77.
if [ -n "${STATEFS_TEST_PGDATA:-}" ] && [ -z "${STATEFS_TEST_PG_OWN:-}" ]; then
  unset STATEFS_TEST_PG STATEFS_TEST_PGDATA STATEFS_TEST_PGOWNER STATEFS_TEST_PGPW
  STATEFS_TEST_PG_OWN=1 exec "$(dirname "$0")/../../scripts/with-pg" \
    bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

[ "$mode" = postgres ] || fail "run with STATEFS_TEST_MODE=postgres"
if [ -z "${STATEFS_TEST_PGDATA:-}" ]; then
  echo "needs a server of its own (scripts/with-pg): skipped"
  exit 77
fi
pgbin=${STATEFS_TEST_PGBIN:?}
pgctl() {
  if [ -n "${STATEFS_TEST_PGOWNER:-}" ]; then
    runuser -u "$STATEFS_TEST_PGOWNER" -- "$pgbin/pg_ctl" -D "$STATEFS_TEST_PGDATA" "$@"
  else
    "$pgbin/pg_ctl" -D "$STATEFS_TEST_PGDATA" "$@"
  fi
}
allow_log 'lost the connection|terminating connection|server closed|outcome is unknown|reconnecting|could not settle|cannot listen'

# --- the canary -----------------------------------------------------------
mount_fs
canary=canary-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
mkdir -p "$mnt/app/cfg" "$mnt/exec/run/log/k" "$mnt/queue/q"
echo "$canary" > "$mnt/app/cfg/value"
echo "$canary" > "$mnt/exec/run/log/k/entry"
echo "$canary" > "$mnt/queue/q/new"
echo "$canary" > "$mnt/queue/q/new"
n=$(cat "$mnt/queue/q/.claim") # one pending, one in flight
expect_eq "$(cat "$mnt/queue/q/inflight/$n")" "$canary" "the in-flight canary"
# the control: the same in a plaintext store beside it
control=control-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
mount_other "$work/c" -o plaintext -o "db=$STATEFS_TEST_PG schema=${schema}c"
mkdir -p "$work/c/app/cfg"
echo "$control" > "$work/c/app/cfg/value"
fusermount3 -u "$work/c"
wait "$other_pid" || fail "the control's daemon exited badly"
psql -X -q "$STATEFS_TEST_PG" -c CHECKPOINT # data files written
"$pgbin/pg_dump" -d "$STATEFS_TEST_PG" -n "$schema" -n "${schema}c" > "$work/dump.sql"
psql -X -q "$STATEFS_TEST_PG" -c "SET client_min_messages = warning;
  DROP SCHEMA ${schema}c CASCADE"

# The needles: raw, hex either case, base64 at each of the three
# alignments (the middle of the encoding that does not depend on the
# bytes around it).
needles() { # TEXT
  local t=$1 k e
  echo "$t"
  printf %s "$t" | od -An -tx1 | tr -d ' \n'; echo
  printf %s "$t" | od -An -tx1 | tr -d ' \n' | tr a-f A-F; echo
  for k in 0 1 2; do
    e=$(printf "%${k}s%s" "" "$t" | base64 -w0)
    echo "${e:4:$(( ${#e} - 8 ))}"
  done
}
found_in() { # NEEDLE: the files that hold it
  grep -r -a -F -l -- "$1" "$work/dump.sql" "$STATEFS_TEST_PGDATA" \
    "$(dirname "$STATEFS_TEST_PGDATA")"/*.log 2>/dev/null || true
}
while read -r nd; do
  [ -z "$(found_in "$nd")" ] || fail "the canary is on the server ($nd): $(found_in "$nd")"
done < <(needles "$canary")
dump_hit=$(grep -c -F -- "$(needles "$control" | sed -n 2p)" "$work/dump.sql" || true)
[ "$dump_hit" -gt 0 ] || fail "the control is not in the dump (as hex): the search is broken"
[ -n "$(grep -r -a -F -l -- "$control" "$STATEFS_TEST_PGDATA" 2>/dev/null)" ] ||
  fail "the control is not in the data directory: the search is broken"
expect_eq "$(cat "$mnt/app/cfg/value")" "$canary" "the canary reads back"
ok "a canary (value, log entry, pending and in-flight item) is nowhere on the server; the control is"
rm "$mnt/queue/q/inflight/$n"

# --- a restart of the server during three write streams -------------------
mkdir -p "$mnt/counter/app/stats"
echo 0 > "$mnt/counter/app/stats/n"
stop=$work/stop
writer() { # KIND: each write's outcome, then why it stopped
  local i=0 path data r
  while [ ! -e "$stop" ]; do
    i=$((i + 1))
    case $1 in
    values) path=$mnt/app/cfg/k$i data="value $i" ;;
    adds) path=$mnt/counter/app/stats/n data=+1 ;;
    items) path=$mnt/queue/q/new data="item $i" ;;
    esac
    r=$(fsop write "$path" "$data")
    echo "$(date +%s%N) $i $r" >> "$work/$1"
  done
}
: > "$work/values"; : > "$work/adds"; : > "$work/items"
writer values & w1=$!
writer adds & w2=$!
writer items & w3=$!
sleep 1.5
t_restart=$(date +%s%N)
pgctl -m immediate -w -t 60 restart >/dev/null || fail "the server did not restart"
t_up=$(date +%s%N)
sleep 3
touch "$stop"
for p in $w1 $w2 $w3; do wait "$p"; done
# every write acknowledged is there; failures are allowed only as errors
for f in values adds items; do
  [ "$(awk '$3 == "OK"' "$work/$f" | wc -l)" -gt 0 ] || fail "no $f acknowledged"
  awk -v t="$t_up" '$1 > t && $3 == "OK" { n++ } END { exit !n }' "$work/$f" ||
    fail "no $f acknowledged after the restart: the daemon did not reconnect"
  awk '$3 != "OK" && $3 != "EIO"' "$work/$f" | grep . &&
    fail "a $f write failed with something else than EIO"
done
missing=0
while read -r _ i r; do
  [ "$r" = OK ] || continue
  [ "$(cat "$mnt/app/cfg/k$i" 2>/dev/null)" = "value $i" ] || missing=$((missing + 1))
done < "$work/values"
expect_eq "$missing" 0 "acknowledged values missing"
acked=$(awk '$3 == "OK"' "$work/adds" | wc -l)
failed=$(awk '$3 != "OK"' "$work/adds" | wc -l)
n=$(cat "$mnt/counter/app/stats/n")
[ "$n" -ge "$acked" ] && [ "$n" -le $((acked + failed)) ] ||
  fail "counter $n after $acked acknowledged and $failed failed adds"
for f in "$mnt/queue/q/"*; do cat "$f"; echo; done > "$work/items.there"
while read -r _ i r; do
  [ "$r" = OK ] || continue
  grep -qx "item $i" "$work/items.there" || fail "acknowledged item $i missing"
done < "$work/items"
ok "restart during writes: $(wc -l < "$work/values") values, $acked+$failed adds, $(wc -l < "$work/items") pushes; every acknowledged write is there ($(( (t_up - t_restart) / 1000000 )) ms down)"

# the daemon's listening connection came back: a push by another process
# wakes a .wait
mkdir -p "$mnt/queue/w"
cat "$mnt/queue/w/.wait" > "$work/woken" & waiter=$!
sleep 0.5
helper qpush w after-restart
for _ in $(seq 200); do kill -0 "$waiter" 2>/dev/null || break; nap 0.1; done
wait "$waiter" || fail "the .wait failed"
expect_eq "$(cat "$work/woken")" after-restart "a .wait after the restart"
unmount_fs
helper verify || fail "verify"
ok "after the restart: .wait woken by another process; verify passes"

# --- connections the server ended while they were idle --------------------
# A restart, or pg_terminate_backend of the daemon's connections (waited
# for until those backends are gone): the first .pop and .claim after it,
# and a .wait blocked across it, run on new connections and succeed. Each
# op runs once before, so that the idle connection it will be lent holds
# its statement prepared (its first statement after is then the claim's,
# which commits). A dead idle connection used to be lent (its backend's
# last message passed the pool's check): the call failed with "the
# outcome is unknown" though nothing had reached a server.
app=sfs_pgserver_$$
mount_fs -o "db=$STATEFS_DB&application_name=$app"
pg_pids() { # WHICH (pool or listener): the daemon's backends, by pid
  # The listener's connection (core/pg/store.c) runs LISTEN, then SET
  # idle_session_timeout = 0, and nothing after (pg_stat_activity shows
  # the last); the pool's (core/pg/conn.c) start with SET search_path and
  # run neither.
  local l="coalesce(query, '') LIKE 'LISTEN %' OR query = 'SET idle_session_timeout = 0'" q
  case $1 in
  pool) q="NOT ($l)" ;;
  listener) q="$l" ;;
  esac
  psql -X -q -At "$STATEFS_TEST_PG" -c \
    "SELECT string_agg(pid::text, ',') FROM pg_stat_activity
     WHERE application_name = '$app' AND ($q)"
}
end_conns() { # HOW [listening]: restart, or terminate (the pool's, then the
  # listener's; with "listening", the daemon has a listener (a .wait ran):
  # waited for until it is connected, and it must outlive the pool's end)
  local which pids listener=
  if [ "$1" = restart ]; then
    pgctl -m immediate -w -t 60 restart >/dev/null || fail "the server did not restart"
    return
  fi
  if [ "${2:-}" = listening ]; then
    SECONDS=0
    until listener=$(pg_pids listener); [ -n "$listener" ]; do
      [ "$SECONDS" -lt 60 ] || fail "the daemon's listening connection not found in 60 s"
      nap 0.05
    done
    [ "$listener" = "${listener%,*}" ] || fail "more than one listening connection: $listener"
  fi
  # The pool's first: the listener's reconnection wakes the .wait, whose
  # claim must then find the pool's connections dead, not dying.
  for which in pool listener; do
    pids=$(pg_pids "$which")
    if [ -n "$listener" ]; then
      case $which in
      pool)
        [ -n "$pids" ] || fail "the pool's connections not found"
        case ,$pids, in *",$listener,"*)
          fail "the listener's connection ($listener) among the pool's ($pids)" ;;
        esac
        [ -n "${pids_shown:-}" ] || echo "# the pool's backends: $pids; the listener's: $listener"
        pids_shown=1 ;;
      listener)
        expect_eq "$pids" "$listener" "the listener's backend, after the pool's ended" ;;
      esac
    fi
    [ -n "$pids" ] || continue
    psql -X -q -At "$STATEFS_TEST_PG" -c \
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid IN ($pids)" >/dev/null
    for _ in $(seq 1200); do
      [ "$(psql -X -q -At "$STATEFS_TEST_PG" -c \
        "SELECT count(*) FROM pg_stat_activity WHERE pid IN ($pids)")" = 0 ] && continue 2
      nap 0.05
    done
    fail "the daemon's $which backends ($pids) did not end in 60 s"
  done
}
mkdir -p "$mnt/queue/p" "$mnt/queue/w"
for i in $(seq 10); do echo "p$i" > "$mnt/queue/p/new"; done
for how in restart terminate; do
  for op in pop claim; do
    expect_op OK read "$mnt/queue/p/.$op"
    end_conns "$how" listening
    expect_op OK read "$mnt/queue/p/.$op"
  done
  rm -f "$work/reading"
  "$STATEFS_FSOP" -v read "$mnt/queue/w/.wait" "$work/reading" > "$work/woken" & waiter=$!
  fuse_blocked "$waiter" "$work/reading"
  end_conns "$how" listening
  helper qpush w "after-$how"
  wait "$waiter"
  expect_eq "$(cat "$work/woken")" "after-${how}OK" "a .wait blocked across the $how"
  ok "after a $how: the first .pop and .claim succeed; a blocked .wait gets the next push"
done
expect_eq "$(helper qlen p)" 2 "items pending"
expect_eq "$(helper qinflight p)" 4 "items in flight"
unmount_fs

# --- acks that fail are tried again ----------------------------------------
# An item is taken, then (while the daemon holds its answer: a test hook
# that waits while a file exists) the daemon's connections end and the
# role's new sessions are read-only, so the ack after the delivery fails.
# Once the server takes writes again the daemon acks it (it tries each
# second): the item is settled, not delivered again when the lease ends.
gated_mount() {
  touch "$work/gate"
  export STATEFS_TEST_DELIVER_GATE=$work/gate
  mount_fs -o "db=$STATEFS_DB&application_name=$app"
  unset STATEFS_TEST_DELIVER_GATE
  allow_log 'could not be settled yet|not settled yet|claim recovery'
}
wait_inflight() { # QUEUE N: until the reader's take is in the store
  SECONDS=0
  until [ "$(helper qinflight "$1")" = "$2" ]; do
    [ "$SECONDS" -lt 60 ] || fail "the reader of queue $1 took no item in 60 s"
    nap 0.05
  done
}
writes_refused() { # then the gate opens: the answer goes, its ack fails
  psql -X -q "$STATEFS_TEST_PG" -c "ALTER ROLE CURRENT_USER SET default_transaction_read_only = on"
  end_conns terminate
  rm "$work/gate"
}
writes_taken() {
  psql -X -q "$STATEFS_TEST_PG" -c "SET default_transaction_read_only = off" \
    -c "ALTER ROLE CURRENT_USER RESET default_transaction_read_only"
  end_conns terminate
}
wait_settled() { # QUEUE WHAT
  SECONDS=0
  while [ "$(helper qinflight "$1")" != 0 ]; do
    [ "$SECONDS" -lt 45 ] || fail "$2 still in flight 45 s after the server took writes again (not tried again)"
    nap 0.2
  done
  expect_eq "$(helper qlen "$1")" 0 "$2 not back in the queue"
}

# A .pop's: it stayed in flight until the pop's lease of a minute ended
# before, and came back.
gated_mount
helper qpush r once
"$STATEFS_FSOP" -v read "$mnt/queue/r/.pop" > "$work/popped" & reader=$!
wait_inflight r 1
writes_refused
wait "$reader"
expect_eq "$(cat "$work/popped")" onceOK "the item delivered"
expect_eq "$(helper qinflight r)" 1 "the item in flight while the server refuses writes"
writes_taken
wait_settled r "the delivered item"
grep -q "could not be settled yet" "$work/daemon.err" || fail "the failed ack is not in the log"
grep -q "settled after all" "$work/daemon.err" || fail "no 'settled after all' in the log"
unmount_fs
ok "a .pop whose ack failed is acked once the server takes writes again, not delivered twice"

# A queue's drain: its reply carries three rows whose acks fail, the server
# takes writes again, and the reader closes. The rows are settled (by the
# timer, or at the close), not given back by the close's release: they
# were given back before, and delivered again by the next drain.
# Queue Q's drain, kept open on descriptor 3, takes TAKEN rows and its
# first read (64 KiB) delivers DELIVERED of them while the server
# refuses writes: their acks fail.
drain_refused() { # Q TAKEN DELIVERED
  gated_mount
  helper qpush "$1" $(seq -f "row%g" "$2")
  exec 3< "$mnt/queue/$1/.drain"
  dd bs=64k count=1 status=none <&3 > "$work/drained" & reader=$!
  wait_inflight "$1" "$2"
  writes_refused
  wait "$reader"
  expect_eq "$(grep -c '"value":"row' "$work/drained")" "$3" "rows delivered"
}
drain_refused d 3 3
expect_eq "$(helper qinflight d)" 3 "the rows in flight while the server refuses writes"
writes_taken
exec 3<&-
wait_settled d "the delivered rows"
grep -q "rows of a drain were delivered but their claim [0-9]* could not be settled yet" "$work/daemon.err" ||
  fail "the failed acks are not in the log"
unmount_fs
ok "a .drain whose acks failed: its rows are acked once the server takes writes again, not given back at its close"

# A drain closed while its acks still fail, with rows it never delivered
# (300 taken, one page of 256 read): once the server takes writes again
# the delivered rows are settled and the other 44 come back at once.
# They waited for the drain's lease (ten minutes) before.
drain_refused e 300 256
exec 3<&-
SECONDS=0
until grep -q "a drain ended with 256 delivered rows not settled yet" "$work/daemon.err"; do
  [ "$SECONDS" -lt 60 ] || fail "no word of the closed drain's unsettled rows: $(tail -3 "$work/daemon.err")"
  nap 0.05
done
writes_taken
SECONDS=0
while [ "$(helper qinflight e)" != 0 ]; do
  [ "$SECONDS" -lt 45 ] || fail "$(helper qinflight e) rows of a closed drain still in flight 45 s after the server took writes again (left to the lease)"
  nap 0.2
done
expect_eq "$(helper qlen e)" 44 "the rows the closed drain did not deliver, back in the queue"
grep -q "gave back the rows it did not deliver" "$work/daemon.err" || fail "no word of the rows given back"
unmount_fs
ok "a .drain closed with unsettled acks: its undelivered rows come back once the acks land, not at the lease's end"

# --- a push refused at its close is settled --------------------------------
# The shell writes a queue item and a log entry, and a job started inside
# the redirections holds both files and writes nothing; the shell's close
# fails (EROFS: the server refuses writes), and the job closes them after
# the server takes writes again. Nothing is stored: an empty item and an
# empty entry were, at the job's close (the failed push left the handle
# looking like a create that nothing was written to).
allow_log 'not stored at its close: Read-only file system|read-only transaction'
mount_fs -o "db=$STATEFS_DB&application_name=$app"
mkdir -p "$mnt/queue/s" "$mnt/exec/run/log/s"
exec 3> "$mnt/queue/s/new" 4> "$mnt/exec/run/log/s/new"
printf item >&3
printf entry >&4
sleep 600 & holder=$!
psql -X -q "$STATEFS_TEST_PG" -c "ALTER ROLE CURRENT_USER SET default_transaction_read_only = on"
end_conns terminate
exec 3>&- 4>&-
for what in "queue item" "log entry"; do
  grep -q "a new $what was not stored at its close: Read-only file system" "$work/daemon.err" ||
    fail "the $what's close did not fail: $(tail -3 "$work/daemon.err")"
done
writes_taken
kill "$holder"
wait "$holder" || true
expect_eq "$(ls "$mnt/queue/s" | wc -l)" 0 "items in the queue after the holder's close"
expect_eq "$(ls "$mnt/exec/run/log/s" | wc -l)" 0 "entries in the log after the holder's close"
unmount_fs
expect_eq "$(helper qlen s)" 0 "items in the queue after the unmount"
ok "a push and an append refused at the writer's close are not made empty at a later close"
