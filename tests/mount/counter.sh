#!/usr/bin/env bash
# counter.sh - /counter/<scope>/<ns>/<key>: reading gives the decimal
# value; "N" and "=N" set, "+N" and "-N" add, one per line; anything else,
# and any overflow, fails with EINVAL at the write and changes nothing; touch
# makes 0; rm deletes; mv renames. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs
cd "$mnt"
c=counter/app/stats

mkdir -p $c
echo 10 > $c/done
expect_eq "$(cat $c/done)" 10 "set"
echo +5 > $c/done
echo -3 > $c/done
expect_eq "$(cat $c/done)" 12 "add"
echo =-7 > $c/done
expect_eq "$(cat $c/done)" -7 "=-7 sets a negative value"
printf ' =42 \n' > $c/done
expect_eq "$(helper cget app stats done)" 42 "in the store"
expect_eq "$(stat -c %s $c/done)" 3 "size of \"42\\n\""
ok "set and add"

# Tokens one per line, as a local file would hold every line: one open
# applies what they come to (before, the second line was EINVAL).
{ echo +1; echo +2; } > $c/done
expect_eq "$(cat $c/done)" 45 "two adds in one open"
printf '=10\n+5\n\n -1 \n' > $c/done
expect_eq "$(cat $c/done)" 14 "a set, then adds and a blank line"
exec 3> $c/done
echo +1 >&3
echo + >&3 2>/dev/null && fail "a sign alone on its line accepted"
echo +2 >&3
exec 3>&-
expect_eq "$(cat $c/done)" 17 "a refused line does not spoil the others"
expect_op EINVAL write $c/done $'+9223372036854775807\n+1'
echo =42 > $c/done
ok "several tokens"

# Bad writes: EINVAL at the write, nothing changes.
for bad in abc 1.5 + 12a '1 2' '++1' 9223372036854775808 -9223372036854775809x; do
  expect_op EINVAL write $c/done "$bad"
  expect_eq "$(cat $c/done)" 42 "after writing '$bad'"
done
# One open file, a refused token, then a good one: the good one counts.
exec 3> $c/done
echo nonsense >&3 2>/dev/null && fail "nonsense accepted"
echo +8 >&3
exec 3>&-
expect_eq "$(cat $c/done)" 50 "a refused token does not spoil the next"
expect_op EINVAL write $c/brand-new abc
[ ! -e $c/brand-new ] || fail "a refused first write made a counter"
echo =9223372036854775807 > $c/done
expect_op EINVAL write $c/done +1
expect_eq "$(cat $c/done)" 9223372036854775807 "add overflow changes nothing"
echo =-9223372036854775808 > $c/done
expect_op EINVAL write $c/done -1
expect_eq "$(cat $c/done)" -9223372036854775808 "subtract overflow"
ok "EINVAL"

# touch creates a counter at 0; : > and truncate -s 0 change nothing.
touch $c/new
expect_eq "$(cat $c/new)" 0 "touch makes 0"
echo 5 > $c/new
: > $c/new
truncate -s 0 $c/new
expect_eq "$(cat $c/new)" 5 "> and truncate -s 0 leave it"
expect_op EINVAL truncate $c/new 3
ok "touch, truncate"

# Counters and values with the same name are independent.
mkdir -p app/stats
echo text > app/stats/done
expect_eq "$(cat $c/done)" -9223372036854775808 "the counter"
expect_eq "$(cat app/stats/done)" text "the value"
ok "independent of values"

# rm, mv (one rename, replacing, keeping the time; it was EXDEV, so mv
# copied and removed, and sed -i and os.replace failed), listing.
t0=$(stat -c %Y $c/new)
mv $c/new $c/moved
expect_eq "$(cat $c/moved)" 5 "mv moves the value"
[ ! -e $c/new ] || fail "mv removed the source"
expect_eq "$(stat -c %Y $c/moved)" "$t0" "mv keeps the counter's time"
mkdir -p counter/other/elsewhere
mv $c/moved counter/other/elsewhere/x
expect_eq "$(cat counter/other/elsewhere/x)" 5 "mv to another scope and namespace"
echo 9 > $c/moved
mv counter/other/elsewhere/x $c/moved
expect_eq "$(cat $c/moved)" 5 "mv replaces the target"
sed -i s/5/7/ $c/moved
expect_eq "$(cat $c/moved)" 7 "sed -i on a counter"
python3 - "$c/moved" <<'PY' || fail "os.replace over a counter"
import os, sys, tempfile
path = sys.argv[1]
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
os.write(fd, b"8\n")
os.close(fd)
os.replace(tmp, path)
PY
expect_eq "$(cat $c/moved)" 8 "os.replace on a counter"
expect_eq "$(ls $c | tr '\n' ,)" "done,moved," "no temporary counter left"
echo 3 > $c/other
expect_op OK exchange $c/moved $c/other
expect_eq "$(cat $c/moved),$(cat $c/other)" 3,8 "RENAME_EXCHANGE of two counters"
expect_eq "$(helper cget app stats other)" 8 "exchanged in the store"
rm $c/other
rm -r counter/other
rm $c/moved
expect_eq "$(ls $c)" done "rm"
helper cset app stats ext 7
expect_eq "$(ls $c | tr '\n' ,)" "done,ext," "another process's counter is listed"
ok "rm, mv, list"

# rm -r of a counter scope.
mkdir -p counter/gone/a counter/gone/b
echo 1 > counter/gone/a/x
echo 2 > counter/gone/b/y
rm -r counter/gone
[ ! -e counter/gone ] || fail "rm -r of a counter scope"
expect_eq "$(helper cget gone a x || echo absent)" absent "the counters are gone"
ok "rm -r"

cd /
unmount_fs
