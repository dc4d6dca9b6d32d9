/*
 * page.c - seal and open one page (layout in page_i.h).
 *
 * The cipher is XChaCha20-Poly1305-IETF in detached mode (aead.c) with a
 * fresh random 24-byte nonce for every write: random nonces of that size
 * never collide in practice, so no counter has to survive crashes, restores
 * or several processes writing one file (docs/encryption.md has the choice and
 * the measurements against AES-256-GCM). The nonces come from a pool per
 * thread (next_nonce), not from one getrandom per page.
 *
 * The associated data binds a page to its place, so that a page moved,
 * swapped, copied from another file or from the WAL into the database
 * fails authentication:
 *
 *   "SQE1" | kind | fmt kdf kcv (trailer bytes P-8..P) | pgno | salt |
 *   [page 1 of a db: header bytes 16-23] |
 *   [WAL: frame index | frame header bytes 0-7 (pgno, commit size)]
 *
 * Never the WAL salts or checksums (frame header bytes 8-23): SQLite writes
 * frames with those zeroed and fills them in later (walRewriteChecksums).
 *
 * Keys: the root key is the 32-byte key, or Argon2id(passphrase, salt).
 * The page key of a file is BLAKE2b(root, "SQE1/page-key" | salt), so two
 * files under one root key never share a page key; the key check value is
 * BLAKE2b(root, "SQE1/kcv")[0..6], which tells "wrong key" from "damaged
 * page" before anything is decrypted.
 */
#include <pthread.h>
#include <string.h>

#include <sodium.h>

#include "page_i.h"
#include "err_i.h"

static const unsigned char magic[16] = "SQLite format 3";

/*
 * Nonces. randombytes_buf asks the kernel (one getrandom per call, a
 * system call that cost 0.5 us of a page's 4.3 us seal here). Instead each
 * thread keeps a pool of POOL_NONCES nonces: 32 bytes from randombytes_buf
 * seed libsodium's ChaCha20 generator (randombytes_buf_deterministic), whose
 * output fills the pool, and each seal takes the next 24 bytes. They are as
 * unpredictable and as unlikely to collide as nonces read one by one (a
 * 192-bit random value each; nothing needs them secret, only unique).
 *
 * The one way a pool could hand out a nonce twice is a fork: the child
 * inherits its parent's pool and both would seal with the same next
 * nonces under the same page key. So a fork moves fork_gen in the child
 * (pthread_atfork; glibc forgets the handler if this library is unloaded)
 * and a pool filled in another generation is refilled before use.
 */
#define POOL_NONCES 128
#define NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES

static unsigned fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void forked_child(void)
{
	__atomic_add_fetch(&fork_gen, 1, __ATOMIC_SEQ_CST);
}

static void watch_forks(void)
{
	pthread_atfork(NULL, NULL, forked_child);
}

static __thread struct nonce_pool {
	unsigned char bytes[POOL_NONCES * NONCE_BYTES];
	unsigned used;              /* nonces taken; POOL_NONCES: empty */
	unsigned gen;               /* fork_gen when it was filled */
} pool = { .used = POOL_NONCES };

static void next_nonce(unsigned char *out)
{
	unsigned gen;

	pthread_once(&fork_once, watch_forks);
	gen = __atomic_load_n(&fork_gen, __ATOMIC_SEQ_CST);
	if (pool.used == POOL_NONCES || pool.gen != gen) {
		unsigned char seed[randombytes_SEEDBYTES];

		randombytes_buf(seed, sizeof(seed));
		randombytes_buf_deterministic(pool.bytes, sizeof(pool.bytes),
		                              seed);
		sodium_memzero(seed, sizeof(seed));
		pool.used = 0;
		pool.gen = gen;
	}
	memcpy(out, pool.bytes + (size_t)pool.used * NONCE_BYTES,
	       NONCE_BYTES);
	pool.used++;
}

cp_filekey *cp_filekey_new(void)
{
	cp_filekey *fk;

	if (sodium_init() < 0)
		return NULL;
	fk = sodium_malloc(sizeof(*fk));
	if (fk)
		memset(fk, 0, sizeof(*fk));
	return fk;
}

void cp_filekey_free(cp_filekey *fk)
{
	if (fk)
		sodium_free(fk);
}

