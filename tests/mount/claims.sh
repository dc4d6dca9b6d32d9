#!/usr/bin/env bash
# claims.sh - claims through the mount (docs/claims.md, docs/filesystem.md):
# .claim takes the head item and returns its name; inflight/ lists claimed
# items with the lease end as mtime and reads them by peeking; rm acks, mv
# back nacks (same place, same name), touch heartbeats (a heartbeating
# worker keeps its item past the lease), mv into inflight/ claims (one of
# racing claimers wins, the others get ENOENT); a worker killed with
# SIGKILL has its item back after the lease (the daemon's recovery) and not
# before, and its late rm fails with ENOENT; dead/ lists, requeues and
# deletes dead letters; the delivery limit; a .pop, .wait, .claim or .drain
# reader interrupted after the items were taken leaves them at the head,
# same names, and a daemon killed during a .drain's reply loses nothing.
# Runs with -o lease=2s; the daemon recovers every second.
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs -o lease=2s
cd "$mnt"
q=queue/jobs
now() { date +%s; }
mtime() { stat -c %Y "$1"; }

# --- .claim: the head's name; the item moves to inflight/ -----------------
[ -d $q/inflight ] && [ -d $q/dead ] || fail "inflight/ and dead/ are there"
expect_eq "$(ls -a $q | grep -c -e inflight -e dead -e '^\.claim$')" 0 \
  "inflight/, dead/ and .claim are not listed"
for i in 1 2 3; do echo "job $i" > $q/new; done
first=$(ls $q | head -n1)
: < $q/.claim
expect_eq "$(helper qinflight jobs)" 0 ": < .claim claims nothing"
t0=$(now)
n=$(cat $q/.claim)
expect_eq "$n" "$first" ".claim gives the head's name"
expect_eq "$(ls $q/inflight)" "$n" "the item is in flight"
expect_eq "$(cat $q/inflight/$n)" "job 1" "read = peek"
expect_eq "$(helper qinflight jobs)" 1 "peeking settles nothing"
expect_eq "$(helper qlen jobs)" 2 "in flight is not pending"
[ ! -e $q/$n ] || fail "the claimed item is still in the queue dir"
lease_end=$(mtime $q/inflight/$n)
[ "$lease_end" -ge $((t0 + 1)) ] && [ "$lease_end" -le $((t0 + 3)) ] ||
  fail "mtime $lease_end is not the lease end (claimed at $t0, lease 2 s)"
expect_eq "$(stat -c '%s %A' $q/inflight/$n)" "6 -r--------" "size and mode"
rm $q/inflight/$n
expect_eq "$(ls $q/inflight)" "" "rm acks"
expect_eq "$(helper qlen jobs)" 2 "the others are still pending"
ok ".claim, inflight/, rm"

# --- the shell consumer of the issue ----------------------------------------
done_list=
while n=$(cat $q/.claim 2>/dev/null); do
  v=$(cat $q/inflight/$n) && rm $q/inflight/$n && done_list="$done_list$v,"
done
expect_eq "$done_list" "job 2,job 3," "the loop processes every item once"
expect_op ENODATA read $q/.claim
expect_eq "$(helper qinflight jobs),$(helper qlen jobs)" "0,0" "all acked"
ok "n=\$(cat q/.claim) && process && rm"

# --- mv back = nack: the same place, the same name ------------------------
for i in a b c; do echo $i > $q/new; done
names=$(ls $q | tr '\n' ' ')
n=$(cat $q/.claim)
mv $q/inflight/$n $q/
expect_eq "$(ls $q | tr '\n' ' ')" "$names" "nacked back at the head, same name"
expect_eq "$(cat $q/$n)" a "same bytes"
ok "mv inflight/item .. nacks"

# --- mv into inflight/ claims; racing claimers: one wins -------------------
target=$(ls $q | sed -n 2p)
pids=()
for i in $(seq 8); do
  (rc=0; mv $q/$target $q/inflight/ 2>"$work/mv.$i" || rc=$?
   echo $rc >"$work/rc.$i") &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
wins=$(cat "$work"/rc.* | grep -c '^0$')
expect_eq "$wins" 1 "exactly one mv wins"
for i in $(seq 8); do
  if [ "$(cat "$work/rc.$i")" != 0 ]; then
    grep -q "No such file or directory" "$work/mv.$i" ||
      fail "a losing mv says: $(cat "$work/mv.$i")"
  fi
done
expect_eq "$(ls $q/inflight)" "$target" "the winner's item is in flight"
expect_eq "$(cat $q/inflight/$target)" b "and readable there"
expect_op EINVAL rename $q/$(ls $q | head -n1) $q/inflight/0000000000000000042
rm $q/inflight/$target
ok "mv item inflight/ claims, one winner"

# --- touch heartbeats: a worker that touches keeps its item past the lease -
n=$(cat $q/.claim)
end1=$(mtime $q/inflight/$n)
for i in 1 2 3 4 5 6; do
  sleep 0.7
  touch $q/inflight/$n || fail "touch $i failed"
done
expect_eq "$(ls $q/inflight)" "$n" "kept 4 s with a 2 s lease"
[ "$(mtime $q/inflight/$n)" -gt "$end1" ] || fail "touch moved the lease end"
# touch -d sets when the lease ends; a time in the past is refused
t=$(( $(now) + 30 ))
touch -d "@$t" $q/inflight/$n
end2=$(mtime $q/inflight/$n)
[ "$end2" -ge $((t - 1)) ] && [ "$end2" -le "$t" ] ||
  fail "touch -d @$t: the lease ends at $end2"
