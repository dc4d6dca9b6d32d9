#!/usr/bin/env bash
# workerpool.sh - scripts/worker-pool on a mount: 4 workers drain 100 quick
# items and 3 slow ones (one and a half leases each: only heartbeats keep
# them) while workers are killed with SIGKILL at random moments. The lease
# is 2 s, or longer when the machine is slow right now (measured_lease):
# fewer stalls past it, less work done twice. Checked from the items' own
# records ("P name worker value", written by the command) and the pool's
# log ("worker W: done NAME", any "worker W: ... lost NAME"): the queue,
# inflight/ and dead/ end empty; every item was processed; none was acked
# twice; an item with no ack was last processed by a killed worker; of two
# processings of an item in a row, the first worker was killed, or one of
# the two lost the item (a stall past the lease, which the pool reports;
# a late ack of the first then settles the second's claim, which
# docs/claims.md allows: done twice, never lost); an item that always
# fails, under a delivery limit, logged "put back" and then "to dead/".
# What holds under any schedule. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"
pool=$(cd "$(dirname "$0")/../../scripts" && pwd)/worker-pool

mount_fs
lease=$(measured_lease 2)
unmount_fs
mount_fs -o lease=${lease}s
echo "lease ${lease} s"
q=$mnt/queue/jobs
for i in $(seq 100); do echo "$i" > "$q/new"; done
for i in 1 2 3; do echo "slow-$i" > "$q/new"; done

# A command that cannot read its item (its lease ran out and the file is
# gone) fails, as any careful command would: the pool puts the item back.
cat > "$work/cmd" <<'EOF'
#!/usr/bin/env bash
v=$(cat) || exit 1
echo "P $STATEFS_ITEM $STATEFS_WORKER $v" >> "$RECORDS"
case $v in slow-*) sleep "$SLOW" ;; *) sleep 0.02 ;; esac
EOF
chmod +x "$work/cmd"
export RECORDS=$work/records SLOW=$((lease * 3 / 2)).$((lease * 3 % 2 * 5))
: > "$RECORDS"

# PID STATUS_WHAT QUEUE_WHAT: the pool PID exits 0, and the queue jobs holds
# nothing pending, in flight or dead
pool_done() {
  local rc=0
  wait "$1" || rc=$?
  expect_eq "$rc" 0 "$2"
  expect_eq "$(helper qlen jobs),$(helper qinflight jobs),$(helper qdead jobs)" \
    "0,0,0" "$3"
}

"$pool" -n 4 -x -p 0.2 -l "${lease}s" "$q" "$work/cmd" 2> "$work/pool.log" &
pool_pid=$!

# Kill a live worker at a random moment while items are pending.
killed=" "
kills=0
for _ in $(seq 12); do
  sleep "0.$((RANDOM % 5 + 2))"
  [ -n "$(ls "$q")" ] || break
  victim=$(grep -o 'worker [0-9]*: started (pid [0-9]*)' "$work/pool.log" |
    sed 's/worker \([0-9]*\): started (pid \([0-9]*\))/\1 \2/' |
    while read -r id pid; do
      case "$killed" in *" $id "*) continue ;; esac
      kill -0 "$pid" 2>/dev/null && echo "$id $pid"
    done | shuf -n1 || true)
  [ -n "$victim" ] || continue
  set -- $victim
  kill -9 "$2" 2>/dev/null || continue
  killed="$killed$1 "
  kills=$((kills + 1))
done
[ "$kills" -ge 2 ] || fail "only $kills workers were killed while items were pending"

# The pool ends (-x) once nothing is pending or in flight. However slow
# the machine, it keeps making progress; two minutes and three leases (a
# slow item, a killed worker's item coming back) without a new record or
# log line is a hang.
progress= still=0
while kill -0 "$pool_pid" 2>/dev/null; do
  now=$(cat "$RECORDS" "$work/pool.log" | wc -c)
  if [ "$now" = "$progress" ]; then
    still=$((still + 1))
    [ "$still" -lt $((1200 + 30 * lease)) ] ||
      fail "the pool made no progress in $((120 + 3 * lease)) s"
  else
    progress=$now still=0
  fi
  nap 0.1
done
pool_done "$pool_pid" "the pool's exit status" \
  "nothing pending, in flight or dead"
grep -q 'died (status' "$work/pool.log" || fail "the pool did not see its workers die"

