#!/usr/bin/env bash
# cli_families.sh: `counter`, `log` and `queue` commands in plain and --json
# output, their edge cases (absent counters, overflow, negative deltas, ids
# that keep increasing, empty queues, binary items) and their exit codes.
# Environment: see lib.sh. Exit: 0 pass, 1 fail.
. "$(dirname "$0")/lib.sh"
make_store

# --- counters
expect_exit 0 sc counter get s n c
expect_eq "$out" 0 "an absent counter reads 0"
expect_exit 0 sc --json counter get s n c
jqe "$out" '.value == 0 and .exists == false and .key == "c"'
expect_exit 0 sc counter add s n c
expect_eq "$out" 1 "add defaults to 1 and prints the new value"
expect_exit 0 sc counter add s n c 41
expect_eq "$out" 42 "add DELTA"
expect_exit 0 sc counter add s n c -50
expect_eq "$out" -8 "negative delta (not an option)"
expect_exit 0 sc --json counter add s n c 8
jqe "$out" '.value == 0 and (has("exists") | not)'
expect_exit 0 sc counter set s n c 9223372036854775807
expect_eq "$out" "" "set is quiet"
expect_exit 8 sc counter add s n c
expect_match "$err" "64-bit range; nothing changed" "overflow sentence"
expect_eq "$(sc counter get s n c)" 9223372036854775807 "overflow changed nothing"
expect_exit 0 sc --json counter set s n c -3
jqe "$out" '.value == -3'
expect_exit 0 sc --json counter get s n c
jqe "$out" '.value == -3 and .exists == true'
expect_exit 2 sc counter add s n c 1.5
expect_match "$err" "DELTA must be a whole number" "bad delta"
expect_exit 2 sc counter set s n c 99999999999999999999
expect_exit 2 sc counter set s n c
sc counter set s n d 7
expect_exit 0 sc counter scan s n
expect_eq "$out" $'c\t-3\nd\t7' "counter scan"
expect_exit 0 sc --json counter scan s n --reverse --limit 1
jqe "$out" '.entries | length == 1 and .[0].key == "d" and .[0].value == 7'
expect_exit 0 sc counter del s n c
expect_exit 1 sc counter del s n c
expect_eq "$err" "statectl: no such counter 'c' in scope 's' namespace 'n'" "counter not-found sentence"
expect_exit 0 sc --json counter del s n d
jqe "$out" '.deleted == true'
# a counter and a value with the same name are independent
sc put s n same value
sc counter add s n same 5 >/dev/null
expect_eq "$(sc get s n same)" value "kv untouched by the counter"

# --- logs
expect_exit 0 sc log append s log k first
id1=$out
expect_match "$id1" '^[0-9]+$' "append prints the id"
printf 'second\n' | sc log append s log k >/dev/null
expect_exit 0 sc --json log append s log k third
id3=$(printf '%s' "$out" | jq .id)
[ "$id3" -gt "$id1" ] || fail "ids increase"
expect_exit 0 sc log scan s log k
expect_eq "$(printf '%s\n' "$out" | cut -f2)" $'first\nsecond\\n\nthird' "log scan in append order"
expect_exit 0 sc log scan s log k --after "$id1" --limit 1 --keys-only
expect_eq "$(printf '%s' "$out" | wc -l | tr -d ' ')" 0 "one line, keys only"
[ "$out" -gt "$id1" ] && [ "$out" -lt "$id3" ] || fail "--after/--limit pick the second entry"
expect_exit 0 sc --json log scan s log k --after "$id1"
jqe "$out" '(.entries | map(.value)) == ["second\n","third"] and (.entries[0].id | type) == "number"'
expect_exit 2 sc log scan s log k --after x
# a number below the range is named as such ("takes a whole number, not
# '-2'" said -2 was not one)
expect_exit 2 sc log scan s log k --after -2
expect_match "$err" "^statectl: --after takes a whole number, -1 or more, not '-2'" "--after -2"
expect_exit 2 sc queue policy q --max-deliveries -1
expect_match "$err" "^statectl: --max-deliveries takes a whole number, 0 or more, not '-1'" "--max-deliveries -1"
expect_exit 2 sc log scan s log k --limit 0
expect_match "$err" "positive whole number" "limit must be positive"
expect_exit 0 sc log clear s log k
expect_eq "$out" 3 "log clear count"
sc log append s log k again >/dev/null
expect_exit 0 sc --json log scan s log k
jqe "$out" ".entries | length == 1 and .[0].id > $id3"
expect_exit 0 sc --json log clear s
jqe "$out" '.count == 1 and .scope == "s"'

