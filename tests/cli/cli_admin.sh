#!/usr/bin/env bash
# cli_admin.sh: the store commands (init, keygen, info, verify, rekey,
# checkpoint, restore), help and usage, the store/key rules (--db,
# STATEFS_DB, STATEFS_KEY, STATEFS_KEY_FILE, the default store), progress
# bars, and the error exits: missing key, wrong key, a key file that is
# not a key, unknown command, bad argument, corrupt file.
# Environment: see lib.sh. Exit: 0 pass, 1 fail.
. "$(dirname "$0")/lib.sh"

# --- help, version, usage
expect_exit 0 "$STATECTL" --help
expect_match "$out" "usage: statectl" "help"
expect_match "$out" "delete-range" "help lists commands"
expect_exit 0 "$STATECTL" help --help
expect_match "$out" "usage: statectl" "help --help is the help"
expect_exit 0 "$STATECTL" help scan
expect_match "$out" "--start KEY" "help COMMAND lists its options"
expect_exit 0 "$STATECTL" queue --help
expect_match "$out" "push" "family help"
expect_exit 0 "$STATECTL" scan --help
expect_match "$out" "--reverse" "COMMAND --help"
expect_exit 0 "$STATECTL" --version
expect_match "$out" '^statectl [0-9]+\.[0-9]+\.[0-9]+$' "version"
# help to a full disk fails, and says so
# (one sentence: a command's --help said it twice, the second time as
# "Input/output error")
for h in help --help --version "help scan" "scan --help" "queue push --help" "queue --help"; do
	# shellcheck disable=SC2086 # the words of h
	expect_exit_into 9 /dev/full "$STATECTL" $h
	expect_match "$err" "^statectl: cannot write the output: No space left on device$" "$h to a full disk"
done
expect_exit_into 9 /dev/full "$STATECTL" --json scan --help
jqe "$err" '.error == "cannot write the output: No space left on device" and .exit == 9'
# a command that made its file says so when its output fails: an init
# run again on exit 9 found the store it had made (exit 6)
expect_exit_into 9 /dev/full "$STATECTL" --db "$T/full.db" --key-file "$T/full.key" init
expect_match "$err" "^statectl: cannot write the output: No space left on device \(the init was done: only what it prints is lost\)$" "init to a full disk"
expect_exit_into 9 /dev/full "$STATECTL" --db "$T/full.db" --key-file "$T/full.key" checkpoint "$T/full.ck"
expect_match "$err" "\(the checkpoint was done: only what it prints is lost\)$" "checkpoint to a full disk"
[ -s "$T/full.ck" ] || fail "the checkpoint was not made"
expect_exit 0 "$STATECTL" --db "$T/full.db" --key-file "$T/full.key" info
rm -f "$T"/full.*
# a store path longer than SQLite opens (512 bytes) says so: it was "I/O
# error (PATH: unable to open database file (sqlite 14))"
if [ -z "$pg" ]; then
	longdb=$T/$(printf 'd%.0s' {1..200})/$(printf 'e%.0s' {1..200})/$(printf 'f%.0s' {1..200})/x.db
	expect_exit 9 "$STATECTL" --db "$longdb" --plaintext init
	expect_match "$err" "the store's path is ${#longdb} bytes long, and SQLite opens paths shorter than 512 bytes: give the store a shorter one" "a store path too long"
	# A creation that fails leaves the file system as it found it: the
	# directories made for the store, and for a new key file, go again,
	# deepest first; one that was there stays (they stayed, empty)
	[ ! -e "${longdb%%/eee*}" ] || fail "a failed init left the store's directories"
	mkdir "$T/there"
	expect_exit 9 "$STATECTL" --db "$T/there/${longdb#"$T/"}" --key-file "$T/kdir/a/k" init
	[ ! -e "$T/kdir" ] || fail "a failed init left its key file's directories"
	[ -d "$T/there" ] && [ -z "$(ls -A "$T/there")" ] ||
		fail "a failed init removed a directory it did not make, or left what it made"
	rmdir "$T/there"
fi
expect_exit 2 "$STATECTL"
expect_exit 2 "$STATECTL" frobnicate
expect_eq "$err" $'statectl: unknown command \'frobnicate\'\nsee statectl --help' "unknown command"
expect_exit 2 "$STATECTL" --json frobnicate
jqe "$err" '.status == "usage" and .exit == 2'
expect_exit 2 "$STATECTL" get s n
expect_match "$err" "'get' needs SCOPE NS KEY" "missing argument"
expect_match "$err" "see statectl --help" "usage errors point to help"
expect_exit 2 "$STATECTL" get s n k extra
expect_match "$err" "too many arguments" "extra argument"
expect_exit 2 "$STATECTL" get --limit 3 s n k
expect_match "$err" "'get' does not take --limit" "option of another command"
expect_exit 2 "$STATECTL" --bogus get s n k
expect_exit 2 "$STATECTL" scan s n --limit
expect_match "$err" "--limit needs N" "option without its value"
expect_exit 2 "$STATECTL" scan s n --limit=-1
expect_exit 2 "$STATECTL" --json=yes info
expect_exit 2 "$STATECTL" --plaintext --key-file x info
# --db "$DB" with DB unset: a usage error, never the default store
expect_exit 2 "$STATECTL" --db "" "${modeopts[@]}" put s n k v
expect_match "$err" "--db: the store's name is empty" "--db ''"
expect_exit 2 "$STATECTL" --db= "${modeopts[@]}" info
[ ! -e "$XDG_STATE_HOME/statefs/state.db" ] || fail "--db '' made the default store"
# and --key-file "" (--new-key-file ""): it was exit 3 "no key file at
# (...)", and init's exit 8 "sfs_key_write_file: NULL argument"
expect_exit 2 "$STATECTL" --db "$T/nokey.db" --key-file "" init
expect_match "$err" "^statectl: --key-file: the key file's name is empty; leave --key-file out" "init --key-file ''"
[ ! -e "$T/nokey.db" ] || fail "init --key-file '' made a store"
expect_exit 2 "$STATECTL" --db "$DB" --key-file= info
expect_match "$err" "^statectl: --key-file: the key file's name is empty" "--key-file="
expect_exit 2 "$STATECTL" --db "$DB" "${modeopts[@]}" rekey --new-key-file ""
expect_match "$err" "^statectl: --new-key-file: the key file's name is empty" "--new-key-file ''"
# so is an empty FILE or PATH ("$F" with F unset): it exited 1, 8 or 9
# with sentences as "sfs_key_write_file: NULL argument"
for cmd in export import checkpoint restore keygen metrics; do
	expect_exit 2 "$STATECTL" "${modeopts[@]}" "$cmd" ""
	expect_match "$err" "^statectl: '$cmd': the file's name is empty" "$cmd ''"
done
expect_exit 0 "$STATECTL" --list-commands
expect_match "$out" $'(^|\n)queue\n' "--list-commands for completion"
expect_exit 0 "$STATECTL" --list-options queue pop
expect_match "$out" "--json" "--list-options"
# statectl(1) documents every global option (--raw was missing)
man1=$(<"$(dirname "$0")/../../docs/man/statectl.1")
for o in $("$STATECTL" --list-options); do
	[[ $man1 == *"${o//-/\\-}"* ]] || fail "statectl(1) does not document $o"
done

# --- no store yet
expect_exit 5 sc info
expect_match "$err" "no store at $DB \\(create one with 'statectl init'\\)" "missing store"
[ ! -e "$DB" ] || fail "a read must not create a store"

