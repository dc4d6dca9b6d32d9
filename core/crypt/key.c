/*
 * key.c - sfs_key: where root keys come from and how they are kept.
 *
 * A key is either 32 raw bytes or a passphrase. Both live in one
 * sodium_malloc'd block (guard pages, mlock'd, canary) that is wiped and
 * freed by sfs_key_destroy. A passphrase is never used directly: the
 * encryption layer asks crypt_key_root() for the root key of a file, which
 * runs Argon2id with the file's salt. That costs ~0.4 s and 256 MiB, so the
 * last (salt, profile) -> root result is cached inside the key; the cache is
 * part of the locked block and guarded by the key's mutex, because a const
 * key may be shared by threads opening stores at once.
 *
 * Sources (statefs.h "Keys"): text (base64 or hex), the STATEFS_KEY
 * variable (wiped in place, so /proc/<pid>/environ no longer shows it), a
 * key file (refused when group or others may read it, as ssh refuses
 * private keys), a passphrase, a fresh random key. Nothing here ever puts
 * key material in an error detail or a log line; details name lengths,
 * modes and paths only.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "crypt_i.h"
#include "err_i.h"
#include "util_i.h"

#define KEY_BYTES 32
#define SALT_BYTES CRYPT_SALT_BYTES
#define MAX_KEYFILE 4096   /* larger than any key text; refuse the rest */
#define MAX_PASSPHRASE 4096

enum key_type { KEY_RAW = 1, KEY_PASS };

struct sfs_key {
	enum key_type type;
	int kdf;                         /* CRYPT_KDF_* a new file gets */
	size_t len;                      /* bytes in mat */
	pthread_mutex_t lock;            /* guards the cache_* fields */
	int cached;                      /* cache_* hold a result */
	unsigned char cache_salt[SALT_BYTES];
	int cache_kdf;
	unsigned char cache_root[KEY_BYTES];
	unsigned char mat[];             /* raw key or passphrase */
};

static int key_alloc(enum key_type type, size_t len, sfs_key **out)
{
	sfs_key *k;
	size_t size;

	if (sodium_init() < 0)
		return sfs_err(SFS_INTERNAL, "libsodium failed to initialise");
	/* sodium_malloc puts the block against its guard page, so only a
	 * size that is a multiple of 16 comes back aligned. */
	size = (sizeof(*k) + len + 15) & ~(size_t)15;
	k = sodium_malloc(size);
	if (!k)
		return sfs_err(SFS_NOMEM,
		               "cannot allocate locked memory for a key "
		               "(RLIMIT_MEMLOCK too low?)");
	memset(k, 0, size);
	k->type = type;
	k->kdf = type == KEY_RAW ? CRYPT_KDF_RAW : CRYPT_KDF_MODERATE;
	k->len = len;
	pthread_mutex_init(&k->lock, NULL);
	*out = k;
	return SFS_OK;
}

void sfs_key_destroy(sfs_key *key)
{
	if (!key)
		return;
	pthread_mutex_destroy(&key->lock);
	/* sodium_free wipes the whole block before unmapping it. */
	sodium_free(key);
}

int sfs_key_generate(sfs_key **out)
{
	sfs_key *k;
	int rc;

	if (!out)
		return sfs_err(SFS_INVALID, "sfs_key_generate: out is NULL");
	rc = key_alloc(KEY_RAW, KEY_BYTES, &k);
	if (rc)
		return rc;
	randombytes_buf(k->mat, KEY_BYTES);
	*out = k;
	return SFS_OK;
}

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

/* Decodes the key text t[0..n) into raw[32]; returns 0 or -1. */
static int key_decode(const char *t, size_t n, unsigned char raw[KEY_BYTES])
{
	static const int variants[] = {
		sodium_base64_VARIANT_ORIGINAL,
		sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
		sodium_base64_VARIANT_URLSAFE,
		sodium_base64_VARIANT_URLSAFE_NO_PADDING,
	};
	const char *end;
	size_t got;

	if (n == 2 * KEY_BYTES &&
	    sodium_hex2bin(raw, KEY_BYTES, t, n, NULL, &got, &end) == 0 &&
	    got == KEY_BYTES && end == t + n)
		return 0;
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		if (sodium_base642bin(raw, KEY_BYTES, t, n, NULL, &got, &end,
		                      variants[i]) == 0 &&
		    got == KEY_BYTES && end == t + n)
			return 0;
	}
	sodium_memzero(raw, KEY_BYTES);
	return -1;
}

