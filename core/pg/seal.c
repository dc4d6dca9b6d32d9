/*
 * seal.c - end-to-end encryption of a PostgreSQL store: values, log
 * entries and queue items are sealed on the client, so the server (and
 * whoever runs it, or reads its disks and backups) never sees them.
 *
 * Cipher: XChaCha20-Poly1305-IETF with a random 24-byte nonce per value,
 * as the SQLite pages (docs/encryption.md): random nonces of that size
 * need no counter shared between hosts. A sealed value is
 *
 *     format (1 byte, = 1) | nonce (24) | ciphertext | tag (16)
 *
 * 41 bytes more than the plaintext, so sizes are exact on both sides.
 *
 * Associated data: a BLAKE2b-256 hash of where the row lives,
 *
 *     "SPG1" | family | len | scope | len | namespace | len | key | id
 *
 * (lengths as 4 bytes big-endian, id as 8): a key/value entry binds its
 * scope, namespace and key; a log entry also its id; a queue item its
 * queue and id, which it keeps while pending, in flight and dead. A row
 * moved to another name or id, swapped with another, or copied to a
 * second place fails authentication. What the AD cannot see is time: an
 * older value of the *same* key, kept by the operator and written back,
 * opens (docs/postgres.md, "Threat model").
 *
 * Keys: the root key is the store key (a raw key) or Argon2id of the
 * passphrase with the store's salt, exactly as for a SQLite store
 * (crypt_key_root). From it, with the salt of this store, comes the row
 * key, BLAKE2b(root, "SPG1/row-key" | salt), and a key check value,
 * BLAKE2b(root, "SPG1/kcv")[0..16], which statefs_meta keeps: a wrong key
 * is told at open, in the same sentences as for a SQLite store, before
 * any row is read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypt/crypt_i.h"
#include "pg_i.h"

#define FORMAT 1
#define NAME_TEXT (64 * 4 + 4) /* name_text: each byte as \xNN, "..." */
#define SALT 16
#define KCV 16
#define META_LEN (2 + SALT + KCV)
#define NONCE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG crypto_aead_xchacha20poly1305_ietf_ABYTES

_Static_assert(1 + NONCE + TAG == PGB_SEAL_OVERHEAD, "seal overhead");

struct pgb_keys {
	unsigned char row[32];
	int kdf;
};

static void kcv_of(const unsigned char root[32], unsigned char out[KCV])
{
	static const char label[] = "SPG1/kcv";

	crypto_generichash(out, KCV, (const unsigned char *)label,
	                   sizeof(label) - 1, root, 32);
}

static void rowkey_of(const unsigned char root[32], const unsigned char *salt,
                      unsigned char out[32])
{
	static const char label[] = "SPG1/row-key";
	crypto_generichash_state st;

	crypto_generichash_init(&st, root, 32, 32);
	crypto_generichash_update(&st, (const unsigned char *)label,
	                          sizeof(label) - 1);
	crypto_generichash_update(&st, salt, SALT);
	crypto_generichash_final(&st, out, 32);
	sodium_memzero(&st, sizeof(st));
}

