#!/usr/bin/env bash
# cli_kv.sh: statectl's key/value commands (get, put, del, scan,
# delete-range, drain, exec-clear, ls) in plain and --json output, with
# binary values and names in the mount's codec.
# Environment: see lib.sh. Exit: 0 pass, 1 fail.
. "$(dirname "$0")/lib.sh"
make_store

# put/get: argument, stdin, "-", empty value, binary value
sc put s n k hello
expect_exit 0 sc get s n k
expect_eq "$out" hello "get prints the value"
printf 'from stdin\n' | sc put s n k2
sc get s n k2 >"$T/v"
expect_eq "$(od -An -c "$T/v" | tr -s ' ')" " f r o m s t d i n \n" "stdin value byte for byte, trailing newline kept"
printf 'dash' | sc put s n k3 -
expect_eq "$(sc get s n k3)" dash "- reads stdin"
sc put s n empty ''
expect_exit 0 sc get s n empty
expect_eq "$out" "" "an empty value is a value"
head -c 256 /dev/zero | tr '\0' '\377' >"$T/ff"
printf '\000\001\002' >>"$T/ff"
sc put s n bin <"$T/ff"
sc get s n bin >"$T/ff2"
cmp "$T/ff" "$T/ff2" || fail "binary value changed"

# a value over the store's limit (64 MiB by default) exits 8, changes nothing
head -c $((64 * 1024 * 1024 + 1)) /dev/zero >"$T/huge"
expect_exit 8 sc put s n k - <"$T/huge"
expect_match "$err" "too large" "too-large sentence"
rm -f "$T/huge"
expect_eq "$(sc get s n k)" hello "a refused put changes nothing"
# ... and is refused once that many bytes are in: a runaway input (`yes |`,
# /dev/zero) costs the limit in memory, not all the machine has (it was
# read whole first: 100 MiB here, 512 MiB of buffer)
for cmd in "put s n k" "log append s n k" "queue push q"; do
	# shellcheck disable=SC2086 # the words of cmd
	got=$(head -c $((100 * 1024 * 1024)) /dev/zero |
		"$HELPER" maxrss "$STATECTL" --db "$DB" "${modeopts[@]}" --max-value 1M $cmd 2>"$T/.err") || true
	read -r status rss <<<"$got"
	expect_eq "$status" 8 "$cmd of 100 MiB at --max-value 1M ($(cat "$T/.err"))"
	expect_match "$(cat "$T/.err")" "on stdin is too large: more than the store's limit of 1048576 bytes; nothing was written$" "$cmd: the sentence"
	limit=48 # MiB: the program and 1 MiB; twice that under ASan
	[ "${STATEFS_TEST_ASAN:-0}" = 1 ] && limit=96
	[ "$rss" -lt $((limit * 1024)) ] || fail "$cmd of 100 MiB at --max-value 1M took $((rss / 1024)) MiB"
done
expect_eq "$(sc get s n k)" hello "a refused put changes nothing"

# --json get: text value, binary value in value_b64, an empty one
expect_exit 0 sc --json get s n k
jqe "$out" '.scope == "s" and .ns == "n" and .key == "k" and .value == "hello" and .size == 5'
expect_exit 0 sc get s n bin --json
jqe "$out" '.value == null and (.value_b64 | @base64d | length) == 259 and .size == 259'
expect_eq "$(printf '%s' "$out" | jq -r .value_b64 | base64 -d | cmp - "$T/ff" && echo same)" same "value_b64 decodes to the bytes"
expect_exit 0 sc --json get s n empty
jqe "$out" '.value == "" and .size == 0'
expect_exit 0 sc --json put s n k4 v4
jqe "$out" '.key == "k4" and .size == 2'

# missing key: exit 1 with a sentence, and a JSON error on stderr
expect_exit 1 sc get s n nope
expect_eq "$err" "statectl: no such key 'nope' in scope 's' namespace 'n'" "not-found sentence"
expect_eq "$out" "" "nothing on stdout"
expect_exit 1 sc --json get s n nope
jqe "$err" '.status == "not_found" and .exit == 1 and (.error | test("no such key"))'
expect_eq "$out" "" "JSON errors go to stderr"

