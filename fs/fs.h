/*
 * fs.h - the statefs filesystem as the daemon sees it: a table of libfuse
 * low-level operations over one open store.
 *
 * mountd/ creates an fs over a store it opened, hands fs_lowlevel_ops() and
 * the fs to fuse_session_new(), runs the session, and destroys the fs after
 * the session. Everything about the tree, names, caches and handles is
 * inside; docs/filesystem.md describes it.
 */
#ifndef STATEFS_FS_H
#define STATEFS_FS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "statefs.h"

typedef struct fs fs;

typedef struct fs_config {
	sfs_store *store;      /* borrowed; must outlive the fs; may be NULL
	                          until fs_set_store */
	int readonly;          /* refuse every change with EROFS */
	uint64_t max_value;    /* largest value, entry or item (EFBIG above);
	                          0: SFS_DEFAULT_MAX_VALUE */
	uint64_t max_buffered; /* bound on the bytes that files open for
	                          writing hold before their commit (ENOBUFS
	                          past it); 0: fs_default_max_buffered */
	int64_t lease_ms;      /* the lease of claims made through the mount
	                          (.claim, mv into inflight/, touch); 0: the
	                          store's (ten minutes unless set) */
	unsigned umask;        /* cleared from every mode shown (docs/
	                          filesystem.md, "Metadata"); the daemon's
	                          default is 077 */
	int async_close;       /* close(2) answered before its commit,
	                          which follows when the mount is idle
	                          (docs/filesystem.md, "-o async_close");
	                          fs_loop only */
	sfs_log_fn log;        /* diagnostics; NULL: silent */
	void *log_ctx;
} fs_config;

/* The default bound on buffered bytes: 256 MiB, or max_value when that is
 * larger (one value of the largest size must fit). */
#define FS_DEFAULT_MAX_BUFFERED (256ull << 20)
static inline uint64_t fs_default_max_buffered(uint64_t max_value)
{
	return max_value > FS_DEFAULT_MAX_BUFFERED ? max_value
	                                           : FS_DEFAULT_MAX_BUFFERED;
}

/* Creates the filesystem state. Returns 0 or an errno (ENOMEM). The
 * store may be given later, with fs_set_store, but before the session
 * loop: the daemon validates the mount options (fuse_session_new, which
 * needs the fs) before it opens, or creates, a store. */
int fs_create(const fs_config *cfg, fs **out);
void fs_set_store(fs *f, sfs_store *store);

/* The operations to pass to fuse_session_new() with the fs as userdata.
 * Static; valid for the life of the process. */
const struct fuse_lowlevel_ops *fs_lowlevel_ops(void);

/* Serves the session until it ends (fuse_session_exit, which the session's
 * signal handlers call; an unmount) with a pool of threads threads (2 or
 * more) of which one reads the device at a time, and one is kept reading
 * while a handler must hear an interrupt (loop.c): for a store that runs
 * one call at a time, where libfuse's pool of readers only hands each
 * request from thread to thread. The caller's thread waits; only it takes
 * SIGINT, SIGTERM and SIGHUP meanwhile. Returns 0 or a negative errno,
 * with the fs stopped (fs_stop). */
int fs_loop(fs *f, struct fuse_session *se, unsigned threads);

/* Answers every request the fs keeps (blocked .wait reads get ENOTCONN)
 * and stops its thread. Call when the session loop has returned, before
 * fuse_session_unmount closes the device the answers go to. (The session's
 * destroy does it too, late, if this was not called.) */
void fs_stop(fs *f);

/* The daemon's timer, once a second while the session runs (and once
 * after it): acks again the items a .pop, a .wait or a drain delivered
 * whose ack failed, a PostgreSQL server out of reach for longer than the
 * busy timeout, so that an outage shorter than the pop's lease delivers
 * no item twice. Each goes once it is settled, or when the store says its
 * claim has ended (its lease ran out: the item is back in its queue). */
void fs_tick(fs *f);

/* Frees everything. Call after fuse_session_destroy(), which has already
 * called the operations' destroy: that answers every request the fs was
 * keeping (blocked .wait reads). NULL is fine. */
void fs_destroy(fs *f);

#endif /* STATEFS_FS_H */
