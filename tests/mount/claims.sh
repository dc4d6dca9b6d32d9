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
# Runs with a lease of 2 s, or longer when the machine is slow right now
# (measured_lease); the daemon recovers every tenth of it. Timing is
# asserted only as it holds under any schedule: a lease end is checked
# against times measured before and after the call that made it, "not
# back before the lease end" only by checks that finished before it, and
# a heartbeat only when it was sent before the lease it extends ended;
# waits for something to happen are hang detectors (60 s).
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs
lease=$(measured_lease 2)
L=$((lease * 1000000000))
unmount_fs
mount_fs -o lease=${lease}s
echo "lease ${lease} s"
cd "$mnt"
q=queue/jobs
now() { date +%s; }
mtime() { stat -c %Y "$1"; }
mtime_ns() { local t; t=$(stat -c %.9Y "$1") && echo "${t/./}"; }
# Waits until the command succeeds; a minute more than two leases without
# is a hang.
await() { # WHAT COMMAND...
  local what=$1
  shift
  for _ in $(seq $((600 + 20 * lease))); do "$@" && return 0; nap 0.1; done
  fail "$what: not within $((60 + 2 * lease)) s"
}

# --- .claim: the head's name; the item moves to inflight/ -----------------
[ -d $q/inflight ] && [ -d $q/dead ] || fail "inflight/ and dead/ are there"
expect_eq "$(ls -a $q | grep -c -e inflight -e dead -e '^\.claim$')" 0 \
  "inflight/, dead/ and .claim are not listed"
for i in 1 2 3; do echo "job $i" > $q/new; done
first=$(ls $q | sed -n 1p)
: < $q/.claim
expect_eq "$(helper qinflight jobs)" 0 ": < .claim claims nothing"
files() { echo $(( $(stat -f -c '%c - %d' .) )); } # df -i's IUsed
files0=$(files)
t0=$(now)
n=$(cat $q/.claim)
t1=$(now)
expect_eq "$n" "$first" ".claim gives the head's name"
expect_eq "$(ls $q/inflight)" "$n" "the item is in flight"
expect_eq "$(cat $q/inflight/$n)" "job 1" "read = peek"
expect_eq "$(helper qinflight jobs)" 1 "peeking settles nothing"
expect_eq "$(helper qlen jobs)" 2 "in flight is not pending"
expect_eq "$(files)" "$files0" "df -i counts the item in flight (a file of inflight/)"
[ ! -e $q/$n ] || fail "the claimed item is still in the queue dir"
lease_end=$(mtime $q/inflight/$n)
[ "$lease_end" -ge $((t0 + lease)) ] && [ "$lease_end" -le $((t1 + lease)) ] ||
  fail "mtime $lease_end is not the lease end (claimed in [$t0, $t1], lease $lease s)"
expect_eq "$(stat -c '%s %A' $q/inflight/$n)" "6 -r--------" "size and mode"
if ! rm $q/inflight/$n 2>/dev/null; then
  # Only when the checks above outlasted the lease (a machine slower now
  # than when the lease was measured: the daemon took the item back):
  # claimed again and acked at once.
  [ "$(now)" -ge "$lease_end" ] || fail "rm of an item in flight within its lease"
  n=$(cat $q/.claim) && rm $q/inflight/$n || fail "rm of an item claimed again"
fi
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
trace=$(now)
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
# The winner holds it for the mount's lease (2 s): on a machine slow
# enough that the race outlasted it, the item is back at its place instead
# (never lost, never twice).
if cat $q/inflight/$target >"$work/won" 2>/dev/null; then
  expect_eq "$(cat "$work/won")" b "the winner's item is in flight, readable there"
  rm $q/inflight/$target 2>/dev/null || [ "$(now)" -ge $((trace + 2)) ] ||
    fail "the winner's ack failed within its lease"
else
  [ "$(now)" -ge $((trace + 2)) ] || fail "the winner's item is not in flight"
