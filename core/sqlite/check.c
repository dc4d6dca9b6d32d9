/*
 * check.c - reading an encrypted store without SQLite: the preflight
 * that turns "file is not a database" into a sentence, and the page-by-page
 * verification behind sfs_store_verify.
 *
 * The preflight reads page 1 with plain pread: its first 24 bytes are in
 * the clear (salt, page size, reserve), the trailer names format and KDF,
 * the key check value tells a wrong key from a damaged page, and only then
 * is the page authenticated. The store is never opened by SQLite before
 * the key is known to be right.
 *
 * crypt_verify_file may run while other processes write: a checkpoint can
 * rewrite a page between our read and its end, and a writer appends WAL
 * frames as we scan. A page that fails is therefore read again (twice,
 * 10 ms apart) before it is reported; so is page 1 in the preflight.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "crypt/page_i.h"
#include "vfs_i.h"
#include "wal_i.h"
#include "err_i.h"

static ssize_t pread_full(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got,
		                  off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Opened page 1 of an encrypted file: fd, page size, key material. */
typedef struct head {
	int fd;
	uint32_t P;
	off_t size;
	unsigned char *page1;     /* P bytes, as on disk */
} head;

static void head_close(head *h)
{
	if (h->fd >= 0)
		close(h->fd);
	if (h->page1) {
		sodium_memzero(h->page1, h->P);
		free(h->page1);
	}
	h->fd = -1;
	h->page1 = NULL;
}

/* Whether the page of size P at the start of the file ends in our
 * trailer: the format this code reads and a known KDF byte. */
static int trailer_at(int fd, off_t size, uint32_t P)
{
	unsigned char t[2];

	return size >= (off_t)P &&
	       pread_full(fd, t, sizeof(t), (off_t)P - 8) == (ssize_t)sizeof(t) &&
	       t[0] == CRYPT_FORMAT && t[1] <= CRYPT_KDF_SENSITIVE;
}

/* The page size of an encrypted store, found by what authentication
 * covers rather than by the clear header alone: page 1's bytes 16-23
 * (page size, reserve, fractions) are only checked when the page is
 * opened, so a changed byte there must still lead to that check (and its
 * "failed authentication"), not to "not a store". The header's size is
 * tried first, then 4096 (what statefs writes), then every other size the
 * file is a whole number of pages of. 0 when no page 1 ends in our
 * trailer. */
static uint32_t page_size_of(int fd, off_t size, const unsigned char *hdr)
{
	uint32_t hint = cp_page_size(hdr);

	if (hint && trailer_at(fd, size, hint))
		return hint;
	if (size % 4096 == 0 && trailer_at(fd, size, 4096))
		return 4096;
	for (uint32_t P = CP_MIN_PAGE; P <= CP_MAX_PAGE; P *= 2)
		if (P != hint && P != 4096 && size % P == 0 &&
		    trailer_at(fd, size, P))
			return P;
	/* a header of ours with another format, or a page 1 cut short:
	 * head_key and the length check below say which */
	return cp_is_encrypted_header(hdr) ? hint : 0;
}

/* Reads the start of path. *kind NEW/PLAIN/ENCRYPTED; for ENCRYPTED h is
 * filled (page1 holds page 1 as stored). */
