/*
 * aead.c - XChaCha20-Poly1305-IETF, detached: the cipher of every page.
 *
 * The construction is libsodium's crypto_aead_xchacha20poly1305_ietf:
 * a subkey HChaCha20(key, nonce[0..16]), then ChaCha20-Poly1305 as in
 * RFC 8439 under that subkey with the 12-byte nonce 0^4 | nonce[16..24].
 * The subkey is libsodium's (crypto_core_hchacha20); the bulk work, the
 * stream and the MAC over 4 KiB, is OpenSSL's libcrypto when it offers
 * ChaCha20-Poly1305: its code for this machine's vector units seals a page
 * in about half of libsodium 1.0.18's time (docs/encryption.md, "Cipher
 * implementation"). The bytes are the same either way (tests/unit/
 * test_crypt_vfs.c checks both against libsodium's own function), so a
 * store written by one opens with the other, and libsodium's function is
 * the fallback whenever libcrypto cannot serve a call (no such cipher in
 * its configuration, no memory).
 *
 * Key material: the subkey is wiped from the stack after each call, and
 * each call gets a cipher context of its own that EVP_CIPHER_CTX_free
 * clears, so no key stays behind in OpenSSL's heap between calls (a thread
 * context kept across calls would hold the last page's subkey).
 *
 * Opening: libsodium checks the tag before it decrypts and zeroes the
 * output when the tag does not match; libcrypto decrypts as it goes and
 * checks at the end, so its unauthenticated output is zeroed the same way:
 * a failed open leaves zeros, whichever library ran.
 */
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "page_i.h"

#define SUBKEY_BYTES crypto_core_hchacha20_OUTPUTBYTES

static EVP_CIPHER *cipher;     /* NULL: libsodium only */
static pthread_once_t cipher_once = PTHREAD_ONCE_INIT;
static int use_libcrypto = 1;  /* cp_aead_libcrypto */

static void fetch_cipher(void)
{
	cipher = EVP_CIPHER_fetch(NULL, "ChaCha20-Poly1305", NULL);
}

static const EVP_CIPHER *libcrypto_cipher(void)
{
	pthread_once(&cipher_once, fetch_cipher);
	return __atomic_load_n(&use_libcrypto, __ATOMIC_RELAXED) ? cipher : NULL;
}

int cp_aead_libcrypto(int on)
{
	if (on >= 0)
		__atomic_store_n(&use_libcrypto, on != 0, __ATOMIC_RELAXED);
	return libcrypto_cipher() != NULL;
}

/* The subkey and the 12-byte nonce of the inner ChaCha20-Poly1305. */
static void inner(const unsigned char nonce[24], const unsigned char *key,
                  unsigned char sub[SUBKEY_BYTES], unsigned char n12[12])
{
	crypto_core_hchacha20(sub, nonce, key, NULL);
	memset(n12, 0, 4);
	memcpy(n12 + 4, nonce + 16, 8);
}

/* One pass of libcrypto over (ad, in) into out: encrypt (tag out) or
 * decrypt (tag checked). 1: done and, decrypting, authentic; 0: out holds
 * in's bytes through the stream but decrypting, the tag does not match
 * (encrypting, the tag could not be had); -1: libcrypto failed before it
 * wrote anything to out. */
static int libcrypto_pass(const EVP_CIPHER *c, int enc, unsigned char *out,
                          const unsigned char *in, size_t n,
                          unsigned char *tag, const unsigned char *ad,
                          size_t adlen, const unsigned char *sub,
                          const unsigned char *n12)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int len, r = -1;

	if (!ctx || n > INT_MAX || adlen > INT_MAX ||
	    !EVP_CipherInit_ex2(ctx, c, sub, n12, enc, NULL) ||
	    (!enc && !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG,
	                                  crypto_aead_xchacha20poly1305_ietf_ABYTES,
	                                  tag)) ||
	    (adlen && !EVP_CipherUpdate(ctx, NULL, &len, ad, (int)adlen)))
		goto out;
	/* From here out is written; a ChaCha20-Poly1305 context that took
	 * its key and nonce has no failure left but the tag's. */
	if (!EVP_CipherUpdate(ctx, out, &len, in, (int)n) || (size_t)len != n) {
		r = 0;
		goto out;
	}
	r = EVP_CipherFinal_ex(ctx, out + len, &len) > 0;
	if (r && enc && !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG,
	                                     crypto_aead_xchacha20poly1305_ietf_ABYTES,
	                                     tag))
		r = 0;
out:
	EVP_CIPHER_CTX_free(ctx);
	return r;
}

void cp_aead_seal(unsigned char *c, unsigned char *tag, const unsigned char *m,
                  size_t n, const unsigned char *ad, size_t adlen,
                  const unsigned char nonce[24], const unsigned char *key)
{
	const EVP_CIPHER *lc = libcrypto_cipher();
	unsigned char sub[SUBKEY_BYTES], n12[12];
	int r = -1;

	if (lc) {
		inner(nonce, key, sub, n12);
		r = libcrypto_pass(lc, 1, c, m, n, tag, ad, adlen, sub, n12);
		if (r == 0 && c == m)   /* the plaintext back, for libsodium */
			crypto_stream_chacha20_ietf_xor_ic(c, c, n, n12, 1, sub);
		sodium_memzero(sub, sizeof(sub));
	}
	if (r != 1)   /* the same bytes, from libsodium */
		crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
			c, tag, NULL, m, n, ad, adlen, NULL, nonce, key);
}

int cp_aead_open(unsigned char *m, const unsigned char *c, size_t n,
                 const unsigned char *tag, const unsigned char *ad,
                 size_t adlen, const unsigned char nonce[24],
                 const unsigned char *key)
{
	const EVP_CIPHER *lc = libcrypto_cipher();
	unsigned char sub[SUBKEY_BYTES], n12[12];
	unsigned char t[crypto_aead_xchacha20poly1305_ietf_ABYTES];
	int r = -1;

	if (lc) {
		inner(nonce, key, sub, n12);
		memcpy(t, tag, sizeof(t));   /* libcrypto_pass's is writable */
		r = libcrypto_pass(lc, 0, m, c, n, t, ad, adlen, sub, n12);
		sodium_memzero(sub, sizeof(sub));
		if (r == 0)   /* not authentic: nothing of it is handed out */
			sodium_memzero(m, n);
		if (r >= 0)
			return r == 1 ? 0 : -1;
	}
	/* libsodium: checks the tag first, zeroes m when it does not match */
	return crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
		m, NULL, c, n, tag, ad, adlen, nonce, key) == 0 ? 0 : -1;
}