/* Like sfs_key_from_text; what names the source in the detail. */
static int key_from_text(const char *text, size_t len, const char *what,
                         sfs_key **out)
{
	sfs_key *k;
	int rc;

	while (len && is_space((unsigned char)text[0]))
		text++, len--;
	while (len && is_space((unsigned char)text[len - 1]))
		len--;
	rc = key_alloc(KEY_RAW, KEY_BYTES, &k);
	if (rc)
		return rc;
	if (key_decode(text, len, k->mat) != 0) {
		sfs_key_destroy(k);
		return sfs_err(SFS_BADKEY,
		               "%s is not a 32-byte key as base64 or 64 hex "
		               "digits (%zu characters)", what, len);
	}
	*out = k;
	return SFS_OK;
}

int sfs_key_from_text(const char *text, size_t len, sfs_key **out)
{
	if (!text || !out)
		return sfs_err(SFS_INVALID, "sfs_key_from_text: NULL argument");
	return key_from_text(text, len, "the key text", out);
}

/* Opens of several threads read STATEFS_KEY at once: one takes it (the
 * read, the copy, the wipe and unsetenv as one), the others then find it
 * consumed. Unlocked, a thread could copy it while another wiped it, and
 * took a good key for a bad one (SFS_BADKEY). */
static pthread_mutex_t env_mu = PTHREAD_MUTEX_INITIALIZER;

const char *crypt_getenv(const char *name)
{
	const char *v;

	pthread_mutex_lock(&env_mu);
	v = getenv(name);
	pthread_mutex_unlock(&env_mu);
	return v;
}

int crypt_key_from_env(sfs_key **out)
{
	char *val, *copy;
	size_t len;
	int rc;

	if (!out)
		return sfs_err(SFS_INVALID, "crypt_key_from_env: out is NULL");
	pthread_mutex_lock(&env_mu);
	val = getenv("STATEFS_KEY");
	if (!val) {
		pthread_mutex_unlock(&env_mu);
		return sfs_err(SFS_NOTFOUND, "STATEFS_KEY is not set");
	}
	len = strlen(val);
	if (sodium_init() < 0) {
		pthread_mutex_unlock(&env_mu);
		return sfs_err(SFS_INTERNAL, "libsodium failed to initialise");
	}
	copy = sodium_malloc(len + 1);
	if (copy)
		memcpy(copy, val, len + 1);
	/* Wipe in place before anything else: the initial environment is the
	 * memory /proc/<pid>/environ shows, and unsetenv only unlinks the
	 * pointer. */
	sodium_memzero(val, len);
	unsetenv("STATEFS_KEY");
	pthread_mutex_unlock(&env_mu);
	if (!copy)
		return sfs_err(SFS_NOMEM, "cannot allocate locked memory for "
		               "the key from STATEFS_KEY");
	rc = key_from_text(copy, len, "STATEFS_KEY", out);
	sodium_free(copy);
	return rc;
}

/* What a file that is not a regular file is, for the sentence. */
static const char *file_type(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO (named pipe)" :
	       S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" : "of an unknown type";
}

/* Refuses a key file that is not a regular file (SFS_BADKEY: nothing to
 * do with permissions), and one others may read, ssh-style (SFS_KEYPERM);
 * st from fstat. */
static int key_check_file(const char *path, const struct stat *st)
{
	uid_t me = geteuid();

	if (!S_ISREG(st->st_mode))
		return sfs_err(SFS_BADKEY, "key file %s is %s, not a regular "
		               "file", path, file_type(st->st_mode));
	if (st->st_uid != me && st->st_uid != 0)
		return sfs_err(SFS_KEYPERM,
		               "key file %s is owned by uid %u, not by you "
		               "(uid %u) or root", path, (unsigned)st->st_uid,
		               (unsigned)me);
	if (st->st_mode & 077)
		return sfs_err(SFS_KEYPERM,
		               "key file %s has mode %04o: it must not be "
		               "accessible by group or others (chmod 600 %s)",
		               path, (unsigned)(st->st_mode & 07777), path);
	return SFS_OK;
}

