#!/usr/bin/env bash
# cli_sqlext.sh: the sqlite3 shell with the statefs extension
# (libstatefs_sqlite.so) on an encrypted store that statectl made and
# reads: integrity_check and .dump through it, "file is not a database"
# without it, the hint when the shell opened the store before the load,
# writes through it that statectl reads and verifies, a new store made
# through it (reserve, no plaintext header), temporary files refused when
# temp_store is set back to FILE, mmap off, the URI-only entry point,
# plaintext files refused by default and open with ?vfs=unix, STATEFS_KEY
# in a Python host (wiped from environ, kept in os.environ until the host
# deletes it), a wrong key and a tampered page; docs/encryption.md's
# sqlite3 line, as copied, on the default store.
# Environment: see lib.sh; STATEFS_SQLITE_EXT, the extension. Encrypted
# mode only. Exit: 0 pass, 1 fail.
. "$(dirname "$0")/lib.sh"

: "${STATEFS_SQLITE_EXT:?}"
[ "$mode" = encrypted ] || fail "the extension is for encrypted stores"
command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (scripts/deps)"
sanitized_host sqlite3
ext=$STATEFS_SQLITE_EXT
export STATEFS_KEY_FILE=$KEY   # the extension finds the key by the rules
make_store
sc put jobs cfg retries 3
sc queue push work a b c >/dev/null

# expect_fail CMD...: CMD fails (the sqlite3 shell exits with SQLite's
# error code); its output in $out and $err.
expect_fail() {
	local got=0
	"$@" >"$T/.out" 2>"$T/.err" || got=$?
	out=$(cat "$T/.out") err=$(cat "$T/.err")
	[ "$got" -ne 0 ] || fail "succeeded, wanted a failure: $*"
}

# sql DB SQL...: the shell, the extension loaded, DB opened after it.
sql() {
	local db=$1
	shift
	sqlite3 -bail -cmd ".load $ext" -cmd ".open $db" :memory: "$@"
}

# --- through the extension: integrity check, .dump, reads
expect_exit 0 sql "$DB" "PRAGMA integrity_check"
expect_eq "$out" ok "integrity_check through the extension"
expect_exit 0 sql "$DB" .dump
expect_match "$out" "CREATE TABLE function_state" ".dump shows the schema"
expect_match "$out" "X'$(printf retries | od -An -tx1 | tr -d ' \n')'" ".dump shows the key"
expect_exit 0 sql "$DB" "SELECT count(*) FROM work_queue"
expect_eq "$out" 3 "the queue"

# --- docs/encryption.md's sqlite3 line as a user copies it, on the default
# store, the extension found by its bare name as once installed ('.open
# ~/...' opened nothing: the shell's .open does not expand ~)
mkdir -p "$XDG_STATE_HOME/statefs"
sc checkpoint "$XDG_STATE_HOME/statefs/state.db" >/dev/null
doc_line=$(grep -m1 "^sqlite3 -cmd '.load libstatefs_sqlite' -cmd [\"'].open" "$(dirname "$0")/../../docs/encryption.md") ||
	fail "docs/encryption.md has no sqlite3 line on the default store"
expect_exit 0 env LD_LIBRARY_PATH="$(dirname "$ext")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	bash -c "$doc_line" <<<"SELECT count(*) FROM work_queue;"
expect_eq "$out" 3 "docs/encryption.md's sqlite3 line reads the default store"

# --- without it: SQLite's own words
expect_fail sqlite3 "$DB" "PRAGMA integrity_check"
expect_match "$err" "file is not a database" "without the extension"
# The shell opens the file named on its command line before -cmd runs,
# and SQLite cannot move an open connection to another VFS: the load says
# so and how to open the store again.
expect_exit 0 sqlite3 -cmd ".load $ext" "$DB" "SELECT 1"
expect_match "$err" "was opened before the statefs extension was loaded" "the hint"
expect_match "$err" "\\.open $DB" "the hint names .open"

