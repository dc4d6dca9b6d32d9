/*
 * error.c - status names, the per-thread error detail, and the logger.
 *
 * The detail is thread-local because one store handle serves many threads
 * (the FUSE daemon): a detail stored in the handle would be overwritten by
 * another thread's call before the first caller read it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err_i.h"

static const char *const status_names[SFS_STATUS_MAX] = {
	[SFS_OK] = "success",
	[SFS_NOTFOUND] = "not found",
	[SFS_INVALID] = "invalid argument",
	[SFS_TOOBIG] = "too large",
	[SFS_OVERFLOW] = "counter or id overflow",
	[SFS_EXISTS] = "already exists",
	[SFS_NOTEMPTY] = "not empty",
	[SFS_BUSY] = "store is busy (locked by another process)",
	[SFS_READONLY] = "store is read-only",
	[SFS_IO] = "I/O error",
	[SFS_FULL] = "no space left on device",
	[SFS_CORRUPT] = "store is corrupt or was tampered with",
	[SFS_WRONGKEY] = "wrong key",
	[SFS_NOKEY] = "store is encrypted and no key was given",
	[SFS_NOTENCRYPTED] = "store is not encrypted",
	[SFS_FORMAT] = "not a statefs store or unsupported format",
	[SFS_KEYPERM] = "key file is accessible by other users",
	[SFS_NOMEM] = "out of memory",
	[SFS_CLAIMLOST] = "claim lost",
	[SFS_CANCELLED] = "cancelled",
	[SFS_UNSUPPORTED] = "not supported by this store's backend",
	[SFS_INTERNAL] = "internal error",
	[SFS_BADKEY] = "not a usable key",
};

const char *sfs_strerror(int status)
{
	if (status < 0 || status >= SFS_STATUS_MAX || !status_names[status])
		return "unknown status";
	return status_names[status];
}

static _Thread_local char detail[512];

const char *sfs_errdetail(void)
{
	return detail;
}

void sfs_err_clear(void)
{
	detail[0] = '\0';
}

/* A detail longer than the buffer keeps its first HEAD bytes and its end,
 * joined by CUT. */
#define HEAD 160
#define CUT " [...] "

int sfs_err(int status, const char *fmt, ...)
{
	char *whole = NULL;
	va_list ap;
	int n;

	if (status == SFS_OK || !fmt) {
		detail[0] = '\0';
		return status;
	}
	va_start(ap, fmt);
	n = vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(detail)) {
		/* Too long (a long path): the end says what happened, so the
		 * middle goes. */
		va_start(ap, fmt);
		if (vasprintf(&whole, fmt, ap) >= 0) {
			size_t tail = sizeof(detail) - HEAD - sizeof(CUT);

			memcpy(detail + HEAD, CUT, sizeof(CUT) - 1);
			memcpy(detail + HEAD + sizeof(CUT) - 1,
			       whole + (size_t)n - tail, tail + 1);
			free(whole);
		}
		va_end(ap);
	}
	sfs_log(LOG_DEBUG, "%s: %s", sfs_strerror(status), detail);
	return status;
}

/* Set before stores are opened (see statefs.h), so read without a lock. */
static sfs_log_fn log_fn;
static void *log_ctx;

void sfs_set_logger(sfs_log_fn fn, void *ctx)
{
	log_fn = fn;
	log_ctx = ctx;
}

void sfs_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fn(level, msg, log_ctx);
}
