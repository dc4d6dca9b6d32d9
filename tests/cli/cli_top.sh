#!/usr/bin/env bash
# cli_top.sh: statectl top as a person sees it, in a real terminal (tmux:
# new-session, send-keys, capture-pane) against a store with a worker
# pushing and popping: its frames show the numbers the test made and the
# worker's rates, a narrow window drops columns and no line is wider than
# the window, q exits 0 and leaves the terminal as it was (the alternate
# screen gone, echo and canonical mode back); the plain frames when piped,
# --once and --json; statectl metrics passes promtool's check, its sums
# equal statectl --json info, and metrics FILE replaces the file whole, and only a file it wrote.
# Environment: see lib.sh. Needs tmux and promtool (scripts/deps test).
# Exit: 0 pass, 1 fail.
. "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null || fail "tmux is not installed (scripts/deps test)"
command -v promtool >/dev/null || fail "promtool is not installed (scripts/deps test: prometheus)"
make_store

# The numbers the frames must show. jobs: 7 pushed, 3 claimed, one of them
# rejected: 4 pending, 2 in flight, 1 dead, 1 claim. app: 5 keys, 3 log
# entries, 2 counters.
sc queue push jobs j1 j2 j3 j4 j5 j6 j7 >/dev/null
out=$(sc queue claim jobs --max 3)
cid=${out%%$'\n'*}
first=$(printf '%s\n' "$out" | sed -n 2p | cut -f1)
sc queue ack "$cid" "$first:reject"
sc put app cfg k1 v1
sc log append app log k e1 >/dev/null
sc counter add app stats a >/dev/null
# one of each is said as one ("1 scope: 1 keys" before)
expect_exit 0 sc top --once --interval 100ms
expect_match "$out" "1 queue: 4 pending, 2 in flight, 1 dead   1 scope: 1 key, 1 log entry, 1 counter" \
	"--once: the totals, one of each"
for k in 2 3 4 5; do sc put app cfg "k$k" "v$k"; done
for e in 2 3; do sc log append app log k "e$e" >/dev/null; done
sc counter add app stats b >/dev/null

# A worker: each statectl process writes its counts when it closes.
worker() { # until $T/stop exists, so that a stop never cuts a call short
	while [ ! -e "$T/stop" ]; do
		sc queue push busy x y >/dev/null || exit 1
		sc queue pop busy >/dev/null || exit 1
	done
}
worker &
wpid=$!
cleanup_hooks+=("kill $wpid 2>/dev/null; wait $wpid 2>/dev/null")

# --- the live view in tmux
tm() { tmux -S "$T/tmux.sock" "$@"; }
cleanup_hooks+=("tmux -S '$T/tmux.sock' kill-server 2>/dev/null")
printf -v cmd '%q ' "$STATECTL" --db "$DB" "${modeopts[@]}" top --interval 500ms
tm new-session -d -x 150 -y 40 -s top \
	"LANG=C.UTF-8 $cmd; echo exit=\$? >$T/top.exit; stty -a >$T/stty.out; sleep 600"
# until the frame shows the store's numbers, and frames have shown the
# worker's push rate and its pop rate. Not in one frame: a rate is the
# count's change between two frames, and on a loaded machine one statectl
# call of the worker can take longer than the interval, so a frame may see
# a push and no pop. Bounded by time, not by a count of captures, which
# themselves take long under load.
frame= pushed= popped=
deadline=$((SECONDS + 300))
while [ "$SECONDS" -lt "$deadline" ]; do
	frame=$(tm capture-pane -p -t top)
	read -r push pop < <(awk '$1 == "busy" { print $9, $10 }' <<<"$frame") || true
	case ${push:-0} in 0|-) ;; *) pushed=$push ;; esac
	case ${pop:-0} in 0|-) ;; *) popped=$pop ;; esac
	if grep -Eq '^jobs +4 +2 +1 +1 +0 ' <<<"$frame" &&
	   grep -Eq '^app +5 +3 +2' <<<"$frame" && [ -n "$pushed" ] && [ -n "$popped" ]; then
		break
	fi
	nap 0.1