# A FIFO is no store, and is never opened to wait for a writer: every
# command says so at once, exit 5 (timeout: a hang fails as 124).
mkfifo "$T/fifo.db"
for cmd in "get s n k" "put s n k v" info verify "checkpoint $T/fifo-ck.db" \
	"queue gc"; do
	# shellcheck disable=SC2086 # the command's words
	expect_exit 5 timeout 20 "$STATECTL" --db "$T/fifo.db" "${modeopts[@]}" $cmd
	expect_match "$err" "fifo.db is not a regular file" "a FIFO as the store: $cmd"
done
# with no key given: the engine looks at the file to say why
expect_exit 5 timeout 20 "$STATECTL" --db "$T/fifo.db" info
expect_match "$err" "fifo.db is not a regular file" "a FIFO, no key"
rm -f "$T/fifo.db"
# nor is a directory, and init says that, not that another process made
# a store there meanwhile (its size is not 0, which was taken for that)
mkdir "$T/dir.db"
expect_exit 5 "$STATECTL" --db "$T/dir.db" "${modeopts[@]}" info
expect_match "$err" "dir.db is not a regular file" "a directory as the store"
expect_exit 5 "$STATECTL" --db "$T/dir.db" --key-file "$T/dir.key" init
expect_match "$err" "dir.db is not a regular file" "init of a directory"
[ ! -e "$T/dir.key" ] || fail "init of a directory left its key file"
expect_exit 5 "$STATECTL" --db "$T/dir.db" --plaintext init
expect_match "$err" "dir.db is not a regular file" "init of a directory, plaintext"
rmdir "$T/dir.db"

# --- init
# An empty file (touch, a first run that died) is no store: the reads say
# so, and init makes the store in it, private.
(umask 022; : > "$DB")
expect_exit 5 sc info
expect_match "$err" "no store at $DB \\(create one with 'statectl init'\\)" "an empty file"
expect_exit 0 sc init
expect_eq "$(stat -c %a "$DB")" 600 "a store made in an empty file is private"
rm -f "$DB" "$DB"-wal "$DB"-shm "$DB"-reserve "$KEY"
expect_exit 0 sc init
if [ "$mode" = encrypted ]; then
	expect_match "$out" "key is in $KEY" "init says where the key is"
	[ "$(stat -c %a "$KEY")" = 600 ] || fail "key file mode"
else
	expect_match "$out" "plaintext store" "plaintext init"
fi
expect_exit 6 sc init
expect_match "$err" "already exists" "init never overwrites a store"
# Any write makes a store in an empty file, not only init: private too,
# before the value is in it.
(umask 022; : > "$T/touched.db")
expect_exit 0 "$STATECTL" --db "$T/touched.db" "${modeopts[@]}" put s n k secret
expect_eq "$(stat -c %a "$T/touched.db")" 600 \
	"a store a put made in an empty file is private"
if [ "$mode" = encrypted ]; then
	expect_exit 6 "$STATECTL" --db "$T/other.db" --key-file "$KEY" init
	expect_match "$err" "a key file already exists" "init never overwrites a key"
	[ ! -e "$T/other.db" ] || fail "no store without its new key"
fi
jopts=(--plaintext)
[ "$mode" = encrypted ] && jopts=(--key-file "$T/jkey")
expect_exit 0 "$STATECTL" --json --db "$T/j.db" "${jopts[@]}" init
jqe "$out" ".path == \"$T/j.db\" and .encrypted == $([ "$mode" = plain ] && echo false || echo true)"
# Two inits of one store at once (each with a key file of its own): one
# makes it, the other says it exists (6), and the store is the winner's,
# whatever the schedule. The loser took the file the winner had just made
# (empty) for no store: it said "created" too (plaintext), or failed with
# a wrong key (4) and removed the winner's store as its own.
# (the sanitizer pass, where every statectl pays its start and leak
# check, runs fewer rounds here and fewer writes under the rekeys below;
# the main build runs them all)
races=4 rkadds=20
[ "${STATEFS_TEST_ASAN:-0}" = 1 ] && races=2 rkadds=8
for r in $(seq "$races"); do
	ropts=(--plaintext) ropts2=(--plaintext)
	[ "$mode" = encrypted ] && ropts=(--key-file "$T/race$r.a") ropts2=(--key-file "$T/race$r.b")
	"$STATECTL" --db "$T/race$r.db" "${ropts[@]}" init >/dev/null 2>"$T/race.a.err" &
	ra=$!
	rb=0
	"$STATECTL" --db "$T/race$r.db" "${ropts2[@]}" init >/dev/null 2>"$T/race.b.err" || rb=$?
	wait "$ra" && ra=0 || ra=$?
	win=("${ropts[@]}") lose=${ropts2[1]:-}
	if [ "$ra.$rb" = 6.0 ]; then
		win=("${ropts2[@]}") lose=${ropts[1]:-}
	elif [ "$ra.$rb" != 0.6 ]; then
		cat "$T/race.a.err" "$T/race.b.err" >&2
		fail "two inits at once exit $ra and $rb, not 0 and 6"
	fi
	expect_match "$(<"$T/race.a.err")$(<"$T/race.b.err")" "exists" "the loser of two inits: exists"
	expect_exit 0 "$STATECTL" --db "$T/race$r.db" "${win[@]}" verify
	[ -z "$lose" ] || [ ! -e "$lose" ] || fail "the loser of two inits left its key file"
done

# the default store and key file (XDG dirs in the scratch home)
expect_exit 0 "$STATECTL" init
expect_match "$out" "$XDG_STATE_HOME/statefs/state.db" "default store"
[ -f "$XDG_CONFIG_HOME/statefs/key" ] || fail "default key file"
"$STATECTL" put s n k default-store
expect_eq "$("$STATECTL" get s n k)" default-store "default store and key"
# every file beside the store is named in statectl(1)'s FILES (the
# -reserve was not), so a user who removes a store removes all of it
man_files=$(sed -n '/^\.SH FILES/,/^\.SH EXAMPLES/p' "$(dirname "$0")/../../docs/man/statectl.1" | tr -d '\\')
for f in "$XDG_STATE_HOME/statefs/state.db"?*; do
	[ -e "$f" ] || continue
	grep -qF -- "${f##*/state.db}" <<<"$man_files" || fail "statectl(1) FILES does not name ${f##*/}"
done
expect_eq "$(STATEFS_DB=$DB "$STATECTL" "${modeopts[@]}" queue len none)" 0 "STATEFS_DB"

