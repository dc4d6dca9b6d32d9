/*
 * fuzz_counter.c - libFuzzer target: the counter token parser
 * (fs/counter.c, what a process writes into /counter/<scope>/<ns>/<key>).
 *
 * Checked against a model written differently (strtoll on the trimmed
 * text): the same verdict (whole token, prefix of one, or neither) and the
 * same number; and, as a write arrives in pieces, over every prefix of the
 * input: once something cannot become a token, nothing longer can. The
 * same for several tokens, one per line (fs_counter_tokens).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

#define CHECK(c)                                                         \
	do {                                                             \
		if (!(c)) {                                              \
			fprintf(stderr, "fuzz_counter: %s:%d: %s\n",        \
			        __FILE__, __LINE__, #c);                   \
			abort();                                         \
		}                                                        \
	} while (0)

static int blank(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The model: 0 a token (set, v), 1 a prefix of one (or nothing), -1 not. */
static int model(const unsigned char *s, size_t n, int *set, int64_t *v)
{
	char buf[FS_COUNTER_INPUT_MAX + 1], num[FS_COUNTER_INPUT_MAX + 2];
	char *p = buf, *end, sign = '+';
	size_t a = 0, b = n;
	long long x;

	if (n > FS_COUNTER_INPUT_MAX)
		return -1;
	while (a < b && blank(s[a]))
		a++;
	while (b > a && blank(s[b - 1]))
		b--;
	if (memchr(s + a, '\0', b - a))
		return -1;
	memcpy(buf, s + a, b - a);
	buf[b - a] = '\0';
	*set = 1;
	if (*p == '+' || *p == '-') {
		*set = 0;
		sign = *p++;
	} else if (*p == '=') {
		p++;
		if (*p == '-')
			sign = *p++;
	}
	if (!*p)
		return 1; /* nothing, or only the start of one */
	if (strspn(p, "0123456789") != strlen(p))
		return -1; /* a blank inside is no token either */
	snprintf(num, sizeof(num), "%c%s", sign, p);
	errno = 0;
	x = strtoll(num, &end, 10);
	if (errno == ERANGE || *end)
		return -1;
	*v = x;
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	int set = -1, mset = -1, st, mst, dead = 0;
	int64_t v = 0, mv = 0;

	for (size_t n = 0; n <= size; n++) {
		st = fs_counter_parse(data, n, &set, &v);
		mst = model(data, n, &mset, &mv);
		CHECK(st == 0 || st == 1 || st == -1);
		if (st != mst)
			fprintf(stderr, "fuzz_counter: %zu bytes: parser %d, model "
			        "%d\n", n, st, mst);
		CHECK(st == mst);
		if (st == 0)
			CHECK(set == mset && v == mv);
		CHECK(!dead || st == -1);
		dead |= st == -1;
	}
	/* Tokens one per line (fs_counter_tokens): on one line with blanks
	 * around, what the parser says; once nothing longer can be tokens,
	 * never again. */
	dead = 0;
	for (size_t n = 0; n <= size; n++) {
		int tset = -1;
		int64_t tv = 0;

		st = fs_counter_tokens(data, n, &tset, &tv);
		CHECK(st == 0 || st == 1 || st == -1);
		if (n <= FS_COUNTER_INPUT_MAX && !memchr(data, '\n', n)) {
			mst = fs_counter_parse(data, n, &mset, &mv);
			CHECK(st == mst);
			if (st == 0)
				CHECK(tset == mset && tv == mv);
		}
		CHECK(!dead || st == -1);
		dead |= st == -1;
	}
	return 0;
}