# Every item processed; acked at most once; the rest where crashes were,
# or where a worker lost the item (the pool logs "worker W: lost NAME" when
# a heartbeat or the ack finds the lease ran out).
awk -v killed="$killed" -v pool_log="$work/pool.log" '
  BEGIN {
    n = split(killed, k, " ")
    for (i = 1; i <= n; i++) dead[k[i]] = 1
    while ((getline line < pool_log) > 0) {
      if (match(line, /: done [0-9]+$/)) {
        name = substr(line, RSTART + 7)
        acks[name]++
      }
      if (line ~ /lost/ && match(line, /worker [0-9]+:/)) {
        w = substr(line, RSTART + 7, RLENGTH - 8)
        nf = split(line, f, /[ ():]+/)
        for (i = 1; i <= nf; i++)
          if (length(f[i]) == 19 && f[i] ~ /^[0-9]+$/) { lost[w, f[i]] = 1; nlost++; break }
      }
    }
  }
  $1 == "P" {
    name = $2; worker = $3; value = $4
    seen[value] = 1
    if (name in last && !(lastw[name] in dead) && !((lastw[name], name) in lost) &&
        !((worker, name) in lost)) {
      printf "item %s (%s) processed again by worker %s after worker %s, which was not killed, and neither lost it\n",
        name, value, worker, lastw[name]
      bad = 1
    }
    last[name] = 1; lastw[name] = worker; times[name]++
  }
  END {
    for (i = 1; i <= 100; i++) if (!(i in seen)) { print "item " i " never processed"; bad = 1 }
    for (i = 1; i <= 3; i++) if (!(("slow-" i) in seen)) { print "slow-" i " never processed"; bad = 1 }
    for (name in acks) if (acks[name] > 1) { print "item " name " acked " acks[name] " times"; bad = 1 }
    for (name in last) if (!(name in acks) && !(lastw[name] in dead)) {
      print "item " name " has no ack, and its last worker " lastw[name] " was not killed"; bad = 1
    }
    for (name in times) dup += times[name] > 1
    printf "%d workers killed, %d items lost to a stall past the lease, %d items processed more than once\n",
      n, nlost, dup > "/dev/stderr"
    exit bad
  }' "$RECORDS" || fail "the records break at-least-once (see above)"
ok "worker-pool: $kills workers killed with SIGKILL, every item done, acked at most once"

# A pool whose host clock is behind the store's (on PostgreSQL, the
# server's) by three leases keeps a slow item's claim: it heartbeats by
# the lease's length (-l), not by "the in-flight file's mtime minus now",
# which was four leases, so the first heartbeat came after the lease had
# run out, every time (before 2026-12-04 the item was lost again and
# again and the pool never ended). Three losses in a row: not a stall.
printf '#!/bin/sh\nCLOCKSHIFT_FILE=%s LD_PRELOAD=%s exec %s "$@"\n' \
  "$work/shift" "$STATEFS_CLOCKSHIFT" "$pool" > "$work/pool-behind"
chmod +x "$work/pool-behind"
echo "-$((3 * lease))" > "$work/shift"
echo "slow-behind" > "$q/new"
: > "$RECORDS"
"$work/pool-behind" -n 1 -x -p 0.2 -l "${lease}s" "$q" "$work/cmd" \
  2> "$work/behind.log" &
pool_pid=$!
while kill -0 "$pool_pid" 2>/dev/null; do
  if [ "$(grep -c lost "$work/behind.log")" -ge 3 ]; then
    kill -TERM "$pool_pid" 2>/dev/null || true
    wait "$pool_pid" || true
    fail "a pool $((3 * lease)) s behind the store's clock lost its item's claim three times"
  fi
  nap 0.1
done
pool_done "$pool_pid" "the exit status of the pool behind" \
  "nothing pending, in flight or dead after the pool behind"
grep -q "done" "$work/behind.log" || fail "the pool behind did not ack its item"
ok "worker-pool: a host clock $((3 * lease)) s behind the store's keeps a claim"

# An item that always fails, on a queue with a delivery limit of 2: the
# first nack puts it back, the second sends it to dead/, and the pool's
# log says which (before 2026-12-04 it said "put back" both times, of an
# item that was then a dead letter).
printf '#!/bin/sh\ncat >/dev/null\nexit 1\n' > "$work/fails"
chmod +x "$work/fails"
helper qpolicy poison 0 2
echo "poison" > "$mnt/queue/poison/new"
name=$(ls "$mnt/queue/poison")
"$pool" -n 1 -x -p 0.2 -l "${lease}s" "$mnt/queue/poison" "$work/fails" \
  2> "$work/poison.log" &
pool_pid=$!
rc=0
wait "$pool_pid" || rc=$?
expect_eq "$rc" 0 "the exit status of the pool on a poison item"
expect_eq "$(grep -c "failed $name (exit 1): put back\$" "$work/poison.log")" 1 \
  "'put back' in the pool's log of a poison item with a delivery limit of 2"
expect_eq "$(grep -c "failed $name (exit 1): to dead/ (the queue's delivery limit)\$" \
  "$work/poison.log")" 1 \
  "'to dead/' in the pool's log of a poison item at its delivery limit"
expect_eq "$(helper qlen poison),$(helper qinflight poison),$(helper qdead poison)" \
  "0,0,1" "the poison item pending, in flight, dead"
ok "worker-pool: an item nacked to its delivery limit is logged as sent to dead/"

unmount_fs
