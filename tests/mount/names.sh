#!/usr/bin/env bash
# names.sh - the name codec through the mount: keys written by another
# process as raw bytes show under their codec names and are reachable by
# them ('/', '%', control bytes, invalid UTF-8, binary, empty, reserved
# names, scopes named like the root's directories, decimal ids in the
# typed namespaces, keys too long for a file name, which mv keeps); a
# .drain writes control characters escaped; names made through the mount
# become the bytes they name; a name over 255 bytes is ENAMETOOLONG.
# Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

mount_fs
cd "$mnt"

helper put app ns 'a/b' slash
helper put app ns '50%' percent
helper put app ns x:6c696e650a newline      # "line\n"
helper put app ns x:626164ff invalid        # "bad\xff"
helper put app ns x: empty-key
helper put app ns x:9f03c1fe0011823ac4f56607889911aa binary
helper put app ns .drain not-special
helper put app ns 'café' utf8
helper put exec ns k scope-named-exec
expect_eq "$(ls app/ns | tr '\n' ' ')" \
  "%2Edrain %x %x9f03c1fe0011823ac4f56607889911aa 50%25 a%2Fb bad%FF café line%0A " \
  "names in the listing"
expect_eq "$(cat 'app/ns/a%2Fb')" slash "a/b"
expect_eq "$(cat 'app/ns/50%25')" percent "50%"
expect_eq "$(cat 'app/ns/line%0A')" newline "line\\n"
expect_eq "$(cat 'app/ns/bad%FF')" invalid "bad\\xff"
expect_eq "$(cat 'app/ns/%x')" empty-key "the empty key"
expect_eq "$(cat 'app/ns/%x9f03c1fe0011823ac4f56607889911aa')" binary "binary"
expect_eq "$(cat 'app/ns/%2Edrain')" not-special "a key named .drain"
expect_eq "$(cat app/ns/café)" utf8 "UTF-8 as is"
expect_eq "$(ls | tr '\n' ' ')" "%65xec app counter exec queue " "scope exec"
expect_eq "$(cat %65xec/ns/k)" scope-named-exec "reached as %65xec"
ok "bytes to names"

# A .drain's JSON writes DEL and the C1 controls (U+009B is CSI) as
# \u00XX, as statectl --json does: no control byte reaches a terminal.
helper put app c1 x:c29b324a7f csi
got=$(cat app/c1/.drain)
[[ $got == *'"name":"%C2%9B2J%7F","key":"\u009b2J\u007f"'* ]] || fail "drain line: $got"
[[ $got != *$'\x7f'* && $got != *$'\xc2\x9b'* ]] || fail "a control byte in a drain: $got"
expect_eq "$(jq -r .key <<<"$got" | od -An -tx1 | tr -d ' ')" c29b324a7f0a "the key's bytes"
ok "controls escaped in JSON"

# Non-canonical spellings are not aliases.
cat 'app/ns/a%2fb' 2>/dev/null && fail "lower-case escape found a key"
cat 'app/ns/%61%2Fb' 2>/dev/null && fail "needless escape found a key"
ok "one name per key"

# Names made through the mount are the bytes they name.
echo v > 'app/ns/new%2Fkey'
expect_eq "$(helper get app ns new/key)" v "a%2F creates a/"
mkdir '%71ueue'
mkdir '%71ueue/ns'
echo w > '%71ueue/ns/k'
expect_eq "$(helper get queue ns k)" w "a scope named queue"
mv 'app/ns/new%2Fkey' 'app/ns/renamed%0A'
expect_eq "$(helper get app ns x:72656e616d65640a)" v "mv to an escaped name"
ok "names to bytes"

