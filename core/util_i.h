/*
 * util_i.h - the engine's clock and its few file-system helpers (private).
 */
#ifndef STATEFS_UTIL_I_H
#define STATEFS_UTIL_I_H

#include <stdint.h>

/* Wall-clock time in ns since the epoch (CLOCK_REALTIME), the one clock
 * every process on a host shares; used for mtimes, enqueue times and
 * leases. Tests may replace it (NULL restores the real clock). */
int64_t sfs_clock_ns(void);
void sfs_clock_set(int64_t (*fn)(void));

/* The clock for modification times: CLOCK_REALTIME_COARSE, which ticks once
 * per kernel tick (1-10 ms), as the kernel's own file times do. Two writes
 * of a key within one tick show the same mtime, and the second one need not
 * rewrite the time row: a hot key costs one page per commit, not two. The
 * test clock replaces it too. */
int64_t sfs_clock_mtime_ns(void);

/* Creates the missing parent directories of path with mode. SFS_OK or
 * SFS_IO with the detail set. */
int util_mkparents(const char *path, unsigned mode);

/* fsyncs the directory that holds path, so a new or renamed entry in it
 * survives a power loss. */
int util_fsync_parent(const char *path);

/* fsyncs a file by name. */
int util_fsync_file(const char *path);

/* malloc'd "<dir of path>/<prefix><pid>-<random>" for a temporary file
 * beside path, or NULL when out of memory. */
char *util_tmp_beside(const char *path, const char *prefix);

#endif /* STATEFS_UTIL_I_H */
