/*
 * fuzz_page.c - libFuzzer target: sealing and opening one encrypted page
 * (core/crypt/page.c), the code that stands between a file on disk and
 * SQLite. Input layout: fuzz_keys.h.
 *
 * What is checked:
 *   - random ciphertext never authenticates: under key B, which nothing is
 *     ever sealed with, no input opens (FUZZ_PAGE_RAW_B);
 *   - a page that authenticates under key A is genuine, since the fuzzer
 *     cannot forge a tag: a real page of a real store (the seeds, made by
 *     page_seeds.c) or one this target sealed (FUZZ_PAGE_SEAL, which also
 *     checks that a sealed page opens to its plaintext). Such a page,
 *     mutated (any byte, or the page number, frame index, frame header or
 *     kind it is opened as), opens if and only if nothing authenticated
 *     changed, and then to the same plaintext. The only bytes outside the
 *     authentication are page 1's first 16 (the file salt, bound through
 *     the key instead), and the WAL position of a page that is not a WAL
 *     page;
 *   - no input crashes, leaks or runs into undefined behaviour.
 * The nonce of a seal comes from a deterministic generator reset for each
 * input, so that every input replays the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypt/page_i.h"
#include "fuzz_keys.h"

#define CHECK(c)                                                         \
	do {                                                             \
		if (!(c)) {                                              \
			fprintf(stderr, "fuzz_page: %s:%d: %s\n", __FILE__,  \
			        __LINE__, #c);                             \
			abort();                                         \
		}                                                        \
	} while (0)

static sfs_key *key_a, *key_b;
static cp_filekey *fk;
static uint64_t nonce_ctr;

static void det_buf(void *buf, size_t n)
{
	unsigned char seed[randombytes_SEEDBYTES] = { 0 };

	memcpy(seed, &nonce_ctr, sizeof(nonce_ctr));
	nonce_ctr++;
	randombytes_buf_deterministic(buf, n, seed);
}

static uint32_t det_random(void)
{
	uint32_t r;

	det_buf(&r, sizeof(r));
	return r;
}

static const char *det_name(void)
{
	return "fuzz_page deterministic";
}

static struct randombytes_implementation det_impl = {
	.implementation_name = det_name,
	.random = det_random,
	.buf = det_buf,
};

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	CHECK(randombytes_set_implementation(&det_impl) == 0);
	CHECK(sodium_init() >= 0);
	CHECK(sfs_key_from_text(FUZZ_KEY_A, strlen(FUZZ_KEY_A), &key_a) == 0);
	CHECK(sfs_key_from_text(FUZZ_KEY_B, strlen(FUZZ_KEY_B), &key_b) == 0);
	CHECK((fk = cp_filekey_new()) != NULL);
	return 0;
}

/* Where a page is opened: file kind, page number, WAL position. */
typedef struct place {
	int kind;
	uint32_t pgno, frame;
	unsigned char hdr8[8];
} place;

static int open_at(const place *pl, unsigned char *page, uint32_t P)
{
	cp_walpos w = { pl->frame, pl->hdr8 };

	return cp_open(fk, pl->kind, pl->pgno, pl->kind == CP_WAL ? &w : NULL,
	               page, P);
}

/* Whether an authenticated byte of the page, or of its place, differs. */
static int auth_changed(const place *a, const place *b,
                        const unsigned char *pa, const unsigned char *pb,
                        uint32_t P)
{
	size_t from = a->kind == CP_DB && a->pgno == 1 ? CRYPT_SALT_BYTES : 0;

	if (a->kind != b->kind || a->pgno != b->pgno)
		return 1;
	if (a->kind == CP_WAL &&
	    (a->frame != b->frame || memcmp(a->hdr8, b->hdr8, 8) != 0))
		return 1;
	return memcmp(pa + from, pb + from, P - from) != 0;
}

static int kind_of(unsigned bits)
{
	static const int kinds[4] = { CP_DB, CP_WAL, CP_JOURNAL, CP_DB };

	return kinds[bits & 3];
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const unsigned char magic[16] = "SQLite format 3";
	unsigned char *orig, *plain, *page;
	const unsigned char *mut, *body;
	unsigned mode, m;
	uint32_t P;
	size_t nbody;
	place pl, at;
	int r;

	if (size < FUZZ_PAGE_HEAD)
		return 0;
	nonce_ctr = 0;
	mode = data[0] & 3;
	P = ((data[0] >> 2) & 7) == 7 ? 4096 : 1024u << ((data[0] >> 2) & 7);
	pl.kind = kind_of(data[0] >> 5);
	pl.pgno = cp_get32(data + 1);
	pl.frame = cp_get32(data + 5);
	memcpy(pl.hdr8, data + 9, 8);
	m = data[FUZZ_PAGE_HEAD - 1];
	if (size < FUZZ_PAGE_HEAD + 4 * (size_t)m)
		return 0;
	mut = data + FUZZ_PAGE_HEAD;
	body = mut + 4 * (size_t)m;
	nbody = size - FUZZ_PAGE_HEAD - 4 * (size_t)m;
	CHECK(cp_derive(mode == FUZZ_PAGE_RAW_B ? key_b : key_a, data + 17,
	                CRYPT_KDF_RAW, fk) == SFS_OK);

	orig = calloc(1, P);
	plain = calloc(1, P);
	page = calloc(1, P);
	CHECK(orig && plain && page);
	memcpy(orig, body, nbody < P ? nbody : P);
	if (mode == FUZZ_PAGE_SEAL) {
		/* SQLite's page: the reserve is zeros. Sealed, it opens. */
		memset(orig + P - CP_RESERVE, 0, CP_RESERVE);
		memcpy(plain, orig, P);
		cp_seal(fk, pl.kind, pl.pgno, &(cp_walpos){ pl.frame, pl.hdr8 },
		        plain, orig, P);
	}

	/* The page as it is. */
	memcpy(page, orig, P);
	r = open_at(&pl, page, P);
	CHECK(r >= CP_OK && r <= CP_HOLE);
	if (mode == FUZZ_PAGE_RAW_B)
		CHECK(r != CP_OK);
	if (mode == FUZZ_PAGE_SEAL) {
		CHECK(r == CP_OK);
		if (pl.kind == CP_DB && pl.pgno == 1)
			memcpy(plain, magic, sizeof(magic));
		CHECK(memcmp(page, plain, P) == 0);
	}
	if (r != CP_OK)
		goto out; /* not genuine: nothing more to hold it to */
	memcpy(plain, page, P);

	/* Mutated: opens if and only if nothing authenticated changed. */
	memcpy(page, orig, P);
	at = pl;
	for (unsigned i = 0; i < m; i++) {
		const unsigned char *x = mut + 4 * i;
		unsigned off = (unsigned)x[1] << 8 | x[2];

		switch (x[0] % 5) {
		case 0: page[off % P] ^= x[3]; break;
		case 1: at.pgno ^= (uint32_t)x[3] << (8 * (off % 4)); break;
		case 2: at.frame ^= (uint32_t)x[3] << (8 * (off % 4)); break;
		case 3: at.hdr8[off % 8] ^= x[3]; break;
		default: at.kind = kind_of((unsigned)at.kind + x[3]); break;
		}
	}
	{
		int changed = auth_changed(&pl, &at, orig, page, P);

		r = open_at(&at, page, P);
		if (r == CP_OK && changed)
			fprintf(stderr, "fuzz_page: a mutated page authenticated\n");
		CHECK((r == CP_OK) == !changed);
		if (r == CP_OK)
			CHECK(memcmp(page, plain, P) == 0);
	}
out:
	free(orig);
	free(plain);
	free(page);
	return 0;
}