fi
if [ -e $q/$target ]; then
  expect_eq "$(cat $q/$target)" b "a lease that ran out puts it back"
  rm $q/$target
fi
expect_eq "$(ls $q/inflight)" "" "nothing else in flight"
expect_op EINVAL rename $q/$(ls $q | sed -n 1p) $q/inflight/0000000000000000042
ok "mv item inflight/ claims, one winner"

# --- touch heartbeats: a worker that touches keeps its item past the lease -
# A touch that started after `before` extends the lease to at least
# before + the lease. One that fails before the lease end it was extending is a
# defect; one that a stalled machine made after it may rightly find the
# item gone, and then the round proves nothing: the item comes back and
# another round runs.
heartbeat_round() { # sets n; 0 kept for two leases, 1 a stall
  local end end1 start before after kept
  n=$(cat $q/.claim)
  end1=$(mtime_ns $q/inflight/$n) || return 1
  end=$end1 start=$(now_ns)
  while [ $(($(now_ns) - start)) -lt $((2 * L)) ]; do
    sleep 0.3
    before=$(now_ns)
    if touch $q/inflight/$n 2>/dev/null; then
      end=$((before + L))
      continue
    fi
    after=$(now_ns)
    [ "$after" -ge "$end" ] || fail "a touch failed at $after, within the lease (ends $end)"
    return 1
  done
  kept=$(ls $q/inflight)
  after=$(now_ns)
  if [ "$kept" != "$n" ]; then
    [ "$after" -ge "$end" ] || fail "the item left inflight/ within its lease"
    return 1
  fi
  [ "$(mtime_ns $q/inflight/$n)" -gt "$end1" ] || fail "touch moved the lease end"
}
for round in 1 2 3 4 5; do
  heartbeat_round && break
  [ "$round" -lt 5 ] || fail "5 rounds in a row stalled a touch past the $lease s lease"
  echo "note - round $round: a touch came after the lease end; again"
  await "the lost item back" test -e $q/$n
done
# touch -d sets when the lease ends; a time in the past is refused
t=$(( $(now) + 30 ))
touch -d "@$t" $q/inflight/$n
end2=$(mtime $q/inflight/$n)
[ "$end2" -ge $((t - 1)) ] && [ "$end2" -le "$t" ] ||
  fail "touch -d @$t: the lease ends at $end2"
if touch -d @1000000000 $q/inflight/$n 2>/dev/null; then
  fail "a lease end in the past was accepted"
fi
# with EINVAL, as docs/filesystem.md says (touch(1) itself reports the
# EACCES of the open for writing it tried first)
expect_op EINVAL utime $q/inflight/$n 1000000000
# nor one past what nanoseconds since 1970 hold (2262): the year 2611,
# whose nanoseconds wrap around to an hour from now, is refused too
if touch -d "@$((18446744073 + $(now) + 3601))" $q/inflight/$n 2>/dev/null; then
  fail "a lease end in the year 2611 was accepted (it ends at $(mtime $q/inflight/$n))"
fi
mv $q/inflight/$n $q/
ok "touch heartbeats"

# touch -d TIME makes the lease end at TIME on the store's clock, the one
# the mtime shows, whatever the daemon's says: a daemon whose clock reads
# an hour ahead (clockshift.c; on PostgreSQL the server keeps the real
# one) ends it at TIME, not an hour before (before 2026-12-04 the daemon
# gave the lease "TIME minus its now", which the server added to its own
# now). On SQLite the daemon's clock is the store's: TIME is two hours
# ahead of the real one, an hour ahead of the shifted one.
printf '#!/bin/sh\nASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 CLOCKSHIFT_FILE=%s LD_PRELOAD=%s exec %s "$@"\n' \
  "$work/shift" "$STATEFS_CLOCKSHIFT" "$STATEFS_BIN" > "$work/statefs-shifted"
