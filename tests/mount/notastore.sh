#!/usr/bin/env bash
# notastore.sh - the daemon never makes a new store over a file that is
# not one (issue 10 item 8): an empty file becomes a store, but a store cut
# short (an empty file whose write-ahead log still holds frames), a SQLite
# database with pages and no tables (what a store looks like after losing
# its tables with its log), and someone else's database are refused at
# start with a sentence, nothing is mounted, and not a byte of the file or
# its log changes. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

# Runs the daemon expecting it to refuse; $out gets its stderr. A daemon
# that mounts instead fails the test at once (the cleanup unmounts it).
refused() {
  local pid rc=0
  "$STATEFS_BIN" -f "${mode_opts[@]}" "$mnt" 2>"$work/refused.err" &
  pid=$!
  for _ in $(seq 1200); do
    if mountpoint -q "$mnt"; then
      daemon_pid=$pid
      fail "mounted anyway"
    fi
    kill -0 "$pid" 2>/dev/null || break
    nap 0.05
  done
  kill -0 "$pid" 2>/dev/null && fail "the daemon neither mounted nor exited in 60 s"
  wait "$pid" || rc=$?
  [ "$rc" -ne 0 ] || fail "the daemon exited 0 without mounting"
  out=$(cat "$work/refused.err")
}

sums() {
  sha256sum "$STATEFS_DB"* 2>/dev/null | grep -v -- '-shm$' | sed "s|$work||"
}

# An empty file is a store not made yet: the daemon makes it.
: > "$STATEFS_DB"
mount_fs
mkdir -p "$mnt/s/n"
echo hello > "$mnt/s/n/k"
expect_eq "$(cat "$mnt/s/n/k")" hello "a store made in an empty file"
unmount_fs
ok "an empty file becomes a store"

# A store cut short: frames in its log, the file itself emptied.
mount_fs
mkdir -p "$mnt/s/n"
for i in $(seq 20); do echo "value $i" > "$mnt/s/n/k$i"; done
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"
[ -s "$STATEFS_DB-wal" ] || fail "the killed daemon left no write-ahead log"
: > "$STATEFS_DB"
before=$(sums)
refused
grep -q "write-ahead log" <<<"$out" || fail "no sentence about the log: $out"
expect_eq "$(sums)" "$before" "the store's files after the refusal"
ok "a store cut short is refused and left as it is"

if [ "$mode" = plain ]; then
  command -v sqlite3 > /dev/null || fail "sqlite3 is not installed (scripts/deps)"
  # A store whose tables lived only in its log (as SQLite makes any WAL
  # database), its log's header damaged: SQLite ignores the log, so the
  # file has page 1 and no tables.
  rm -f "$STATEFS_DB"*
  sqlite3 "$STATEFS_DB" '.dbconfig no_ckpt_on_close on' 'PRAGMA journal_mode=WAL' \
    'CREATE TABLE function_state (scope_id BLOB NOT NULL, ns BLOB NOT NULL,
       key BLOB NOT NULL, value BLOB NOT NULL, PRIMARY KEY (scope_id, ns, key))' \
    "INSERT INTO function_state VALUES (CAST('s' AS BLOB), CAST('n' AS BLOB),
       CAST('k' AS BLOB), CAST('kept' AS BLOB))" > /dev/null
  rm -f "$STATEFS_DB-shm"
  printf '\377' | dd of="$STATEFS_DB-wal" bs=1 seek=17 conv=notrunc 2>/dev/null
  before=$(sums)
  refused
  grep -q "no tables" <<<"$out" || fail "no sentence about the tables: $out"
  expect_eq "$(sums)" "$before" "the lost store's files after the refusal"
  ok "a store that lost its tables is refused, its log kept"

  rm -f "$STATEFS_DB"*
  sqlite3 "$STATEFS_DB" 'PRAGMA user_version=7'
  before=$(sums)
  refused
  grep -q "no tables" <<<"$out" || fail "no sentence: $out"
  expect_eq "$(sums)" "$before" "a database without tables"
  rm -f "$STATEFS_DB"*
  sqlite3 "$STATEFS_DB" 'CREATE TABLE mine(x); INSERT INTO mine VALUES (1)'
  before=$(sums)
  refused
  grep -q "not a statefs" <<<"$out" || fail "no sentence: $out"
  expect_eq "$(sums)" "$before" "someone else's database"
  ok "databases that are not stores are refused and left as they are"
fi
