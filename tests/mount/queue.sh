#!/usr/bin/env bash
# queue.sh - /queue/<id>: creating a file pushes, items listed in FIFO
# order and read by peeking, .pop (ENODATA when empty, nothing popped by
# an open without a read), .drain as JSON Lines, .wait (blocks, wakes on a
# push from the mount or from another process, also with the wall clock
# stepped back, an interrupted reader leaves the item, many waiters do not
# hang the mount), rm and rm -r, the names of new items (rsync -a and
# install into a queue, aliases seen by their creator alone).
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs
cd "$mnt"
q=queue/jobs

# A queue exists for every id (consumers may start first); creating files
# pushes their bytes, names sort in id order, reading peeks.
[ -d $q ] || fail "a queue is always there"
expect_eq "$(ls queue)" "" "an unused queue is not listed"
for i in 1 2 3; do echo "job $i" > $q/anything; done
: > $q/empty
expect_eq "$(helper qlen jobs)" 4 "four pushes"
expect_eq "$(ls queue)" jobs "a queue with items is listed"
expect_eq "$(cat $q/* | tr '\n' ,)" "job 1,job 2,job 3," "cat * in FIFO order"
expect_eq "$(helper qlen jobs)" 4 "peeking pops nothing"
first=$(ls $q | sed -n 1p)
[[ $first =~ ^[0-9]{19}$ ]] || fail "item name $first"
expect_eq "$(ls $q | sort -c && echo sorted)" sorted "ls order is id order"
ls -a $q | grep '^\.' >/dev/null && [ "$(ls -a $q | grep -c '^\.[a-z]')" -ne 0 ] &&
  fail "special files are listed"
ok "push, list, peek"

# .pop: exactly one item, in order; nothing on an open without a read.
: < $q/.pop
expect_eq "$(helper qlen jobs)" 4 ": < .pop pops nothing"
expect_eq "$(cat $q/.pop)" "job 1" ".pop the head"
expect_eq "$(head -n1 < $q/.pop)" "job 2" "head -n1 < .pop (no Illegal seek)"
expect_eq "$(helper qlen jobs)" 2 "two popped"
# A first read past the item's end carries none of it: nothing taken.
head=$(ls $q | sed -n 1p)
expect_eq "$(dd if=$q/.pop bs=1 skip=100 count=1 status=none | wc -c)" 0 \
  ".pop read past the end"
expect_eq "$(dd if=$q/.claim bs=1 skip=100 count=1 status=none | wc -c)" 0 \
  ".claim read past the end"
expect_eq "$(helper qlen jobs),$(ls $q | sed -n 1p),$(ls $q/inflight | wc -l)" \
  "2,$head,0" "a read past the end takes nothing"
n=0
while v=$(cat $q/.pop 2>/dev/null); do n=$((n + 1)); done
expect_eq "$n" 2 "the while-loop pops the rest and ends"
expect_op ENODATA read $q/.pop
expect_eq "$(cat $q/.pop 2>&1)" "cat: $q/.pop: No data available" "the message"
ok ".pop and ENODATA"