chmod +x "$work/statefs-shifted"
echo 3600 > "$work/shift"
STATEFS_BIN=$work/statefs-shifted mount_other "$work/ahead"
echo skewed > "$work/ahead/queue/skew/new"
n=$(cat "$work/ahead/queue/skew/.claim")
t=$(( $(now) + 7200 ))
touch -d "@$t" "$work/ahead/queue/skew/inflight/$n"
expect_eq "$(mtime "$work/ahead/queue/skew/inflight/$n")" "$t" \
  "the lease end after touch -d @$t through a daemon an hour ahead"
mv "$work/ahead/queue/skew/inflight/$n" "$work/ahead/queue/skew/"
rm "$work/ahead/queue/skew/$n"
fusermount3 -u "$work/ahead"
ok "touch -d sets the lease end on the store's clock"

# --- a killed worker: its item comes back after the lease, not before -----
tstart=$(now_ns)   # the claim is made after this
bash -c 'n=$(cat '"$q"'/.claim) && echo "$n" > '"$work"'/victim.tmp &&
  mv '"$work"'/victim.tmp '"$work"'/victim && exec sleep 60' &
victim=$!
await "the victim's claim" test -s "$work/victim"
n=$(cat "$work/victim")
kill -9 $victim
wait $victim 2>/dev/null || true
inflight=$(ls $q/inflight)
present=no
[ ! -e $q/$n ] || present=yes
if [ "$(now_ns)" -lt $((tstart + L)) ]; then  # all looked before the lease end
  expect_eq "$inflight" "$n" "in flight until the lease ends"
  expect_eq "$present" no "the item back before the lease ended"
fi
await "the killed worker's item back" test -e $q/$n
back=$(now_ns)
[ "$back" -ge $((tstart + L)) ] || fail "back at $back, before the lease ($tstart + $lease s)"
expect_eq "$(ls $q/inflight)" "" "no longer in flight"
expect_eq "$(ls $q | sed -n 1p)" "$n" "back at its place"
expect_op ENOENT unlink $q/inflight/$n   # the worker's late rm
ok "kill -9: redelivered after the lease"

# --- dead letters: reject with mv, requeue with mv back, rm -----------------
files0=$(files)
n=$(cat $q/.claim)
mv $q/inflight/$n $q/dead/
expect_eq "$(ls $q/dead)" "$n" "rejected into dead/"
expect_eq "$(files)" "$files0" "df -i counts the dead letter (a file of dead/)"
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
await "the poison item in dead/" test -e $q/dead/$n
helper qpolicy jobs 0 0
ok "delivery limit"

# --- an interrupted reader: the item stays at the head, same name -----------
# The daemon pauses between taking the items and answering until the reader
# is interrupted (STATEFS_TEST_DELIVER_DELAY_MS, a test hook): the reader is
# interrupted once the take is seen, every time. Its death means the
# daemon answered (the kernel waits for the answer to a READ it sent).
cd /
unmount_fs
export STATEFS_TEST_DELIVER_DELAY_MS=600000
mount_fs -o lease=${lease}s
unset STATEFS_TEST_DELIVER_DELAY_MS
cd "$mnt"
inflight_any() { [ "$(helper qinflight jobs)" -gt 0 ]; }
for i in x y; do echo $i > $q/new; done
names=$(ls $q | tr '\n' ' ')
# A reader that got nothing uses up no delivery: at a limit of one, an
# item nacked after each interrupted take would be dead after the first.
helper qpolicy jobs 0 1
dead0=$(helper qdead jobs)
for f in .pop .wait .claim .drain; do
  # a background job ignores SIGINT: perl puts it back, as for the daemon
  perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' -- cat $q/$f >/dev/null 2>&1 &
  reader=$!
  await "the $f reader's take" inflight_any
  kill -INT $reader
  rc=0
  wait $reader || rc=$?
  expect_eq "$rc" 130 "the $f reader was interrupted (SIGINT)"
  # a stream (.drain) gives its items back at RELEASE, which the kernel
  # sends after the reader's death, not before: wait for it
  back() { [ "$(ls $q | tr '\n' ' ')" = "$names" ] && [ -z "$(ls $q/inflight)" ]; }
  await "after $f: the same items, names and order, nothing in flight" back
