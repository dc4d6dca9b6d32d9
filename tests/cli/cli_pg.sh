#!/usr/bin/env bash
# cli_pg.sh: statectl on a PostgreSQL store: the connection string in
# --db and STATEFS_DB (key=value and URI, schema=), libpq's own files and
# environment (~/.pgpass, PGPASSFILE, PGSERVICE, PGHOST...), a password on
# the command line refused with a sentence, sslmode passed through, a
# missing store and an unreachable server told apart, init, info, verify,
# checkpoint and restore (a checkpoint is a SQLite store), rekey refused,
# listings of queue items, keys and log entries around a damaged one, and
# a canary that never reaches the server in the clear.
# Environment: see lib.sh, and STATEFS_TEST_PGPW (a role sfs_pw that logs
# in with this password; without it the password checks are skipped).
# Exit: 0 pass, 1 fail, 77 no server.
. "$(dirname "$0")/lib.sh"

[ -n "$pg" ] || fail "run with STATEFS_TEST_MODE=postgres or postgres-plain"
# The server's parts (a key=value string without spaces in values).
host= port= dbname= user=
for kv in $STATEFS_TEST_PG; do
	case ${kv%%=*} in
	host) host=${kv#*=} ;;
	port) port=${kv#*=} ;;
	dbname) dbname=${kv#*=} ;;
	user) user=${kv#*=} ;;
	esac
done
drop_schema() {
	psql -X -q "$STATEFS_TEST_PG" -c "SET client_min_messages = warning;
	  DROP SCHEMA IF EXISTS $1 CASCADE" >/dev/null 2>&1 || true
}
for s in ${schema}u ${schema}p ${schema}s ${schema}e; do
	cleanup_hooks+=("drop_schema $s")
done

# --- no store yet: "no store", its name without secrets
expect_exit 5 sc info
expect_match "$err" "no store at .*schema=$schema \\(create one with 'statectl init'\\)" \
	"missing store"
expect_exit 0 sc init
if [ "$mode" = postgres ]; then
	expect_match "$out" "created the encrypted store .*schema=$schema" "init"
	expect_match "$out" "key is in $KEY" "init says where the key is"
else
	expect_match "$out" "created the plaintext store" "plaintext init"
fi
expect_exit 6 sc init
expect_match "$err" "already exists" "init never overwrites a store"

# --- rows, info, verify
sc put s n k v
sc counter add s n c >/dev/null
sc log append s n k v >/dev/null
sc queue push q a b >/dev/null
expect_exit 0 sc --json info
jqe "$out" ".rows.kv == 1 and .rows.counter == 1 and .rows.log == 1 and .rows.queue == 2 and .size > 0 and .backend == \"postgresql\" and .page_size == 8192"
jqe "$out" "(.path | test(\"schema=$schema\")) and (.path | test(\"password\") | not)"
if [ "$mode" = postgres ]; then
	jqe "$out" '.encrypted == true and .cipher == "xchacha20poly1305"'
else
	jqe "$out" '.encrypted == false and .cipher == "none"'
fi
expect_exit 0 sc verify
# rows, not pages: a PostgreSQL store has no pages of its own to count
if [ "$mode" = postgres ]; then how=authenticated; else how=read; fi
expect_match "$out" ": ok \(5 rows $how, consistency check passed\)$" "verify counts rows"
expect_exit 0 sc --json verify
jqe "$out" '.ok == true and .rows == 5 and (has("pages") | not)'

# --- verify and export hold one row at a time, not a batch: six values of
# 6 MB cost about what a get of one costs (they held all six: 58 MB
# against 26). ASan's quarantine keeps freed rows: not measured there.
if [ "${STATEFS_TEST_ASAN:-0}" != 1 ]; then
	head -c 6000000 /dev/urandom > "$T/big"
	for i in 1 2 3 4 5 6; do sc put big n "k$i" - < "$T/big"; done
	read -r st_get rss_get <<<"$("$HELPER" maxrss sh -c 'exec "$@" >/dev/null' sh \
		"$STATECTL" --db "$DB" "${modeopts[@]}" get big n k1)"
	read -r st_ver rss_ver <<<"$("$HELPER" maxrss sh -c 'exec "$@" >/dev/null' sh \
		"$STATECTL" --db "$DB" "${modeopts[@]}" verify)"
	expect_eq "$st_get $st_ver" "0 0" "get and verify of the big values"
	[ "$rss_ver" -lt $((rss_get + 18000)) ] ||
		fail "verify held the batch: $((rss_ver / 1024)) MiB, a get $((rss_get / 1024)) MiB"
	sc delete-range big n --all >/dev/null
fi

# --- the URI form, and STATEFS_DB
uri="postgresql://$user@/$dbname?host=$host&port=$port&schema=$schema"
expect_eq "$("$STATECTL" --db "$uri" "${modeopts[@]}" get s n k)" v "a postgresql:// URI"
expect_eq "$(STATEFS_DB="postgres:///$dbname?host=$host&port=$port&user=$user&schema=$schema" \
	"$STATECTL" "${modeopts[@]}" get s n k)" v "STATEFS_DB, postgres://"
