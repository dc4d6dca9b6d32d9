#!/usr/bin/env bash
# run.sh - one bounded libFuzzer run of a target: what the `fuzz` suite
# runs for each target (fuzz/meson.build), and the longer run by hand.
#
# Usage: run.sh TARGET CORPUS [SEEDER|-] [FLAG...]
#   TARGET  a fuzz_* executable of a -Dfuzz=true build
#   CORPUS  its seeds in the repository (fuzz/corpus/NAME), read only: every
#           seed runs first, so the inputs of defects found before (kept
#           there as regression seeds) are checked on every run
#   SEEDER  a program that writes more seeds into the directory it is given
#           (page_seeds: pages of a fresh real store); - for none
#   FLAG    more libFuzzer flags (-close_fd_mask=2 for a target that prints
#           on stderr: libFuzzer and the sanitizers report on a copy)
# Environment:
#   FUZZ_SECONDS  how long to fuzz (default 15): a bound on the run, not an
#                 expectation; a loaded machine just runs fewer inputs
#   FUZZ_OUT      a directory to keep the inputs the run found (new
#                 coverage) in; default: a temporary one, removed
# Output: libFuzzer's log on a failure, with the failing input in hex (add
#   it to CORPUS as a regression seed once fixed); always a last line
#   "fuzz: NAME: N executions in S s, C inputs of new coverage".
# Exit: 0 nothing found, 1 a crash, leak, timeout or failed check.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: run.sh TARGET CORPUS [SEEDER|-] [FLAG...]" >&2; exit 2; }
target=$1 corpus=$2 seeder=${3:--}
shift $(($# >= 3 ? 3 : 2))
secs=${FUZZ_SECONDS:-15}
name=$(basename "$target")
work=$(mktemp -d "${TMPDIR:-/tmp}/statefs-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=${FUZZ_OUT:-$work/new}
mkdir -p "$out" "$work/seeds" "$work/artifacts"
[ "$seeder" = - ] || "$seeder" "$work/seeds"

# -detect_leaks=0: no leak check after every input that malloc'd more than
# it freed (SQLite's caches do, and the check made the import target 20
# times slower); LeakSanitizer still checks the whole run at its end, and
# fails it (rerun with -detect_leaks=1 to find the input).
rc=0
"$target" -max_total_time="$secs" -timeout=60 -print_final_stats=1 \
  -detect_leaks=0 -artifact_prefix="$work/artifacts/" "$@" \
  "$out" "$corpus" "$work/seeds" >"$work/log" 2>&1 || rc=$?

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n1)
if [ "$rc" -ne 0 ]; then
  tail -n 60 "$work/log"
  for a in "$work"/artifacts/*; do
    [ -f "$a" ] || continue
    echo "--- failing input $(basename "$a") ($(wc -c <"$a") bytes), in hex:"
    od -An -tx1 -v "$a" | head -n 64
  done
fi
echo "fuzz: ${name#fuzz_}: ${runs:-?} executions in ${secs} s, $(ls "$out" | wc -l) inputs of new coverage"
[ "$rc" -eq 0 ] || exit 1
