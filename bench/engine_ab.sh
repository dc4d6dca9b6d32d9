#!/usr/bin/env bash
# engine_ab.sh: two builds of engine_bench against each other in one run.
#
# Usage: bench/engine_ab.sh OLD_ENGINE_BENCH NEW_ENGINE_BENCH [ROUNDS] [-- ARGS...]
#   Runs each binary ROUNDS times (default 7) with `-r 1 ARGS...`,
#   alternating which goes first in each round, so both see the same
#   machine. Prints, per operation, the median microseconds of the
#   engine column ("eng us") for each build and new/old (above 1: the new
#   build is slower). The hand-written SQLite columns of the same runs are
#   printed as a control: their new/old ratio shows how much the machine
#   itself moved between the two builds' runs (it should be near 1.00).
# Example (the previous commit's build in ../old/build):
#   bench/engine_ab.sh ../old/build/bench/engine_bench build/bench/engine_bench 7 -- -n 20000
#   bench/engine_ab.sh ../old/build/bench/engine_bench build/bench/engine_bench 7 -- -n 20000 -e
# Asserts nothing (a benchmark, not a test).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD NEW [ROUNDS] [-- ARGS...]" >&2; exit 2; }
old=$1 new=$2; shift 2
rounds=7
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds=$1; shift; fi
[ "${1:-}" = "--" ] && shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

one() { # bin tag args...: appends "tag op best eng" lines
  local bin=$1 tag=$2; shift 2
  # fixed-width table: the name is the first 12 columns, then sdk, best,
  # same and eng in that order (later columns are ignored)
  "$bin" -r 1 "$@" | awk -v tag="$tag" '
    f && NF { name = substr($0, 1, 12); gsub(/ +$/, "", name); gsub(/ /, "_", name)
              n = split(substr($0, 13), c, " ")
              # rows of numbers only (the legend and the group table follow)
              if (n >= 4 && c[2] ~ /^[0-9.]+$/ && c[4] ~ /^[0-9.]+$/) print tag, name, c[2], c[4] }
    /^operation/ { f = 1 }' >> "$tmp/rows"
}
for ((i = 1; i <= rounds; i++)); do
  if ((i % 2)); then one "$old" old "$@"; one "$new" new "$@"
  else one "$new" new "$@"; one "$old" old "$@"; fi
done
echo "engine_bench A/B: $rounds rounds, args: $*, load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/rows" <<'EOF'
import statistics, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    tag, op, best, eng = line.split()
    if op not in order: order.append(op)
    rows.setdefault((tag, op), []).append((float(best), float(eng)))
print(f"{'operation':12} {'old eng us':>10} {'new eng us':>10} {'new/old':>8} {'control':>8}")
for op in order:
    o = rows.get(("old", op)); n = rows.get(("new", op))
    if not o or not n: continue
    oe = statistics.median(e for _, e in o); ne = statistics.median(e for _, e in n)
    ob = statistics.median(b for b, _ in o); nb = statistics.median(b for b, _ in n)
    print(f"{op.replace('_', ' '):12} {oe:10.2f} {ne:10.2f} {ne / oe:8.2f} {nb / ob:8.2f}")
EOF