# the rest of the string from libpq's environment
expect_eq "$(PGHOST=$host PGPORT=$port PGDATABASE=$dbname PGUSER=$user \
	"$STATECTL" --db "schema=$schema" "${modeopts[@]}" get s n k)" v \
	"PGHOST, PGPORT, PGDATABASE"
expect_eq "$("$STATECTL" --db "$DB sslmode=disable" "${modeopts[@]}" get s n k)" v \
	"sslmode passes through"
# a database or role the administrator made read-only stays so (as
# PGOPTIONS sets it here): a write fails with a sentence, nothing changes
expect_exit 9 env PGOPTIONS="-c default_transaction_read_only=on" \
	"$STATECTL" --db "$DB" "${modeopts[@]}" put s n k changed
expect_match "$err" "read-only" "a read-only database refuses a put"
expect_eq "$(sc get s n k)" v "a read-only database kept the value"
# and reads work there, with nothing on stderr
expect_exit 0 env PGOPTIONS="-c default_transaction_read_only=on" \
	"$STATECTL" --db "$DB" "${modeopts[@]}" get s n k
expect_eq "$out$err" v "a read of a read-only database, and its stderr"
# a role without the right to create schemas, given a schema of its own
# by the administrator, creates the store in it
psql -X -q "$STATEFS_TEST_PG" -c "CREATE ROLE ${schema}_own LOGIN;
  CREATE SCHEMA ${schema}o AUTHORIZATION ${schema}_own" >/dev/null
drop_own() {
	psql -X -q "$STATEFS_TEST_PG" -c "SET client_min_messages = warning;
	  DROP SCHEMA IF EXISTS ${schema}o CASCADE;
	  DROP ROLE IF EXISTS ${schema}_own" >/dev/null 2>&1 || true
}
cleanup_hooks+=(drop_own)
odb="$DB user=${schema}_own schema=${schema}o"
oopts=(--plaintext); [ "$mode" = postgres ] && oopts=(--key-file "$T/okey")
expect_exit 0 "$STATECTL" --db "$odb" "${oopts[@]}" init
expect_exit 0 "$STATECTL" --db "$odb" "${oopts[@]}" put o n k v
# no connection slot for the role (max_connections reached, or its
# CONNECTION LIMIT): exit 9, a failure to try again, not 5 ("no store")
psql -X -q "$STATEFS_TEST_PG" -c "ALTER ROLE ${schema}_own CONNECTION LIMIT 0"
expect_exit 9 "$STATECTL" --db "$odb" "${oopts[@]}" get o n k
expect_match "$err" "too many connections" "no connection slot for the role"
psql -X -q "$STATEFS_TEST_PG" -c "ALTER ROLE ${schema}_own CONNECTION LIMIT -1"
expect_exit 0 "$STATECTL" --db "$odb" "${oopts[@]}" get o n k
# a dead letter's reason is text here: one of bytes (a SQLite store's) is
# refused with a sentence, not as an internal error
printf '%s\n' '{"format":"statefs-export","version":1}' \
	'{"family":"dead","scope":"dq","key_b64":"/w==","id":90,"value":"x"}' \
	> "$T/reason.jsonl"
