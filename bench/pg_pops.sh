#!/usr/bin/env bash
# pg_pops.sh - pops per second through two mounts of one PostgreSQL store
# (two hosts), with 1, 4 and 16 consumers split across them.
#
# Usage: bench/pg_pops.sh STATEFS STATECTL [ITEMS [CONSUMERS...]]
#   STATEFS, STATECTL  the built daemon and statectl
#   ITEMS              items per run (default 4000)
#   CONSUMERS          consumer counts (default 1 4 16)
# Environment: STATEFS_TEST_PG, the server (scripts/with-pg starts one);
#   PG_POPS_PLAIN=1 for a plaintext store (default: encrypted).
# Each run pushes ITEMS items (statectl, in batches), then the consumers,
# half on each mount, pop (`read < queue/q/.pop`: a claim and its ack,
# the mount's at-least-once pop) until the queue is empty; the time from
# the first pop to the last consumer's end gives pops per second. Every
# item must have been popped exactly once (checked; exit 1 otherwise).
# Prints one line per run. Exit: 0; 1 on a failure; 77 without
# /dev/fuse or a server.
set -euo pipefail
[ -c /dev/fuse ] || { echo "no /dev/fuse: skipped"; exit 77; }
[ -n "${STATEFS_TEST_PG:-}" ] || { echo "no server (STATEFS_TEST_PG): skipped"; exit 77; }
bin=$1 ctl=$2 items=${3:-4000}
shift $(( $# < 3 ? $# : 3 ))
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 4 16)

work=$(mktemp -d "${TMPDIR:-/tmp}/statefs-pops.XXXXXX")
schema=pops$$
a=$work/a b=$work/b
mkdir -p "$a" "$b"
export HOME=$work XDG_CONFIG_HOME=$work/config
export STATEFS_DB="$STATEFS_TEST_PG schema=$schema"
opts=()
if [ -n "${PG_POPS_PLAIN:-}" ]; then
  opts=(-o plaintext)
  copts=(--plaintext)
else
  copts=() # init writes the key at the default path in $work
fi
pids=()
cleanup() {
  set +e
  for d in "$a" "$b"; do
    mountpoint -q "$d" && fusermount3 -u -z "$d"
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  psql -X -q "$STATEFS_TEST_PG" -c "SET client_min_messages = warning;
    DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
[ -z "${PG_POPS_DEBUG:-}" ] || set -x
"$ctl" "${copts[@]}" init >/dev/null
for d in "$a" "$b"; do
  "$bin" -f "${opts[@]}" "$d" 2>>"$work/daemon.err" &
  pids+=($!)
done
for d in "$a" "$b"; do
  for _ in $(seq 200); do mountpoint -q "$d" && break; sleep 0.05; done
  mountpoint -q "$d" || { cat "$work/daemon.err"; exit 1; }
done
mkdir -p "$a/queue/q"

consume() { # DIR OUT
  local v
  # (items have no newline: read then fails at EOF with the item read)
  while v=; IFS= read -r v < "$1/queue/q/.pop" 2>/dev/null || [ -n "$v" ]; do
    echo "$v"
  done > "$2"
}

echo "statefs pg_pops: $items items per run, two mounts, $([ -n "${PG_POPS_PLAIN:-}" ] && echo plaintext || echo encrypted)"
printf '%-10s %10s %10s\n' consumers seconds pops/s
for c in "${counts[@]}"; do
  seq "$items" | xargs -n 500 "$ctl" "${copts[@]}" queue push q >/dev/null
  rm -f "$work"/got.*
  t0=$(date +%s%N)
  cp=()
  for i in $(seq "$c"); do
    d=$a; [ $((i % 2)) = 0 ] && d=$b
    consume "$d" "$work/got.$i" & cp+=($!)
  done
  for p in "${cp[@]}"; do wait "$p"; done
  t1=$(date +%s%N)
  n=$(cat "$work"/got.* | sort -n | uniq | wc -l)
  dup=$(cat "$work"/got.* | sort -n | uniq -d | wc -l)
  [ "$n" = "$items" ] && [ "$dup" = 0 ] ||
    { echo "pg_pops: $n distinct items popped, $dup twice, of $items" >&2; exit 1; }
  awk -v c="$c" -v n="$items" -v ns=$((t1 - t0)) \
    'BEGIN { s = ns / 1e9; printf "%-10d %10.2f %10.0f\n", c, s, n / s }'
done