static int head_read(const char *path, head *h, crypt_kind *kind)
{
	unsigned char hdr[24];
	struct stat st;
	ssize_t n;
	int saverr;

	memset(h, 0, sizeof(*h));
	h->fd = -1;
	if (strcmp(path, ":memory:") == 0 || !*path) {
		*kind = CRYPT_KIND_NEW;
		return SFS_OK;
	}
	/* Only a regular file can be a store. Asked before the open, which
	 * would wait for a writer on a FIFO and fails on a socket, and again
	 * of what was opened (O_NONBLOCK: the name may have changed
	 * between). */
	if (stat(path, &st) != 0) {
		saverr = errno;
		if (saverr == ENOENT) {
			*kind = CRYPT_KIND_NEW;
			return SFS_OK;
		}
		return sfs_err(SFS_IO, "cannot stat %s: %s", path,
		               strerror(saverr));
	}
	if (!S_ISREG(st.st_mode))
		return sfs_err(SFS_FORMAT, "%s is not a regular file", path);
	h->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (h->fd < 0) {
		saverr = errno;
		if (saverr == ENOENT) {
			*kind = CRYPT_KIND_NEW;
			return SFS_OK;
		}
		return sfs_err(SFS_IO, "cannot open %s: %s", path,
		               strerror(saverr));
	}
	if (fstat(h->fd, &st) != 0) {
		saverr = errno;
		return sfs_err(SFS_IO, "cannot stat %s: %s", path,
		               strerror(saverr));
	}
	if (!S_ISREG(st.st_mode))
		return sfs_err(SFS_FORMAT, "%s is not a regular file", path);
	h->size = st.st_size;
	n = pread_full(h->fd, hdr, sizeof(hdr), 0);
	if (n < 0) {
		saverr = errno;
		return sfs_err(SFS_IO, "cannot read %s: %s", path,
		               strerror(saverr));
	}
	if (n == 0) {
		*kind = CRYPT_KIND_NEW;
		return SFS_OK;
	}
	if (n == (ssize_t)sizeof(hdr) &&
	    memcmp(hdr, "SQLite format 3", 16) == 0) {
		*kind = CRYPT_KIND_PLAIN;
		return SFS_OK;
	}
	if (n == (ssize_t)sizeof(hdr))
		h->P = page_size_of(h->fd, h->size, hdr);
	if (!h->P)
		return sfs_err(SFS_FORMAT, "%s is neither a statefs store nor "
		               "an SQLite database", path);
	h->page1 = malloc(h->P);
	if (!h->page1)
		return sfs_err(SFS_NOMEM, "out of memory");
	n = pread_full(h->fd, h->page1, h->P, 0);
	if (n < 0) {
		saverr = errno;
		return sfs_err(SFS_IO, "cannot read %s: %s", path,
		               strerror(saverr));
	}
	if (n < (ssize_t)h->P)
		return sfs_err(SFS_CORRUPT, "page 1 of %s is incomplete (%zd of "
		               "%u bytes)", path, n, h->P);
	*kind = CRYPT_KIND_ENCRYPTED;
	return SFS_OK;
}