int pgb_keys_open(const sfs_key *key, sfs_slice meta, const char *name,
                  pgb_keys **out, sfs_buf *newmeta)
{
	unsigned char root[32], kcv[KCV], salt[SALT];
	const unsigned char *m = meta.ptr;
	pgb_keys *k;
	int kdf, st;

	if (sodium_init() < 0)
		return sfs_err(SFS_INTERNAL, "libsodium did not initialise");
	if (m && (meta.len != META_LEN || m[0] != FORMAT)) {
		if (meta.len >= 1 && m[0] != FORMAT)
			return sfs_err(SFS_FORMAT, "%s uses encryption format %d;"
			               " this statefs reads format %d (a newer"
			               " statefs wrote it?)", name, m[0], FORMAT);
		return sfs_err(SFS_CORRUPT, "the key check row of %s is damaged",
		               name);
	}
	if (m) {
		/* A raw key ignores the kdf byte, as for SQLite stores: a
		 * mismatch shows as a wrong key check. */
		kdf = crypt_key_is_passphrase(key) ? m[1] : CRYPT_KDF_RAW;
		memcpy(salt, m + 2, SALT);
	} else {
		kdf = crypt_key_kdf(key);
		randombytes_buf(salt, SALT);
	}
	st = crypt_key_root(key, salt, kdf, root);
	if (st == SFS_WRONGKEY)
		return sfs_err(SFS_WRONGKEY, "wrong key: %s was created with a key,"
		               " and a passphrase was given", name);
	if (st != SFS_OK)
		return st;
	kcv_of(root, kcv);
	if (m && sodium_memcmp(kcv, m + 2 + SALT, KCV) != 0) {
		sodium_memzero(root, sizeof(root));
		return sfs_err(SFS_WRONGKEY, "wrong key: the %s given does not"
		               " open %s%s", crypt_key_is_passphrase(key) ?
		               "passphrase" : "key", name,
		               !crypt_key_is_passphrase(key) &&
		               m[1] != CRYPT_KDF_RAW ?
		               " (it was created with a passphrase)" : "");
	}
	k = sodium_malloc(sizeof(*k));
	if (!k) {
		sodium_memzero(root, sizeof(root));
		return sfs_err(SFS_NOMEM, "out of locked memory");
	}
	rowkey_of(root, salt, k->row);
	k->kdf = kdf;
	sodium_memzero(root, sizeof(root));
	if (!m) {
		unsigned char *nm = malloc(META_LEN + 1);

		if (!nm) {
			sodium_free(k);
			return sfs_err(SFS_NOMEM, "out of memory");
		}
		nm[0] = FORMAT;
		nm[1] = (unsigned char)kdf;
		memcpy(nm + 2, salt, SALT);
		memcpy(nm + 2 + SALT, kcv, KCV);
		nm[META_LEN] = 0;
		newmeta->ptr = nm;
		newmeta->len = META_LEN;
	}
	*out = k;
	return SFS_OK;
}

void pgb_keys_free(pgb_keys *k)
{
	if (k)
		sodium_free(k); /* wipes */
}

const char *pgb_keys_kdf(const pgb_keys *k)
{
	return k->kdf == CRYPT_KDF_RAW ? "raw" : "argon2id";
}

static void ad_part(crypto_generichash_state *st, sfs_slice s)
{
	unsigned char len[4];
	uint32_t n = (uint32_t)s.len;

	len[0] = (unsigned char)(n >> 24);
	len[1] = (unsigned char)(n >> 16);
	len[2] = (unsigned char)(n >> 8);
	len[3] = (unsigned char)n;
	crypto_generichash_update(st, len, 4);
	if (s.len)
		crypto_generichash_update(st, s.ptr, s.len);
}

static void ad_hash(const pgb_ad *ad, unsigned char out[32])
{
	crypto_generichash_state st;
	unsigned char fam = (unsigned char)ad->fam, id[8];
	uint64_t v = (uint64_t)ad->id;

	for (int i = 7; i >= 0; i--) {
		id[i] = (unsigned char)v;
		v >>= 8;
	}
	crypto_generichash_init(&st, NULL, 0, 32);
	crypto_generichash_update(&st, (const unsigned char *)"SPG1", 4);
	crypto_generichash_update(&st, &fam, 1);
	ad_part(&st, ad->scope);
	ad_part(&st, ad->ns);
	ad_part(&st, ad->key);
	crypto_generichash_update(&st, id, 8);
	crypto_generichash_final(&st, out, 32);
}

int pgb_seal(const sfs_backend *b, const pgb_ad *ad, sfs_slice plain,
             sfs_slice *out, void **owned)
{
	unsigned char adh[32], *c;

	*owned = NULL;
	if (!b->keys) {
		*out = plain;
		return SFS_OK;
	}
	c = malloc(PGB_SEAL_OVERHEAD + plain.len);
	if (!c)
		return sfs_err(SFS_NOMEM, "allocating %zu bytes",
		               PGB_SEAL_OVERHEAD + plain.len);
	ad_hash(ad, adh);
	c[0] = FORMAT;
	randombytes_buf(c + 1, NONCE);
	crypto_aead_xchacha20poly1305_ietf_encrypt(c + 1 + NONCE, NULL,
	        plain.len ? plain.ptr : (const void *)"", plain.len, adh,
	        sizeof(adh), NULL, c + 1, b->keys->row);
	*owned = c;
	*out = sfs_bytes(c, PGB_SEAL_OVERHEAD + plain.len);
	return SFS_OK;
}

int64_t pgb_plain_len(const sfs_backend *b, size_t stored)
{
	return b->keys ? (int64_t)stored - PGB_SEAL_OVERHEAD : (int64_t)stored;
}

/* A name as text for a message: printable ASCII as it is, other bytes
 * as \xNN, cut after 64 bytes ("..."). */