# --- without libpq (a machine without PostgreSQL's client library), which
# libstatefs loads only for a PostgreSQL store (core/pg/pq.c): a
# libpq.so.5 that is no library, first on the loader's path, stands for
# it. A store in a file works as ever, whatever its name: a relative path
# named a=b.db, whose first word is no libpq keyword, was taken for a
# connection string there and refused for want of libpq (exit 8), though
# with libpq it is a file. A connection string says what is missing.
mkdir "$T/nolibpq"
: >"$T/nolibpq/libpq.so.5"
(
	cd "$T"
	export LD_LIBRARY_PATH=$T/nolibpq${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	abopts=("${modeopts[@]}")
	[ "$mode" = plain ] || abopts=(--key-file "$T/ab.key")
	expect_exit 0 "$STATECTL" --db a=b.db "${abopts[@]}" init
	expect_exit 0 "$STATECTL" --db a=b.db "${abopts[@]}" put s n k v
	[ -f "$T/a=b.db" ] || fail "without libpq, a=b.db is no file"
	expect_exit 0 "$STATECTL" --db a=b.db "${abopts[@]}" get s n k
	expect_eq "$out" v "without libpq, a store in a file named a=b.db"
	for db in 'host=/nonexistent dbname=x' 'schema=x' \
		postgresql:///x postgres://h/x; do
		expect_exit 8 "$STATECTL" --db "$db" "${modeopts[@]}" info
		expect_match "$err" "PostgreSQL stores need libpq, and libpq.so.5 could not be loaded: $T/nolibpq/libpq.so.5: file too short \\(install PostgreSQL's client library\\)" \
			"without libpq: $db"
	done
	[ ! -e "$T/host=/nonexistent dbname=x" ] && [ ! -e "$T/schema=x" ] ||
		fail "without libpq, a connection string made a file"
)
# A library by that name that lacks libpq's functions (an old libpq, before
# the pipeline mode of PostgreSQL 14) is not "install the client library"
sodium=$(ldd "$STATECTL" | awk '/libsodium/ { print $3 }')
[ -f "$sodium" ] || fail "no libsodium in ldd $STATECTL"
cp "$sodium" "$T/nolibpq/libpq.so.5"
(
	export LD_LIBRARY_PATH=$T/nolibpq${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	expect_exit 8 "$STATECTL" --db postgres://h/x "${modeopts[@]}" info
	expect_match "$err" "libpq.so.5 could not be loaded: .*undefined symbol: PQ[a-zA-Z]* \\(statefs needs the libpq of PostgreSQL 14 or later\\)" \
		"a libpq without its functions"
)

# A process that forks while another of its threads loads libpq (its first
# PostgreSQL open): the child's open of a PostgreSQL store ends with an
# answer, never in the dynamic loader's half-done state (its dlopen there
# died of SIGSEGV or "Inconsistency detected by ld.so", or failed on
# "undefined symbol: GSS_C_NT_HOSTBASED_SERVICE"). The forks land at
# different moments of the load; whatever the moment, the child either
# loaded libpq (and found no server) or says why it cannot. (Not under
# the sanitizers, whose allocator is not fork-safe: docs/postgres.md.)
if [ "$STATEFS_TEST_ASAN" != 1 ]; then
	for us in $(seq 0 100 4000); do
		expect_exit 0 "$HELPER" forkopen 'host=/nonexistent dbname=x' "$us"
		expect_match "$out" "^child (9 cannot connect to dbname=x host=/nonexistent|20 PostgreSQL stores need libpq, and libpq.so.5 could not be loaded: this process was forked from process [0-9]+ while another of its threads was loading it)" \
			"a child forked while libpq was loading (fork after ${us} us)"
	done
fi

# --- statectl(1)'s first EXAMPLES (up to "Move state"), as a user copies
# them, on a fresh default store: each command prints what the page
# shows under it (where it shows something)
(
	export HOME=$T/manex XDG_STATE_HOME=$T/manex/state XDG_CONFIG_HOME=$T/manex/config
	unset STATEFS_DB STATEFS_KEY STATEFS_KEY_FILE
	mkdir -p "$HOME" && cd "$HOME"
	statectl() { "$STATECTL" "$@"; }
	cmd= want= n=0
	check() {
		[ -n "$cmd" ] || return 0
		got=$(eval "$cmd" 2>/dev/null) || true
		n=$((n + 1))
		[ -z "$want" ] || expect_eq "$got" "${want%$'\n'}" "statectl(1) EXAMPLES: $cmd"
	}
	while IFS= read -r line; do
		case $line in
		'$ '*) check; cmd=${line#\$ } want= ;;
		*) want+=$line$'\n' ;;
		esac
	done < <(sed -n '/^\.SH EXAMPLES/,/^Move state/{/^\.EX$/,/^\.EE$/p}' "$(dirname "$0")/../../docs/man/statectl.1" |
		grep -v '^\.E[XE]$' | sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g")
	check
	[ "$n" -ge 8 ] || fail "statectl(1) EXAMPLES: $n commands read"
) || fail "statectl(1)'s EXAMPLES do not print what they show"

# --- info
sc put s n k v
sc counter add s n c >/dev/null
sc log append s n k v >/dev/null
sc queue push q a b >/dev/null
expect_exit 0 sc info
expect_match "$out" "path: +$DB" "info path"
expect_match "$out" "queue items: +2 pending" "info rows"
# the backend's facts in parentheses, as a list ('( page_size 4096, ...' before)
expect_match "$out" $'\nsize: +[0-9]+ bytes \\(page_size [0-9]+, page_count [0-9]+, file_size [0-9]+, wal_size [0-9]+\\)\n' "info size"
expect_exit 0 sc --json info
jqe "$out" ".path == \"$DB\" and .rows.kv == 1 and .rows.counter == 1 and .rows.log == 1 and .rows.queue == 2 and .page_size > 0 and .file_size > 0"
if [ "$mode" = encrypted ]; then
	jqe "$out" '.encrypted == true and .cipher != "none"'
else
	jqe "$out" '.encrypted == false and .cipher == "none"'
fi

# --- verify
expect_exit 0 sc verify
expect_match "$out" "ok" "verify"
# what verify did: a plaintext store's pages are read, not authenticated
how=authenticated; [ "$mode" = plain ] && how=read
expect_match "$out" "^$DB: ok \([0-9]+ pages $how, integrity check passed\)$" "verify's sentence"
expect_exit 0 sc --json verify
jqe "$out" '.ok == true and .pages > 0'
# a store's path is bytes: a newline or an escape sequence in it is
# written as listings write them, not sent to the terminal (it split
# verify's line, info's and top's first line and the messages of init,
# checkpoint, restore, export and import, and coloured the terminal)
odd=$T/$'x\ny\e[31m.db'
shown="$T/x\\ny\\x1b[31m.db"
expect_exit 0 "$STATECTL" --db "$odd" --plaintext init
expect_eq "$out" "created the plaintext store $shown" "init escapes the path"
expect_exit 0 "$STATECTL" --db "$odd" --plaintext checkpoint "$odd.ck"
expect_eq "$out" "wrote a checkpoint of $shown to $shown.ck" "checkpoint escapes the paths"
expect_exit 0 "$STATECTL" --db "$odd" --plaintext restore "$odd.ck"
expect_eq "$out" "restored $shown from the checkpoint $shown.ck" "restore escapes the paths"
expect_exit 0 "$STATECTL" --db "$odd" --plaintext export "$odd.jsonl"
expect_eq "$out" "exported 0 rows to $shown.jsonl" "export escapes the path"
expect_exit 0 "$STATECTL" --db "$odd" --plaintext import "$odd.jsonl"
expect_eq "$out" "imported 0 rows into $shown" "import escapes the path"
expect_exit 0 "$STATECTL" --db "$odd" --plaintext verify
expect_eq "${out%: ok (*}" "$shown" "verify escapes the path"
expect_match "$out" "^[^"$'\n'"]*: ok \([0-9]+ pages read, integrity check passed\)$" "verify's one line"
expect_exit 0 "$STATECTL" --db "$odd" --plaintext info
expect_eq "$(head -n1 <<<"$out")" "path:         $shown" "info escapes the path"
expect_exit 0 "$STATECTL" --db "$odd" --plaintext top --once --interval 100ms
line=$(head -n1 <<<"$out")
expect_eq "${line% 2[0-9][0-9][0-9]-*}" "statefs top  $shown" "top's first line escapes the path"
expect_match "$line" " every 0\.1s$" "top's first line whole"
# ... and an error that names it is one line too (plain and --json)
expect_exit 5 "$STATECTL" --db "$odd.none" --plaintext info
expect_eq "$err" "statectl: no store at $shown.none (create one with 'statectl init')" "an error escapes the path"
expect_exit 5 "$STATECTL" --json --db "$odd.none" --plaintext info
expect_eq "$(jq -r .error <<<"$err")" "no store at $shown.none (create one with 'statectl init')" "--json: the error escapes the path"

# --- keygen
expect_exit 0 "$STATECTL" keygen "$T/k2"
[ "$(stat -c %a "$T/k2")" = 600 ] || fail "keygen mode 0600"
expect_exit 6 "$STATECTL" keygen "$T/k2"
expect_exit 0 "$STATECTL" keygen
expect_match "$out" '^[A-Za-z0-9+/]{43}=$' "keygen prints base64 to a pipe"
expect_exit 0 "$STATECTL" --json keygen
jqe "$out" '(.key | length) == 44'
# "-" is stdout, as for export: keygen wrote a key file named "-" in the
# working directory, and metrics replaced it with its figures
mkdir -p "$T/dash"
(cd "$T/dash" && expect_exit 0 "$STATECTL" keygen - &&
	expect_match "$out" '^[A-Za-z0-9+/]{43}=$' "keygen - prints the key" &&
	expect_exit 0 "$STATECTL" --db "$DB" "${modeopts[@]}" metrics - &&
	expect_match "$out" "statefs_store_rows" "metrics - prints the figures")
[ -z "$(ls -A "$T/dash")" ] || fail "keygen - or metrics - made a file named -"
expect_exit 0 "$STATECTL" --json keygen "$T/k3"
jqe "$out" ".path == \"$T/k3\""
# the help says where a key is printed: a pipe or a file, never a
# terminal (it said "to a pipe", where a redirection to a file works too)
expect_exit 0 "$STATECTL" keygen --help
expect_match "$out" "never to a terminal" "keygen --help"
# a key file where a store keeps its own files is refused, exit 2, and
# nothing is written: the store itself, its -wal, -shm, -journal,
# -reserve and .rekey (SQLite takes a key file there for its own file)
expect_exit 2 "$STATECTL" keygen "$DB-journal"
expect_match "$err" "^statectl: keygen: $DB-journal is a file the store $DB keeps beside it \(its rollback journal\), not a key file" "keygen to a store's -journal"
expect_exit 2 "$STATECTL" keygen "$DB.rekey"
expect_exit 2 "$STATECTL" --db "$T/own.db" --key-file "$T/own.db-journal" init
expect_match "$err" "^statectl: --key-file $T/own.db-journal is a file the store $T/own.db keeps beside it" "init --key-file STORE-journal"
expect_exit 2 "$STATECTL" --db "$T/own.db" --key-file "$T/own.db" init
expect_match "$err" "^statectl: --key-file $T/own.db is the store itself, not a key file" "init --key-file STORE"
for f in "$DB-journal" "$DB.rekey" "$T/own.db" "$T/own.db-journal"; do
	[ ! -e "$f" ] || fail "a refused key file was written: $f"
done

# --- progress: quiet when piped, a bar with --progress, none with --no-progress
expect_exit 0 sc verify
expect_eq "$err" "" "no progress bar when stderr is not a terminal"
expect_exit 0 sc --progress verify
expect_match "$err" 'verify \[#+\] 100% [0-9]+/[0-9]+ pages' "--progress draws a bar"
expect_exit 0 sc --progress --no-progress verify
expect_eq "$err" "" "--no-progress"
# on a terminal (script(1) gives one), the bar is drawn and erased
if command -v script >/dev/null; then
	script -qec "$(printf '%q ' "$STATECTL" --db "$DB" "${modeopts[@]}" --progress export) >/dev/null" /dev/null >"$T/tty" </dev/null
	grep -q $'\r''export \[' "$T/tty" || fail "a terminal gets a redrawn bar"
	grep -q $'\e\[K' "$T/tty" || fail "the bar is erased at the end"
	# an import reading a terminal says so, as put does (an import whose
	# file was forgotten waited in silence)
	script -qec "$(printf '%q ' "$STATECTL" --db "$DB" "${modeopts[@]}" import)" /dev/null >"$T/tty" </dev/null || true
	grep -q "reading an export from the terminal; end it with Ctrl-D" "$T/tty" ||
		fail "import from a terminal says where it reads: $(cat "$T/tty")"
fi

# --- checkpoint and restore (the consistency under writers is cli_checkpoint.sh)
expect_exit 0 sc checkpoint "$T/ck1"
expect_match "$out" "wrote a checkpoint" "checkpoint"
expect_exit 6 sc checkpoint "$T/ck1"
expect_match "$err" "never overwrites" "checkpoint never overwrites"
sc put s n k changed
sc put s n new x
expect_exit 0 sc --json restore "$T/ck1"
jqe "$out" ".checkpoint == \"$T/ck1\""
expect_eq "$(sc get s n k)" v "restore brings the value back"
expect_exit 1 sc get s n new
expect_exit 1 sc restore "$T/no-such-checkpoint"
# the store itself, by its name or a symlink: refused at once (it waited
# 30 s for its own lock, then exited 7)
ln -s "$DB" "$T/self-link"
for self in "$DB" "$T/self-link"; do
	expect_exit 2 sc restore "$self"
	expect_match "$err" "is the store itself, not a checkpoint" "restore from the store itself"
done
expect_exit 0 sc --json checkpoint "$T/ck2"
jqe "$out" ".checkpoint == \"$T/ck2\" and .path == \"$DB\""
expect_exit 0 "$STATECTL" --db "$T/ck2" "${modeopts[@]}" verify

# --- file names that are not UTF-8: "path_b64" (base64), and the true exit
xdb=$T/$'st\xff'.db
xb64() { printf '%s' "$1" | base64 -w0; }
xopts=(--plaintext)
[ "$mode" = encrypted ] && xopts=(--key-file "$T/xkey")
expect_exit 0 "$STATECTL" --json --db "$xdb" "${xopts[@]}" init
jqe "$out" ".path_b64 == \"$(xb64 "$xdb")\" and (has(\"path\") | not)"
xsc() { "$STATECTL" --json --db "$xdb" "${xopts[@]}" "$@"; }
expect_exit 0 xsc export "$T/"$'e\xff'
jqe "$out" ".path_b64 == \"$(xb64 "$T/"$'e\xff')\" and .rows == 0"
for cmd in info verify "checkpoint $T/xck" "import $T/"$'e\xff' \
           "restore $T/xck"; do
	# shellcheck disable=SC2086 # the command's words
	expect_exit 0 xsc $cmd
	jqe "$out" ".path_b64 == \"$(xb64 "$xdb")\""
done
[ -s "$T/xck" ] && [ -s "$T/"$'e\xff' ] || fail "checkpoint and export wrote their files"
expect_exit 0 "$STATECTL" --json keygen "$T/"$'k\xfe'
jqe "$out" ".path_b64 == \"$(xb64 "$T/"$'k\xfe')\""
# an error naming such bytes is still one JSON object, with its own exit
expect_exit 2 sc --json put $'a\xffb' n k v
jqe "$err" '.exit == 2 and .status == "usage" and (.error | contains("a\\xffb"))'

# --- key errors
# a plaintext store opened without --plaintext and no key anywhere: a key
# problem (exit 3) that says what the store is, and not that a key was
# given ('store is not encrypted but a key was given (... is a plaintext
# store: ...)', the status's words, before)
if [ -z "$pg" ]; then
	"$STATECTL" --db "$T/nokey-plain.db" --plaintext init >/dev/null
	expect_exit 3 env XDG_CONFIG_HOME="$T/empty" "$STATECTL" --db "$T/nokey-plain.db" get s n k
	expect_match "$err" "is a plaintext store: open it in plaintext mode explicitly" "a plaintext store and no key"
	[[ $err != *"a key was given"* ]] || fail "no key was given, and the error says one was: $err"
fi
if [ "$mode" = encrypted ]; then
	expect_exit 3 "$STATECTL" --db "$DB" --key-file "$T/k2" get s n k
	expect_match "$err" "wrong key" "wrong key"
	expect_exit 3 "$STATECTL" --db "$DB" --key-file "$T/missing" get s n k
	expect_match "$err" "$T/missing" "missing key file named"
	expect_exit 3 env XDG_CONFIG_HOME="$T/empty" "$STATECTL" --db "$DB" get s n k
	expect_exit 3 "$STATECTL" --db "$DB" --plaintext get s n k
	expect_exit 3 "$STATECTL" --json --db "$DB" --key-file "$T/k2" get s n k
	jqe "$err" '.status == "key" and .exit == 3'
	# a checkpoint made under another key is a key problem, not damage
	"$STATECTL" --db "$T/other-key.db" --key-file "$T/k-other" init >/dev/null
	"$STATECTL" --db "$T/other-key.db" --key-file "$T/k-other" checkpoint "$T/ck-k4" >/dev/null
	expect_exit 3 sc restore "$T/ck-k4"
	expect_match "$err" "wrong key" "restore under another key"
	"$STATECTL" --db "$T/plain-r.db" --plaintext init >/dev/null
	expect_exit 3 "$STATECTL" --db "$T/plain-r.db" --plaintext restore "$T/ck-k4"
	expect_match "$err" "is encrypted and no key was given" "restore of an encrypted checkpoint into a plaintext store"
	# an encrypted copy cut short by whole pages: page 1 opened, the
	# open says what is wrong (below too, in plaintext)
	sc checkpoint "$T/eck.db" >/dev/null
	epages=$(( $(stat -c %s "$T/eck.db") / 4096 ))
	head -c 8192 "$T/eck.db" >"$T/eshort.db"
	expect_exit 4 "$STATECTL" --db "$T/eshort.db" --key-file "$KEY" get s n k
	expect_match "$err" "eshort.db is cut short: its page 1 counts $epages pages of 4096 bytes, and the file holds 2 whole pages" \
		"an encrypted store cut short"
	cp "$KEY" "$T/loose"; chmod 644 "$T/loose"
	expect_exit 3 "$STATECTL" --db "$DB" --key-file "$T/loose" get s n k
	# a key file that is not a key is a key problem too, not bad data
	printf '%s\n' "$(head -c 30 /dev/zero | base64 -w0)" >"$T/bad-key"
	chmod 600 "$T/bad-key"
	expect_exit 3 "$STATECTL" --db "$DB" --key-file "$T/bad-key" get s n k
	expect_match "$err" "not a usable key \\(key file $T/bad-key is not a 32-byte key" "a key of the wrong length"
	head -c 20 /dev/urandom >"$T/bad-key"
	expect_exit 3 "$STATECTL" --db "$DB" --key-file "$T/bad-key" get s n k
	expect_match "$err" "key file $T/bad-key is not a 32-byte key" "20 random bytes"
	: >"$T/bad-key"
	expect_exit 3 "$STATECTL" --db "$DB" --key-file "$T/bad-key" get s n k
	expect_match "$err" "key file $T/bad-key is empty" "an empty key file"
	mkdir -m 700 "$T/key-dir"
	expect_exit 3 "$STATECTL" --json --db "$DB" --key-file "$T/key-dir" get s n k
	jqe "$err" '.status == "key" and .exit == 3 and (.error | contains("is a directory, not a regular file"))'
	# the key from the environment, as text; removed once read
	keytext=$(base64 -w0 <"$KEY" 2>/dev/null)
	[ "$(stat -c %s "$KEY")" = 32 ] || keytext=$(tr -d '\n' <"$KEY")
	expect_eq "$(STATEFS_KEY=$keytext "$STATECTL" --db "$DB" get s n k)" v "STATEFS_KEY"
	expect_eq "$(STATEFS_KEY_FILE=$KEY "$STATECTL" --db "$DB" get s n k)" v "STATEFS_KEY_FILE"
else
	expect_exit 3 "$STATECTL" --db "$DB" --key-file "$XDG_CONFIG_HOME/statefs/key" get s n k
fi

# --- passphrases, typed on a terminal (script(1) gives one); the typing
# waits for the prompt, since turning echo off discards typed-ahead input
if [ "$mode" = encrypted ] && command -v script >/dev/null; then
	typed() { # PASSPHRASE... -- COMMAND...: types each at its prompt
		local p n=0 i pid rc=0
		local -a pw=()
		while [ "$1" != -- ]; do pw+=("$1"); shift; done
		shift
		rm -f "$T/fifo"; mkfifo "$T/fifo"
		# 120 s and 60 s per prompt are hang detectors: a loaded machine
		# with a sanitizer build may take seconds per passphrase
		timeout 120 script -qec "$(printf '%q ' "$@")" /dev/null <"$T/fifo" >"$T/.out" 2>&1 &
		pid=$!
		exec 7>"$T/fifo"
		for p in "${pw[@]}"; do
			n=$((n + 1))
			for i in $(seq 1200); do
				[ "$(grep -o -E '(assphrase|Again): ' "$T/.out" | wc -l)" -ge "$n" ] && break
				nap 0.05
			done
			printf '%s\n' "$p" >&7
		done
		exec 7>&-
		wait "$pid" || rc=$?
		return $rc
	}
	P=(--db "$T/pp.db" --passphrase)
	typed 'correct horse' 'correct horse' -- "$STATECTL" "${P[@]}" init ||
		fail "init --passphrase"
	grep -q "opens with the passphrase" "$T/.out" || fail "init names the passphrase"
	typed 'correct horse' -- "$STATECTL" "${P[@]}" put a b c secret || fail "put with a passphrase"
	typed 'correct horse' -- "$STATECTL" "${P[@]}" get a b c || fail "get with a passphrase"
	grep -q secret "$T/.out" || fail "the value through a passphrase"
	got=0; typed 'wrong horse' -- "$STATECTL" "${P[@]}" get a b c || got=$?
	[ "$got" -eq 3 ] || fail "a wrong passphrase exits 3, not $got"
	grep -q "wrong key" "$T/.out" || fail "wrong passphrase sentence"
	! grep -q 'horse' "$T/.out" || fail "the passphrase was echoed"
	got=0; typed one two -- "$STATECTL" --db "$T/pp2.db" --passphrase init || got=$?
	[ "$got" -eq 3 ] || fail "mismatched passphrases exit 3"
	grep -q "do not match" "$T/.out" || fail "mismatch sentence"
	[ ! -e "$T/pp2.db" ] || fail "no store after a mismatch"
	expect_exit 3 setsid -w "$STATECTL" "${P[@]}" get a b c </dev/null
	expect_match "$err" "cannot read a passphrase from the terminal" "no terminal"
fi

# --- rekey (encrypted only)
if [ "$mode" = encrypted ]; then
	expect_exit 2 sc rekey
	expect_match "$err" "rekey needs one of" "rekey needs a new key"
	expect_exit 2 sc rekey --generate --decrypt
	expect_match "$err" "^statectl: rekey takes one of .* or --decrypt, not both --generate and --decrypt" "two new keys"
	expect_exit 2 sc rekey --new-key-file "$T/nk" --new-passphrase
	expect_match "$err" "^statectl: rekey takes one of .*, not both --new-key-file and --new-passphrase" "two new keys"
	cp "$DB" "$T/pre-rekey.db"
	expect_exit 0 sc rekey --generate
	expect_match "$out" "new key, which is in $KEY" "generated key replaces the key file"
	[ ! -e "$KEY.new" ] || fail "the .new key file was renamed into place"
	[ "$(stat -c %a "$KEY")" = 600 ] || fail "new key file mode"
	expect_eq "$(sc get s n k)" v "the store opens with the new key"
	expect_exit 0 sc --json rekey --new-key-file "$T/k2"
	jqe "$out" ".key_file == \"$T/k2\" and .pages > 0"
	expect_exit 3 sc get s n k
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/k2" get s n k)" v "opens with the given key"
	expect_exit 0 "$STATECTL" --db "$DB" --key-file "$T/k2" rekey --generate --new-key-file "$T/k4"
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/k4" get s n k)" v "generated into --new-key-file"
	[ -f "$T/k2" ] || fail "an explicit --new-key-file leaves the old key file alone"
	# the key file the store opens with now is no new key
	expect_exit 2 "$STATECTL" --db "$DB" --key-file "$T/k4" rekey --new-key-file "$T/k4"
	expect_match "$err" "names the key file the store opens with now" "rekey to its own key file"
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/k4" get s n k)" v "a rekey to the same key file changes nothing"
	# nor is the store or a file beside it a new key file: refused,
	# exit 2, store and key unchanged (a key generated into the
	# -journal was taken for a hot journal and deleted by the next open,
	# leaving the store under a key nobody had: exit 0)
	cp "$T/k4" "$T/k4.before"
	for f in "" -wal -shm -journal -reserve .rekey; do
		for g in "" --generate; do
			# shellcheck disable=SC2086 # g: one word or none
			expect_exit 2 "$STATECTL" --db "$DB" --key-file "$T/k4" rekey $g --new-key-file "$DB$f"
			expect_match "$err" "^statectl: --new-key-file $DB$f is (the store itself|a file the store $DB keeps beside it \\(.*\\)), not a key file" "rekey $g --new-key-file STORE$f"
		done
	done
	[ ! -e "$DB-journal" ] && [ ! -e "$DB.rekey" ] || fail "a refused rekey wrote a key beside the store"
	cmp -s "$T/k4" "$T/k4.before" || fail "a refused rekey changed the key file"
	rm "$T/k4.before"
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/k4" get s n k)" v "a rekey to a store's own file changes nothing"
	# busy: another process has the store open
	: "${HELPER:?HELPER must name the test helper}"
	"$HELPER" writer "$DB" "$T/k4" 9 "$T/stop-busy" >/dev/null &
	hpid=$!
	cleanup_hooks+=('touch "$T/stop-busy"; wait "$hpid" 2>/dev/null || true')
	for _ in $(seq 1200); do
		[ "$("$STATECTL" --db "$DB" --key-file "$T/k4" counter get ck w9 n)" -gt 0 ] && break
		nap 0.05
	done
	[ "$("$STATECTL" --db "$DB" --key-file "$T/k4" counter get ck w9 n)" -gt 0 ] ||
		fail "the writer made no progress in 60 s"
	expect_exit 7 "$STATECTL" --db "$DB" --key-file "$T/k4" rekey --new-key-file "$T/k2"
	expect_match "$err" "busy" "rekey of an open store"
	# a refused rekey removes the key file it generated (never used)
	expect_exit 7 "$STATECTL" --db "$DB" --key-file "$T/k4" rekey --generate --new-key-file "$T/k6"
	[ ! -e "$T/k6" ] || fail "a refused rekey left the key it generated"
	expect_exit 7 "$STATECTL" --db "$DB" --key-file "$T/k4" rekey --generate
	[ ! -e "$T/k4.new" ] || fail "a refused rekey left KEYFILE.new"
	touch "$T/stop-busy"; wait "$hpid" || fail "the writer failed"
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/k4" get s n k)" v "a refused rekey changes nothing"
	# Two rekey --generate of one key file at once: the second says
	# another runs, exit 7, and leaves the first's KEYFILE.new alone (it
	# took it for an interrupted rekey's leftover and rekeyed to it, or,
	# caught while it was written, refused it as one, exit 6). The first
	# is a lock on the key file here (flock(1), while statectl runs).
	"$STATECTL" keygen "$T/k4.new" >/dev/null
	expect_exit 7 flock -x "$T/k4" "$STATECTL" --db "$DB" --key-file "$T/k4" rekey --generate
	expect_match "$err" "another rekey of the key file $T/k4 is running; $DB is unchanged" \
		"a second rekey at once"
	[ -e "$T/k4.new" ] || fail "a second rekey took the first's KEYFILE.new"
	rm "$T/k4.new"
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/k4" get s n k)" v "a second rekey changes nothing"
	# KEYFILE.new left by an interrupted rekey --generate: before the
	# store was touched (stale), and after it (under that key, before the
	# rename); either way a second run finishes, with the key file in place
	"$STATECTL" keygen "$T/k4.new" >/dev/null
	expect_exit 0 "$STATECTL" --db "$DB" --key-file "$T/k4" rekey --generate
	expect_match "$err" "left in $T/k4.new" "a stale KEYFILE.new is taken"
	[ ! -e "$T/k4.new" ] || fail "a stale KEYFILE.new stayed"
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/k4" get s n k)" v "opens after a stale KEYFILE.new"
	"$STATECTL" keygen "$T/k4.new" >/dev/null
	expect_exit 0 "$STATECTL" --db "$DB" --key-file "$T/k4" rekey --new-key-file "$T/k4.new"
	expect_exit 3 "$STATECTL" --db "$DB" --key-file "$T/k4" get s n k
	expect_exit 0 "$STATECTL" --db "$DB" --key-file "$T/k4" rekey --generate
	[ ! -e "$T/k4.new" ] || fail "KEYFILE.new was not renamed into place"
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/k4" get s n k)" v "the key file switch finished"
	# Commands run while rekey --generate runs, again and again (a rekey
	# refused busy included): each opens the store with the key file's
	# key whatever the moment. An open between the store's replacement
	# and the key file's exited 3 (wrong key), 4 (page 1 under another
	# key) or 9 (the store was replaced).
	"$STATECTL" --db "$T/rk.db" --key-file "$T/rk.key" init >/dev/null
	( for _ in $(seq "$rkadds"); do
		"$STATECTL" --db "$T/rk.db" --key-file "$T/rk.key" counter add s n c >/dev/null ||
			echo "exit $?" >>"$T/rk.fail"
	done ) 2>>"$T/rk.fail" &
	wpid=$!
	nrekey=0
	while kill -0 "$wpid" 2>/dev/null; do
		"$STATECTL" --db "$T/rk.db" --key-file "$T/rk.key" rekey --generate >/dev/null 2>&1 &&
			nrekey=$((nrekey + 1))
	done
	wait "$wpid"
	[ ! -s "$T/rk.fail" ] || { cat "$T/rk.fail" >&2; fail "a command failed while the store was rekeyed ($nrekey times)"; }
	expect_eq "$("$STATECTL" --db "$T/rk.db" --key-file "$T/rk.key" counter get s n c)" "$rkadds" "every write made under rekeys"
	# decrypt, then encrypt again (the plaintext store gets a new key)
	expect_exit 0 "$STATECTL" --db "$DB" --key-file "$T/k4" rekey --decrypt
	expect_match "$out" "is now plaintext" "decrypt"
	expect_eq "$("$STATECTL" --db "$DB" --plaintext get s n k)" v "a decrypted store opens in plaintext"
	expect_exit 0 "$STATECTL" --db "$DB" --plaintext --json rekey --generate --new-key-file "$T/k5"
	jqe "$out" '.encrypted == true and .key_file == "'"$T/k5"'"'
	expect_exit 3 "$STATECTL" --db "$DB" --plaintext get s n k
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/k5" get s n k)" v "encrypted again"
	finalkey=(--key-file "$T/k5")
else
	expect_exit 2 sc rekey
	expect_match "$err" "rekey needs one of" "rekey needs a choice"
	expect_exit 2 sc rekey --decrypt
	expect_match "$err" "plaintext already" "no decrypt of a plaintext store"
	expect_exit 0 sc rekey --generate --new-key-file "$T/enc"
	expect_match "$out" "Back the key up" "encrypting a plaintext store"
	expect_exit 3 sc get s n k
	expect_eq "$("$STATECTL" --db "$DB" --key-file "$T/enc" get s n k)" v "encrypted with the new key"
	expect_exit 0 "$STATECTL" --db "$DB" --key-file "$T/enc" --json rekey --decrypt
	jqe "$out" '.encrypted == false'
	expect_eq "$(sc get s n k)" v "plaintext again"
	finalkey=(--plaintext)
fi

# --- a corrupt file: flip bytes in the middle of a copy of the store
copyopts=("${finalkey[@]}")
"$STATECTL" --db "$DB" "${copyopts[@]}" put s n big "$(head -c 20000 /dev/zero | tr '\0' x)"
"$STATECTL" --db "$DB" "${copyopts[@]}" checkpoint "$T/good.db" >/dev/null
cp "$T/good.db" "$T/bad.db"
# a whole page in the middle: in a plaintext store only the structure is
# checked (a b-tree page type, an overflow chain pointer), so overwrite all
ps=$("$STATECTL" --db "$T/good.db" "${copyopts[@]}" --json info | jq .page_size)
pages=$(( $(stat -c %s "$T/bad.db") / ps ))
[ "$pages" -ge 4 ] || fail "the store is too small to corrupt a middle page"
head -c "$ps" /dev/zero | tr '\0' '\125' |
	dd of="$T/bad.db" bs="$ps" seek=$((pages / 2)) conv=notrunc status=none
expect_exit 0 "$STATECTL" --db "$T/good.db" "${copyopts[@]}" verify
expect_exit 4 "$STATECTL" --db "$T/bad.db" "${copyopts[@]}" verify
# the middle page may be one the open itself reads (the checkpoint's layout
# follows the store's history): then the open names the damage instead
expect_match "$err" "failed verification|corrupt or was tampered with" \
	"verify names the problem"
expect_exit 4 "$STATECTL" --db "$T/bad.db" "${copyopts[@]}" --json verify
jqe "$err" '.status == "corrupt" and .exit == 4'
# restore into the damaged store, the one to restore: it cannot (a
# transaction of the store), and says what to do instead, which works
# (it said only "cannot restore ... (the store is unchanged): store is
# corrupt" or that it cannot open the store); a damaged checkpoint is
# not the store's damage
hint="a damaged store is not restored in place: stop every process using it, move it and its -wal and -shm aside, and copy the checkpoint to its name"
expect_exit 4 "$STATECTL" --db "$T/bad.db" "${copyopts[@]}" restore "$T/good.db"
[[ $err == *"$hint"* ]] || fail "restore into a damaged store says what to do: $err"
expect_exit 4 "$STATECTL" --db "$T/good.db" "${copyopts[@]}" restore "$T/bad.db"
[[ $err != *"$hint"* ]] || fail "a damaged checkpoint is not the store's damage: $err"
mkdir "$T/aside"
mv "$T/bad.db" "$T/aside/"
mv "$T/bad.db-wal" "$T/bad.db-shm" "$T/aside/" 2>/dev/null || true
cp "$T/good.db" "$T/bad.db"
expect_exit 0 "$STATECTL" --db "$T/bad.db" "${copyopts[@]}" verify
printf 'this is not a statefs store at all, just text.......' >"$T/notastore.db"
head -c 8192 /dev/zero >>"$T/notastore.db"
expect_exit 5 "$STATECTL" --db "$T/notastore.db" "${copyopts[@]}" info
# a copy cut short by whole pages: the open says so, and what to do (it
# said "database disk image is malformed (sqlite 11)", naming nothing)
head -c $(( (pages / 2) * ps )) "$T/good.db" >"$T/short.db"
for cmd in "get s n big" verify "put s n k v"; do
	# shellcheck disable=SC2086 # the command's words
	expect_exit 4 "$STATECTL" --db "$T/short.db" "${copyopts[@]}" $cmd
	expect_match "$err" "short.db is cut short: its page 1 counts $pages pages of $ps bytes, and the file holds $((pages / 2)) whole pages \\($(( (pages / 2) * ps )) bytes\\): it was truncated, or its end was lost \\(with no process using it, move it and its -wal aside and copy a checkpoint to its name\\)" \
		"a store cut short: $cmd"
done

# Another user who may read a store, and has its key: a read says which
# of the store's -wal and -shm files it could not make or open (every
# process that opens a store in WAL mode opens both), exit 9. It said
# "store is read-only (setting connection pragmas: attempt to write a
# readonly database (sqlite 1544))" and "I/O error (... unable to open
# database file (sqlite 14))".
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	ro=$T/ro
	mkdir "$ro"
	cp "$DB" "$ro/s.db" # (a store in WAL mode; a checkpoint is not)
	chmod 755 "$T" "$ro"
	chmod 644 "$ro/s.db"
	roopts=(--plaintext)
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	if [ "${copyopts[0]}" = --key-file ]; then
		# the owner's key file, which nobody may not read: exit 3, for
		# what it is (it was "key file is accessible by other users")
		expect_exit 3 nobody "$STATECTL" --db "$ro/s.db" "${copyopts[@]}" info
		expect_match "$err" "not a usable key \\(cannot open key file ${copyopts[1]}: Permission denied\\)$" \
			"a key file the user may not read"
		install -m 600 -o 65534 "${copyopts[1]}" "$T/nobody.key"
		roopts=(--key-file "$T/nobody.key")
	fi
	expect_exit 9 nobody "$STATECTL" --db "$ro/s.db" "${roopts[@]}" info
	expect_match "$err" "cannot create $ro/s.db-wal: Permission denied: the first process to open the store, even to read it, makes its -wal and -shm files in $ro\)$" \
		"a reader that cannot make -wal"
	install -m 644 /dev/null "$ro/s.db-wal"
	install -m 600 /dev/null "$ro/s.db-shm"
	expect_exit 9 nobody "$STATECTL" --db "$ro/s.db" "${roopts[@]}" verify
	expect_match "$err" "cannot open $ro/s.db-shm: Permission denied: a process that opens the store, even to read it, opens its -wal and -shm files too\)$" \
		"a reader that cannot open -shm"
	# The owner read the store while its file was read-only (chmod 400):
	# the read made the -shm with that mode, and it stays. With the
	# store's mode back, a write names the -shm: it said "store is
	# read-only (... attempt to write a readonly database (sqlite 8))".
	own=$T/own
	mkdir "$own"
	cp "$DB" "$own/s.db"
	chown -R 65534:65534 "$own"
	chmod 400 "$own/s.db"
	expect_exit 0 nobody "$STATECTL" --db "$own/s.db" "${roopts[@]}" info
	chmod 600 "$own/s.db"
	expect_exit 9 nobody "$STATECTL" --db "$own/s.db" "${roopts[@]}" put s n k v
	expect_match "$err" "cannot write $own/s.db-shm: Permission denied \\(a writer of the store writes it too: give it the store's owner and mode\\)\\)$" \
		"a writer that cannot write the -shm"
	chmod 700 "$T"
fi

# --- a store on a read-only medium (a snapshot, a backup disk, an image)
# A file system whose superblock is read-only (a tmpfs remounted ro: the
# superblock options of its mountinfo line say ro): the reads open a store
# closed cleanly immutable, without the -wal and -shm they cannot make
# there (they said "cannot create PATH-wal: Read-only file system", so not
# even verify or export could read it); a write still says why not. A
# copy of a store with commits in its -wal and no -shm cannot be read
# there, and the reader says why. A read-only bind mount of a writable
# directory is no such medium: the store may be written through the other
# mount, which an immutable open never sees (8d8bc1b, reverted: stale
# pages, then "malformed"), so a reader there says why not when nobody
# has the store open, as before, and reads what a writer writes meanwhile.
if [ -z "$pg" ] && [ "$(id -u)" = 0 ] && mkdir "$T/rofs" "$T/rw" "$T/robind" &&
	mount -t tmpfs -o size=8m,mode=0700 tmpfs "$T/rofs" 2>/dev/null; then
	cleanup_hooks+=('umount -l "$T/rofs" 2>/dev/null')
	cp "$DB" "$T/rofs/s.db" # in WAL mode, as a store is (a checkpoint is not)
	cp "$DB" "$T/rw/s.db"
	mount --bind "$T/rw" "$T/robind"
	cleanup_hooks+=('umount -l "$T/robind" 2>/dev/null')
	mount -o remount,bind,ro "$T/robind"
	ro=(--db "$T/robind/s.db" "${copyopts[@]}")
	expect_exit 9 "$STATECTL" "${ro[@]}" get s n k
	expect_match "$err" "cannot create $T/robind/s.db-wal: Read-only file system" \
		"a reader through a read-only bind mount (not immutable)"
	# named through a symbolic link, the files beside its target are
	# named (it said "unable to open database file (sqlite 14)")
	rT=$(realpath "$T")
	ln -s "$T/robind/s.db" "$T/robind-link.db"
	expect_exit 9 "$STATECTL" --db "$T/robind-link.db" "${copyopts[@]}" get s n k
	expect_match "$err" "cannot create $rT/robind/s.db-wal: Read-only file system" \
		"a reader of a store named through a link"
	# commits in a -wal (a writer had the store open), copied without -shm
	hk=-
	[ "${copyopts[0]}" = --plaintext ] || hk=${copyopts[1]}
	"$HELPER" writer "$T/rw/s.db" "$hk" 1 "$T/stop-ro" >/dev/null &
	wpid=$!
	cleanup_hooks+=('touch "$T/stop-ro"; wait "$wpid" 2>/dev/null || true')
	rw=(--db "$T/rw/s.db" "${copyopts[@]}")
	for _ in $(seq 1200); do
		[ "$("$STATECTL" "${rw[@]}" counter get ck w1 n)" -gt 0 ] && break
		nap 0.05
	done
	[ "$("$STATECTL" "${rw[@]}" counter get ck w1 n)" -gt 0 ] ||
		fail "the writer made no progress in 60 s"
	mkdir "$T/rofs/wal"
	cp "$T/rw/s.db" "$T/rw/s.db-wal" "$T/rofs/wal/"
	# the writer's commits, read through the bind mount as they come
	"$STATECTL" "${rw[@]}" put s n fresh w
	# A reader whose -shm is read-only can catch the writer changing the
	# log's index: busy (exit 7, try again), as any script retries it.
	# It said "store is read-only (... attempt to write a readonly
	# database (sqlite 264))", exit 9.
	for _ in $(seq 100); do
		rc=0; got=$("$STATECTL" "${ro[@]}" get s n fresh 2>"$T/ro.err") || rc=$?
		[ "$rc" -eq 7 ] || break
		grep -q "try again" "$T/ro.err" || fail "busy without its sentence: $(cat "$T/ro.err")"
		nap 0.05
	done
	[ "$rc" -eq 0 ] || fail "a read through a read-only bind mount of a store being written: exit $rc: $(cat "$T/ro.err")"
	expect_eq "$got" w "a read through a read-only bind mount of a store being written"
	expect_exit 0 "$STATECTL" "${ro[@]}" counter get ck w1 n
	touch "$T/stop-ro"
	wait "$wpid" || fail "the writer failed"
	umount "$T/robind"
	mount -o remount,ro "$T/rofs"
	grep -q " $T/rofs .* - tmpfs [^ ]* ro," /proc/self/mountinfo ||
		fail "the remounted tmpfs's superblock is not read-only"
	ro=(--db "$T/rofs/s.db" "${copyopts[@]}")
	expect_exit 0 "$STATECTL" "${ro[@]}" verify
	expect_eq "$("$STATECTL" "${ro[@]}" get s n k)" v "a read on a read-only file system"
	expect_exit 0 "$STATECTL" "${ro[@]}" export
	expect_match "$out" '"key":"k","value":"v"' "an export on a read-only file system"
	# a write says it cannot, not that reads cannot either (it said
	# "... the first process to open the store, even to read it, makes
	# its -wal and -shm files")
	expect_exit 9 "$STATECTL" "${ro[@]}" put s n k w
	expect_match "$err" "store is read-only \\($T/rofs/s.db is on a read-only file system: only a read-only open can use it\\)$" \
		"a write on a read-only file system"
	[ ! -e "$T/rofs/s.db-wal" ] || fail "a -wal on a read-only file system"
	expect_exit 9 "$STATECTL" --db "$T/rofs/wal/s.db" "${copyopts[@]}" get s n k
	expect_match "$err" "s.db-wal holds commits that are not in the store's file .* without its -shm: copy the store with its -wal to a writable place" \
		"a -wal without its -shm on a read-only file system"
	ln -s "$T/rofs/wal/s.db" "$T/wal-link.db"
	expect_exit 9 "$STATECTL" --db "$T/wal-link.db" "${copyopts[@]}" get s n k
	expect_match "$err" "$rT/rofs/wal/s.db-wal holds commits that are not in the store's file" \
		"a -wal without its -shm, the store named through a link"
	umount "$T/rofs"
fi

echo "cli_admin ($mode): ok"
