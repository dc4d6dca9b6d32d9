/*
 * duration.c - fs_duration_parse (text.h): a lease or time-to-live as a
 * person writes it, for the mount's options and statectl's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* The engine refuses leases longer than this (statefs.h, "Claims"). */
#define MAX_MS (1000LL * 3600 * 24 * 365 * 100)

int fs_duration_parse(const char *text, int64_t *ms)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = {
		{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
		{ "h", 3600000 }, { "d", 86400000 },
	};
	char *end;
	long long v;

	if (!text || !ms || *text < '0' || *text > '9')
		return SFS_INVALID;
	errno = 0;
	v = strtoll(text, &end, 10);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (errno || v > MAX_MS / units[i].ms)
			return SFS_TOOBIG;
		*ms = (int64_t)v * units[i].ms;
		return SFS_OK;
	}
	return SFS_INVALID;
}
