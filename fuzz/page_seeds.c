/*
 * page_seeds.c - seeds for fuzz_page from a real store: `page_seeds DIR`
 * makes a store encrypted with key A (fuzz_keys.h) in DIR, writes rows of
 * every family through the engine, and, while it is open (its WAL not yet
 * checkpointed), writes one seed file into DIR per database page and per
 * WAL frame, in fuzz_page's layout: the page as SQLite's writes left it
 * (FUZZ_PAGE_REAL, one mutation), and the same page decrypted
 * (FUZZ_PAGE_SEAL). The store is removed afterwards. Every run makes other
 * seeds (salts and nonces are random), so each fuzz run starts from pages
 * it has not seen. Exit: 0, or 1 with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypt/page_i.h"
#include "fuzz_keys.h"
#include "statefs.h"

#define MAX_SEEDS 12 /* of each file, each mode */

static int fail(const char *what)
{
	fprintf(stderr, "page_seeds: %s: %s\n", what, sfs_errdetail());
	return 1;
}

static int size_index(uint32_t P)
{
	int i = 0;

	while ((1024u << i) < P)
		i++;
	return i;
}

/* Writes one seed; the mutation flips a byte chosen by n. */
static int seed(const char *dir, const char *name, int n, int mode, int kind,
                uint32_t pgno, uint32_t frame, const unsigned char *hdr8,
                const unsigned char *salt, const unsigned char *page,
                uint32_t P)
{
	unsigned char head[FUZZ_PAGE_HEAD + 4];
	char path[4096];
	FILE *f;
	uint32_t off = (uint32_t)(n * 997 + 100) % P;

	head[0] = (unsigned char)(mode | size_index(P) << 2 |
	                          (kind == CP_WAL ? 1 : 0) << 5);
	cp_put32(head + 1, pgno);
	cp_put32(head + 5, frame);
	memcpy(head + 9, hdr8, 8);
	memcpy(head + 17, salt, CRYPT_SALT_BYTES);
	head[FUZZ_PAGE_HEAD - 1] = 1;
	head[FUZZ_PAGE_HEAD] = 0; /* the page */
	head[FUZZ_PAGE_HEAD + 1] = (unsigned char)(off >> 8);
	head[FUZZ_PAGE_HEAD + 2] = (unsigned char)off;
	head[FUZZ_PAGE_HEAD + 3] = 0x01;
	snprintf(path, sizeof(path), "%s/%s-%s-%d", dir, name,
	         mode == FUZZ_PAGE_REAL ? "real" : "seal", n);
	f = fopen(path, "wb");
	if (!f || fwrite(head, 1, sizeof(head), f) != sizeof(head) ||
	    fwrite(page, 1, P, f) != P || fclose(f) != 0)
		return -1;
	return 0;
}

static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)len)) &&
	    fread(p, 1, (size_t)len, f) == (size_t)len) {
		*n = (size_t)len;
	} else {
		free(p);
		p = NULL;
	}
	fclose(f);
	return p;
}

/* Both seeds of one sealed page: as it is, and its plaintext. */
static int both(const char *dir, const char *name, int n, cp_filekey *fk,
                int kind, uint32_t pgno, uint32_t frame,
                const unsigned char *hdr8, const unsigned char *page,
                uint32_t P)
{
	unsigned char *plain = malloc(P);
	cp_walpos w = { frame, hdr8 };
	int rc;

	if (!plain)
		return -1;
	memcpy(plain, page, P);
	rc = seed(dir, name, n, FUZZ_PAGE_REAL, kind, pgno, frame, hdr8,
	          fk->salt, page, P);
	/* A real page must open where it is, or the target's checks of its
	 * mutations would never run. */
	if (rc == 0 &&
	    cp_open(fk, kind, pgno, kind == CP_WAL ? &w : NULL, plain, P) != CP_OK) {
		fprintf(stderr, "page_seeds: %s %d does not open\n", name, n);
		rc = -1;
	}
	if (rc == 0)
		rc = seed(dir, name, n, FUZZ_PAGE_SEAL, kind, pgno, frame, hdr8,
		          fk->salt, plain, P);
	free(plain);
	return rc;
}

int main(int argc, char **argv)
{
	char db[4000], wal[4100], big[5000];
	static const unsigned char zero8[8];
	sfs_config o;
	sfs_store *s;
	sfs_key *key;
	cp_filekey *fk;
	unsigned char *f, *w;
	size_t fn = 0, wn = 0;
	uint32_t P;
	int rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: page_seeds DIR\n");
		return 2;
	}
	snprintf(db, sizeof(db), "%s/store.db", argv[1]);
	snprintf(wal, sizeof(wal), "%s-wal", db);
	if (sfs_key_from_text(FUZZ_KEY_A, strlen(FUZZ_KEY_A), &key))
		return fail("key");
	memset(&o, 0, sizeof(o));
	o.db = db;
	o.flags = SFS_OPEN_CREATE | SFS_OPEN_EXCL;
	o.key = key;
	if (sfs_store_open(&o, &s, NULL))
		return fail("store");
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 20; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		if (sfs_kv_put(s, sfs_str("app"), sfs_str("cfg"), sfs_str(k),
		               sfs_bytes(big, (size_t)(i * 250))) ||
		    sfs_log_append(s, sfs_str("app"), sfs_str("log"), sfs_str("k"),
		                   sfs_str(k), NULL) ||
		    sfs_counter_add(s, sfs_str("app"), sfs_str("n"), sfs_str(k), i,
		                    NULL))
			return fail("writes");
	}
	f = slurp(db, &fn);
	w = slurp(wal, &wn);
	fk = cp_filekey_new();
	if (!f || fn < 4096 || !fk || !(P = cp_page_size(f)) ||
	    cp_derive(key, f, CRYPT_KDF_RAW, fk) != SFS_OK) {
		fprintf(stderr, "page_seeds: cannot read %s\n", db);
		goto out;
	}
	for (uint32_t i = 0; i < MAX_SEEDS && (size_t)(i + 1) * P <= fn; i++)
		if (both(argv[1], "db", (int)i, fk, CP_DB, i + 1, 0, zero8,
		         f + (size_t)i * P, P))
			goto out;
	for (uint32_t i = 0; w && i < MAX_SEEDS &&
	     CP_WAL_HDR + (size_t)(i + 1) * (CP_FRAME_HDR + P) <= wn; i++) {
		const unsigned char *fr = w + CP_WAL_HDR +
		                          (size_t)i * (CP_FRAME_HDR + P);
		if (both(argv[1], "wal", (int)i, fk, CP_WAL, cp_get32(fr), i + 1,
		         fr, fr + CP_FRAME_HDR, P))
			goto out;
	}
	rc = 0;
out:
	sfs_store_close(s);
	sfs_key_destroy(key);
	cp_filekey_free(fk);
	free(f);
	free(w);
	unlink(db);
	unlink(wal);
	snprintf(big, sizeof(big), "%s-shm", db);
	unlink(big);
	return rc;
}