# --- writes through the extension: statectl reads them, every page
# authenticates
expect_exit 0 sql "$DB" "INSERT INTO function_state VALUES (CAST('jobs' AS BLOB), CAST('cfg' AS BLOB), CAST('owner' AS BLOB), CAST('sql' AS BLOB))"
expect_exit 0 sc get jobs cfg owner
expect_eq "$out" sql "statectl reads a row the shell wrote"
expect_exit 0 sc verify
expect_match "$out" "ok" "the store verifies after writes through the extension"

# --- a new store made through the extension: encrypted, with the reserve,
# and statectl opens it
new=$T/new.db
expect_exit 0 sql "$new" "PRAGMA journal_mode=WAL" \
	"CREATE TABLE work_queue (id INTEGER PRIMARY KEY AUTOINCREMENT, execution_id BLOB NOT NULL, work_item BLOB NOT NULL)" \
	"CREATE TABLE function_state (scope_id BLOB NOT NULL, ns BLOB NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL, PRIMARY KEY (scope_id, ns, key))" \
	"CREATE TABLE function_state_log (id INTEGER PRIMARY KEY AUTOINCREMENT, scope_id BLOB NOT NULL, ns BLOB NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL)" \
	"CREATE TABLE function_counter (scope_id BLOB NOT NULL, ns BLOB NOT NULL, key BLOB NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (scope_id, ns, key))" \
	"INSERT INTO function_state VALUES (X'73', X'6e', X'6b', CAST('made by sqlite3' AS BLOB))"
[ "$(head -c 15 "$new")" != "SQLite format 3" ] || fail "a new file has a plaintext header"
expect_eq "$(od -An -j20 -N1 -tu1 "$new" | tr -d ' ')" 48 "the reserve of a new file"
expect_exit 0 "$STATECTL" --db "$new" --key-file "$KEY" get s n k
expect_eq "$out" "made by sqlite3" "statectl reads a store the shell made"
expect_exit 0 "$STATECTL" --db "$new" --key-file "$KEY" verify

# --- the settings the engine sets hold, or fail closed
expect_exit 0 sql "$DB" "PRAGMA temp_store"
expect_eq "$out" 2 "temp_store is MEMORY on a foreign connection"
expect_exit 0 sql "$DB" "VACUUM" "PRAGMA integrity_check"
expect_eq "$out" ok "VACUUM in memory"
# 4 MB of rows: more than a temporary database's cache, so a VACUUM with
# temp_store=FILE would spill plaintext pages to a temporary file
expect_exit 0 sql "$DB" "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000) INSERT INTO function_state SELECT CAST('big' AS BLOB), CAST('n' AS BLOB), CAST(x AS BLOB), randomblob(1000) FROM c"
expect_fail sql "$DB" "PRAGMA temp_store=FILE" "VACUUM"
expect_match "$err" "unable to open" "VACUUM through a temporary file is refused"
expect_exit 0 sql "$DB" "VACUUM" "PRAGMA integrity_check"
expect_eq "$out" ok "VACUUM in memory, after the refused one"
expect_exit 0 sql "$DB" "PRAGMA mmap_size=1048576" "SELECT count(*) FROM function_state"
expect_eq "$out" $'0\n4002' "mmap stays off"

# --- the URI-only entry point: the default VFS is left alone
expect_fail sqlite3 -bail -cmd ".load $ext sqlite3_statefs_uri_init" \
	-cmd ".open $DB" :memory: "SELECT count(*) FROM work_queue"
expect_match "$err" "is an encrypted statefs store, and this connection opened it through the VFS 'unix'" "a plain open in URI mode"
expect_exit 0 sqlite3 -bail -cmd ".load $ext sqlite3_statefs_uri_init" \
	-cmd ".open file:$DB?vfs=statefs" :memory: "SELECT count(*) FROM work_queue"
expect_eq "$out" 3 "?vfs=statefs"

