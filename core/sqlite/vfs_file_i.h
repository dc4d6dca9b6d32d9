/*
 * vfs_file_i.h - the page-encrypting VFS's open file, shared by its two
 * halves (private to core/sqlite/): vfs.c (the main database file, the
 * io methods and the VFS itself) and vfs_log.c (the WAL and the rollback
 * journal). vfs.c's header comment has the rules both follow.
 */
#ifndef STATEFS_SQLITE_VFS_FILE_I_H
#define STATEFS_SQLITE_VFS_FILE_I_H

#include <pthread.h>
#include <sys/types.h>

#include <sqlite3.h>

#include "crypt/page_i.h"
#include "err_i.h"

struct crypt_vfs {
	sqlite3_vfs base;          /* first: SQLite sees this */
	sqlite3_vfs *real;
	sfs_key *key;              /* our copy, locked memory */
	char name[48];
	pthread_mutex_t mu;        /* guards mains */
	struct cfile *mains;       /* open main database files */
};

enum cf_type { CF_DB = 1, CF_WAL, CF_JOURNAL, CF_PASS };
enum salt_state { SALT_NONE, SALT_PROVISIONAL, SALT_KNOWN };

typedef struct cfile {
	sqlite3_file base;
	struct crypt_vfs *vfs;
	sqlite3_file *real;        /* right after this struct */
	enum cf_type type;
	const char *zname;
	unsigned char *buf;        /* work buffer, P + 24 bytes */
	size_t bufsz;

	/* CF_DB only. */
	struct cfile *next;        /* in vfs->mains */
	struct cfile *wal;         /* this connection's WAL, while open */
	cp_filekey *fk;            /* keys for the salt below */
	enum salt_state salt;
	uint32_t P;                /* page size, 0 until known */
	dev_t dev;                 /* the file opened (replaced_since) */
	ino_t ino;
	/* A run of writes that rewrote page 1 (a checkpoint, a commit in
	 * rollback mode): the size in pages page 1 had on disk before, and
	 * the size it was given (db_floor, db_run_end). */
	int p1_run;
	uint32_t p1_floor;
	uint32_t p1_size;
	int in_ckpt;               /* between CKPT_START and CKPT_DONE */

	/* CF_WAL, CF_JOURNAL: the main file. */
	struct cfile *main;

	/* CF_WAL: the WAL header and the last frame header written. */
	unsigned char walhdr[CP_WAL_HDR];
	int walhdr_ok;
	unsigned char fhdr[CP_FRAME_HDR];
	sqlite3_int64 fhdr_off;    /* -1: none cached */
	int fhdr_held;             /* fhdr is not on disk yet (wal_write) */
	sqlite3_int64 frame_rd;    /* the last call read a whole frame at
	                            * this offset; -1: it did not */
	/* CF_WAL: a recovery scan (frames read whole from frame 1 after the
	 * header): the frame it reads next (0: none) and the checksum chain
	 * through the frame before it. Any write ends it. */
	uint32_t rec_next;
	uint32_t rec_ck[2];

	/* CF_JOURNAL: the last 4-byte field written or read (page number). */
	unsigned char jpg[4];
	sqlite3_int64 jpg_off;     /* -1: none cached */
} cfile;

/* vfs.c: leaves msg for the SQL layer (crypt_last_error), logs it, and
 * returns sqlite_rc. */
SFS_PRINTF(2, 3)
int cv_fail(int sqlite_rc, const char *fmt, ...);
/* vfs.c: f's work buffer holds at least need bytes. */
int cf_buf(cfile *f, size_t need);
/* vfs.c: the main file's keys and page size are known (salt read). */
int main_ready(cfile *m);

/* vfs_log.c: the held WAL frame header of f (a WAL, or a main file with
 * its connection's WAL open) goes to disk. */
int cf_flush(cfile *f);
/* vfs_log.c: a WAL's and a rollback journal's reads and writes. */
int wal_write(cfile *w, const void *in, int amt, sqlite3_int64 off);
int wal_read(cfile *w, void *out, int amt, sqlite3_int64 off);
int journal_write(cfile *j, const void *in, int amt, sqlite3_int64 off);
int journal_read(cfile *j, void *out, int amt, sqlite3_int64 off);

#endif
