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
/* 1 while a test clock is set: the PostgreSQL backend then sends it to
 * the server instead of using the server's clock. */
int sfs_clock_is_set(void);

/* The clock for modification times: whole seconds (CLOCK_REALTIME_COARSE
 * truncated to the second, in ns), the resolution of `ls -l`. A time row is
 * rewritten only when the stored second is older than this one, and a log
 * or queue time-map row is added only when this second is later than the
 * latest row's: a key rewritten many times in one second, or a burst of
 * appends, costs one time write (docs/engine.md, "Modification times").
 * The test clock replaces it too (truncated the same way). */
int64_t sfs_clock_mtime_ns(void);

/* Creates the missing parent directories of path with mode. SFS_OK or
 * SFS_IO with the detail set (what it made by then is removed again).
 * *made: the length of the prefix of path that names the shallowest
 * directory it made (0: it made none), for util_rmparents. */
int util_mkparents(const char *path, unsigned mode, size_t *made);

/* Undoes util_mkparents(path, ..., &made) after a creation that failed:
 * removes the directories it made, deepest first, each only if it is
 * still empty (rmdir), and stops at the first that is not. errno is kept. */
void util_rmparents(const char *path, size_t made);

/* *out = path made absolute, malloc'd: a relative path is resolved
 * against the working directory now, so that a process that changes it
 * later (a daemon going to "/") still names the same file. The directory
 * part goes through realpath, the last name stays as given (a symlinked
 * store is still opened through its link); a directory that does not
 * exist yet is taken as given, after the working directory. SFS_OK,
 * SFS_NOMEM, or SFS_IO (no working directory) with the detail set. */
int util_abspath(const char *path, char **out);

/* fsyncs the directory that holds path, so a new or renamed entry in it
 * survives a power loss. */
int util_fsync_parent(const char *path);

/* fsyncs a file by name. */
int util_fsync_file(const char *path);

/* malloc'd "<dir of path>/<prefix><pid>-<random>" for a temporary file
 * beside path, or NULL when out of memory. First removes the files of
 * that name (and their -journal, -wal, -shm) that a process now gone left
 * there (killed by SIGKILL) and that have not changed for ten minutes. */
char *util_tmp_beside(const char *path, const char *prefix);

#endif /* STATEFS_UTIL_I_H */