# --- plaintext files: refused through the default VFS, open with vfs=unix
sqlite3 "$T/plain.db" "CREATE TABLE t(a); INSERT INTO t VALUES (42)"
expect_fail sql "$T/plain.db" "SELECT a FROM t"
expect_match "$err" "$T/plain.db is not encrypted, but a key was given" "a plaintext file"
expect_exit 0 sql "file:$T/plain.db?vfs=unix" "SELECT a FROM t"
expect_eq "$out" 42 "?vfs=unix"

# --- a wrong key, a key file others can read
expect_fail env STATEFS_KEY="$(head -c 32 /dev/urandom | base64)" sqlite3 -bail \
	-cmd ".load $ext" -cmd ".open $DB" :memory: "SELECT count(*) FROM work_queue"
expect_match "$err" "wrong key: the key given does not open $DB" "wrong key"
cp "$KEY" "$T/open-key"
chmod 644 "$T/open-key"
expect_fail env STATEFS_KEY_FILE="$T/open-key" sqlite3 -bail -cmd ".load $ext" -cmd ".open $DB" :memory: "SELECT count(*) FROM work_queue"
expect_match "$err" "key file $T/open-key has mode 0644" "a key file others can read"

# --- STATEFS_KEY in a Python host (docs/encryption.md, "The key"): the
# extension wipes it from the C environment, which a child started without
# env= inherits; Python's os.environ keeps its own copy, and a child given
# env=dict(os.environ) gets the key, until the host deletes that copy as
# the page says.
py=/usr/bin/python3
if [ -x "$py" ] && "$py" -c 'import sqlite3; sqlite3.connect(":memory:").enable_load_extension' 2>/dev/null; then
	if [ -n "${STATEFS_TEST_PRELOAD:-}" ]; then
		printf '#!/bin/sh\nLD_PRELOAD=%s ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 exec %s "$@"\n' \
			"$STATEFS_TEST_PRELOAD" "$py" >"$T/python3"
		chmod +x "$T/python3"
		py=$T/python3
	fi
	cat >"$T/envkey.py" <<'PY'
import os, sqlite3, subprocess, sys
def child_has_key(**kw):
    out = subprocess.run(["env"], capture_output=True, text=True, **kw).stdout
    return any(l.startswith("STATEFS_KEY=") for l in out.splitlines())
boot = sqlite3.connect(":memory:")
boot.enable_load_extension(True)
boot.load_extension(sys.argv[1])
n = sqlite3.connect(sys.argv[2]).execute("SELECT count(*) FROM work_queue").fetchone()[0]
with open(sys.argv[3], "rb") as f:
    key = f.read().strip()
with open("/proc/self/environ", "rb") as f:
    proc = key in f.read()
print(n, proc, child_has_key(), "STATEFS_KEY" in os.environ,
      child_has_key(env=dict(os.environ, W="1")))
os.environ.pop("STATEFS_KEY", None)
print(child_has_key(env=dict(os.environ, W="1")))
PY
	expect_exit 0 env -u STATEFS_KEY_FILE STATEFS_KEY="$(cat "$KEY")" \
		"$py" "$T/envkey.py" "$ext" "$DB" "$KEY"
	expect_eq "$out" $'3 False False True True\nFalse' \
		"STATEFS_KEY: wiped from environ, kept in os.environ until deleted"
else
	echo "no python3 with enable_load_extension: the os.environ check skipped"
fi

# --- a tampered page: refused, and SQLite's log names it
cp "$DB" "$T/bad.db"
# every bit of the byte flipped: a fixed byte left the page as it was
# whenever the ciphertext already held it there (1 run in 256)
off=$((4096 + 300))
b=$(od -An -tu1 -j "$off" -N1 "$T/bad.db")
printf "\\$(printf %03o $((b ^ 255)))" |
	dd of="$T/bad.db" bs=1 seek="$off" conv=notrunc status=none
cmp -s "$DB" "$T/bad.db" && fail "the tampered copy is the same as the store"
expect_fail sqlite3 -bail -cmd ".log stderr" -cmd ".load $ext" -cmd ".open $T/bad.db" :memory: "PRAGMA integrity_check"
expect_match "$err" "page 2 of $T/bad.db failed authentication" "a tampered page"
echo "cli_sqlext: ok"
