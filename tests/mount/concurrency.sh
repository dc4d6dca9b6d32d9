#!/usr/bin/env bash
# concurrency.sh - many shells through one mount at once: 4 consumers on
# .pop and 4 producers creating files deliver every item exactly once; 8
# shells doing `echo +1 >` on one counter 500 times each end at exactly
# 4,000; 4 writers replacing one value while 4 readers cat it never show
# anything but a whole value. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs
cd "$mnt"
q=queue/work
per=250

# Producers and consumers. A consumer stops when the producers are done
# and .pop says the queue is empty (ENODATA).
produce() {
  for j in $(seq "$per"); do echo "p$1-$j" > $q/new; done
}
# A consumer pops with read, a builtin, and naps 10 ms when the queue is
# empty: shells forking `cat` in a loop took the CPUs from the producers.
consume() {
  local v
  while :; do
    if read -r v < $q/.pop 2>/dev/null; then
      echo "$v" >> "$work/got.$1"
    elif [ -e "$work/produced" ]; then
      read -r v < $q/.pop 2>/dev/null && echo "$v" >> "$work/got.$1" && continue
      return 0
    else
      nap 0.01
    fi
  done
}
cpids=() ppids=()
for c in 1 2 3 4; do consume $c & cpids+=($!); done
for p in 1 2 3 4; do produce $p & ppids+=($!); done
for p in "${ppids[@]}"; do wait "$p" || fail "a producer failed"; done
touch "$work/produced"
for c in "${cpids[@]}"; do wait "$c" || fail "a consumer failed"; done
cat "$work"/got.* | sort > "$work/got"
for p in 1 2 3 4; do for j in $(seq "$per"); do echo "p$p-$j"; done; done |
  sort > "$work/want"
expect_eq "$(wc -l < "$work/got")" $((4 * per)) "items delivered"
cmp -s "$work/got" "$work/want" || fail "an item was lost or delivered twice"
expect_eq "$(helper qlen work)" 0 "the queue is empty"
ok "4 producers, 4 consumers: every item exactly once"

# 8 shells, 500 atomic adds each.
mkdir -p counter/app/stats
add() {
  for _ in $(seq 500); do echo +1 > counter/app/stats/hits; done
}
apids=()
for s in $(seq 8); do add & apids+=($!); done
for p in "${apids[@]}"; do wait "$p" || fail "an adder failed"; done
expect_eq "$(cat counter/app/stats/hits)" 4000 "8 x 500 adds"
ok "8 x 500 counter adds"

# Whole values only, under concurrent replacement.
mkdir -p app/cfg
big_a=$(printf 'a%.0s' $(seq 6000))
big_b=$(printf 'b%.0s' $(seq 9000))
echo "$big_a" > app/cfg/v
write() {
  for _ in $(seq 100); do
    echo "$big_a" > app/cfg/v
    echo "$big_b" > app/cfg/v
  done
}
read_all() {
  local v
  for _ in $(seq 200); do
    v=$(< app/cfg/v)
    [ "$v" = "$big_a" ] || [ "$v" = "$big_b" ] || return 1
  done
}
wpids=() rpids=()
for _ in 1 2 3 4; do write & wpids+=($!); done
for _ in 1 2 3 4; do read_all & rpids+=($!); done
for p in "${rpids[@]}"; do wait "$p" || fail "a reader saw a torn or empty value"; done
for p in "${wpids[@]}"; do wait "$p" || fail "a writer failed"; done
ok "readers see whole values"

cd /
unmount_fs