expect_exit 8 sc import "$T/reason.jsonl"
expect_match "$err" "reason is not UTF-8 text" "a reason of bytes"
expect_exit 9 "$STATECTL" --db "$DB sslmode=sometimes" "${modeopts[@]}" get s n k
expect_match "$err" "sslmode" "a bad sslmode is libpq's sentence"
expect_exit 8 "$STATECTL" --db "$DB frobnicate=1" "${modeopts[@]}" get s n k
expect_match "$err" "frobnicate" "an unknown keyword is named"
for cmd in "get s n k" init; do # the same from the environment
  expect_exit 8 env STATEFS_DB="$DB frobnicate=1" "$STATECTL" "${modeopts[@]}" $cmd
  expect_match "$err" "frobnicate" "an unknown keyword in STATEFS_DB ($cmd)"
done

# --- passwords: never on the command line; libpq's files and variables
if [ -n "${STATEFS_TEST_PGPW:-}" ]; then
	pw=$STATEFS_TEST_PGPW
	popts=(--plaintext)
	[ "$mode" = postgres ] && popts=(--key-file "$T/pkey")
	pwdb="host=$host port=$port dbname=$dbname user=sfs_pw"
	expect_exit 8 "$STATECTL" --db "$pwdb password=$pw schema=${schema}p" \
		"${popts[@]}" init
	expect_match "$err" "readable by every user" "a password in argv"
	expect_match "$err" "pgpass.*PGSERVICE.*PGPASSWORD.*STATEFS_DB" \
		"the sentence names the alternatives"
	[[ $err == *"$pw"* ]] && fail "the password was echoed"
	expect_exit 8 "$STATECTL" --db "postgresql://sfs_pw:$pw@/$dbname?host=$host&port=$port" \
		"${popts[@]}" info
	expect_match "$err" "readable by every user" "a password in a URI in argv"
	# the same in STATEFS_DB is private to the user: it works
	expect_exit 0 env STATEFS_DB="$pwdb password=$pw schema=${schema}p" \
		"$STATECTL" "${popts[@]}" init
	[[ $out == *"$pw"* ]] && fail "the password was printed"
	# and every command after it (they were refused as if it were argv)
	expect_exit 0 env STATEFS_DB="$pwdb password=$pw schema=${schema}p" \
		"$STATECTL" "${popts[@]}" put p n e env
	expect_eq "$(STATEFS_DB="$pwdb password=$pw schema=${schema}p" \
		"$STATECTL" "${popts[@]}" get p n e)" env "a get with the password in STATEFS_DB"
	expect_exit 0 env STATEFS_DB="$pwdb password=$pw schema=${schema}p" \
		"$STATECTL" "${popts[@]}" info
	[[ $out == *"$pw"* ]] && fail "the password was printed by info"
	# no key given (or no --plaintext): the sentence names the store
	# without its password
	expect_exit 3 env STATEFS_DB="$pwdb password=$pw schema=${schema}p" \
		"$STATECTL" info
	expect_match "$err" "schema=${schema}p is (encrypted|a plaintext)" \
		"no key: the store is named"
	[[ $err == *"$pw"* ]] && fail "the password was printed (no key)"
	# a URI libpq cannot parse: its reason quotes the password, so it
	# is not shown
	for bad in "postgresql://sfs_pw:$pw%zz@/$dbname?host=$host" \
	    "postgresql://sfs_pw:$pw@[::1/$dbname"; do
		expect_exit 8 env STATEFS_DB="$bad" "$STATECTL" "${popts[@]}" info
		expect_match "$err" "not a PostgreSQL connection string" "a bad URI"
		[[ $err == *"$pw"* ]] && fail "a bad URI's password was printed"
	done
	expect_exit 0 env STATEFS_DB="$pwdb password=$pw schema=${schema}p" \
		"$STATECTL" "${popts[@]}" del p n e
	# no password: libpq says so
	expect_exit 9 "$STATECTL" --db "$pwdb schema=${schema}p" "${popts[@]}" info
	expect_match "$err" "password" "no password: libpq's sentence"
	# ~/.pgpass (mode 0600), PGPASSFILE, PGPASSWORD, a service file
	echo "*:*:$dbname:sfs_pw:$pw" > "$HOME/.pgpass"
	chmod 600 "$HOME/.pgpass"
	expect_exit 0 "$STATECTL" --db "$pwdb schema=${schema}p" "${popts[@]}" put p n k pgpass
	expect_eq "$("$STATECTL" --db "$pwdb schema=${schema}p" "${popts[@]}" get p n k)" \
		pgpass "~/.pgpass"
	mv "$HOME/.pgpass" "$T/passfile"
	expect_eq "$(PGPASSFILE=$T/passfile "$STATECTL" --db "$pwdb schema=${schema}p" \
		"${popts[@]}" get p n k)" pgpass "PGPASSFILE"
	expect_eq "$(PGPASSWORD=$pw "$STATECTL" --db "$pwdb schema=${schema}p" \
		"${popts[@]}" get p n k)" pgpass "PGPASSWORD"
	cat > "$T/services" <<-EOF
	[statefs-test]
	host=$host
	port=$port
	dbname=$dbname
	user=sfs_pw
	password=$pw
	EOF
	chmod 600 "$T/services"
	expect_eq "$(PGSERVICEFILE=$T/services "$STATECTL" \
		--db "service=statefs-test schema=${schema}p" "${popts[@]}" get p n k)" \
		pgpass "PGSERVICE through a service file"
	expect_exit 9 env PGPASSWORD=wrong "$STATECTL" --db "$pwdb schema=${schema}p" \
		"${popts[@]}" get p n k
	expect_match "$err" "password authentication failed" "a wrong password"
	# a role without USAGE on the store's schema: told so, not "no store"
	expect_exit 9 env PGPASSWORD="$pw" "$STATECTL" --db "$pwdb schema=$schema" \
		"${modeopts[@]}" get s n k
	expect_match "$err" "no USAGE on schema $schema" "a role without USAGE on the schema"
