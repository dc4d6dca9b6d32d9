#!/usr/bin/env bash
# top_cost.sh - what `statectl top` costs the writers: a writer's
# throughput (qwriter: push, pop, put, counter add through the engine) on
# an encrypted store, alone and while `statectl top` runs in a real
# terminal (a tmux pane), in the same run, rounds interleaved and
# alternating which goes first.
#
# Usage: top_cost.sh STATECTL QWRITER [SECONDS] [ROUNDS] [INTERVAL]
#   SECONDS per measurement (default 3), ROUNDS (default 11), INTERVAL
#   top's refresh (default 1s, its default; try 100ms for ten times the
#   snapshots). The store holds 20,000 keys in 200 scopes, 2,000 log
#   entries, 500 counters and 20 queues of 100 items, so each snapshot
#   has work to do.
# Environment: TMPDIR; TOP_COST_SCOPES (200) and TOP_COST_KEYS (100 per
#   scope) to size the store. HOME and the XDG directories point into a
#   private directory (the store and its key are made there).
# Output: per round, the writer's operations per second alone and with
#   top (measured back to back, so that each round's ratio sees the same
#   load on a shared machine) and its CPU time per operation (steadier than
#   wall time when other work shares the CPUs), and the CPU time top used
#   per frame; then the medians, and the median of the rounds' ratios
#   with/without (1.00: no cost). Asserts nothing.
# Exit: 0; 1 when a step fails.
set -euo pipefail

statectl=${1:?STATECTL}; qwriter=${2:?QWRITER}
secs=${3:-3}; rounds=${4:-11}; interval=${5:-1s}

work=$(mktemp -d "${TMPDIR:-/tmp}/statefs-topcost.XXXXXX")
export HOME=$work XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export STATEFS_DB=$work/state.db STATEFS_KEY_FILE=$work/key
unset STATEFS_KEY
tm() { tmux -S "$work/tmux.sock" "$@"; }
topcmd=()

cleanup() {
  local rc=$?
  set +e
  command -v tmux >/dev/null && tm kill-server 2>/dev/null
  [ -n "${toppid:-}" ] && kill "$toppid" 2>/dev/null && wait "$toppid" 2>/dev/null
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

"$statectl" init >/dev/null
{
  for s in $(seq "${TOP_COST_SCOPES:-200}"); do
    for k in $(seq "${TOP_COST_KEYS:-100}"); do printf 'scope%d\tns\tk%d\n' "$s" "$k"; done
  done
} | awk -F'\t' '{ printf "{\"family\":\"kv\",\"scope\":\"%s\",\"ns\":\"%s\",\"key\":\"%s\",\"value\":\"value\"}\n", $1, $2, $3 }' \
  >"$work/rows"
{
  echo '{"format":"statefs-export","version":1}'
  cat "$work/rows"
  for i in $(seq 2000); do
    printf '{"family":"log","scope":"scope%d","ns":"log","key":"k","id":%d,"value":"entry"}\n' $((i % 200 + 1)) "$i"
  done
  for i in $(seq 500); do
    printf '{"family":"counter","scope":"scope%d","ns":"c","key":"k%d","n":%d}\n' $((i % 200 + 1)) "$i" "$i"
  done
  for i in $(seq 2000); do
    printf '{"family":"queue","scope":"queue%d","id":%d,"value":"item"}\n' $((i % 20)) "$i"
  done
} | "$statectl" import >/dev/null

start_top() {
  if command -v tmux >/dev/null; then
    tm new-session -d -x 160 -y 50 -s top \
      "echo \$\$ >$work/top.pid; exec $(printf '%q ' env STATEFS_DB="$STATEFS_DB" STATEFS_KEY_FILE="$STATEFS_KEY_FILE" "$statectl" top --interval "$interval")"
    for _ in $(seq 100); do [ -s "$work/top.pid" ] && break; sleep 0.05; done
    toppid=$(cat "$work/top.pid")
  else
    "$statectl" top --interval "$interval" >/dev/null &
    toppid=$!
  fi
}
# top's CPU time (user and system, clock ticks) from /proc
top_ticks() { awk '{ print $14 + $15 }' "/proc/$toppid/stat"; }
# its CPU time per frame in ms since mark_top (after its start-up: opening
# the store is not a frame's cost)
mark_top() { t0=$(top_ticks); s0=$(date +%s.%N); }
top_cpu_per_frame() {
  awk -v t0="$t0" -v t="$(top_ticks)" -v h="$(getconf CLK_TCK)" \
    -v s="$s0" -v n="$(date +%s.%N)" -v i="$interval_s" \
    'BEGIN { f = (n - s) / i; printf "%.2f", (t - t0) * 1000 / h / f }'
}
stop_top() {
  if command -v tmux >/dev/null; then
    tm send-keys -t top q
    for _ in $(seq 100); do tm has-session -t top 2>/dev/null || break; sleep 0.05; done
    rm -f "$work/top.pid"
  else
    kill "$toppid"; wait "$toppid" || true
  fi
  toppid=
}
interval_s=$(awk -v i="$interval" 'BEGIN { v = i + 0; if (i ~ /ms$/) v /= 1000; else if (i ~ /m$/) v *= 60; print v }')

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

where=$(command -v tmux >/dev/null && echo "in a tmux pane" || echo "piped (no tmux)")
echo "top_cost: writer alone vs with 'statectl top --interval $interval' $where;"
echo "          $secs s per measurement, $rounds rounds, encrypted store"
printf '%-6s %12s %12s %7s %12s %12s %10s\n' round "alone ops/s" \
  "w/ top ops/s" ratio "alone us/op" "w/ top us/op" "top ms/fr"
for f in alone with ratio acpu wcpu tcpu; do : >"$work/$f"; done
with_top() {
  start_top; sleep 1; mark_top
  read -r w wc < <("$qwriter" "$secs")
  tc=$(top_cpu_per_frame); stop_top
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    read -r a ac < <("$qwriter" "$secs")
    with_top
  else
    with_top
    read -r a ac < <("$qwriter" "$secs")
  fi
  q=$(awk -v a="$a" -v w="$w" 'BEGIN { printf "%.3f", w / a }')
  echo "$a" >>"$work/alone"; echo "$w" >>"$work/with"; echo "$q" >>"$work/ratio"
  echo "$ac" >>"$work/acpu"; echo "$wc" >>"$work/wcpu"; echo "$tc" >>"$work/tcpu"
  printf '%-6s %12s %12s %7s %12s %12s %10s\n' "$r" "$a" "$w" "$q" "$ac" "$wc" "$tc"
done
printf '%-6s %12s %12s %7s %12s %12s %10s\n' median "$(median <"$work/alone")" \
  "$(median <"$work/with")" "$(median <"$work/ratio")" "$(median <"$work/acpu")" \
  "$(median <"$work/wcpu")" "$(median <"$work/tcpu")"
echo "ratio with/without (median of the rounds): $(median <"$work/ratio")"
awk -v a="$(median <"$work/acpu")" -v w="$(median <"$work/wcpu")" \
  'BEGIN { printf "writer CPU per op with/without: %.3f\n", w / a }'
