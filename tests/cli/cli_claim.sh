#!/usr/bin/env bash
# cli_claim.sh: statectl's claim commands (queue claim, heartbeat, ack, nack,
# inflight, dead, requeue, gc, policy) in plain and --json output: claims
# under short leases, a heartbeat keeping one past its lease, a lost claim
# exiting 11 and deleting nothing, per-item outcomes all or nothing, nack
# keeping the FIFO place, dead letters, the delivery limit, usage errors.
# Lease ends are checked against times measured around the call that set
# them, and "still held" only by calls that returned before the lease end:
# what holds under any schedule (a stalled machine makes a round prove
# nothing, and it runs again).
# Environment: see lib.sh. Exit: 0 pass, 1 fail.
. "$(dirname "$0")/lib.sh"
make_store

sc queue push jobs a b c d >/dev/null

# --- claim: the claim id, then "ID<TAB>VALUE" per item
expect_exit 0 sc queue claim jobs --max 2
c1=${out%%$'\n'*}
expect_eq "$(printf '%s\n' "$out" | tail -n +2)" $'1\ta\n2\tb' "claimed items"
expect_eq "$(sc queue len jobs)" 2 "in-flight items are not pending"
expect_eq "$(sc queue scan jobs --keys-only)" $'3\n4' "pending ids"
t0=$(now_ns)
expect_exit 0 sc --json queue claim jobs --lease 10m
t1=$(now_ns)
jqe "$out" '.queue == "jobs" and (.claim | type) == "number" and
	(.items | length) == 1 and .items[0].id == 3 and .items[0].value == "c" and
	.items[0].deliveries == 1 and
	.lease_until_ns >= '"$t0"' + 600e9 and .lease_until_ns <= '"$t1"' + 600e9'
c2=$(printf '%s' "$out" | jq .claim)
expect_exit 0 sc queue inflight jobs
expect_match "$out" $'^1\t'"$c1"$'\t[0-9T:-]+Z\t1\ta\n2\t'"$c1" "inflight listing"
expect_exit 0 sc --json queue inflight jobs --keys-only
jqe "$out" '[.entries[].id] == [1,2,3] and .entries[2].claim == '"$c2"' and
	(.entries[0] | has("value") | not) and .entries[0].deliveries == 1'
expect_exit 0 sc --json info
jqe "$out" '.rows.queue == 1 and .rows.claimed == 3 and .rows.dead == 0'

# --- ack with outcomes: all or nothing, validated first
expect_exit 1 sc queue ack "$c1" 1 3          # 3 belongs to another claim
expect_match "$err" "does not hold item 3; nothing was settled" "item not held"
expect_exit 2 sc queue ack "$c1" 1:maybe
expect_exit 8 sc queue ack "$c1" 1 1:retry    # an item named twice
expect_exit 0 sc queue inflight jobs --keys-only
expect_eq "$(printf '%s\n' "$out" | cut -f1)" $'1\n2\n3' "nothing settled"
expect_exit 0 sc queue ack "$c1" 1:done 2:reject
expect_eq "$out" "" "ack prints nothing"
expect_exit 11 sc queue ack "$c1"               # its last item settled
expect_match "$err" "claim $c1 is lost" "lost sentence"
expect_exit 1 sc queue ack 999                  # never issued

# --- nack: back at the original place, a second delivery next
expect_exit 0 sc queue nack "$c2"
expect_eq "$(sc queue scan jobs)" $'3\tc\n4\td' "nack keeps the FIFO place and the id"
expect_exit 0 sc --json queue claim jobs
jqe "$out" '.items[0].id == 3 and .items[0].deliveries == 2'
c3=$(printf '%s' "$out" | jq .claim)
expect_exit 2 sc queue nack "$c3" 3:done
expect_exit 0 sc queue nack "$c3" 3
expect_exit 11 sc queue nack "$c3"

# --- a heartbeat keeps a claim past its lease; a lost one exits 11
# The lease: 1 s, or ten times the slowest of three statectl calls on this
# machine now. A round: claim, heartbeat every quarter lease for one and a
# half leases, then gc. A call that returned before the lease end in force
# (until) must find the claim held; one that returned after it may find it
# lost (a stall), and then the round proves nothing and runs again.
worst=0
for _ in 1 2 3; do
	t=$(now_ns)
	sc queue len jobs >/dev/null
	t=$(($(now_ns) - t))
	[ "$t" -le "$worst" ] || worst=$t