# del
expect_exit 0 sc del s n k4
expect_eq "$out" "" "del is quiet"
expect_exit 1 sc del s n k4
expect_exit 0 sc --json del s n k3
jqe "$out" '.deleted == true and .key == "k3"'

# scan: bounds, reverse, limit, keys-only
for i in a b c d e; do sc put s r "$i" "v$i"; done
expect_exit 0 sc scan s r
expect_eq "$out" $'a\tva\nb\tvb\nc\tvc\nd\tvd\ne\tve' "scan lists key<TAB>value"
expect_exit 0 sc scan s r --start b --end d
expect_eq "$out" $'b\tvb\nc\tvc' "[start, end)"
expect_exit 0 sc scan s r --start b --end d --reverse
expect_eq "$out" $'c\tvc\nb\tvb' "reverse keeps the bounds"
expect_exit 0 sc scan s r --reverse --limit 2 --keys-only
expect_eq "$out" $'e\nd' "reverse, limit, keys-only"
# what --help says it prints: keys, and only --json adds the sizes (it
# promised sizes that the plain listing never printed)
expect_exit 0 "$STATECTL" help scan
ko=$(grep -e '--keys-only' <<<"$out")
expect_match "$ko" "print keys \(or ids\), not values \(--json: with their sizes\)" "--keys-only's help"
expect_exit 0 sc --json scan s r --limit 1 --keys-only
jqe "$out" '.entries == [{"key": "a", "size": 2}] or (.entries[0] | .key == "a" and .size == 2 and (has("value") | not))'
expect_exit 0 sc scan s r --end=c
expect_eq "$out" $'a\tva\nb\tvb' "--end=VALUE form"
expect_exit 0 sc --json scan s r --start d
jqe "$out" '.scope == "s" and .ns == "r" and (.entries | map(.key)) == ["d","e"] and .entries[0].value == "vd" and .entries[0].size == 2'
# mtime_ns: a write's second, in ns (docs/statectl.md, "JSON output")
jqe "$out" '.entries[0].mtime_ns > 1700000000000000000 and .entries[0].mtime_ns % 1000000000 == 0'
expect_exit 0 sc --json scan s r --keys-only --limit 1
jqe "$out" '.entries | length == 1 and .[0].key == "a" and .[0].size == 2 and (.[0] | has("value") | not)'
expect_exit 0 sc scan s nothing-here
expect_eq "$out" "" "an empty namespace scans empty"
# escaped values in plain listings
printf 'tab\there\nnl' | sc put s esc k
expect_exit 0 sc scan s esc
expect_eq "$out" 'k	tab\there\nnl' "plain scan escapes control bytes"

# delete-range prints the count; without a bound it needs --all
expect_exit 2 sc delete-range s r
expect_match "$err" "say --all" "delete-range without bounds refuses"
expect_exit 0 sc delete-range s r --start b --end d
expect_eq "$out" 2 "delete-range count"
expect_exit 0 sc --json delete-range s r --all
jqe "$out" '.count == 3 and .scope == "s" and .ns == "r"'
expect_exit 0 sc scan s r
expect_eq "$out" "" "range deleted"

# drain reads and removes
sc put s d x 1; sc put s d y 2
expect_exit 0 sc drain s d
expect_eq "$out" $'x\t1\ny\t2' "drain prints what it removed"
expect_exit 0 sc --json drain s d
jqe "$out" '.entries == []'
sc put s d z 3
expect_exit 0 sc --json drain s d
jqe "$out" '.entries | length == 1 and .[0].key == "z" and .[0].value == "3"'
# ... only once it printed them: an output that fails gives them back
sc put s d v 4; sc put s d w 5
expect_exit_into 9 /dev/full sc drain s d
expect_match "$err" "nothing was taken from namespace 'd' of scope 's'" "failed drain sentence"
expect_exit_into 9 pipe-gone sc --json drain s d
expect_exit 0 sc scan s d
expect_eq "$out" $'v\t4\nw\t5' "a failed drain keeps every entry"
expect_exit 0 sc drain s d
expect_eq "$out" $'v\t4\nw\t5' "drain after failed ones"
# an output larger than stdio's buffer that fails says why (the write
# fails inside the command, not at the final flush)
head -c 20000 /dev/zero | tr '\0' x | sc put s big v
expect_exit_into 9 /dev/full sc get s big v
expect_match "$err" "^statectl: cannot write the output: No space left on device$" "get to a full disk"
expect_exit_into 9 /dev/full sc --json scan s big
jqe "$err" '.exit == 9 and .error == "cannot write the output: No space left on device"'

