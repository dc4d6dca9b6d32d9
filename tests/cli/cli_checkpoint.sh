#!/usr/bin/env bash
# cli_checkpoint.sh: `statectl checkpoint` while 4 processes write is a
# snapshot. Each writer (helper writer) appends a log entry, then adds 1 to
# a counter, then pushes a queue item, each its own transaction, so at any
# moment Q <= C <= L <= Q + 1 per writer, with entries and items numbered
# 1..L and 1..Q. A copy that is not one moment in time (tables or pages
# copied at different times) breaks that, or fails verify. Each checkpoint
# is verified, checked, and restored into the live store, which must then
# export exactly as the checkpoint does.
# Environment: see lib.sh; HELPER. Exit: 0 pass, 1 fail.
. "$(dirname "$0")/lib.sh"
: "${HELPER:?HELPER must name the test helper}"
make_store
# ballast, so that a checkpoint copies more than a handful of pages
for i in $(seq 1 20); do
	head -c 30000 /dev/urandom | base64 -w0 | sc put ballast n "k$i"
done

stop=$T/stop
pids=()
cleanup_hooks+=('touch "$stop"; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done')
for w in 1 2 3 4; do
	"$HELPER" writer "$DB" "$hkey" "$w" "$stop" >"$T/rounds$w" &
	pids+=($!)
done

# per writer: L C Q of a store, after checking the numbering
state_of() { # OPTS... (statectl options for the store)
	local w L C Q
	for w in 1 2 3 4; do
		L=$("$STATECTL" "$@" --json log scan ck "w$w" log |
			jq '[.entries[].value | tonumber] as $v | if $v == [range(1; ($v | length) + 1)] then ($v | length) else error("log not 1..L: \($v)") end')
		C=$("$STATECTL" "$@" counter get ck "w$w" n)
		Q=$("$STATECTL" "$@" --json queue scan "q$w" |
			jq '[.entries[].value | tonumber] as $v | if $v == [range(1; ($v | length) + 1)] then ($v | length) else error("queue not 1..Q") end')
		echo "$w $L $C $Q"
	done
}

check_invariant() { # FILE of "w L C Q" lines, WHAT
	local w L C Q
	while read -r w L C Q; do
		if ! [ "$Q" -le "$C" ] || ! [ "$C" -le "$L" ] || ! [ "$L" -le $((Q + 1)) ]; then
			fail "$2: writer $w has L=$L C=$C Q=$Q, not Q <= C <= L <= Q+1"
		fi
	done <"$1"
}

# wait until every writer has made some rounds, then checkpoint 3 times
for _ in $(seq 1 1200); do  # 60 s: a hang, not a slow machine
	n=$(sc --json ls --family queue | jq '.entries | length')
	[ "$n" -eq 4 ] && break
	nap 0.05
done
[ "$n" -eq 4 ] || fail "the writers did not start"
for i in 1 2 3; do
	sleep 0.3
	expect_exit 0 sc checkpoint "$T/ck$i"
done
touch "$stop"
for p in "${pids[@]}"; do wait "$p" || fail "a writer failed"; done
pids=()
total=0
for w in 1 2 3 4; do total=$((total + $(cat "$T/rounds$w"))); done
echo "writers made $total rounds"

prev=0
for i in 1 2 3; do
	ck=(--db "$T/ck$i" "${modeopts[@]}")
	expect_exit 0 "$STATECTL" "${ck[@]}" verify
	state_of "${ck[@]}" >"$T/state$i"
	check_invariant "$T/state$i" "checkpoint $i"
	sum=$(awk '{s += $2} END {print s}' "$T/state$i")
	[ "$sum" -gt "$prev" ] || fail "checkpoint $i is not later than the one before (writes during the run)"
	prev=$sum
	expect_eq "$("$STATECTL" "${ck[@]}" get ballast n k20 | wc -c | tr -d ' ')" 40000 "ballast in checkpoint $i"
done
# the final state holds the invariant too, and is later than every checkpoint
state_of --db "$DB" "${modeopts[@]}" >"$T/final"
check_invariant "$T/final" "the live store"

# restore each checkpoint into the live store: exactly its state
for i in 2 1; do
	expect_exit 0 sc restore "$T/ck$i"
	expect_exit 0 sc verify
	# (less the "seq" rows: a restore keeps the live store's sequences
	# where they are higher, so no id is issued twice; and less the end
	# row, which counts them)
	sc export | grep -v '^{"family":"seq",\|^{"end":' >"$T/live.jsonl"
	"$STATECTL" --db "$T/ck$i" "${modeopts[@]}" export |
		grep -v '^{"family":"seq",\|^{"end":' >"$T/ck.jsonl"
	cmp "$T/live.jsonl" "$T/ck.jsonl" || fail "restore of checkpoint $i does not give its state"
	state_of --db "$DB" "${modeopts[@]}" >"$T/restored"
	cmp "$T/restored" "$T/state$i" || fail "restored counters and queues differ from checkpoint $i"
done

# What a checkpoint killed by SIGKILL left beside its target (a gone
# process's temporary file and journal, unchanged for ten minutes) goes at
# the next checkpoint there; a live process's, or a recent one, stays.
dead=2147483646 # above any pid_max: no such process
for f in ".statefs-ckpt-$dead-0badf00d" ".statefs-ckpt-$dead-0badf00d-journal" \
	".statefs-ckpt-$$-0badf00d"; do
	: >"$T/$f"
	touch -d '1 hour ago' "$T/$f"
done
: >"$T/.statefs-ckpt-$dead-00000001"
expect_exit 0 sc checkpoint "$T/ck9"
[ ! -e "$T/.statefs-ckpt-$dead-0badf00d" ] &&
	[ ! -e "$T/.statefs-ckpt-$dead-0badf00d-journal" ] ||
	fail "a killed checkpoint's files stayed"
[ -e "$T/.statefs-ckpt-$$-0badf00d" ] || fail "a live process's file went"
[ -e "$T/.statefs-ckpt-$dead-00000001" ] || fail "a recent file went"

# '-' is standard output elsewhere (export, keygen, metrics); checkpoint
# and restore take a file and say so, making and reading nothing (a
# checkpoint was written to a file named - in the working directory)
cd "$T"
for cmd in checkpoint restore; do
	expect_exit 2 sc "$cmd" -
	expect_match "$err" "$cmd takes the path of a checkpoint file, not '-'" \
		"$cmd -"
	[ ! -e "$T/-" ] || fail "$cmd -: a file named - was made"
done
cd - >/dev/null

echo "cli_checkpoint ($mode): ok"