fi

# --- an unreachable server is not a missing store: exit 9 (I/O), not 5,
# which tells a script to create one
expect_exit 9 "$STATECTL" --db "host=$T/nowhere dbname=x schema=y" "${modeopts[@]}" info
expect_match "$err" "cannot connect" "no server"

# --- checkpoint and restore: a checkpoint is a SQLite store
expect_exit 0 sc checkpoint "$T/ck1"
expect_match "$out" "wrote a checkpoint" "checkpoint"
sc put s n k changed
sc put s n new x
expect_exit 0 sc --json restore "$T/ck1"
expect_eq "$(sc get s n k)" v "restore brings the value back"
expect_exit 1 sc get s n new
expect_eq "$("$STATECTL" --db "$T/ck1" "${modeopts[@]}" get s n k)" v \
	"the checkpoint opens as a SQLite store"
expect_exit 0 "$STATECTL" --db "$T/ck1" "${modeopts[@]}" verify
# and restores into another schema, and into a SQLite store
if [ "$mode" = postgres ]; then # a second store under the same key
	expect_exit 0 env STATEFS_KEY="$(tr -d '\n' < "$KEY")" "$STATECTL" \
		--db "$STATEFS_TEST_PG schema=${schema}s" init
else
	expect_exit 0 "$STATECTL" --db "$STATEFS_TEST_PG schema=${schema}s" --plaintext init
