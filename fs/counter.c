/*
 * counter.c - the tokens a counter file takes (file.c's WRITE and FLUSH):
 * "N" or "=N" sets, "+N" and "-N" add, surrounded by optional blanks; one
 * per line, so `{ echo +1; echo +2; } > c` adds 3.
 *
 * Its own file so that the fuzz target (fuzz/fuzz_counter.c) links it
 * alone: it is the parser of what any process writes into the mount.
 */
#include <stdint.h>
#include <string.h>

#include "fs_i.h"

int fs_counter_parse(const unsigned char *s, size_t n, int *set, int64_t *v)
{
	size_t i = 0;
	uint64_t u = 0, lim = INT64_MAX;
	int neg = 0, digits = 0, mode = 1; /* 1: set, 0: add */

	if (n > FS_COUNTER_INPUT_MAX)
		return -1;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
	                 s[i] == '\r'))
		i++;
	if (i < n && (s[i] == '+' || s[i] == '-')) {
		mode = 0;
		neg = s[i] == '-';
		i++;
	} else if (i < n && s[i] == '=') {
		i++;
		if (i < n && s[i] == '-') {
			neg = 1;
			i++;
		}
	}
	if (neg)
		lim = (uint64_t)INT64_MAX + 1;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		if (u > (lim - (uint64_t)(s[i] - '0')) / 10)
			return -1; /* does not fit in int64 */
		u = u * 10 + (uint64_t)(s[i] - '0');
	}
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
	                 s[i] == '\r'))
		i++;
	if (i < n)
		return -1;
	if (!digits)
		return 1;
	*set = mode;
	*v = neg ? (int64_t)((uint64_t)0 - u) : (int64_t)u;
	return 0;
}

static int blanks(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

int fs_counter_tokens(const unsigned char *s, size_t n, int *set, int64_t *v)
{
	int64_t acc = 0, t;
	int any = 0, acc_set = 0, tset, st;
	size_t a = 0;

	if (n > FS_COUNTER_TOKENS_MAX)
		return -1;
	for (;;) {
		const unsigned char *nl = memchr(s + a, '\n', n - a);
		size_t b = nl ? (size_t)(nl - s) : n;

		st = fs_counter_parse(s + a, b - a, &tset, &t);
		if (st < 0)
			return -1;
		if (st == 0) {
			if (tset) {
				acc_set = 1;
				acc = t;
			} else if (__builtin_add_overflow(acc, t, &acc)) {
				return -1; /* the adds together leave int64 */
			}
			any = 1;
		} else if (!blanks(s + a, b - a)) {
			/* a sign alone: a prefix only while its line goes on */
			if (nl)
				return -1;
			return 1;
		}
		if (!nl)
			break;
		a = b + 1;
	}
	if (!any)
		return 1;
	*set = acc_set;
	*v = acc;
	return 0;
}