static const char *name_text(char out[NAME_TEXT], sfs_slice n)
{
	const unsigned char *p = n.ptr;
	size_t o = 0;

	for (size_t i = 0; i < n.len && i < 64; i++)
		o += (size_t)snprintf(out + o, NAME_TEXT - o,
		                      p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\'
		                      ? "%c" : "\\x%02x", p[i]);
	snprintf(out + o, NAME_TEXT - o, "%s", n.len > 64 ? "..." : "");
	return out;
}

/* A row that does not open, named as statectl names it. */
static int bad_row(const pgb_ad *ad, const char *why)
{
	char sc[NAME_TEXT], ns[NAME_TEXT], k[NAME_TEXT];

	switch (ad->fam) {
	case PGB_AD_KV:
		return sfs_err(SFS_CORRUPT, "the value of key '%s' in scope '%s'"
		               " namespace '%s' %s: it was changed on the server,"
		               " or moved there from another key",
		               name_text(k, ad->key), name_text(sc, ad->scope),
		               name_text(ns, ad->ns), why);
	case PGB_AD_LOG:
		return sfs_err(SFS_CORRUPT, "entry %lld of log '%s' in scope '%s'"
		               " namespace '%s' %s: it was changed on the server,"
		               " or moved there from another place",
		               (long long)ad->id, name_text(k, ad->key),
		               name_text(sc, ad->scope), name_text(ns, ad->ns),
		               why);
	default:
		return sfs_err(SFS_CORRUPT, "item %lld of queue '%s' %s: it was"
		               " changed on the server, or moved there from"
		               " another place", (long long)ad->id,
		               name_text(sc, ad->scope), why);
	}
}

int pgb_unseal(const sfs_backend *b, const pgb_ad *ad, sfs_slice sealed,
               unsigned char *dst)
{
	const unsigned char *c = sealed.ptr;
	unsigned char adh[32];
	unsigned long long n;

	if (!b->keys) {
		if (sealed.len)
			memcpy(dst, sealed.ptr, sealed.len);
		return SFS_OK;
	}
	if (sealed.len < PGB_SEAL_OVERHEAD)
		return bad_row(ad, "is too short to be sealed");
	if (c[0] != FORMAT)
		return bad_row(ad, "has an unknown format byte");
	ad_hash(ad, adh);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(dst, &n, NULL,
	        c + 1 + NONCE, sealed.len - 1 - NONCE, adh, sizeof(adh), c + 1,
	        b->keys->row) != 0)
		return bad_row(ad, "failed authentication");
	return SFS_OK;
}

int pgb_unseal_buf(const sfs_backend *b, const pgb_ad *ad, sfs_slice sealed,
                   sfs_buf *out)
{
	int64_t n = pgb_plain_len(b, sealed.len);
	unsigned char *m;
	int st;

	if (n < 0)
		return bad_row(ad, "is too short to be sealed");
	m = malloc((size_t)n + 1);
	if (!m)
		return sfs_err(SFS_NOMEM, "allocating %lld bytes", (long long)n + 1);
	st = pgb_unseal(b, ad, sealed, m);
	if (st != SFS_OK) {
		sodium_memzero(m, (size_t)n);
		free(m);
		return st;
	}
	m[n] = '\0';
	out->ptr = m;
	out->len = (size_t)n;
	return SFS_OK;
}

int pgb_unseal_item(const sfs_backend *b, const pgb_ad *ad, sfs_slice sealed,
                    listb *lb)
{
	int64_t n = pgb_plain_len(b, sealed.len);
	unsigned char *m;

	if (n < 0)
		return bad_row(ad, "is too short to be sealed");
	m = listb_value_space(lb, (size_t)n);
	if (!m)
		return SFS_OK; /* listb_finish reports it */
	return pgb_unseal(b, ad, sealed, m);
}

int64_t pgb_log_lock_key(const sfs_backend *b, sfs_slice scope, sfs_slice ns,
                         sfs_slice key)
{
	crypto_generichash_state st;
	unsigned char h[8];
	uint64_t v = 0;

	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	crypto_generichash_update(&st, (const unsigned char *)"SPG1/log-lock",
	                          13);
	ad_part(&st, sfs_str(b->schema));
	ad_part(&st, scope);
	ad_part(&st, ns);
	ad_part(&st, key);
	crypto_generichash_final(&st, h, sizeof(h));
	for (int i = 0; i < 8; i++)
		v = v << 8 | h[i];
	return (int64_t)v;
}

int64_t pgb_queue_lock_key(const sfs_backend *b, sfs_slice queue)
{
	return pgb_log_lock_key(b, sfs_str("queue"), queue, SFS_NONE);
}
