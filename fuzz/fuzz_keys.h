/*
 * fuzz_keys.h - the two keys of the page target (fuzz_page.c) and of the
 * program that makes its seeds from a real store (page_seeds.c). Test keys
 * only: they are in the repository.
 */
#ifndef STATEFS_FUZZ_KEYS_H
#define STATEFS_FUZZ_KEYS_H

/* Key A: the seeds' store is encrypted with it; pages are opened with it. */
#define FUZZ_KEY_A "4141414141414141414141414141414141414141414141414141414141414141"
/* Key B: nothing is ever sealed with it, so nothing may open under it. */
#define FUZZ_KEY_B "4242424242424242424242424242424242424242424242424242424242424242"

/* The input layout (page_seeds.c writes it, fuzz_page.c reads it):
 *   [0]       mode (FUZZ_PAGE_*) in bits 0-1, page size 1024 << n in
 *             bits 2-4 (7: 4096), file kind in bits 5-6 (0 and 3: db,
 *             1: WAL, 2: journal)
 *   [1, 5)    page number, big-endian
 *   [5, 9)    WAL frame index, big-endian
 *   [9, 17)   WAL frame header bytes 0-7
 *   [17, 33)  the file's salt
 *   [33]      M, the number of mutations
 *   then M mutations of 4 bytes: what (0 the page, 1 the page number, 2
 *   the frame index, 3 the frame header, 4 the kind), offset (2 bytes,
 *   big-endian), and a byte to xor in;
 *   then the page (padded with zeros, or cut, to the page size). */
#define FUZZ_PAGE_HEAD 34
enum {
	FUZZ_PAGE_RAW_B = 0,  /* the page as given, under key B */
	FUZZ_PAGE_REAL = 1,   /* the page as given, under key A */
	FUZZ_PAGE_SEAL = 2,   /* the page is plaintext: sealed, then opened */
};

#endif
