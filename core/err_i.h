/*
 * err_i.h - status details and logging inside the engine (private).
 *
 * Every module reports a failure the same way: it returns an sfs_status and
 * leaves one sentence for sfs_errdetail() with sfs_err(). Operating-system
 * detail (errno, the failing call) goes into that sentence and, at LOG_DEBUG
 * or above, to the logger: never into return values. Nothing here may be
 * given key material.
 */
#ifndef STATEFS_ERR_I_H
#define STATEFS_ERR_I_H

#include <syslog.h>

#include "statefs.h"

#if defined(__GNUC__)
#define SFS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SFS_PRINTF(f, a)
#endif

/* Sets this thread's error detail from a printf format and returns status,
 * so a failure reads `return sfs_err(SFS_IO, "open %s: %s", p, strerror(e));`.
 * With status == SFS_OK the detail is cleared. */
int sfs_err(int status, const char *fmt, ...) SFS_PRINTF(2, 3);

/* Clears this thread's error detail (at the start of a public call). */
void sfs_err_clear(void);

/* Logs through the logger set with sfs_set_logger, if any. */
void sfs_log(int level, const char *fmt, ...) SFS_PRINTF(2, 3);

#endif /* STATEFS_ERR_I_H */