done
hb=$(((worst * 10 + 999999999) / 1000000000))
[ "$hb" -ge 1 ] || hb=1
heartbeat_round() { # sets c4; 0 kept, 1 a stall
	local until t got start
	expect_exit 0 sc --json queue claim jobs --lease "${hb}s"
	c4=$(jq .claim <<<"$out") until=$(jq .lease_until_ns <<<"$out")
	start=$(now_ns)
	while [ $(($(now_ns) - start)) -lt $((hb * 1500000000)) ]; do
		sleep "$(awk -v l="$hb" 'BEGIN { print l / 4 }')"
		t=$(now_ns)
		"$STATECTL" --db "$DB" "${modeopts[@]}" --json queue heartbeat \
			"$c4" --lease "${hb}s" >"$T/.out" 2>"$T/.err" && got=0 || got=$?
		out=$(cat "$T/.out")
		if [ "$got" = 11 ]; then
			[ "$(now_ns)" -ge "$until" ] ||
				fail "heartbeat lost the claim within its lease"
			return 1
		fi
		expect_eq "$got" 0 "heartbeat exit ($(cat "$T/.err"))"
		jqe "$out" '.claim == '"$c4"' and .lease_until_ns >= '"$t"' + '"$hb"'e9'
		until=$(jq .lease_until_ns <<<"$out")
	done
	expect_exit 0 sc queue gc jobs
	if [ "$out" != "expired 0, returned 0, dead 0, claims ended 0" ]; then
		[ "$(now_ns)" -ge "$until" ] ||
			fail "gc returned a held claim's item: $out"
		return 1
	fi
}
for round in 1 2 3 4 5; do
	heartbeat_round && break
	[ "$round" -lt 5 ] || fail "5 rounds in a row stalled past the $hb s lease"
	echo "note: round $round stalled past the lease; again"
	sc queue gc jobs >/dev/null   # the lost claim's item is pending again
done
sleep "$hb.1"
expect_exit 11 sc queue heartbeat "$c4"
expect_match "$err" "may be delivered again" "the loss says what it means"
expect_exit 11 sc queue ack "$c4"              # deletes nothing
expect_eq "$(sc queue scan jobs --keys-only)" $'3\n4' "a lost claim's items are pending again"

# --- gc returns what a dead worker held
expect_exit 0 sc queue claim jobs --max 5 --lease 1s
sleep 1.1
expect_exit 0 sc --json queue gc
jqe "$out" '.returned == 2 and .claims == 1 and .expired == 0 and .dead == 0'

# --- dead letters: list, print, requeue at the tail, delete
expect_exit 0 sc queue dead jobs
expect_eq "$out" $'2\trejected\t1\tb' "dead listing"
expect_exit 0 sc --json queue dead jobs
jqe "$out" '.entries[0] | .id == 2 and .reason == "rejected" and .deliveries == 1 and .value == "b" and .mtime_ns > 0'
expect_exit 0 sc queue dead jobs 2
expect_eq "$out" b "a dead letter's bytes"
expect_exit 1 sc queue dead jobs 77
expect_exit 0 sc queue requeue jobs 2
newid=$out
[ "$newid" -gt 4 ] || fail "requeue gives a new id at the tail"
expect_eq "$(sc queue scan jobs)" $'3\tc\n4\td\n'"$newid"$'\tb' "requeued at the tail"
expect_exit 0 sc --json queue claim jobs --max 3
jqe "$out" '.items[2].value == "b" and .items[2].deliveries == 1'
c5=$(printf '%s' "$out" | jq .claim)
expect_exit 0 sc queue ack "$c5" 3:reject 4:reject "$newid:reject"
expect_exit 0 sc --json queue requeue jobs --all
jqe "$out" '(.ids | length) == 3'
expect_exit 0 sc queue claim jobs --max 3
c6=${out%%$'\n'*}
sc queue ack "$c6" $(printf '%s\n' "$out" | tail -n +2 | cut -f1 | sed 's/$/:reject/')
dead=$(sc queue dead jobs --keys-only)
expect_exit 0 sc queue dead jobs --delete "$(cut -f1 <<<"${dead%%$'\n'*}")"
expect_eq "$out" 1 "one deleted"
expect_exit 0 sc --json queue dead jobs --delete --all
jqe "$out" '.queue == "jobs" and .count == 2'
expect_eq "$(sc queue dead jobs)" "" "no dead letters left"
# a requeue goes on past a dead letter that is not there, and prints the
# new ids of those it requeued (it stopped at the first one missing, with
# those before it requeued and their new ids never printed)
sc queue push rq x y >/dev/null
expect_exit 0 sc queue claim rq --max 2
cr=${out%%$'\n'*}
read -r -d '' rx ry < <(printf '%s\n' "$out" | tail -n +2 | cut -f1) || true
expect_exit 0 sc queue ack "$cr" "$rx:reject" "$ry:reject"
expect_exit 1 sc queue requeue rq "$rx" 77 "$rx" "$ry"
expect_match "$err" "no dead letter 77" "the missing one is named"
read -r -d '' nx ny extra <<<"$out" || true
[ -n "$ny" ] && [ -z "$extra" ] || fail "requeue printed [$out], wanted the two new ids"
expect_eq "$(sc queue scan rq)" "$nx"$'\tx\n'"$ny"$'\ty' "requeued at the ids printed"
expect_eq "$(sc queue dead rq)" "" "none left dead"
expect_exit 0 sc queue clear rq