# names in the codec: '/' is %2F, binary keys in hex, reserved names
sc put s n 'a%2Fb' slash
expect_exit 0 sc --json get s n 'a%2Fb'
jqe "$out" '.key == "a/b" and .value == "slash"'
expect_exit 0 sc scan s n --start a --end b --keys-only
expect_eq "$out" 'a%2Fb' "listings print names as the mount does"
expect_exit 2 sc put s n 'a/b' x
expect_match "$err" "not a valid key name" "a raw '/' is refused with a hint"
# the hint is the spelling of the bytes typed, when they hold no escape
# (it was about '/' and '%' for a newline, an empty name, a scope exec)
expect_match "$err" "^statectl: 'a/b' is not a valid key name: those bytes are written 'a%2Fb', as under the mount \(or give them as they are with --raw\)" "the spelling of a/b"
expect_exit 2 sc put s n $'line\nbreak' x
expect_match "$err" "^statectl: 'line\\\\nbreak' is not a valid key name: those bytes are written 'line%0Abreak'" "the spelling of a newline"
expect_exit 2 sc put '' n k x
expect_match "$err" "^statectl: '' is not a valid scope name: those bytes are written '%x'" "the spelling of the empty name"
expect_exit 2 sc put exec n k x
expect_match "$err" "those bytes are written '%65xec'" "the spelling of scope exec"
expect_exit 0 sc put s n 'line%0Abreak' nl
expect_exit 0 sc --raw get s n $'line\nbreak'
expect_eq "$out" nl "the spelling given pastes back"
expect_exit 2 sc get s n '50%'
sc put s n '%x00ff01' three-bytes
expect_exit 0 sc --json scan s n --start '%00' --end '%01'
jqe "$out" '.entries | length == 1 and .[0].key_b64 == "AP8B" and .[0].value == "three-bytes"'
expect_exit 0 sc scan s n --start '%00' --end '%01' --keys-only
expect_eq "$out" '%x00ff01' "binary keys list in hex"
expect_exit 2 sc get s n '%x616263'
expect_match "$err" "not a valid key name" "a non-canonical spelling is refused"
sc put '%65xec' n k in-exec-scope
expect_exit 0 sc --json get '%65xec' n k
jqe "$out" '.scope == "exec"'
expect_exit 0 sc ls
expect_match "$out" '%65xec' "ls escapes a scope named exec"
# typed namespaces: 8-byte ids as decimal
sc put s worker 42 w42
expect_exit 0 sc --json get s worker 42
jqe "$out" '(.key | explode) == [0,0,0,0,0,0,0,42] and .value == "w42"'
expect_exit 0 sc scan s worker --keys-only
expect_eq "$out" 42 "ids list as decimal in typed namespaces"
# a long name (over 255 bytes) lists with a hash and pastes back
long=$(printf 'L%.0s' {1..300})
expect_exit 2 sc put s n "$long" long-value
expect_match "$err" "is 300 bytes, and a name has at most 255 .*--raw" "a long name's hint is its length"
sc --raw put s n "$long" long-value
longname=$(sc scan s n --start L --end M --keys-only)
expect_match "$longname" '%~[0-9a-f]{32}$' "a long key lists with a hash"
expect_exit 0 sc get s n "$longname"
expect_eq "$out" long-value "the hashed name finds the key"
expect_exit 1 sc get s n "${longname%????}0000"
expect_match "$err" "no key is named" "a long name that names nothing"
sc --raw queue push "$long" item >/dev/null
longq=$(sc ls --family queue)
expect_exit 0 sc queue len "$longq"
expect_eq "$out" 1 "a long queue name finds the queue"
expect_exit 1 sc queue len "${longq%????}0000"
expect_match "$err" "no queue is named" "a long queue name that names nothing"
sc queue clear "$longq" >/dev/null
# --json and export write DEL and the C1 controls (U+009B is CSI) as
# \u00XX: no control byte reaches a terminal, and the bytes are the same
sc --raw put c1 n $'\xc2\x9b2J\x7f' csi
expect_exit 0 sc --json scan c1 n
jqe "$out" '.entries[0].key == "\u009b2J\u007f"'
[[ $out != *$'\x7f'* && $out != *$'\xc2\x9b'* ]] || fail "--json wrote a control byte: $out"
expect_exit 0 sc --json ls c1 n
[[ $out == *'"\u009b2J\u007f"'* ]] || fail "--json ls: $out"
expect_exit 0 sc export
[[ $out == *'"key":"\u009b2J\u007f"'* && $out != *$'\x7f'* ]] || fail "export: $out"
# --raw: names as bytes, '/' and '%' as themselves
sc --raw put s n 'x/y%z' raw
expect_eq "$(sc get s n 'x%2Fy%25z')" raw "--raw names are the bytes given"
expect_exit 0 sc --raw scan s n --start x/ --end x0 --keys-only
expect_eq "$out" 'x/y%z' "--raw listings print the bytes"
# a --raw name too long to write is named by its start and length, and
# the sentence keeps its end (the scope, the namespace, why)
expect_exit 8 sc --raw put s n "$(printf 'z%.0s' {1..70000})" v
expect_match "$err" "^statectl: cannot write key 'z{40}\.\.\.' \(70000 bytes\) in scope 's' namespace 'n': too large" "a --raw name of 70000 bytes"

