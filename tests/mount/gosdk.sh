#!/usr/bin/env bash
# gosdk.sh - a plaintext store as the VGI Go SDK's SQLite backend writes it
# (its four tables only, BLOB columns, no statefs tables) mounts with
# -o plaintext and shows its state: worker state under decimal ids, attach
# state, the "log" namespace, counters and a queue. Usage: see lib.sh.
# The SDK's queue statements run on the mounted store: exactly once with
# the mount's claims, and its clear reaches items in flight.
# Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

[ "$mode" = plain ] || fail "a Go SDK store is plaintext: run with STATEFS_TEST_MODE=plain"
command -v sqlite3 > /dev/null || fail "sqlite3 is not installed (scripts/deps)"

b() { printf "CAST('%s' AS BLOB)" "$1"; }
sqlite3 "$STATEFS_DB" <<EOF
PRAGMA journal_mode=WAL;
CREATE TABLE work_queue (id INTEGER PRIMARY KEY AUTOINCREMENT,
  execution_id BLOB NOT NULL, work_item BLOB NOT NULL);
CREATE INDEX idx_work_queue_execution ON work_queue(execution_id, id);
CREATE TABLE function_state (scope_id BLOB NOT NULL, ns BLOB NOT NULL,
  key BLOB NOT NULL, value BLOB NOT NULL, PRIMARY KEY (scope_id, ns, key));
CREATE TABLE function_state_log (id INTEGER PRIMARY KEY AUTOINCREMENT,
  scope_id BLOB NOT NULL, ns BLOB NOT NULL, key BLOB NOT NULL,
  value BLOB NOT NULL);
CREATE INDEX idx_function_state_log_lookup
  ON function_state_log(scope_id, ns, key, id);
CREATE TABLE function_counter (scope_id BLOB NOT NULL, ns BLOB NOT NULL,
  key BLOB NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (scope_id, ns, key));
INSERT INTO function_state VALUES
  ($(b exec-1), $(b worker), X'00000000000004D2', $(b 'worker 1234 state')),
  ($(b exec-1), $(b worker), X'FFFFFFFFFFFFFFFF', $(b 'worker -1 state')),
  ($(b exec-1), $(b agg), X'0000000000000007', $(b 'group 7')),
  ($(b attach), $(b rows), $(b r1), $(b 'row one'));
INSERT INTO function_state_log (scope_id, ns, key, value) VALUES
  ($(b exec-1), $(b log), $(b batch), $(b 'first')),
  ($(b exec-1), $(b log), $(b batch), $(b 'second'));
INSERT INTO function_counter VALUES ($(b attach), $(b stats), $(b hits), 5);
INSERT INTO work_queue (execution_id, work_item) VALUES
  ($(b exec-1), $(b job-a)), ($(b exec-1), $(b job-b));
EOF

mount_fs
cd "$mnt"
expect_eq "$(ls | tr '\n' ' ')" "attach counter exec exec-1 queue " "scopes"
expect_eq "$(ls exec-1/worker | sort | tr '\n' ' ')" "-1 1234 " "worker ids in decimal"
expect_eq "$(cat exec-1/worker/1234)" "worker 1234 state" "worker state"
expect_eq "$(cat exec-1/agg/7)" "group 7" "aggregate state"
expect_eq "$(cat attach/rows/r1)" "row one" "attach state"
expect_eq "$(for e in exec/exec-1/log/batch/*; do cat "$e"; echo; done | tr '\n' ,)" \
  "first,second," "the SDK's log"
expect_eq "$(cat counter/attach/stats/hits)" 5 "a counter"
expect_eq "$(for i in queue/exec-1/*; do cat "$i"; echo; done | tr '\n' ,)" \
  "job-a,job-b," "the queue"
expect_eq "$(stat -c %Y exec-1/worker/1234)" 0 "no mtime: the epoch"
ok "a Go SDK store mounts and shows its state"

# And the SDK reads what the mount writes (same tables, same encodings).
echo 'new state' > exec-1/worker/99
echo job-c > queue/exec-1/new
cd /
unmount_fs
expect_eq "$(sqlite3 "$STATEFS_DB" "SELECT value FROM function_state WHERE key = X'0000000000000063'")" \
  "new state" "a worker row as the SDK stores it"
expect_eq "$(sqlite3 "$STATEFS_DB" "SELECT count(*) FROM work_queue")" 3 "queue rows"
ok "what the mount writes is in the SDK's tables"

# The SDK's own queue statements on the mounted store (issue 10 item 10):
# a pop never gets what the mount holds under a claim, and the SDK's clear
# reaches it: the claim's holder gives it back (mv inflight/X ..), and it
# does not come back for a worker to pop; one not cleared does.
sdk() {
  sqlite3 -cmd '.timeout 30000' "$STATEFS_DB" "$1"
}
pop="DELETE FROM work_queue WHERE id = (SELECT id FROM work_queue WHERE
  execution_id = CAST('exec-1' AS BLOB) ORDER BY id ASC LIMIT 1) RETURNING
  CAST(work_item AS TEXT)"
mount_fs
q=$mnt/queue/exec-1
for i in 1 2 3; do echo "item $i" > "$q/new"; done
expect_eq "$(ls "$q" | wc -l)" 6 "the queue with the mount's three"
n=$(cat "$q/.claim")                      # job-a, in flight
expect_eq "$(sdk "$pop")" job-b "the SDK pops past the claimed item"
expect_eq "$(sdk "DELETE FROM work_queue WHERE execution_id = CAST('exec-1' AS BLOB)")" "" "the SDK's clear"
expect_eq "$(ls "$q" | wc -l)" 0 "cleared"
mv "$q/inflight/$n" "$q/"                 # the holder gives it back
expect_eq "$(ls "$q" | wc -l)" 0 "a cleared item does not come back"
expect_eq "$(sdk "$pop")" "" "nothing for the SDK to pop"
echo again > "$q/new"
n=$(cat "$q/.claim")
expect_eq "$(sdk "$pop")" "" "the SDK does not pop what is in flight"
mv "$q/inflight/$n" "$q/"
expect_eq "$(sdk "$pop")" again "an item not cleared comes back"
expect_eq "$(sdk "SELECT count(*) FROM work_queue")" 0 "no row left behind"
unmount_fs
ok "the SDK's queue clear reaches items in flight; its pops stay exactly once"