done
ok "an interrupted reader leaves the item at the head"

# Two readers held between take and answer at once: each holds a thread of
# the pool (four on SQLite), and a third still reads the device, so both
# interrupts are heard (fs/loop.c).
inflight_two() { [ "$(helper qinflight jobs)" -eq 2 ]; }
readers=()
for f in .pop .claim; do
  perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' -- cat $q/$f >/dev/null 2>&1 &
  readers+=($!)
done
await "both readers' takes" inflight_two
for r in "${readers[@]}"; do
  kill -INT "$r"
  rc=0
  wait "$r" || rc=$?
  expect_eq "$rc" 130 "a reader of two was interrupted (SIGINT)"
done
await "after two readers: the same items, names and order, nothing in flight" back
expect_eq "$(helper qdead jobs)" "$dead0" "no new dead letters"
helper qpolicy jobs 0 0
ok "two readers interrupted at once leave their items"

# --- the daemon killed between a drain's take and its reply ----------------
# The items are in flight under the dead daemon's claim; after the lease the
# next daemon's recovery puts them back at their places, under their names.
# (A delivery delay longer than any schedule, 10 minutes: the kill lands
# inside it. 30 s was not: under ASan on a loaded machine the check after
# the take came later and found the drain delivered. The lease is the
# measured one: the daemon does not extend a drain's claim while the hook
# holds its answer, and with 2 s the check after the take found the items
# back in the queue at load 20 under ASan.)
cd /
unmount_fs
export STATEFS_TEST_DELIVER_DELAY_MS=600000
mount_fs -o lease=${lease}s
unset STATEFS_TEST_DELIVER_DELAY_MS
cd "$mnt"
for i in d1 d2; do echo $i > $q/new; done
names=$(ls $q | tr '\n' ' ')
tdrain=$(now_ns)
cat $q/.drain >/dev/null 2>&1 & reader=$!
await "the drain's take" inflight_any
expect_eq "$(helper qlen jobs),$(helper qinflight jobs)" 0,4 "the drain took every item"
cd /
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
wait "$reader" 2>/dev/null || true
fusermount3 -u "$mnt"
mount_fs -o lease=${lease}s
cd "$mnt"
back_all() { [ "$(helper qinflight jobs),$(helper qlen jobs)" = 0,4 ]; }
await "the drained items back" back_all    # the lease ends; recovery runs each second
[ "$(now_ns)" -ge $((tdrain + L)) ] ||   # the drain's lease
  fail "back before the lease ended"
expect_eq "$(ls $q | tr '\n' ' ')" "$names" "after the lease: same items, same names, same order"
expect_eq "$(cat $q/.pop)" x "a pop is delivered"
expect_eq "$(ls $q | wc -l),$(ls $q/inflight | wc -l)" "3,0" "acked on delivery"
expect_eq "$(jq -r '.value | rtrimstr("\n")' $q/.drain | tr '\n' ,)" "y,d1,d2," \
  "then drained for real"
ok "a daemon killed during a .drain loses nothing"

# A pop's own claim outlives a short mount lease: with -o lease=100ms and
# 300 ms between the take and the reply (the test hook), the claim ran out
# before the ack and every item came twice (helper-45's find: -o lease=1ms,
# 25 of 300 items twice through the daemon that lived).
cd /
unmount_fs
export STATEFS_TEST_DELIVER_DELAY_MS=300
mount_fs -o lease=100ms
unset STATEFS_TEST_DELIVER_DELAY_MS
cd "$mnt"
q2=queue/popq
for i in p1 p2; do echo $i > $q2/new; done
expect_eq "$(cat $q2/.pop),$(cat $q2/.pop)" "p1,p2" "two pops, two items, each once"
expect_eq "$(helper qlen popq),$(helper qinflight popq)" 0,0 "both acked"
ok "a pop's claim outlives a short mount lease"

cd /
unmount_fs