# ls: scopes, namespaces, keys; --family
sc counter add cs cn c1 >/dev/null
sc log append ls ln lk v >/dev/null
sc queue push lq item >/dev/null
expect_exit 0 sc ls s
expect_match "$out" $'(^|\n)n\n' "ls SCOPE lists namespaces"
sc put s lsns key1 v
expect_exit 0 sc ls s lsns
expect_eq "$out" key1 "ls SCOPE NS lists keys"
expect_exit 0 sc ls --family counter
expect_eq "$out" cs "counter scopes"
expect_exit 0 sc ls --family counter cs cn
expect_eq "$out" c1 "counter keys"
expect_exit 0 sc ls --family log ls ln
expect_eq "$out" lk "log keys"
expect_exit 0 sc ls --family queue
expect_eq "$out" lq "queue names"
expect_exit 0 sc --json ls --family queue lq
jqe "$out" '.entries | length == 1 and (.[0].id | type) == "number" and .[0].size == 4'
expect_exit 0 sc --json ls s
jqe "$out" '[.entries[].name] | index("n") != null'
expect_exit 2 sc ls --family nope
expect_exit 2 sc ls --family queue q extra

# exec-clear counts key/value, log and counter rows of a scope, not queues
sc put ex a 1; sc put ex b 2
sc counter add ex c n >/dev/null
sc log append ex l k v >/dev/null
sc queue push ex item >/dev/null
expect_exit 0 sc exec-clear ex
expect_eq "$out" 4 "exec-clear count"
expect_exit 0 sc --json exec-clear ex
jqe "$out" '.count == 0 and .scope == "ex"'
expect_eq "$(sc queue len ex)" 1 "queues are untouched"
# a long scope that holds log entries and counters only, by its listed
# name (it was "no scope is named": looked for among key/value scopes)
sc --raw log append "${long}ex" l k v >/dev/null
sc --raw counter add "${long}ex" c n >/dev/null
longex=$(sc ls --family log | grep '%~')
expect_exit 0 sc exec-clear "$longex"
expect_eq "$out" 2 "exec-clear of a long scope without values"

echo "cli_kv ($mode): ok"