int cp_derive(const sfs_key *key, const unsigned char *salt, int kdf,
              cp_filekey *fk)
{
	static const char pk_label[] = "SQE1/page-key";
	static const char kcv_label[] = "SQE1/kcv";
	unsigned char root[32], kcv[16];
	crypto_generichash_state st;
	int rc;

	rc = crypt_key_root(key, salt, kdf, root);
	if (rc)
		return rc;
	crypto_generichash(kcv, sizeof(kcv), (const unsigned char *)kcv_label,
	                   sizeof(kcv_label) - 1, root, sizeof(root));
	crypto_generichash_init(&st, root, sizeof(root), sizeof(fk->page_key));
	crypto_generichash_update(&st, (const unsigned char *)pk_label,
	                          sizeof(pk_label) - 1);
	crypto_generichash_update(&st, salt, CRYPT_SALT_BYTES);
	crypto_generichash_final(&st, fk->page_key, sizeof(fk->page_key));
	memcpy(fk->salt, salt, CRYPT_SALT_BYTES);
	memcpy(fk->kcv, kcv, CP_KCV_BYTES);
	fk->kdf = kdf;
	sodium_memzero(root, sizeof(root));
	sodium_memzero(&st, sizeof(st));
	return SFS_OK;
}

/* The associated data of a page; returns its length (<= 64). */
static size_t cp_ad(const cp_filekey *fk, int kind, uint32_t pgno,
                    const cp_walpos *wal, const unsigned char *trailer8,
                    const unsigned char *hdr16_23, unsigned char ad[64])
{
	size_t n = 0;

	memcpy(ad, "SQE1", 4);
	n = 4;
	ad[n++] = (unsigned char)kind;
	memcpy(ad + n, trailer8, 8);
	n += 8;
	cp_put32(ad + n, pgno);
	n += 4;
	memcpy(ad + n, fk->salt, CRYPT_SALT_BYTES);
	n += CRYPT_SALT_BYTES;
	if (hdr16_23) {
		memcpy(ad + n, hdr16_23, 8);
		n += 8;
	}
	if (wal) {
		cp_put32(ad + n, wal->frame);
		n += 4;
		memcpy(ad + n, wal->hdr8, 8);
		n += 8;
	}
	return n;
}

void cp_seal(const cp_filekey *fk, int kind, uint32_t pgno,
             const cp_walpos *wal, const unsigned char *src,
             unsigned char *dst, uint32_t P)
{
	unsigned char ad[64];
	unsigned char *nonce = dst + P - CP_RESERVE;
	unsigned char *tag = nonce + NONCE_BYTES;
	unsigned char *trailer = dst + P - 8;
	size_t off = 0, adlen;
	int first = kind == CP_DB && pgno == 1;

	if (first) {
		/* The salt replaces SQLite's magic; bytes 16-23 stay readable
		 * so the page size is known before any key is. */
		memcpy(dst, fk->salt, CRYPT_SALT_BYTES);
		if (dst != src)
			memcpy(dst + 16, src + 16, 8);
		off = 24;
	}
	trailer[0] = CRYPT_FORMAT;
	trailer[1] = (unsigned char)fk->kdf;
	memcpy(trailer + 2, fk->kcv, CP_KCV_BYTES);
	next_nonce(nonce);
	adlen = cp_ad(fk, kind, pgno, kind == CP_WAL ? wal : NULL, trailer,
	              first ? dst + 16 : NULL, ad);
	cp_aead_seal(dst + off, tag, src + off, P - CP_RESERVE - off, ad, adlen,
	             nonce, fk->page_key);
	cp_count(CP_COUNT_ENC, kind);
}