done
printf '%s\n' "$frame" >"$T/frame"
grep -Eq '^jobs +4 +2 +1 +1 +0 ' "$T/frame" || { cat "$T/frame" >&2; fail "the jobs row"; }
grep -Eq '^app +5 +3 +2' "$T/frame" || { cat "$T/frame" >&2; fail "the app scope"; }
[ -n "$pushed" ] && [ -n "$popped" ] ||
	{ cat "$T/frame" >&2; fail "the worker's rates (push/s seen: ${pushed:-none}, pop/s seen: ${popped:-none})"; }
# the store's name as statefs gives it (a connection string: libpq's order)
expect_exit 0 sc --json info
expect_match "$(head -n1 "$T/frame")" "statefs top +$(jq -r .path <<<"$out")" \
	"the header names the store"
grep -q "QUEUE.*PENDING.*INFLIGHT.*DEAD.*CLAIMS.*EXPIRED.*OLDEST.*WAIT.*PUSH/s.*POP/s.*DEPTH" "$T/frame" ||
	fail "a wide window shows every column"
grep -q "q quit" "$T/frame" || fail "the footer"

# a narrow, short window: the least telling columns go, lines fit
tm resize-window -t top -x 44 -y 14
# (a capture can catch the screen between clearing and drawing: wait for a
# whole frame, one with the jobs row, as the wide window does)
for _ in $(seq 600); do
	frame=$(tm capture-pane -p -t top)
	! grep -q DEPTH <<<"$frame" && grep -Eq '^jobs +4 +2 +1( |$)' <<<"$frame" &&
		break
	nap 0.1
done
printf '%s\n' "$frame" >"$T/narrow"
grep -q DEPTH "$T/narrow" && { cat "$T/narrow" >&2; fail "the trend stays in 44 columns"; }
grep -Eq '^jobs +4 +2 +1( |$)' "$T/narrow" || { cat "$T/narrow" >&2; fail "pending, in flight and dead stay"; }
wide=$(LC_ALL=C.UTF-8 wc -L <"$T/narrow")
[ "$wide" -le 44 ] || { cat "$T/narrow" >&2; fail "a line of $wide columns in a 44-column window"; }
expect_eq "$(wc -l <"$T/narrow")" 14 "the frame fills the window"

# q: exit 0, the terminal as it was
tm send-keys -t top q
for _ in $(seq 600); do [ -s "$T/top.exit" ] && break; nap 0.1; done
expect_eq "$(cat "$T/top.exit" 2>/dev/null)" exit=0 "q exits 0"
for _ in $(seq 600); do [ -s "$T/stty.out" ] && break; nap 0.1; done
grep -Eq '(^| )icanon( |$)' "$T/stty.out" && grep -Eq '(^| )echo( |$)' "$T/stty.out" ||
	fail "canonical mode and echo are back: $(cat "$T/stty.out")"
tm capture-pane -p -t top | grep "statefs top" >/dev/null && fail "the frame stays on the screen after q"
# SIGTERM ends it cleanly too
tm respawn-pane -k -t top "LANG=C.UTF-8 sh -c 'echo \$\$ >$T/top.pid; exec $cmd'; echo exit=\$? >$T/top.exit2; sleep 600"
for _ in $(seq 600); do tm capture-pane -p -t top | grep "q quit" >/dev/null && break; nap 0.1; done
kill -TERM "$(cat "$T/top.pid")" || fail "no statectl top to signal"
for _ in $(seq 600); do [ -s "$T/top.exit2" ] && break; nap 0.1; done
expect_eq "$(cat "$T/top.exit2" 2>/dev/null)" exit=0 "SIGTERM exits 0"

# --- frames when not on a terminal
expect_exit 0 sc top --once
expect_match "$out" $'\njobs +4 +2 +1 +1 +0 ' "--once: the jobs row"
expect_match "$out" $'\napp +5 +3 +2' "--once: the app scope"
expect_exit 0 sc --json top --once
jqe "$out" '.queues[] | select(.queue == "jobs") | .pending == 4 and .inflight == 2 and .dead == 1 and .claims == 1'
# --once stopped while it measures (asleep in its interval): exit 130 and
# nothing printed; it was exit 0 with no output. Asleep with SIGTERM
# caught: the worker above writes all along, so the open, before top
# catches signals, may sleep too (SQLite waiting for a lock), and a
# SIGTERM there is the default one (exit 143).
"$STATECTL" --db "$DB" "${modeopts[@]}" top --once --interval 1h >"$T/once.out" 2>"$T/once.err" & once_pid=$!
catches_term() { # PID: SIGTERM (15: bit 14 of SigCgt) has a handler
	local mask
	mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
	[ -n "$mask" ] && (( 0x$mask & 0x4000 ))
}
for _ in $(seq 1200); do catches_term "$once_pid" && break; nap 0.05; done
catches_term "$once_pid" && wait_wchan "$once_pid" hrtimer_nanosleep ||
	{ kill -KILL "$once_pid"; fail "top --once never slept in its interval"; }
