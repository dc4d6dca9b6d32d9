#!/usr/bin/python3
"""sdkworker.py - a VGI Python SDK worker's storage operations, driven line
by line, on a store opened with Python's stock sqlite3 module after loading
the statefs extension (libstatefs_sqlite.so) once.

The statements are the SDK's own (vgi-python, function_storage.py,
FunctionStorageSqlite): its connection PRAGMAs, its upserts, its pop
(DELETE ... RETURNING), its scans and counters, on the shared schema. The
store is opened with a plain sqlite3.connect(path): the extension made its
encrypting VFS the default, so nothing in the worker's code knows about
encryption.

Usage: sdkworker.py EXTENSION DB
Reads one command per line on stdin, answers one line on stdout (bytes as
hex; "-" for none):
  put S N K V        -> ok          get S N K       -> V or -
  scan S N           -> K,K,...     append S N K V  -> id
  logscan S N K      -> id:V,...    push Q V...     -> count
  pop Q              -> V or -      popall Q MS     -> V per line, then "end"
  cadd S N K D       -> n           cget S N K      -> n
  cset S N K D       -> ok          check           -> integrity_check
  crash S N K        -> appends forever, one id per committed append
  quit
A failure to load or open prints "error: <SQLite's text>" and exits 3.
"""
import sqlite3
import sys
import time


def h(s):
    return bytes.fromhex(s)


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Storage:
    """The SDK's FunctionStorageSqlite statements, on one connection."""

    def __init__(self, path):
        self.conn = sqlite3.connect(path, timeout=30.0)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL",
                       "busy_timeout=30000", "temp_store=MEMORY",
                       "cache_size=-65536"):
            self.conn.execute("PRAGMA " + pragma)

    def put(self, scope, ns, key, value):
        self.conn.executemany(
            "INSERT INTO function_state (scope_id, ns, key, value)"
            " VALUES (?, ?, ?, ?) ON CONFLICT(scope_id, ns, key)"
            " DO UPDATE SET value = excluded.value",
            [(scope, ns, key, value)])
        self.conn.commit()

    def get(self, scope, ns, key):
        rows = self.conn.execute(
            "SELECT key, value FROM function_state"
            " WHERE scope_id = ? AND ns = ? AND key IN (?)",
            (scope, ns, key)).fetchall()
        return bytes(rows[0][1]) if rows else None

    def scan(self, scope, ns):
        return [bytes(k) for k, _ in self.conn.execute(
            "SELECT key, value FROM function_state"
            " WHERE scope_id = ? AND ns = ? ORDER BY key ASC LIMIT ?",
            (scope, ns, -1)).fetchall()]

    def append(self, scope, ns, key, value):
        row = self.conn.execute(
            "INSERT INTO function_state_log (scope_id, ns, key, value)"
            " VALUES (?, ?, ?, ?) RETURNING id",
            (scope, ns, key, value)).fetchone()
        self.conn.commit()
        return int(row[0])

    def log_scan(self, scope, ns, key):
        return self.conn.execute(
            "SELECT id, value FROM function_state_log WHERE scope_id = ?"
            " AND ns = ? AND key = ? AND id > ? ORDER BY id LIMIT ?",
            (scope, ns, key, -1, -1)).fetchall()

    def push(self, queue, items):
        self.conn.executemany(
            "INSERT INTO work_queue (execution_id, work_item)"
            " VALUES (?, ?)", [(queue, item) for item in items])
        self.conn.commit()
        return len(items)

    def pop(self, queue):
        row = self.conn.execute(
            "DELETE FROM work_queue WHERE id = (SELECT id FROM work_queue"
            " WHERE execution_id = ? ORDER BY id ASC LIMIT 1)"
            " RETURNING work_item", (queue,)).fetchone()
        self.conn.commit()
        return bytes(row[0]) if row else None

    def counter_add(self, scope, ns, key, delta):
        row = self.conn.execute(
            "INSERT INTO function_counter (scope_id, ns, key, n)"
            " VALUES (?, ?, ?, ?) ON CONFLICT(scope_id, ns, key)"
            " DO UPDATE SET n = n + excluded.n RETURNING n",
            (scope, ns, key, delta)).fetchone()
        self.conn.commit()
        return int(row[0])

    def counter_get(self, scope, ns, key):
        row = self.conn.execute(
            "SELECT n FROM function_counter WHERE scope_id = ? AND ns = ?"
            " AND key = ?", (scope, ns, key)).fetchone()
        return int(row[0]) if row else 0

    def counter_set(self, scope, ns, key, value):
        self.conn.execute(
            "INSERT INTO function_counter (scope_id, ns, key, n)"
            " VALUES (?, ?, ?, ?) ON CONFLICT(scope_id, ns, key)"
            " DO UPDATE SET n = excluded.n", (scope, ns, key, value))
        self.conn.commit()


def hexs(b):
    return "-" if b is None else b.hex()


def serve(st):
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        cmd, a = w[0], w[1:]
        if cmd == "put":
            st.put(h(a[0]), h(a[1]), h(a[2]), h(a[3]))
            out("ok")
        elif cmd == "get":
            out(hexs(st.get(h(a[0]), h(a[1]), h(a[2]))))
        elif cmd == "scan":
            out(",".join(k.hex() for k in st.scan(h(a[0]), h(a[1]))))
        elif cmd == "append":
            out(str(st.append(h(a[0]), h(a[1]), h(a[2]), h(a[3]))))
        elif cmd == "logscan":
            out(",".join("%d:%s" % (i, bytes(v).hex())
                         for i, v in st.log_scan(h(a[0]), h(a[1]), h(a[2]))))
        elif cmd == "push":
            out(str(st.push(h(a[0]), [h(x) for x in a[1:]])))
        elif cmd == "pop":
            out(hexs(st.pop(h(a[0]))))
        elif cmd == "popall":
            # MS of work between pops, so that other consumers get some
            while (item := st.pop(h(a[0]))) is not None:
                out(item.hex())
                time.sleep(int(a[1]) / 1000)
            out("end")
        elif cmd == "cadd":
            out(str(st.counter_add(h(a[0]), h(a[1]), h(a[2]), int(a[3]))))
        elif cmd == "cget":
            out(str(st.counter_get(h(a[0]), h(a[1]), h(a[2]))))
        elif cmd == "cset":
            st.counter_set(h(a[0]), h(a[1]), h(a[2]), int(a[3]))
            out("ok")
        elif cmd == "check":
            out(st.conn.execute("PRAGMA integrity_check").fetchone()[0])
        elif cmd == "crash":
            while True:
                out(str(st.append(h(a[0]), h(a[1]), h(a[2]), b"x" * 200)))
        elif cmd == "quit":
            break
        else:
            out("error: unknown command " + cmd)
            return 2
    st.conn.close()
    return 0


def main():
    ext, db = sys.argv[1], sys.argv[2]
    try:
        # Loaded once, into any connection; it stays for the process.
        boot = sqlite3.connect(":memory:")
        boot.enable_load_extension(True)
        boot.load_extension(ext)
        boot.close()
        st = Storage(db)
    except sqlite3.Error as e:
        out("error: %s" % e)
        return 3
    out("ready")
    return serve(st)


if __name__ == "__main__":
    sys.exit(main())