int sfs_key_from_file(const char *path, sfs_key **out)
{
	unsigned char *buf = NULL;
	struct stat st;
	size_t n = 0;
	int fd, rc, saverr;

	if (!path || !out)
		return sfs_err(SFS_INVALID, "sfs_key_from_file: NULL argument");
	if (sodium_init() < 0)
		return sfs_err(SFS_INTERNAL, "libsodium failed to initialise");
	/* O_NONBLOCK: opening a FIFO (or a device) must not wait for a
	 * writer; such a file is refused below without a read. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		saverr = errno;
		/* one we may not read is unusable to us: not a file too open
		 * (SFS_KEYPERM said "accessible by other users") */
		return sfs_err(saverr == ENOENT ? SFS_NOTFOUND :
		               saverr == EACCES || saverr == EPERM ? SFS_BADKEY
		                                                   : SFS_IO,
		               "cannot open key file %s: %s", path,
		               strerror(saverr));
	}
	if (fstat(fd, &st) != 0) {
		saverr = errno;
		rc = sfs_err(SFS_IO, "cannot stat key file %s: %s", path,
		             strerror(saverr));
		goto out;
	}
	rc = key_check_file(path, &st);
	if (rc)
		goto out;
	buf = sodium_malloc(MAX_KEYFILE + 1);
	if (!buf) {
		rc = sfs_err(SFS_NOMEM, "cannot allocate locked memory for "
		             "key file %s", path);
		goto out;
	}
	while (n <= MAX_KEYFILE) {
		ssize_t r = read(fd, buf + n, MAX_KEYFILE + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			saverr = errno;
			rc = sfs_err(SFS_IO, "cannot read key file %s: %s",
			             path, strerror(saverr));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > MAX_KEYFILE) {
		rc = sfs_err(SFS_BADKEY, "key file %s is too large to hold a "
		             "key", path);
		goto out;
	}
	if (n == 0) {
		rc = sfs_err(SFS_BADKEY, "key file %s is empty", path);
		goto out;
	}
	if (n == KEY_BYTES) {
		/* Exactly 32 bytes: the raw key (text keys are 43+ bytes). */
		rc = key_alloc(KEY_RAW, KEY_BYTES, out);
		if (rc == SFS_OK)
			memcpy((*out)->mat, buf, KEY_BYTES);
	} else {
		char what[PATH_MAX + 16];
		snprintf(what, sizeof(what), "key file %s", path);
		rc = key_from_text((const char *)buf, n, what, out);
	}
out:
	if (buf)
		sodium_free(buf);
	close(fd);
	return rc;
}

int sfs_key_from_passphrase(const void *pass, size_t len, sfs_key **out)
{
	sfs_key *k;
	int rc;

	if (!pass || !out)
		return sfs_err(SFS_INVALID,
		               "sfs_key_from_passphrase: NULL argument");
	if (len == 0)
		return sfs_err(SFS_BADKEY, "the passphrase is empty");
	if (len > MAX_PASSPHRASE)
		return sfs_err(SFS_BADKEY, "the passphrase is longer than %d "
		               "bytes", MAX_PASSPHRASE);
	rc = key_alloc(KEY_PASS, len, &k);
	if (rc)
		return rc;
	memcpy(k->mat, pass, len);
	*out = k;
	return SFS_OK;
}

int sfs_key_to_text(const sfs_key *key, char *out, size_t outlen)
{
	if (!key || !out)
		return sfs_err(SFS_INVALID, "sfs_key_to_text: NULL argument");
	if (key->type != KEY_RAW)
		return sfs_err(SFS_INVALID, "a passphrase has no key text");
	if (outlen < sodium_base64_ENCODED_LEN(KEY_BYTES,
	                                       sodium_base64_VARIANT_ORIGINAL))
		return sfs_err(SFS_INVALID, "sfs_key_to_text: buffer of %zu "
		               "bytes, need 45", outlen);
	sodium_bin2base64(out, outlen, key->mat, KEY_BYTES,
	                  sodium_base64_VARIANT_ORIGINAL);
	return SFS_OK;
}

static int fsync_parent(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rc = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fsync(fd) != 0)
		rc = -1;
	close(fd);
	return rc;
}

int sfs_key_write_file(const sfs_key *key, const char *path)
{
	char tmp[PATH_MAX];
	char text[sodium_base64_ENCODED_LEN(KEY_BYTES,
	                                    sodium_base64_VARIANT_ORIGINAL)];
	size_t len, off = 0, made = 0;
	int fd = -1, rc = SFS_OK, saverr;

	if (!key || !path || !*path)
		return sfs_err(SFS_INVALID, "sfs_key_write_file: NULL argument");
	if (key->type != KEY_RAW)
		return sfs_err(SFS_INVALID, "a passphrase cannot be written to a "
		               "key file");
	if (access(path, F_OK) == 0)
		return sfs_err(SFS_EXISTS, "key file %s already exists; it is "
		               "never overwritten", path);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp-%08x", path,
	                     randombytes_random()) >= sizeof(tmp))
		return sfs_err(SFS_INVALID, "key file path is too long");
	/* its missing directories, 0700; removed again if it fails */
	rc = util_mkparents(path, 0700, &made);
	if (rc)
		return rc;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	          0600);
	if (fd < 0) {
		saverr = errno;
		util_rmparents(path, made);
		return sfs_err(SFS_IO, "cannot create key file %s: %s", tmp,
		               strerror(saverr));
	}
	/* Text, not raw bytes: the file can be printed for a paper backup and
	 * pasted into STATEFS_KEY. */
	sfs_key_to_text(key, text, sizeof(text));
	len = strlen(text);
	text[len++] = '\n';
	if (fchmod(fd, 0600) != 0) {
		saverr = errno;
		rc = sfs_err(SFS_IO, "chmod 600 %s: %s", tmp, strerror(saverr));
		goto fail;
	}
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			saverr = errno;
			rc = sfs_err(saverr == ENOSPC ? SFS_FULL : SFS_IO,
			             "cannot write key file %s: %s", tmp,
			             strerror(saverr));
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0) {
		saverr = errno;
		rc = sfs_err(SFS_IO, "fsync %s: %s", tmp, strerror(saverr));
		goto fail;
	}
	close(fd);
	fd = -1;
	/* link() never replaces an existing file: two first runs racing end
	 * with one key file, and the loser gets SFS_EXISTS. */
	if (link(tmp, path) != 0) {
		saverr = errno;
		rc = sfs_err(saverr == EEXIST ? SFS_EXISTS : SFS_IO,
		             "cannot create key file %s: %s", path,
		             strerror(saverr));
		goto fail;
	}
	unlink(tmp);
	sodium_memzero(text, sizeof(text));
	if (fsync_parent(path) != 0) {
		saverr = errno;
		return sfs_err(SFS_IO, "fsync of the directory of %s: %s", path,
		               strerror(saverr));
	}
	return SFS_OK;
