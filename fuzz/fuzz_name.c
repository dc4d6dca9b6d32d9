/*
 * fuzz_name.c - libFuzzer target: the name codec (fs/name.c).
 *
 * Input: one byte choosing the kind (key, scope, id, little-endian id),
 * then the rest, used twice: as a byte string to encode, and as a file
 * name to decode.
 * Checked, for every kind:
 *   - encode: the name is 1..FS_NAME_MAX bytes, has no '/' or NUL, is not
 *     "." or "..", and decodes back to the bytes (a long name, cut and
 *     hashed, decodes to a prefix of them and says it is hashed);
 *   - decode: a name that decodes (and is not a long name, which is found
 *     rather than decoded) encodes back to itself: no byte string has two
 *     names, so no alias exists.
 * A failed check aborts, which libFuzzer reports as a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

#define CHECK(c)                                                         \
	do {                                                             \
		if (!(c)) {                                              \
			fprintf(stderr, "fuzz_name: %s:%d: %s\n", __FILE__,  \
			        __LINE__, #c);                             \
			abort();                                         \
		}                                                        \
	} while (0)

static void check_encode(const unsigned char *p, size_t n, fs_name_kind kind)
{
	char name[FS_NAME_MAX + 1];
	size_t len = 0;
	sfs_buf back = { NULL, 0 };
	int hashed = -1;

	CHECK(fs_name_encode(sfs_bytes(p, n), kind, name, &len) == SFS_OK);
	CHECK(len >= 1 && len <= FS_NAME_MAX && strlen(name) == len);
	CHECK(!memchr(name, '/', len));
	CHECK(strcmp(name, ".") != 0 && strcmp(name, "..") != 0);
	CHECK(fs_name_decode(name, len, kind, &back, &hashed) == SFS_OK);
	if (hashed) {
		CHECK(back.len < n && memcmp(back.ptr, p, back.len) == 0);
	} else {
		CHECK(back.len == n && (n == 0 || memcmp(back.ptr, p, n) == 0));
	}
	sfs_buf_free(&back);
}

static void check_decode(const char *name, size_t len, fs_name_kind kind)
{
	char again[FS_NAME_MAX + 1];
	size_t alen = 0;
	sfs_buf b = { NULL, 0 };
	int hashed = -1, rc;

	rc = fs_name_decode(name, len, kind, &b, &hashed);
	if (rc != SFS_OK) {
		CHECK(rc == SFS_INVALID);
		return;
	}
	CHECK(len <= FS_NAME_MAX && !memchr(name, '\0', len));
	if (!hashed) {
		CHECK(fs_name_encode(sfs_bytes(b.ptr, b.len), kind, again,
		                      &alen) == SFS_OK);
		CHECK(alen == len && memcmp(again, name, len) == 0);
	}
	sfs_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const fs_name_kind kinds[] = { FS_NAME_KEY, FS_NAME_SCOPE,
	                                       FS_NAME_ID, FS_NAME_ID_LE };
	fs_name_kind kind;

	if (size < 1)
		return 0;
	kind = kinds[data[0] % (sizeof(kinds) / sizeof(kinds[0]))];
	check_encode(data + 1, size - 1, kind);
	check_decode((const char *)data + 1, size - 1, kind);
	return 0;
}