kill -TERM "$once_pid"
rc=0; wait "$once_pid" || rc=$?
expect_eq "$rc" 130 "top --once stopped before its frame"
expect_eq "$(cat "$T/once.out")" "" "top --once stopped before its frame prints nothing"
jqe "$out" '.queues[] | select(.queue == "busy") | (.push_per_s | type) == "number"'
jqe "$out" '.scopes[] | select(.scope == "app") | .kv == 5 and .log == 3 and .counter == 2'
jqe "$out" '.rows.dead == 1 and .store.encrypted == ('"$([ "$hkey" != - ] && echo true || echo false)"')'
# a frame that cannot be written: exit 9 with the reason
expect_exit_into 9 /dev/full sc top --once --interval 100ms
expect_match "$err" "^statectl: cannot write the output: No space left on device$" "top to a full disk"
# piped, one frame per interval until a signal; exit 0 (the signal once two
# frames are out, however long a loaded machine takes to draw them)
"$STATECTL" --db "$DB" "${modeopts[@]}" top --interval 200ms >"$T/frames" &
tpid=$!
frames() { grep -c '^statefs top ' "$T/frames" || true; }
for _ in $(seq 1200); do [ "$(frames)" -ge 2 ] && break; nap 0.1; done
[ "$(frames)" -ge 2 ] || fail "several frames when piped (in 120 s)"
kill -TERM "$tpid"
got=0
wait "$tpid" || got=$?
expect_eq "$got" 0 "top piped exits 0 at SIGTERM"
# rates measure the time between frames on the monotonic clock: with the
# wall clock stepped back an hour while top runs (clockshift.c), every
# frame but the first has a rate (the first after the step had none: it
# was a negative time after the frame before; the trend stopped taking
# samples for the hour)
# (a sanitized statectl brings its own runtime: clang's is linked in, and
# gcc's, which checks it is loaded first, is told a preload comes first)
printf '#!/bin/sh\nASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 CLOCKSHIFT_FILE=%s LD_PRELOAD=%s exec %s "$@"\n' \
	"$T/shift" "$STATEFS_CLOCKSHIFT" "$STATECTL" >"$T/statectl-shifted"
chmod +x "$T/statectl-shifted"
echo 0 >"$T/shift"
sc queue push stepped s1 >/dev/null
"$T/statectl-shifted" --db "$DB" "${modeopts[@]}" --json top --interval 100ms >"$T/jframes" &
tpid=$!
jframes() { wc -l <"$T/jframes"; }
for _ in $(seq 1200); do [ "$(jframes)" -ge 2 ] && break; nap 0.1; done
[ "$(jframes)" -ge 2 ] || fail "two JSON frames (in 120 s)"
echo -3600 >"$T/shift"
n=$(($(jframes) + 3))
for _ in $(seq 1200); do [ "$(jframes)" -ge "$n" ] && break; nap 0.1; done
[ "$(jframes)" -ge "$n" ] || fail "three JSON frames after the step (in 120 s)"
kill -TERM "$tpid"
wait "$tpid" || true
jqe "$(head -n "$n" "$T/jframes" | jq -s .)" \
	'[.[1:][] | .queues[] | select(.queue == "stepped") | .push_per_s] | length >= 4 and all(. != null)'
# ... also while a frame waits for a reader that does not read (a full
# pipe: top | less, paused): the quit it asks for, exit 0, nothing said
# (it was exit 9, "cannot write the output: Interrupted system call").
# The pipe is one page, which statectl holds open itself; perl sets it up.
on_full_pipe "$T/full.err" "$STATECTL" --db "$DB" "${modeopts[@]}" top \
	--interval 100ms
