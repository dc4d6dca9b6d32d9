/*
 * faultvfs.h - a SQLite VFS for the unit tests that makes I/O fail on
 * demand, so that the engine's error paths are tested, not hoped for.
 *
 * faultvfs_register() wraps the VFS that is SQLite's default at that
 * moment ("unix") and becomes the default itself, so every store opened
 * afterwards sits on it: a plaintext store directly, an encrypted one under
 * the encrypting VFS (which wraps whatever is the default). Until it is
 * armed every call passes through unchanged; armed, the Nth read, write or
 * sync (counting only the operations armed) fails as the kind says. It also
 * counts the writes to WAL files by size (faultvfs_wal_writes). Its io
 * methods are version 2 (no xFetch), so every page goes through xRead and
 * xWrite.
 *
 * One process-wide switch, not locked: arm and disarm from the test's
 * thread while no other thread uses a store.
 */
#ifndef STATEFS_TEST_FAULTVFS_H
#define STATEFS_TEST_FAULTVFS_H

/* The operations a fault applies to (or'ed). */
enum { FAULT_READ = 1, FAULT_WRITE = 2, FAULT_SYNC = 4 };

typedef enum fault_kind {
	FAULT_EIO,         /* the Nth call fails with an I/O error, once */
	FAULT_EIO_ALWAYS,  /* the Nth call and every later one: I/O errors */
	FAULT_FULL,        /* a full disk from the Nth call on: writes fail
	                    * with SQLITE_FULL, reads and syncs with an I/O
	                    * error */
	FAULT_TORN,        /* the Nth write stores half its bytes, then fails
	                    * with an I/O error, once */
	FAULT_FULL_ONCE,   /* the Nth write fails with SQLITE_FULL, once:
	                    * the room a delete finds when it runs again
	                    * after the store gave back its reserve */
} fault_kind;

/* Registers the fault VFS as SQLite's default; call before any store
 * opens (a cmocka group setup). Returns 0, or -1. */
int faultvfs_register(void);
/* Unregisters it; the VFS it wrapped is the default again. */
void faultvfs_unregister(void);
/* Arms a fault: the nth (>= 1) call among ops fails as kind says. The
 * count of failures starts again at 0. */
void faultvfs_arm(int ops, fault_kind kind, long nth);
/* Every call passes through again. */
void faultvfs_disarm(void);
/* How many calls failed since the last faultvfs_arm. */
int faultvfs_fired(void);

/* Calls fn(ctx) once, after the next lock a file could not take
 * (SQLITE_BUSY), before that lock's caller hears of it: a test ends
 * another connection's lock at the moment this one found it held.
 * NULL: none. */
void faultvfs_on_busy(void (*fn)(void *), void *ctx);

/* Calls fn(ctx) once, after a connection lets go of its last lock on a
 * file that is not empty (a new store's tables committed), before it
 * goes on. NULL: none. */
void faultvfs_on_unlock(void (*fn)(void *), void *ctx);

/* Counting, armed or not: how many writes of amt bytes reached WAL files
 * since the last faultvfs_count_reset (so a test sees the system calls an
 * encrypting VFS above makes, not the calls SQLite makes to it). */
void faultvfs_count_reset(void);
long faultvfs_wal_writes(int amt);

#endif
