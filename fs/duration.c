/*
 * duration.c - fs_duration_parse and fs_size_parse (text.h): a lease or
 * time-to-live, and a size, as a person writes them, for the mount's
 * options and statectl's.
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

uint64_t fs_size_parse(const char *s)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return 0;
	switch (*end) {
	case 'k': case 'K': mult = 1024; end++; break;
	case 'm': case 'M': mult = 1024 * 1024; end++; break;
	case 'g': case 'G': mult = 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'i' && mult > 1 && end[1] == 'B')
		end += 2; /* "64MiB" */
	if (*end || v > UINT64_MAX / mult)
		return 0;
	return v * mult;
}