tpid=$full_pid
kill -TERM "$tpid"
got=0; wait "$tpid" || got=$?
expect_eq "$got $(<"$T/full.err")" "0 " "top exits 0 at SIGTERM while a frame waits for its reader"
expect_exit 2 sc top --interval 10ms
expect_match "$err" "between 100ms and 1h" "--interval bounds"

# --- metrics: the format, and the same numbers as info (no writer now)
touch "$T/stop" # its last statectl ends before the counts are read
wait "$wpid" 2>/dev/null || true
expect_exit 0 sc metrics
m=$out
printf '%s\n' "$m" | promtool check metrics || fail "promtool check metrics"
expect_exit 0 sc --json info
info=$out
sum() { printf '%s\n' "$m" | awk -v n="$1" '$1 ~ "^"n"({|$)" { s += $2 } END { printf "%d", s }'; }
one() { printf '%s\n' "$m" | awk -v n="$1" '$1 == n { print $2 }'; }
expect_eq "$(sum statefs_queue_pending)" "$(jq .rows.queue <<<"$info")" "pending = info's queue rows"
expect_eq "$(sum statefs_queue_inflight)" "$(jq .rows.claimed <<<"$info")" "in flight = info's claimed"
expect_eq "$(sum statefs_queue_dead)" "$(jq .rows.dead <<<"$info")" "dead"
expect_eq "$(sum statefs_scope_keys)" "$(jq .rows.kv <<<"$info")" "keys = info's kv rows"
expect_eq "$(sum statefs_scope_log_entries)" "$(jq .rows.log <<<"$info")" "log entries"
expect_eq "$(sum statefs_scope_counters)" "$(jq .rows.counter <<<"$info")" "counters"
# the backend's facts: a metric for each fact info shows, none without
expect_eq "$(one statefs_store_size_bytes)" "$(jq '.file_size // empty' <<<"$info")" "file size"
expect_eq "$(one statefs_store_wal_size_bytes)" "$(jq '.wal_size // empty' <<<"$info")" "WAL size"
expect_eq "$(one statefs_store_pages)" "$(jq '.page_count // empty' <<<"$info")" "pages"
expect_eq "$(one statefs_store_page_size_bytes)" "$(jq '.page_size // empty' <<<"$info")" "page size"
# the store's size on every backend (PostgreSQL had none: no file facts)
expect_eq "$(one statefs_store_bytes)" "$(jq .size <<<"$info")" "the store's bytes"
for f in kv counter log queue claimed dead; do
	expect_eq "$(one "statefs_store_rows{family=\"$f\"}")" "$(jq ".rows.$f" <<<"$info")" "store_rows $f"