if touch -d @1000000000 $q/inflight/$n 2>/dev/null; then
  fail "a lease end in the past was accepted"
fi
mv $q/inflight/$n $q/
ok "touch heartbeats"

# --- a killed worker: its item comes back after the lease, not before -----
tstart=$(now)   # the claim is made after this second began
bash -c 'n=$(cat '"$q"'/.claim) && echo "$n" > '"$work"'/victim && exec sleep 60' &
victim=$!
for _ in $(seq 100); do [ -s "$work/victim" ] && break; sleep 0.05; done
n=$(cat "$work/victim")
kill -9 $victim
wait $victim 2>/dev/null || true
if [ "$(now)" -lt $((tstart + 2)) ]; then
  expect_eq "$(ls $q/inflight)" "$n" "in flight until the lease ends"
  [ ! -e $q/$n ] || fail "the item was back before the lease ended"
fi
for _ in $(seq 80); do [ -e $q/$n ] && break; sleep 0.1; done
back=$(now)
[ -e $q/$n ] || fail "the item did not come back within 8 s"
[ "$back" -ge $((tstart + 2)) ] || fail "back at $back, before the lease ($tstart + 2 s)"
expect_eq "$(ls $q/inflight)" "" "no longer in flight"
expect_eq "$(ls $q | head -n1)" "$n" "back at its place"
expect_op ENOENT unlink $q/inflight/$n   # the worker's late rm
ok "kill -9: redelivered after the lease"

# --- dead letters: reject with mv, requeue with mv back, rm -----------------
n=$(cat $q/.claim)
mv $q/inflight/$n $q/dead/
expect_eq "$(ls $q/dead)" "$n" "rejected into dead/"
expect_eq "$(cat $q/dead/$n)" a "a dead letter reads"
[ "$(mtime $q/dead/$n)" -le "$(now)" ] || fail "a dead letter's mtime is when it died"
mv $q/dead/$n $q/
expect_eq "$(ls $q/dead)" "" "requeued"
expect_eq "$(cat $q/$(ls $q | tail -n1))" a "at the tail, under a new name"
n=$(cat $q/.claim)
mv $q/inflight/$n $q/dead/
rm $q/dead/$n
expect_eq "$(ls $q/dead)" "" "rm deletes a dead letter"
ok "dead/"

# --- the delivery limit: a poison item ends in dead/ ------------------------
helper qpolicy jobs 0 1
n=$(cat $q/.claim)                    # delivery 1, never settled
for _ in $(seq 80); do [ -e $q/dead/$n ] && break; sleep 0.1; done
[ -e $q/dead/$n ] || fail "the poison item did not reach dead/"
helper qpolicy jobs 0 0
ok "delivery limit"

# --- an interrupted reader: the item stays at the head, same name -----------
cd /
unmount_fs
export STATEFS_TEST_DELIVER_DELAY_MS=600 # a test hook of the daemon
mount_fs -o lease=2s
unset STATEFS_TEST_DELIVER_DELAY_MS
cd "$mnt"
for i in x y; do echo $i > $q/new; done
names=$(ls $q | tr '\n' ' ')
for f in .pop .wait .claim .drain; do
  rc=0
  timeout -s INT 0.2 cat $q/$f >/dev/null || rc=$?
  expect_eq "$rc" 124 "the $f reader was interrupted"
  sleep 0.8 # the delay ends, the claim is nacked
  expect_eq "$(ls $q | tr '\n' ' ')" "$names" "after $f: same items, same names, same order"
  expect_eq "$(ls $q/inflight)" "" "after $f: nothing in flight"
done
expect_eq "$(cat $q/.pop)" x "delivered, the pop is done"
expect_eq "$(ls $q | wc -l),$(ls $q/inflight | wc -l)" "1,0" "acked on delivery"
ok "an interrupted reader leaves the item at the head"

# --- the daemon killed between a drain's take and its reply ----------------
# The items are in flight under the dead daemon's claim; after the lease the
# next daemon's recovery puts them back at their places, under their names.
# (A delivery delay longer than any schedule: the kill lands inside it.)
cd /
unmount_fs
export STATEFS_TEST_DELIVER_DELAY_MS=30000
mount_fs -o lease=2s
unset STATEFS_TEST_DELIVER_DELAY_MS
cd "$mnt"
for i in d1 d2; do echo $i > $q/new; done
names=$(ls $q | tr '\n' ' ')
cat $q/.drain >/dev/null 2>&1 & reader=$!
for _ in $(seq 100); do [ "$(helper qlen jobs)" = 0 ] && break; sleep 0.1; done
expect_eq "$(helper qlen jobs)" 0 "the drain took every item"
cd /
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
wait "$reader" 2>/dev/null || true
fusermount3 -u "$mnt"
mount_fs -o lease=2s
cd "$mnt"
# the lease (2 s) ends; the daemon recovers every second
for _ in $(seq 150); do [ "$(ls $q | tr '\n' ' ')" = "$names" ] && break; sleep 0.1; done
expect_eq "$(ls $q | tr '\n' ' ')" "$names" "after the lease: same items, same names, same order"
expect_eq "$(jq -r '.value | rtrimstr("\n")' $q/.drain | tr '\n' ,)" "y,d1,d2," \
  "then drained for real"
ok "a daemon killed during a .drain loses nothing"

cd /
unmount_fs