# --- policy: the delivery limit sends a poison item to the dead letters
expect_exit 0 sc queue policy jobs
expect_eq "$out" $'ttl_ms 0\nmax_deliveries 0' "no policy"
expect_exit 0 sc queue policy jobs --max-deliveries 1 --ttl 1h
expect_exit 0 sc --json queue policy jobs
jqe "$out" '.ttl_ms == 3600000 and .max_deliveries == 1'
sc queue push jobs poison >/dev/null
expect_exit 0 sc queue claim jobs --lease 1s
sleep 1.1
expect_exit 0 sc --json queue gc jobs
jqe "$out" '.dead == 1 and .returned == 0'
expect_exit 0 sc --json queue dead jobs
jqe "$out" '.entries[0].value == "poison" and .entries[0].reason == "delivery limit"'
# a pop whose output fails gave nothing away: it uses up no delivery, so
# at a limit of 1 the item stays pending, with no delivery counted
sc queue push jobs spared >/dev/null
expect_exit_into 9 /dev/full sc queue pop jobs
expect_exit_into 9 pipe-gone sc queue pop jobs
# nor does a claim whose output fails: nobody read its id, so it would
# have held the item for its whole lease (ten minutes by default)
expect_exit_into 9 /dev/full sc queue claim jobs
expect_match "$err" "^statectl: cannot write the output: No space left on device; nothing was taken from queue 'jobs'$" "a claim to a full disk"
expect_exit_into 9 pipe-gone sc --json queue claim jobs --max 5
expect_match "$err" "Broken pipe; nothing was taken from queue 'jobs'" "a claim into a pipe gone"
expect_exit 0 sc --json queue inflight jobs
jqe "$out" '.entries | length == 0'
expect_exit 0 sc --json queue scan jobs
jqe "$out" '.entries | length == 1 and .[0].value == "spared"'
expect_exit 0 sc --json queue dead jobs
jqe "$out" '.entries | length == 1'
expect_exit 0 sc queue pop jobs
expect_eq "$out" spared "popped at last"
expect_exit 0 sc queue policy jobs --max-deliveries 0 --ttl 0
expect_exit 0 sc --json queue policy jobs
jqe "$out" '.ttl_ms == 0 and .max_deliveries == 0'

# --- nothing to claim, and usage
expect_exit 1 sc queue claim jobs
expect_match "$err" "queue 'jobs' has nothing to claim" "empty sentence"
expect_exit 2 sc queue claim jobs --lease soon
expect_match "$err" "not a duration" "duration sentence"
expect_exit 2 sc queue claim jobs --lease 0
expect_exit 2 sc queue heartbeat nope
expect_exit 2 sc queue requeue jobs
expect_exit 2 sc queue dead jobs --all
expect_exit 2 sc queue dead jobs --delete
expect_exit 2 sc queue claim jobs --ttl 1s
expect_exit 2 sc queue policy jobs --max-deliveries " 5"
# a limit no count reaches is a usage error (it was the engine's, exit 8)
expect_exit 2 sc queue policy jobs --max-deliveries 2147483648
expect_match "$err" "at most 2147483647" "a limit no count reaches"
expect_exit 2 sc queue policy jobs --max-deliveries 99999999999
expect_exit 0 "$STATECTL" --list-commands queue
for cmd in claim heartbeat ack nack inflight dead requeue gc policy; do
	grep -qx "$cmd" <<<"$out" || fail "completion lacks queue $cmd"
done
expect_exit 0 "$STATECTL" queue --help
expect_match "$out" "claim QUEUE" "help lists claim"
# --all of queue dead and requeue is every dead letter, not delete-range's
# "whole namespace (needed when no bound is given)"
for cmd in dead requeue; do
	expect_exit 0 "$STATECTL" queue "$cmd" --help
	expect_match "$out" $'\n  --all +every dead letter of the queue' "queue $cmd --help says what --all takes"
done
expect_exit 0 "$STATECTL" delete-range --help
expect_match "$out" $'\n  --all +the whole namespace' "delete-range --help says what --all takes"

# --- docs/statectl.md's shell consumer, as a user copies it: each item's
# bytes reach process unchanged (the plain output of claim escapes them)
printf 'two\nlines' >"$T/item1"
printf 'tab\tback\\slash' >"$T/item2"
printf 'nul\0\377\376bin' >"$T/item3"
for i in 1 2 3; do sc queue push docq <"$T/item$i" >/dev/null; done
consumer=$(sed -n '/^A shell consumer without the mount/,/^```$/p' \
	"$(dirname "$0")/../../docs/statectl.md" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')
[[ $consumer == *"queue claim jobs"* ]] || fail "docs/statectl.md has no shell consumer"
consumer=${consumer//statectl/sc}
process() { cat >>"$T/consumed"; printf '|' >>"$T/consumed"; }
eval "${consumer//queue claim jobs/queue claim docq}" 2>"$T/consumer.err"
cat "$T/item1" <(printf '|') "$T/item2" <(printf '|') "$T/item3" <(printf '|') >"$T/pushed"
cmp -s "$T/consumed" "$T/pushed" || { od -c "$T/consumed" >&2; fail "the documented consumer changed the items' bytes"; }
expect_exit 0 sc --json info
jqe "$out" '.rows.queue == 0 and .rows.claimed == 0'

echo "cli_claim ($mode): ok"