# .drain: every item at once, in order, as JSON Lines, each with the time
# it was enqueued (what stat shows for the item), not its claim's lease.
helper qpush jobs a b x:ff00
times=$(stat -c %Y $q/* | tr '\n' ,)
d=$(cat $q/.drain)
expect_eq "$(jq -r '.value // .value_b64' <<<"$d" | tr '\n' ,)" "a,b,/wA=," ".drain"
expect_eq "$(jq -r '.mtime_ns / 1000000000 | floor' <<<"$d" | tr '\n' ,)" "$times" ".drain's times"
expect_eq "$(helper qlen jobs)" 0 "drained"
expect_eq "$(ls $q/inflight | wc -l)" 0 "nothing left in flight"
expect_eq "$(cat $q/.drain | wc -c)" 0 "an empty drain is empty"
ok ".drain"

# .wait: blocks, then gets an item pushed through the mount.
cat $q/.wait > "$work/w1" &
w=$!
sleep 0.3
kill -0 $w 2>/dev/null || fail ".wait returned on an empty queue"
echo woken > $q/new
wait $w || fail ".wait failed"
expect_eq "$(cat "$work/w1")" woken ".wait got the pushed item"
# ... and one pushed by another process through the engine.
cat $q/.wait > "$work/w2" &
w=$!
sleep 0.2
helper qpush jobs external
wait $w || fail ".wait failed"
expect_eq "$(cat "$work/w2")" external ".wait saw another process's push"
ok ".wait wakes"

# A wall clock stepped back holds no .wait: a daemon whose clock reads an
# hour ahead of the one the kernel times its waits on (what a step back of
# an hour leaves, clockshift.c) still sees another process's push at its
# next poll. The pause between polls was measured on the wall clock and
# lasted the hour (before 2026-12-04).
# (A sanitized daemon brings its own runtime: clang's is linked in, and
# gcc's, which checks it is loaded first, is told a preload comes first.)
printf '#!/bin/sh\nASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 CLOCKSHIFT_FILE=%s LD_PRELOAD=%s exec %s "$@"\n' \
  "$work/shift" "$STATEFS_CLOCKSHIFT" "$STATEFS_BIN" > "$work/statefs-shifted"
chmod +x "$work/statefs-shifted"
echo 3600 > "$work/shift"
STATEFS_BIN=$work/statefs-shifted mount_other "$work/ahead"
"$STATEFS_FSOP" -v read "$work/ahead/$q/.wait" "$work/w3-open" > "$work/w3" &
w=$!
fuse_blocked $w "$work/w3-open" "$work/ahead"
helper qpush jobs stepped
for _ in $(seq 600); do
  kill -0 $w 2>/dev/null || break
  nap 0.1
done
kill -0 $w 2>/dev/null && fail "a .wait with the clock stepped back missed a push for 60 s"
wait $w || fail ".wait failed"
expect_eq "$(cat "$work/w3")" steppedOK ".wait with the clock stepped back"
fusermount3 -u "$work/ahead"
ok ".wait with the wall clock stepped back"

# An interrupted reader leaves the item: timeout's SIGTERM, then Ctrl-C.
rc=0
timeout 0.5 cat $q/.wait > /dev/null || rc=$?
expect_eq "$rc" 124 "timeout ended the reader"
# Ctrl-C is SIGINT (a background job of a script ignores it: send it from
# timeout in the foreground).
rc=0
timeout -s INT 0.3 cat $q/.wait > /dev/null || rc=$?
expect_eq "$rc" 124 "SIGINT ended the reader"
helper qpush jobs kept
sleep 0.3
expect_eq "$(helper qlen jobs)" 1 "interrupted readers left the item"
expect_eq "$(cat $q/.pop)" kept "and it is the one pushed"
ok ".wait interrupted"

# Many waiting readers do not take the daemon's threads.
pids=()
for i in $(seq 12); do
  cat $q/.wait > "$work/many.$i" &
  pids+=($!)
done
sleep 0.3
expect_eq "$(ls "$mnt" | wc -l)" 3 "the mount answers while 12 readers wait"
for i in $(seq 12); do helper qpush jobs "m$i"; done
for p in "${pids[@]}"; do wait "$p" || fail "a waiter failed"; done
expect_eq "$(for m in "$work"/many.*; do cat "$m"; echo; done | sort | tr '\n' ,)" \
  "$(printf 'm%s\n' $(seq 12) | sort | tr '\n' ,)" "each waiter got one item"
ok "12 waiters"

# rm deletes one item, rm -r a queue; ids are kept by the others.
helper qpush jobs p q r
mid=$(ls $q | sed -n 2p)
rm $q/$mid
expect_eq "$(cat $q/* | tr -d '\n')" pr "rm of the middle item"
rm -r $q
expect_eq "$(helper qlen jobs)" 0 "rm -r emptied the queue"
[ -d $q ] && rmdir $q
ok "rm, rm -r"

# Queue names go through the codec; mv of an item to another queue
# copies and removes (EXDEV for rename).
echo odd > 'queue/a%2Fb/new'
expect_eq "$(helper qlen a/b)" 1 "queue id a/b"
expect_eq "$(ls queue)" 'a%2Fb' "listed as a%2Fb"
mv 'queue/a%2Fb/'* queue/other/
expect_eq "$(helper qlen a/b),$(helper qlen other)" 0,1 "mv across queues"
ok "queue names, mv"

# A file's name stays an alias of the item its close pushed, for the
# process that created it alone (docs/filesystem.md, "Names of new entries
# and items"): rsync -a (writes .f.XXXXXX, closes it, stats, chmods and
# times it, renames it to f) and install -m (a chmod after the close)
# exit 0 and push one item per file, where they exited 23 and 1.
src=$work/src
mkdir -p "$src"
printf 'one\n' > "$src/a"
printf 'two\0two' > "$src/b"
: > "$src/c"
a=queue/aliases
rsync -a "$src/" $a/ || fail "rsync -a into a queue: exit $?"
expect_eq "$(helper qlen aliases)" 3 "rsync -a: one item per file"
items=($a/*)
for i in 0 1 2; do
  f=$src/$(printf '%s\n' a b c | sed -n "$((i + 1))p")
  cmp -s "${items[$i]}" "$f" || fail "rsync -a: item $i is not $f's bytes"
done
install -m 644 "$src/a" $a/ || fail "install -m 644 into a queue: exit $?"
expect_eq "$(helper qlen aliases)" 4 "install: one item"
# Only the creator sees the name: this shell's builtins do, a child (ls,
# stat, cat) does not, and listings show items by id alone.
echo 1 > $a/job
[ -e $a/job ] || fail "the creator does not see its alias"
stat $a/job > /dev/null 2>&1 && fail "another process sees the alias"
ls $a | grep -qvx '[0-9]\{19\}' && fail "an alias is listed"
# Each > or >> from one shell pushes one more item, as before; the alias
# then names the newest.
echo 2 > $a/job
echo 3 >> $a/job
expect_eq "$(helper qlen aliases)" 7 "> > >> from one shell: three items"
read -r got < $a/job
expect_eq "$got" 3 "the alias reads the newest item"
expect_eq "$(cat $a/* | tail -n 3 | tr '\n' ,)" "1,2,3," "their bytes"
# rm of an alias deletes its item only; a consumer's take ends the alias.
python3 - $a <<'PY' || fail "an alias's process: rm, rename, a thread, a take"
import os, sys, threading
q = sys.argv[1]
def put(name, data):
    with open(os.path.join(q, name), "w") as f:
        f.write(data)
before = sorted(os.listdir(q))
put("x", "X")
put("y", "Y")
mid = sorted(os.listdir(q))
assert len(mid) == len(before) + 2, mid
os.rename(os.path.join(q, "y"), os.path.join(q, "z"))
assert not os.path.exists(os.path.join(q, "y")), "renamed alias still there"
assert sorted(os.listdir(q)) == mid, "a rename changed the queue"
seen = []
t = threading.Thread(target=lambda: seen.append(open(os.path.join(q, "z")).read()))
t.start(); t.join()
assert seen == ["Y"], seen
# Made by a thread that is not the leader: the process's all the same.
t = threading.Thread(target=put, args=("w", "W"))
t.start(); t.join()
assert open(os.path.join(q, "w")).read() == "W", "a thread's alias"
os.unlink(os.path.join(q, "w"))
os.unlink(os.path.join(q, "x"))
after = sorted(os.listdir(q))
assert after == [n for n in mid if n != mid[-2]], (mid, after)
assert not os.path.exists(os.path.join(q, "x"))
os.chmod(os.path.join(q, "z"), 0o644)
os.utime(os.path.join(q, "z"), (1, 1))
for n in after:  # take everything: the alias goes with its item
    with open(os.path.join(q, ".pop")) as f:
        f.read()
assert not os.path.exists(os.path.join(q, "z")), "an alias of a taken item"
PY
expect_eq "$(helper qlen aliases)" 0 "every item taken"
# The alias is its creator's: a new process given the creator's pid (the
# kernel's next pid set through ns_last_pid, as root) does not see it.
if [ -w /proc/sys/kernel/ns_last_pid ]; then
  bash -c 'echo gone > "$1"/reused; echo $$ > "$2"' _ $a "$work/creator"
  pid=$(cat "$work/creator")
  reused=
  for try in 1 2 3 4 5 6 7 8 9 10; do
    echo $((pid - 1)) > /proc/sys/kernel/ns_last_pid
    st=0
    bash -c '[ $$ = "$1" ] || exit 2; [ -e "$2"/reused ] && exit 1; exit 0' \
      _ "$pid" $a || st=$?
    [ $st = 1 ] && fail "a process given its exited creator's pid sees an alias"
    [ $st = 0 ] && { reused=1; break; }
  done
  [ -n "$reused" ] || echo "pid $pid not given again in 10 tries: not checked"
fi
# Aliases are bounded per creating process, not per mount: more than 64
# processes creating at once (100 rsyncs, each copying its own file) do not
# push each other's aliases out between the close and rsync's rename (they
# exited 23 before: 64 aliases per mount, shared), and each file is one
# item with its bytes.
many=$work/many
mkdir -p "$many"
for i in $(seq -w 0 99); do printf 'file %s\n%0*d' $i $((10#$i)) 0 > "$many/f$i"; done
b=queue/many
pids=()
for i in $(seq -w 0 99); do rsync -a "$many/f$i" $b/ & pids+=($!); done
bad=0
for p in "${pids[@]}"; do wait $p || bad=$((bad + 1)); done
expect_eq "$bad" 0 "100 concurrent rsyncs into a queue: those that failed"
expect_eq "$(helper qlen many)" 100 "100 concurrent rsyncs: one item per file"
expect_eq "$(for f in $b/*; do md5sum < "$f"; done | sort | md5sum)" \
  "$(for f in "$many"/*; do md5sum < "$f"; done | sort | md5sum)" \
  "100 concurrent rsyncs: the items' bytes"
# The same made certain: 100 processes each create and close a file, and
# only once all have closed does each stat and rename its own.
python3 - $b <<'PY' || fail "100 processes, each its alias after 99 others' creates"
import os, sys
q = sys.argv[1]
done_r, done_w = os.pipe()
go_r, go_w = os.pipe()
kids = []
for i in range(100):
    pid = os.fork()
    if pid == 0:
        os.close(done_r); os.close(go_w)
        with open(os.path.join(q, ".p%d" % i), "w") as f:
            f.write("p%d" % i)
        os.write(done_w, b"x")
        os.read(go_r, 1)  # EOF once every process has closed its file
        try:
            os.stat(os.path.join(q, ".p%d" % i))
            os.rename(os.path.join(q, ".p%d" % i), os.path.join(q, "p%d" % i))
            ok = open(os.path.join(q, "p%d" % i)).read() == "p%d" % i
        except OSError as e:
            print("process %d: %s" % (i, e), file=sys.stderr)
            ok = False
        os._exit(0 if ok else 1)
    kids.append(pid)
os.close(done_w); os.close(go_r)
got = 0
while got < 100:
    got += len(os.read(done_r, 100))
os.close(go_w)
bad = sum(os.waitpid(p, 0)[1] != 0 for p in kids)
assert bad == 0, "%d of 100 lost their alias" % bad
PY
expect_eq "$(helper qlen many)" 200 "100 more processes: one item each"
# A process keeps its 64 newest aliases: the oldest goes first.
python3 - $b <<'PY' || fail "a process's 64 newest aliases"
import os, sys
q = sys.argv[1]
for i in range(70):
    with open(os.path.join(q, "n%d" % i), "w") as f:
        f.write("n%d" % i)
have = [i for i in range(70) if os.path.exists(os.path.join(q, "n%d" % i))]
assert have == list(range(6, 70)), have
# its own listing shows ids alone, as everyone's does
odd = [n for n in os.listdir(q) if not (len(n) == 19 and n.isdigit())]
assert odd == [], odd
PY
# An exec keeps the process, and so its aliases; a fork does not.
bash -c 'echo e > "$1"/e; exec bash -c "[ -e \"\$1\"/e ]" _ "$1"' _ $b ||
  fail "an exec lost its process's alias"
bash -c 'echo f > "$1"/f; ( [ -e "$1"/f ] ) && exit 1; [ -e "$1"/f ]' _ $b ||
  fail "a fork's child sees its parent's alias, or the parent does not"
expect_eq "$(helper qlen many)" 272 "70 files from one process, e, f: 72 items"
ok "names of new items: rsync, install, aliases"

# Stopping the daemon with readers blocked on .wait: each READ fails with
# ENOTCONN, what any access gets once the daemon is gone (EINTR would make
# cat retry, into the unmount); the daemon exits 0 and says nothing.
"$STATEFS_FSOP" read $q/.wait "$work/open1" > "$work/wait1" &
w1=$!
bash -c 'exec 3< "$1" && : > "$2" && exec cat <&3' _ $q/.wait "$work/open2" \
  > /dev/null 2> "$work/wait2" &
w2=$!
fuse_blocked $w1 "$work/open1"
fuse_blocked $w2 "$work/open2"
cd /
signal_fs TERM
wait $w1
rc=0
wait $w2 || rc=$?
expect_eq "$(cat "$work/wait1")" ENOTCONN "a blocked .wait READ at SIGTERM"
expect_eq "$rc,$(cat "$work/wait2")" \
  "1,cat: -: Transport endpoint is not connected" "cat on .wait at SIGTERM"
mountpoint -q "$mnt" && fail "still mounted"
ok "SIGTERM with blocked .wait readers: ENOTCONN"