fail:
	sodium_memzero(text, sizeof(text));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	util_rmparents(path, made);
	return rc;
}

/* ---- private interface for the encryption layer (crypt_i.h) ---- */

int crypt_key_kdf(const sfs_key *key)
{
	return key->kdf;
}

int crypt_key_is_passphrase(const sfs_key *key)
{
	return key->type == KEY_PASS;
}

int crypt_key_dup(const sfs_key *key, sfs_key **out)
{
	sfs_key *k;
	int rc;

	rc = key_alloc(key->type, key->len, &k);
	if (rc)
		return rc;
	k->kdf = key->kdf;
	memcpy(k->mat, key->mat, key->len);
	pthread_mutex_lock((pthread_mutex_t *)&key->lock);
	k->cached = key->cached;
	k->cache_kdf = key->cache_kdf;
	memcpy(k->cache_salt, key->cache_salt, SALT_BYTES);
	memcpy(k->cache_root, key->cache_root, KEY_BYTES);
	pthread_mutex_unlock((pthread_mutex_t *)&key->lock);
	*out = k;
	return SFS_OK;
}

static int kdf_limits(int kdf, unsigned long long *ops, size_t *mem)
{
	switch (kdf) {
	case CRYPT_KDF_INTERACTIVE:
		*ops = crypto_pwhash_OPSLIMIT_INTERACTIVE;
		*mem = crypto_pwhash_MEMLIMIT_INTERACTIVE;
		return 0;
	case CRYPT_KDF_MODERATE:
		*ops = crypto_pwhash_OPSLIMIT_MODERATE;
		*mem = crypto_pwhash_MEMLIMIT_MODERATE;
		return 0;
	case CRYPT_KDF_SENSITIVE:
		*ops = crypto_pwhash_OPSLIMIT_SENSITIVE;
		*mem = crypto_pwhash_MEMLIMIT_SENSITIVE;
		return 0;
	default:
		return -1;
	}
}

int crypt_key_root(const sfs_key *key, const unsigned char *salt, int kdf,
                   unsigned char root[32])
{
	/* The cache is mutable state behind a const handle: see the file's
	 * first paragraph. */
	sfs_key *k = (sfs_key *)key;
	unsigned long long ops;
	size_t mem;
	int rc = SFS_OK;

	if (key->type == KEY_RAW) {
		if (kdf != CRYPT_KDF_RAW)
			return SFS_WRONGKEY;
		memcpy(root, key->mat, KEY_BYTES);
		return SFS_OK;
	}
	if (kdf_limits(kdf, &ops, &mem) != 0)
		return SFS_WRONGKEY;
	pthread_mutex_lock(&k->lock);
	if (k->cached && k->cache_kdf == kdf &&
	    sodium_memcmp(k->cache_salt, salt, SALT_BYTES) == 0) {
		memcpy(root, k->cache_root, KEY_BYTES);
		goto out;
	}
	if (crypto_pwhash(root, KEY_BYTES, (const char *)k->mat, k->len, salt,
	                  ops, mem, crypto_pwhash_ALG_ARGON2ID13) != 0) {
		rc = sfs_err(SFS_NOMEM, "Argon2id needs %zu MiB of memory and "
		             "could not get it", mem >> 20);
		goto out;
	}
	memcpy(k->cache_salt, salt, SALT_BYTES);
	memcpy(k->cache_root, root, KEY_BYTES);
	k->cache_kdf = kdf;
	k->cached = 1;
out:
	pthread_mutex_unlock(&k->lock);
	return rc;
}