static void pause_10ms(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

/* Opens page 1 as read into h. It is read with pread, under no lock of
 * SQLite's: a checkpoint of another process (a rekey's first step, say)
 * can rewrite it during the read, which then fails authentication though
 * nothing is damaged (a command beside rekeys exited 4, "page 1 ...
 * failed authentication", once in five runs of cli_admin.sh under load).
 * Read again, as the verification does, before it is called damaged. */
static int open_page1(head *h, const cp_filekey *fk)
{
	int r = cp_open(fk, CP_DB, 1, NULL, h->page1, h->P);

	for (int attempt = 0; r == CP_AUTH && attempt < 2; attempt++) {
		pause_10ms();
		if (pread_full(h->fd, h->page1, h->P, 0) != (ssize_t)h->P)
			break;
		r = cp_open(fk, CP_DB, 1, NULL, h->page1, h->P);
	}
	return r;
}

/* Derives the file's keys and checks the key against page 1. */
static int head_key(const char *path, head *h, const sfs_key *key,
                    cp_filekey *fk)
{
	int kdf = h->page1[h->P - 7], rc, r;
	int pass = crypt_key_is_passphrase(key);

	/* A raw key ignores the kdf byte (see vfs.c main_ready). */
	rc = cp_derive(key, h->page1, pass ? kdf : CRYPT_KDF_RAW, fk);
	if (rc && rc != SFS_WRONGKEY)
		return rc;
	r = rc ? CP_OTHERKEY : open_page1(h, fk);
	/* A passphrase derives its key by the kdf byte, so a changed kdf
	 * byte of a passphrase store would read as a wrong passphrase (or as
	 * "created with a key"). The limits statefs gives new stores decide:
	 * a page 1 that authenticates under them with that byte set back was
	 * damaged (cp_open checks a trailer not ours as if it were). Only
	 * when the byte's own limits failed: one more derivation, on the
	 * way to an error. */
	if (pass && r == CP_OTHERKEY && kdf != CRYPT_KDF_MODERATE &&
	    h->page1[h->P - 8] == CRYPT_FORMAT) {
		int rc2 = cp_derive(key, h->page1, CRYPT_KDF_MODERATE, fk);

		if (rc2 && rc2 != SFS_WRONGKEY)
			return rc2;
		if (rc2 == SFS_OK &&
		    cp_open(fk, CP_DB, 1, NULL, h->page1, h->P) == CP_AUTH)
			return sfs_err(SFS_CORRUPT, "page 1 of %s %s", path,
			               cp_reason(CP_AUTH));
	}
	if (rc == SFS_WRONGKEY)
		return sfs_err(SFS_WRONGKEY, "wrong key: %s was created with a "
		               "key, and a passphrase was given", path);
	if (r == CP_OTHERKEY)
		return sfs_err(SFS_WRONGKEY, "wrong key: the %s given does not "
		               "open %s%s", crypt_key_is_passphrase(key) ?
		               "passphrase" : "key", path,
		               !crypt_key_is_passphrase(key) &&
		               kdf != CRYPT_KDF_RAW ?
		               " (it was created with a passphrase)" : "");
	if (r == CP_BADFMT)
		return sfs_err(SFS_FORMAT, "%s uses encryption format %d; this "
		               "statefs reads format %d (a newer statefs wrote "
		               "it?)", path, h->page1[h->P - 8], CRYPT_FORMAT);
	if (r)
		return sfs_err(SFS_CORRUPT, "page 1 of %s %s", path,
		               cp_reason(r));
	return SFS_OK;
}

int crypt_preflight(const char *path, const sfs_key *key, crypt_kind *kind)
{
	cp_filekey *fk = NULL;
	crypt_kind k;
	head h;
	int rc;

	if (!path || !kind)
		return sfs_err(SFS_INVALID, "crypt_preflight: NULL argument");
	rc = head_read(path, &h, &k);
	if (rc)
		goto out;
	if (k == CRYPT_KIND_PLAIN && key) {
		rc = sfs_err(SFS_NOTENCRYPTED, "%s is not encrypted, but a key "
		             "was given: open it in plaintext mode, or encrypt "
		             "it first", path);
		goto out;
	}
	if (k == CRYPT_KIND_ENCRYPTED && !key) {
		rc = sfs_err(SFS_NOKEY, "%s is encrypted and no key was given: "
		             "it opens only with its key (a key file, "
		             "STATEFS_KEY or STATEFS_KEY_FILE), never in "
		             "plaintext mode", path);
		goto out;
	}
	if (k == CRYPT_KIND_ENCRYPTED) {
		fk = cp_filekey_new();
		if (!fk) {
			rc = sfs_err(SFS_NOMEM, "out of locked memory");
			goto out;
		}
		rc = head_key(path, &h, key, fk);
		if (rc)
			goto out;
	}
	*kind = k;
out:
	cp_filekey_free(fk);
	head_close(&h);
	return rc;
}

int crypt_explain_short(const char *path, const sfs_key *key, int status)
{
	char was[512];
	unsigned char hdr[100];
	cp_filekey *fk = NULL;
	crypt_kind k = CRYPT_KIND_NEW;
	uint32_t P = 0, count = 0;
	off_t size = 0;
	head h;

	if (status != SFS_CORRUPT)
		return status;
	snprintf(was, sizeof(was), "%s", sfs_errdetail());
	if (head_read(path, &h, &k) != SFS_OK)
		k = CRYPT_KIND_NEW;
	if (k == CRYPT_KIND_PLAIN &&
	    pread_full(h.fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr)) {
		P = ((uint32_t)hdr[16] << 8 | hdr[17]) == 1 ?
		    65536 : ((uint32_t)hdr[16] << 8 | hdr[17]);
		count = crypt_p1_pages(hdr);
		size = lseek(h.fd, 0, SEEK_END);
	} else if (k == CRYPT_KIND_ENCRYPTED && key &&
	           (fk = cp_filekey_new()) != NULL &&
	           head_key(path, &h, key, fk) == SFS_OK) {
		P = h.P;                       /* page1 is opened now */
		count = crypt_p1_pages(h.page1);
		size = h.size;
	}
	cp_filekey_free(fk);
	head_close(&h);
	if (P < CP_MIN_PAGE || size < 0 || count <= (uint64_t)size / P)
		return sfs_err(status, "%s", was);
	return sfs_err(SFS_CORRUPT, "%s is cut short: its page 1 counts %u "
	               "pages of %u bytes, and the file holds %lld whole "
	               "pages (%lld bytes): it was truncated, or its end was "
	               "lost (with no process using it, move it and its -wal "
	               "aside and copy a checkpoint to its name)", path, count,
	               P,
	               (long long)(size / P), (long long)size);
}

/* ---- verification ---- */

struct progress {
	sfs_progress_fn fn;
	void *ctx;
	uint64_t done, total;
};

static int tick(struct progress *p, int force)
{
	p->done++;
	if (!p->fn || (!force && p->done % 256))
		return SFS_OK;
	if (p->fn(p->done, p->total, p->ctx))
		return sfs_err(SFS_CANCELLED, "verification cancelled");
	return SFS_OK;
}

/* Reads and opens one database page, retrying a failure twice. Returns the
 * cp_open result, or -1 when the file ended (it shrank meanwhile). */
static int verify_db_page(int fd, const cp_filekey *fk, uint32_t pgno,
                          uint32_t P, unsigned char *buf)
{
	int r = CP_AUTH;

	for (int attempt = 0; attempt < 3; attempt++) {
		if (attempt)
			pause_10ms();
		if (pread_full(fd, buf, P, (off_t)(pgno - 1) * P) != (ssize_t)P)
			return -1;
		r = cp_open(fk, CP_DB, pgno, NULL, buf, P);
		if (r == CP_OK)
			return r;
	}
	return r;
}

/* cp_wal_commit_after's reads. */
static int fd_read(void *ctx, void *buf, size_t n, int64_t off)
{
	return pread_full(*(int *)ctx, buf, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* The number of committed frames, from the wal-index header in -shm when
 * a live connection keeps it current (both copies equal, initialised, and
 * salts matching the WAL's): 0 when unknown. The layout is SQLite's
 * documented WalIndexHdr: mxFrame at byte 16, salts at 32, the second copy
 * at byte 48. */
static uint32_t wal_committed(const char *path, const unsigned char *salts)
{
	char shm[4096];
	unsigned char h[96];
	int fd;

	if ((size_t)snprintf(shm, sizeof(shm), "%s-shm", path) >= sizeof(shm))
		return 0;
	fd = open(shm, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (int attempt = 0; attempt < 3; attempt++) {
		if (pread_full(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h))
			break;
		if (memcmp(h, h + 48, 48) == 0 && h[12] == 1 &&
		    memcmp(h + 32, salts, 8) == 0) {
			uint32_t mx;
			memcpy(&mx, h + 16, 4); /* native byte order */
			close(fd);
			return mx;
		}
		pause_10ms();
	}
	close(fd);
	return 0;
}

/* The WAL, as SQLite's recovery will read it: every frame of the log up to
 * where it ends authenticates and continues the checksum chain, and the
 * log does not end before a commit frame that proves it should not have
 * (wal.c). Frames up to the committed count a live connection keeps
 * in the wal-index must all be there. A writer may append, rewrite
 * checksums of its open transaction or restart the log meanwhile: a frame
 * that fails is read twice more, and a log restarted under us (the header
 * changed) ends the check. */
static int verify_wal(const char *path, const cp_filekey *fk, uint32_t P,
                      struct progress *pr)
{
	char wal[4096];
	unsigned char whdr[CP_WAL_HDR], now[CP_WAL_HDR], *buf = NULL;
	size_t fsz = P + CP_FRAME_HDR;
	uint32_t committed, ck[2], next[2] = { 0, 0 }, later;
	struct stat st;
	int fd, rc = SFS_OK;

	if ((size_t)snprintf(wal, sizeof(wal), "%s-wal", path) >= sizeof(wal))
		return sfs_err(SFS_INVALID, "path too long");
	fd = open(wal, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return SFS_OK; /* no WAL: nothing to check */
	if (fstat(fd, &st) != 0 || st.st_size < CP_WAL_HDR ||
	    pread_full(fd, whdr, sizeof(whdr), 0) != (ssize_t)sizeof(whdr) ||
	    !cp_wal_header(whdr, P, ck))
		goto out; /* empty, or a header SQLite itself ignores */
	buf = malloc(fsz);
	if (!buf) {
		rc = sfs_err(SFS_NOMEM, "out of memory");
		goto out;
	}
	pr->total += (uint64_t)(st.st_size - CP_WAL_HDR) / fsz;
	committed = wal_committed(path, whdr + 16);
	for (uint32_t k = 1;; k++) {
		off_t o = CP_WAL_HDR + (off_t)(k - 1) * (off_t)fsz;
		uint32_t after[2];
		int r = CP_AUTH;

		for (int attempt = 0; attempt < 3 && r != CP_OK; attempt++) {
			if (attempt)
				pause_10ms();
			if (pread_full(fd, buf, fsz, o) != (ssize_t)fsz)
				goto out; /* the log ends with the file */
			r = cp_wal_frame(fk, whdr, P, k, buf, ck, next);
		}
		if (r == CP_OK) {
			ck[0] = next[0];
			ck[1] = next[1];
			rc = tick(pr, 0);
			if (rc)
				goto out;
			continue;
		}
		/* The log ends at frame k. */
		if (pread_full(fd, now, sizeof(now), 0) != (ssize_t)sizeof(now) ||
		    memcmp(now, whdr, sizeof(now)) != 0)
			goto out; /* restarted meanwhile */
		if (k <= committed) {
			rc = sfs_err(SFS_CORRUPT, "WAL frame %u of %s %s (a "
			             "committed frame)", k, wal, cp_wal_reason(r));
			goto out;
		}
		if (r == CP_WAL_OTHER || r == CP_WAL_CHAIN) {
			after[0] = next[0];
			after[1] = next[1];
		} else {
			pread_full(fd, buf, CP_FRAME_HDR, o);
			after[0] = cp_get32(buf + 16);
			after[1] = cp_get32(buf + 20);
		}
		later = cp_wal_commit_after(fd_read, &fd, fk, whdr, P, k, after,
		                            buf);
		if (later)
			rc = sfs_err(SFS_CORRUPT, "WAL frame %u of %s %s "
			             "(committed frame %u follows it: recovery "
			             "would drop every commit after it)", k, wal,
			             cp_wal_reason(r), later);
		/* else: where SQLite's log ends (a torn last frame, an older
		 * generation, a transaction not yet committed). */
		goto out;
	}
out:
	if (buf) {
		sodium_memzero(buf, fsz);
		free(buf);
	}
	close(fd);
	return rc;
}

int crypt_verify_file(const char *path, const crypt_vfs *v,
                      sfs_progress_fn progress, void *ctx)
{
	struct progress pr = { progress, ctx, 0, 0 };
	cp_filekey *fk = NULL;
	unsigned char *buf = NULL;
	crypt_kind kind;
	uint32_t npages;
	head h;
	int rc;

	if (!path || !v)
		return sfs_err(SFS_INVALID, "crypt_verify_file: NULL argument");
	rc = head_read(path, &h, &kind);
	if (rc)
		goto out;
	if (kind != CRYPT_KIND_ENCRYPTED) {
		rc = kind == CRYPT_KIND_NEW ? SFS_OK :
		     sfs_err(SFS_NOTENCRYPTED, "%s is not encrypted", path);
		goto out;
	}
	fk = cp_filekey_new();
	buf = malloc(h.P);
	if (!fk || !buf) {
		rc = sfs_err(SFS_NOMEM, "out of memory");
		goto out;
	}
	rc = head_key(path, &h, crypt_vfs_key(v), fk);
	if (rc)
		goto out;
	npages = (uint32_t)(h.size / h.P);
	pr.total = npages;
	rc = tick(&pr, 0);
	for (uint32_t pg = 2; rc == SFS_OK && pg <= npages; pg++) {
		int r = verify_db_page(h.fd, fk, pg, h.P, buf);
		if (r < 0)
			break;
		if (r) {
			rc = sfs_err(SFS_CORRUPT, "page %u of %s %s", pg, path,
			             cp_reason(r));
			goto out;
		}
		rc = tick(&pr, 0);
	}
	if (rc == SFS_OK && h.size % h.P)
		rc = sfs_err(SFS_CORRUPT, "%s ends inside page %u (%lld bytes)",
		             path, npages + 1, (long long)h.size);
	if (rc == SFS_OK)
		rc = verify_wal(path, fk, h.P, &pr);
	if (rc == SFS_OK && progress) {
		pr.done--;
		rc = tick(&pr, 1);
	}
out:
	if (buf) {
		sodium_memzero(buf, h.P);
		free(buf);
	}
	cp_filekey_free(fk);
	head_close(&h);
	return rc;
}