# Typed namespaces: 8-byte ids in decimal, other keys escaped if they
# look like numbers.
helper worker exec1 1042 w1042
helper worker exec1 -3 wminus3
helper put exec1 worker 77 three-bytes
expect_eq "$(ls exec1/worker | sort | tr '\n' ' ')" "%377 -3 1042 " "worker ids"
expect_eq "$(cat exec1/worker/1042)" w1042 "id 1042"
expect_eq "$(cat exec1/worker/-3)" wminus3 "id -3"
expect_eq "$(cat exec1/worker/%377)" three-bytes "the key \"77\""
echo new > exec1/worker/5
expect_eq "$(helper get exec1 worker x:0000000000000005)" new "a decimal name makes an id"
ok "typed namespaces"

# A key too long for a file name: listed under a cut name with a hash,
# reachable, removable; two such keys with one prefix stay apart.
long=$(printf 'k%.0s' $(seq 400))
helper put app long "${long}A" first
helper put app long "${long}B" second
mapfile -t names < <(ls app/long)
expect_eq "${#names[@]}" 2 "two long keys listed"
for n in "${names[@]}"; do
  [ "${#n}" -le 255 ] || fail "name of ${#n} bytes"
  [[ $n == *%~* ]] || fail "no hash in $n"
done
got=$(for n in "${names[@]}"; do cat "app/long/$n"; echo; done | sort | tr '\n' ' ')
expect_eq "$got" "first second " "long keys reachable"
rm "app/long/${names[0]}"
expect_eq "$(ls app/long | wc -l)" 1 "rm of a long key"
# mv keeps a long name: in another namespace or scope it is the name of
# the same bytes (it was EINVAL, "cannot move to a subdirectory of itself").
kept=$(cat "app/long/${names[1]}")
mkdir app/long2
mv "app/long/${names[1]}" app/long2/
expect_eq "$(cat "app/long2/${names[1]}")" "$kept" "mv of a long key"
want=${long}A
[ "$kept" = first ] || want=${long}B
expect_eq "$(helper get app long2 "$want")" "$kept" "its bytes kept"
helper put app "${long}ns" k in-long-ns
lns=$(ls app | grep '%~')
mkdir other
mv "app/$lns" other/
expect_eq "$(cat "other/$lns/k")" in-long-ns "mv of a long namespace"
other_hash=${lns%?}0
[ "$other_hash" != "$lns" ] || other_hash=${lns%?}1
expect_op EINVAL rename app/long2 "app/$other_hash" # names nothing new
ok "long keys"

# A name over NAME_MAX (statfs's f_namemax, 255) is ENAMETOOLONG for every
# call that takes a name, as on a local filesystem; 255 bytes work. Each
# kind of directory: a namespace, the root, a scope, a queue, a log key.
expect_eq "$(stat -f -c %l .)" 255 "f_namemax"
n255=$(printf 'n%.0s' $(seq 255))
n256=${n255}x
mkdir -p app/nl exec/s/n/lk
echo v > app/nl/x
mkdir app/d
echo v > queue/q/new
for d in app/nl . app queue/q exec/s/n/lk; do
  expect_op ENAMETOOLONG write "$d/$n256" v
  expect_op ENAMETOOLONG read "$d/$n256"
  expect_op ENAMETOOLONG mkdir "$d/$n256"
  expect_op ENAMETOOLONG rmdir "$d/$n256"
  expect_op ENAMETOOLONG unlink "$d/$n256"
  expect_op ENAMETOOLONG rename "$d/$n256" "$d/y"
  expect_op ENAMETOOLONG stat "$d/$n256"
done
expect_op ENAMETOOLONG rename app/nl/x "app/nl/$n256"
expect_op ENAMETOOLONG rename app/d "app/$n256"
expect_eq "$(cat app/nl/x)" v "a refused rename changed nothing"
expect_eq "$(helper qlen q)" 1 "no queue item made by a long name"
expect_op OK write "app/nl/$n255" v255
expect_eq "$(cat "app/nl/$n255")" v255 "a 255-byte name"
expect_op OK rename "app/nl/$n255" app/nl/short
expect_op OK mkdir "app/$n255"
expect_op OK rmdir "app/$n255"
ok "names over 255 bytes: ENAMETOOLONG"

cd /
unmount_fs