# --- queues
expect_exit 0 sc queue push q a b c
expect_eq "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 3 "three ids"
expect_exit 0 sc queue len q
expect_eq "$out" 3 "len"
expect_exit 0 sc queue pop q
expect_eq "$out" a "FIFO"
# an endless input is refused at 2^24 items, not read until memory runs
# out (it was: one push is one transaction); nothing is pushed
push_yes() { yes | sc queue push --lines q || return "${PIPESTATUS[1]}"; }
expect_exit 8 push_yes
expect_match "$err" "more than one push takes .*16777216 items.*nothing was written" "runaway --lines"
push_zeros() { head -c 16777217 /dev/zero | sc queue push --null q; }
expect_exit 8 push_zeros
expect_exit 0 sc queue len q
expect_eq "$out" 2 "a refused push leaves the queue"
printf 'x\ny\n\nz' | sc queue push --lines q >/dev/null
printf 'n1\0n2\0' | sc queue push --null q >/dev/null
head -c 100 /dev/urandom >"$T/item"
sc queue push q <"$T/item" >/dev/null
expect_exit 0 sc queue scan q --keys-only
expect_eq "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 9 "b c x y '' z n1 n2 binary"
expect_exit 0 sc --json queue scan q --limit 3
jqe "$out" '(.entries | map(.value)) == ["b","c","x"] and .queue == "q"'
got=()
while item=$(sc queue pop q); do got+=("$item"); [ ${#got[@]} -lt 8 ] || break; done
expect_eq "${got[*]}" "b c x y  z n1 n2" "pop loop order, empty line as an empty item"
sc queue pop q >"$T/item2"
cmp "$T/item" "$T/item2" || fail "binary item changed"
expect_exit 1 sc queue pop q
expect_eq "$err" "statectl: queue 'q' is empty" "empty-queue sentence"
expect_exit 1 sc queue pop never-used
expect_exit 0 sc --json queue push q2 one
jqe "$out" '.queue == "q2" and (.ids | length) == 1'
id=$(printf '%s' "$out" | jq '.ids[0]')
expect_exit 0 sc --json queue pop q2
jqe "$out" ".id == $id and .value == \"one\" and .size == 3"
sc queue push q2 a b >/dev/null
expect_exit 0 sc --json queue len q2
jqe "$out" '.len == 2'
expect_exit 0 sc queue clear q2
expect_eq "$out" 2 "clear count"
expect_exit 0 sc --json queue clear q2
jqe "$out" '.count == 0'
# a push whose ids cannot be printed was made all the same, and says so (a
# script that pushes again on exit 9 would push twice; the sentence was
# the same as for a read)
expect_exit_into 9 /dev/full sc queue push q4 once
expect_match "$err" "^statectl: cannot write the output: No space left on device \(the queue push was done: only what it prints is lost\)$" "a push's output to a full disk"
expect_exit_into 9 /dev/full sc --json counter add s n output-lost 2
jqe "$err" '.exit == 9 and .error == "cannot write the output: No space left on device (the counter add was done: only what it prints is lost)"'
expect_exit 0 sc queue len q4
expect_eq "$out" 1 "the push was made"
expect_exit_into 9 /dev/full sc queue len q4
expect_match "$err" "^statectl: cannot write the output: No space left on device$" "a read's output to a full disk"
# an item is gone only once it is printed: an output that fails (a full
# disk, a reader gone) puts it back at the head, not in flight
sc queue push q3 first second >/dev/null
expect_exit_into 9 /dev/full sc queue pop q3
expect_match "$err" "cannot write the output: .*nothing was taken from queue 'q3'" "failed pop sentence"
expect_exit_into 9 /dev/full sc --json queue pop q3
jqe "$err" '.exit == 9 and .status == "system"'
expect_exit_into 9 pipe-gone sc queue pop q3
expect_match "$err" "Broken pipe" "a pop into a closed pipe is not killed by SIGPIPE"
expect_exit 0 sc queue inflight q3 --keys-only
expect_eq "$out" "" "a failed pop leaves nothing in flight"
expect_exit 0 sc queue pop q3
expect_eq "$out" first "a failed pop keeps the item at the head"
expect_exit 0 sc queue len q3
expect_eq "$out" 1 "a pop that printed removed its item"
expect_exit 2 sc queue push --lines q2 arg
expect_exit 2 sc queue push --lines --null q2
expect_exit 2 sc queue
expect_match "$err" "needs a command" "family without a command"
# every subcommand, not the synopsis' few and '... ...'
expect_match "$err" "'queue' needs a command: push, pop, len, clear, scan, claim, heartbeat, ack, nack, inflight, dead, requeue, gc, policy \\(see statectl queue --help\\)" "family without a command names them all"
expect_exit 2 sc queue peek q
expect_match "$err" "unknown command 'queue peek'" "unknown subcommand"

echo "cli_families ($mode): ok"