done
expect_eq "$(one 'statefs_queue_pending{queue="jobs"}')" 4 "jobs pending"
expect_eq "$(one 'statefs_queue_pushed_total{queue="jobs"}')" 7 "jobs pushed"
expect_eq "$(one 'statefs_queue_taken_total{queue="jobs"}')" 3 "jobs taken (claimed)"
[ "$(one 'statefs_queue_pushed_total{queue="busy"}')" -gt 0 ] || fail "the worker's pushes"
# a claim whose lease ran out, that nobody has returned yet (metrics opens
# read-only: no recovery): expired in metrics, top and --json top (on
# PostgreSQL it compared the lease with NULL and was never counted)
sc queue push late l1 >/dev/null
expect_exit 0 sc --json queue claim late --lease 100ms
until_ns=$(jq .lease_until_ns <<<"$out")
deadline=$((SECONDS + 60))
while [ "$(date +%s%N)" -le "$until_ns" ] && [ "$SECONDS" -lt "$deadline" ]; do nap 0.05; done
expect_exit 0 sc metrics
expect_eq "$(printf '%s\n' "$out" | awk '$1 == "statefs_queue_claims_expired{queue=\"late\"}" { print $2 }')" 1 \
	"an expired claim in metrics"
expect_exit 0 sc --json top --once --interval 100ms
jqe "$out" '.queues[] | select(.queue == "late") | .claims == 1 and .expired == 1'
# entries a drain holds (its reader stopped reading: a full pipe) are the
# namespace's until delivered, as export shows them: in info's kv rows and
# the scope's keys (they were in no figure: the namespace looked empty)
expect_exit 0 sc --json info
kv0=$(jq .rows.kv <<<"$out")
printf -v big '%05000d' 0
for k in 1 2 3; do sc put drained n "k$k" "$big"; done
on_full_pipe /dev/null "$STATECTL" --db "$DB" "${modeopts[@]}" drain drained n
dpid=$full_pid
expect_exit 1 sc get drained n k1 # taken: the drain's
expect_exit 0 sc --json info
expect_eq "$(jq .rows.kv <<<"$out")" "$((kv0 + 3))" "info counts the entries a drain holds"
expect_exit 0 sc metrics
expect_eq "$(printf '%s\n' "$out" | awk '$1 == "statefs_scope_keys{scope=\"drained\"}" { print $2 }')" 3 \
	"metrics counts the entries a drain holds"
kill -TERM "$dpid"
wait "$dpid" 2>/dev/null || true
# metrics FILE: written beside, renamed over
mkdir "$T/textfile"
# only over a file it wrote: never over the store, its key, or anyone's
# file (the store given as FILE was replaced by the figures, exit 0)
printf 'not metrics\n' >"$T/textfile/statefs.prom"
: >"$T/textfile/empty.prom"
mkfifo "$T/textfile/fifo.prom"
if [ -z "$pg" ]; then targets=("$DB"); else targets=(); fi
[ "$mode" = encrypted ] && targets+=("$KEY")
for f in "${targets[@]}" "$T/textfile/statefs.prom" "$T/textfile/empty.prom"; do
	before=$(sha256sum <"$f")
	expect_exit 6 sc metrics "$f"
	expect_match "$err" "^statectl: .* exists and is not what metrics writes \(a file starting '# HELP statefs_'\): metrics replaces only a file it wrote$" "metrics over $f"
	expect_eq "$(sha256sum <"$f")" "$before" "metrics left $f as it was"
done
expect_exit 6 sc metrics "$T/textfile/fifo.prom"
expect_match "$err" "fifo.prom exists and is not a regular file" "metrics over a FIFO"
[ -p "$T/textfile/fifo.prom" ] || fail "metrics replaced a FIFO"
rm "$T/textfile/"*
expect_exit 0 sc info
printf '# HELP statefs_store_bytes stale\n' >"$T/textfile/statefs.prom"
# what a run killed before its rename left (SIGKILL: a timer's timeout)
# goes at the next run, once unchanged for ten minutes and its process
# gone; a live process's, a recent one and another file's stay
dead=2147483646 # above any pid_max: no such process
for f in "statefs.prom.tmp-$dead" "statefs.prom.tmp-$$" "other.prom.tmp-$dead"; do
	: >"$T/textfile/$f"
	touch -d '1 hour ago' "$T/textfile/$f"
done
: >"$T/textfile/statefs.prom.tmp-$((dead - 1))"
expect_exit 0 sc metrics "$T/textfile/statefs.prom"
[ ! -e "$T/textfile/statefs.prom.tmp-$dead" ] || fail "a killed run's temporary file stayed"
for f in "statefs.prom.tmp-$$" "statefs.prom.tmp-$((dead - 1))" "other.prom.tmp-$dead"; do
	[ -e "$T/textfile/$f" ] || fail "$f went"
done
rm "$T/textfile/"*.tmp-*
# one under this run's own pid is a killed run's whose pid came round
# again: it goes (the run failed EEXIST, exit 9; helper-46's find)
(: >"$T/textfile/statefs.prom.tmp-$BASHPID"
 exec "$STATECTL" --db "$DB" "${modeopts[@]}" metrics "$T/textfile/statefs.prom") ||
	fail "metrics over a leftover of its own pid"
expect_exit 0 sc metrics "$T/textfile/statefs.prom"
expect_eq "$(ls "$T/textfile")" statefs.prom "no temporary file left"
promtool check metrics <"$T/textfile/statefs.prom" || fail "promtool on the file"
expect_eq "$(grep -c '^# TYPE' "$T/textfile/statefs.prom")" "$(printf '%s\n' "$m" | grep -c '^# TYPE')" "the whole output in the file"
echo "cli_top ($mode): ok"