fi
expect_exit 0 "$STATECTL" --db "$STATEFS_TEST_PG schema=${schema}s" "${modeopts[@]}" restore "$T/ck1"
expect_eq "$("$STATECTL" --db "$STATEFS_TEST_PG schema=${schema}s" "${modeopts[@]}" \
	queue len q)" 2 "restored into another schema"

# --- rekey is refused with what to do instead
# a key generated for a refused rekey was never used: it goes (it stayed
# "in case the store needs it", and encrypting a plaintext store too)
expect_exit 8 sc rekey --generate --new-key-file "$T/genkey"
[ ! -e "$T/genkey" ] || fail "a refused rekey --generate left its key file"
if [ "$mode" = postgres ]; then
	"$STATECTL" keygen "$T/newkey" >/dev/null
	expect_exit 8 sc rekey --new-key-file "$T/newkey"
	expect_match "$err" "cannot be rekeyed in place.*export.*import" "rekey refused"
	# the commands it names work as written: the new schema is made
	# first (it named only export | import, which exits 5, no store)
	expect_match "$err" "statectl --db '...schema=new' init, then statectl export \| statectl --db '...schema=new' import" "rekey's sentence names init"
	expect_exit 8 sc rekey --generate
	[ ! -e "$KEY.new" ] || fail "a refused rekey --generate left $KEY.new"
	# what rekey's sentence says to do works
	STATEFS_KEY="$(tr -d '\n' < "$T/newkey")" "$STATECTL" \
		--db "$STATEFS_TEST_PG schema=${schema}e" init >/dev/null
	sc export | "$STATECTL" --db "$STATEFS_TEST_PG schema=${schema}e" \
		--key-file "$T/newkey" import >/dev/null
	expect_eq "$("$STATECTL" --db "$STATEFS_TEST_PG schema=${schema}e" \
		--key-file "$T/newkey" get s n k)" v "export | import under a new key"

	# --- one damaged item hides no other from a listing: each is named
	# on stderr and left out, the rest listed, exit 4 at the end
	flip() { # TABLE COLUMN ID: what an operator of the server can do
		psql -X -q "$STATEFS_TEST_PG" -c "UPDATE $schema.$1 SET $2 =
		  set_byte($2, 30, get_byte($2, 30) # 1) WHERE id = $3"
	}
	mapfile -t ids < <(sc queue push dq a b c)
	cid=$(sc queue claim dq --max 3 | head -n 1)
	sc queue ack "$cid" "${ids[0]}:reject" "${ids[1]}:reject" "${ids[2]}:reject"
	flip statefs_dead item "${ids[1]}"
	expect_exit 4 sc queue dead dq
	expect_eq "$(cut -f 1,2,4 <<<"$out")" "${ids[0]}	rejected	a
${ids[2]}	rejected	c" "the other dead letters are listed"
	expect_match "$err" "dead letter ${ids[1]} of queue 'dq'.*left out.*failed authentication" \
		"the damaged dead letter is named"
	expect_exit 4 sc --json queue dead dq
	jqe "$out" '[.entries[].value] == ["a", "c"]'
	jqe "$err" '.status == "corrupt" and .exit == 4'
	expect_exit 0 sc queue dead dq --keys-only
	expect_eq "$(cut -f 1 <<<"$out" | tr '\n' ' ')" "${ids[*]} " "--keys-only lists all three"
	expect_exit 0 sc queue dead dq "${ids[2]}"
	expect_eq "$out" c "another dead letter reads"
	expect_exit 4 sc queue dead dq "${ids[1]}"
	# a damaged pending item: listed around, then claimed into the dead
	# letters (reason "damaged"), where the listing still shows the rest
	mapfile -t ids < <(sc queue push dq2 x y z)
	flip work_queue work_item "${ids[1]}"
	expect_exit 4 sc queue scan dq2
	expect_eq "$out" "${ids[0]}	x
${ids[2]}	z" "a queue's other items are listed"
	expect_match "$err" "item ${ids[1]} of queue 'dq2'.*left out" "the damaged item is named"
	cid=$(sc queue claim dq2 --max 3 | head -n 1)
	expect_exit 0 sc queue inflight dq2
	expect_eq "$(cut -f 1 <<<"$out" | tr '\n' ' ')" "${ids[0]} ${ids[2]} " "claimed around it"
	flip statefs_inflight item "${ids[2]}"
	expect_exit 4 sc queue inflight dq2
	expect_eq "$(cut -f 1,5 <<<"$out")" "${ids[0]}	x" "the other item in flight is listed"
	expect_match "$err" "item in flight ${ids[2]} of queue 'dq2'.*left out" \
		"the damaged item in flight is named"
	sc queue nack "$cid"
	expect_exit 4 sc queue dead dq2
	expect_match "$err" "dead letter ${ids[1]} of queue 'dq2'.*left out" \
		"the item the claim found damaged is a dead letter"
	expect_exit 0 sc queue dead dq2 --keys-only
	expect_eq "$(cut -f 1,2 <<<"$out")" "${ids[1]}	damaged" "its reason says so"
	# the same for a namespace's keys (scan) and a log's entries (log scan)
	for k in k1 k2 k3; do sc put s dk "$k" "v$k"; done
	psql -X -q "$STATEFS_TEST_PG" -c "UPDATE $schema.function_state SET
	  value = set_byte(value, 30, get_byte(value, 30) # 1)
	  WHERE ns = 'dk'::bytea AND key = 'k2'::bytea"
	expect_exit 4 sc scan s dk
	expect_eq "$out" "k1	vk1
k3	vk3" "a namespace's other keys are listed"
	expect_match "$err" "key 'k2' in scope 's' namespace 'dk'.*left out" \
		"the damaged key is named"
	expect_exit 4 sc --json scan s dk
	jqe "$out" '[.entries[].key] == ["k1", "k3"]'
	expect_exit 0 sc scan s dk --keys-only
	expect_eq "$(tr '\n' ' ' <<<"$out")" "k1 k2 k3 " "--keys-only lists all three keys"
	mapfile -t ids < <(for e in e1 e2 e3; do sc log append s dk lg "$e"; done)
	flip function_state_log value "${ids[1]}"
	expect_exit 4 sc log scan s dk lg
	expect_eq "$out" "${ids[0]}	e1
${ids[2]}	e3" "a log's other entries are listed"
	expect_match "$err" "entry ${ids[1]} of log 'lg' in scope 's' namespace 'dk'.*left out" \
		"the damaged entry is named"
	# verify names the first damaged row it meets (the key, before the log)
	expect_exit 4 sc verify
	expect_match "$err" "the value of key 'k2' in scope 's' namespace 'dk' failed authentication" \
		"verify names the damaged key"

	# --- a canary never reaches the server in the clear
	canary=canary-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	sc put s n canary "$canary"
	sc log append s n k "$canary" >/dev/null
	sc queue push q "$canary" >/dev/null
	b64=$(printf %s "$canary" | base64)
	hex=$(printf %s "$canary" | od -An -tx1 | tr -d ' \n')
	psql -X -At "$STATEFS_TEST_PG" -c "SELECT value FROM $schema.function_state
	  UNION ALL SELECT value FROM $schema.function_state_log
	  UNION ALL SELECT work_item FROM $schema.work_queue" > "$T/rows"
	for needle in "$canary" "$hex" "${b64%%=*}"; do
		grep -q -- "$needle" "$T/rows" && fail "the canary ($needle) is on the server"
	done
	expect_eq "$(sc get s n canary)" "$canary" "the canary reads back"
fi
echo "ok - cli_pg ($mode)"