int cp_open(const cp_filekey *fk, int kind, uint32_t pgno,
            const cp_walpos *wal, unsigned char *page, uint32_t P)
{
	unsigned char ad[64];
	unsigned char *nonce = page + P - CP_RESERVE;
	unsigned char *tag = nonce + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
	unsigned char *trailer = page + P - 8;
	size_t off = 0, adlen;
	int first = kind == CP_DB && pgno == 1;

	if (cp_all_zero(nonce, 40)) {
		cp_count(CP_COUNT_FAIL, kind);
		return CP_HOLE;
	}
	if (trailer[0] != CRYPT_FORMAT || trailer[1] != fk->kdf ||
	    memcmp(trailer + 2, fk->kcv, CP_KCV_BYTES) != 0) {
		/* Another key, or our page with a damaged trailer? Verify
		 * (without decrypting) as if the trailer were ours. */
		unsigned char mine[8];
		mine[0] = CRYPT_FORMAT;
		mine[1] = (unsigned char)fk->kdf;
		memcpy(mine + 2, fk->kcv, CP_KCV_BYTES);
		off = first ? 24 : 0;
		adlen = cp_ad(fk, kind, pgno, kind == CP_WAL ? wal : NULL, mine,
		              first ? page + 16 : NULL, ad);
		cp_count(CP_COUNT_FAIL, kind);
		if (crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
			    NULL, NULL, page + off, P - CP_RESERVE - off, tag, ad,
			    adlen, nonce, fk->page_key) == 0)
			return CP_AUTH;
		return trailer[0] != CRYPT_FORMAT ? CP_BADFMT : CP_OTHERKEY;
	}
	if (first)
		off = 24;
	adlen = cp_ad(fk, kind, pgno, kind == CP_WAL ? wal : NULL, trailer,
	              first ? page + 16 : NULL, ad);
	if (cp_aead_open(page + off, page + off, P - CP_RESERVE - off, tag, ad,
	                 adlen, nonce, fk->page_key) != 0) {
		cp_count(CP_COUNT_FAIL, kind);
		return CP_AUTH;
	}
	memset(page + P - CP_RESERVE, 0, CP_RESERVE);
	if (first)
		memcpy(page, magic, sizeof(magic));
	cp_count(CP_COUNT_DEC, kind);
	return CP_OK;
}

const char *cp_reason(int r)
{
	switch (r) {
	case CP_AUTH:
		return "failed authentication (tampered with, damaged, or "
		       "moved from another place)";
	case CP_OTHERKEY:
		return "was encrypted under a different key";
	case CP_BADFMT:
		return "has an unknown format byte (tampered with or damaged)";
	case CP_HOLE:
		return "is all zeros where an encrypted page should be";
	default:
		return "is fine";
	}
}

uint32_t cp_page_size(const unsigned char *hdr)
{
	uint32_t p = (uint32_t)hdr[16] << 8 | hdr[17];

	if (p == 1)
		p = 65536;
	if (p < CP_MIN_PAGE || p > CP_MAX_PAGE || (p & (p - 1)))
		return 0;
	return p;
}

int cp_is_encrypted_header(const unsigned char *hdr)
{
	/* Bytes 21-23 are SQLite's fixed payload fractions 64, 32, 32. */
	return memcmp(hdr, magic, sizeof(magic)) != 0 && cp_page_size(hdr) &&
	       hdr[20] == CP_RESERVE && hdr[21] == 64 && hdr[22] == 32 &&
	       hdr[23] == 32;
}

int cp_all_zero(const unsigned char *p, size_t n)
{
	unsigned char acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

/* ---- counters ---- */

static uint64_t counters[4][CRYPT_FILE_KINDS];

void cp_count(int what, int kind)
{
	int k = kind == CP_WAL ? CRYPT_FILE_WAL :
	        kind == CP_JOURNAL ? CRYPT_FILE_JOURNAL : CRYPT_FILE_DB;

	__atomic_fetch_add(&counters[what][k], 1, __ATOMIC_RELAXED);
}

void crypt_stats_get(crypt_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int k = 0; k < CRYPT_FILE_KINDS; k++) {
		out->encrypted[k] = __atomic_load_n(&counters[CP_COUNT_ENC][k],
		                                    __ATOMIC_RELAXED);
		out->decrypted[k] = __atomic_load_n(&counters[CP_COUNT_DEC][k],
		                                    __ATOMIC_RELAXED);
		out->auth_failed += __atomic_load_n(&counters[CP_COUNT_FAIL][k],
		                                    __ATOMIC_RELAXED);
		out->temp_refused += __atomic_load_n(&counters[CP_COUNT_TEMP][k],
		                                     __ATOMIC_RELAXED);
	}
}

void crypt_stats_reset(void)
{
	for (int w = 0; w < 4; w++)
		for (int k = 0; k < CRYPT_FILE_KINDS; k++)
			__atomic_store_n(&counters[w][k], 0, __ATOMIC_RELAXED);
}
