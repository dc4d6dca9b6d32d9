#!/usr/bin/env bash
# workerpool.sh - scripts/worker-pool on a mount (-o lease=2s): 4 workers
# drain 200 quick items and 3 slow ones (3 s each, longer than the lease:
# only heartbeats keep them) while workers are killed with SIGKILL at random
# moments. Checked from the items' own records ("P name worker value",
# written by the command) and the pool's log ("worker W: done NAME"): the
# queue, inflight/ and dead/ end empty; every item was processed; none was
# acked twice; an item with no ack was last processed by a killed worker;
# every processing of an item but its last was by a killed worker (so a
# duplicate only where a crash happened: heartbeats kept the slow ones).
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"
pool=$(cd "$(dirname "$0")/../../scripts" && pwd)/worker-pool

mount_fs -o lease=2s
q=$mnt/queue/jobs
for i in $(seq 200); do echo "$i" > "$q/new"; done
for i in 1 2 3; do echo "slow-$i" > "$q/new"; done

cat > "$work/cmd" <<'EOF'
#!/usr/bin/env bash
v=$(cat)
echo "P $STATEFS_ITEM $STATEFS_WORKER $v" >> "$RECORDS"
case $v in slow-*) sleep 3 ;; *) sleep 0.02 ;; esac
EOF
chmod +x "$work/cmd"
export RECORDS=$work/records
: > "$RECORDS"

"$pool" -n 4 -x -p 0.2 "$q" "$work/cmd" 2> "$work/pool.log" &
pool_pid=$!
cleanup_pool() { kill "$pool_pid" 2>/dev/null || true; }
trap 'rc_=$?; cleanup_pool; (exit $rc_); cleanup' EXIT

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

# The pool ends (-x) once nothing is pending or in flight.
for _ in $(seq 600); do kill -0 "$pool_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pool_pid" 2>/dev/null && fail "the pool did not finish in 60 s"
rc=0
wait "$pool_pid" || rc=$?
expect_eq "$rc" 0 "the pool's exit status"
expect_eq "$(helper qlen jobs),$(helper qinflight jobs),$(helper qdead jobs)" \
  "0,0,0" "nothing pending, in flight or dead"
grep -q 'died (status' "$work/pool.log" || fail "the pool did not see its workers die"

# Every item processed; acked at most once; the rest where crashes were.
awk -v killed="$killed" -v pool_log="$work/pool.log" '
  BEGIN {
    n = split(killed, k, " ")
    for (i = 1; i <= n; i++) dead[k[i]] = 1
    while ((getline line < pool_log) > 0)
      if (match(line, /: done [0-9]+$/)) {
        name = substr(line, RSTART + 7)
        acks[name]++
      }
  }
  $1 == "P" {
    name = $2; worker = $3; value = $4
    seen[value] = 1
    if (name in last && !(lastw[name] in dead)) {
      printf "item %s (%s) processed again after worker %s, which was not killed\n",
        name, value, lastw[name]
      bad = 1
    }
    last[name] = 1; lastw[name] = worker; times[name]++
  }
  END {
    for (i = 1; i <= 200; i++) if (!(i in seen)) { print "item " i " never processed"; bad = 1 }
    for (i = 1; i <= 3; i++) if (!(("slow-" i) in seen)) { print "slow-" i " never processed"; bad = 1 }
    for (name in acks) if (acks[name] > 1) { print "item " name " acked " acks[name] " times"; bad = 1 }
    for (name in last) if (!(name in acks) && !(lastw[name] in dead)) {
      print "item " name " has no ack, and its last worker " lastw[name] " was not killed"; bad = 1
    }
    for (name in times) dup += times[name] > 1
    printf "%d workers killed, %d items processed more than once\n", n, dup > "/dev/stderr"
    exit bad
  }' "$RECORDS" || fail "the records break at-least-once (see above)"
ok "worker-pool: $kills workers killed with SIGKILL, every item done, acked at most once"

unmount_fs
