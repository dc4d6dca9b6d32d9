/*
 * vfs_log.c - the page-encrypting VFS's WAL and rollback journal: frames
 * and journal pages sealed and opened with crypt/page_i.h's format, under
 * the keys of their main file (vfs.c, whose header comment has the rules:
 * whole WAL frames, checksums over the sealed bytes, recovery scans).
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "vfs_file_i.h"
#include "wal_i.h"

/* ---- WAL ---- */

static uint32_t wal_page_size(cfile *w)
{
	if (w->main->P)
		return w->main->P;
	if (w->walhdr_ok)
		return cp_get32(w->walhdr + 8);
	return 0;
}

/* Frame index (1-based) of a page at off, 0 if off is not a page slot. */
static uint32_t wal_frame_of_page(uint32_t P, sqlite3_int64 off)
{
	sqlite3_int64 rel = off - CP_WAL_HDR - CP_FRAME_HDR;

	if (rel < 0 || rel % (P + CP_FRAME_HDR))
		return 0;
	return (uint32_t)(rel / (P + CP_FRAME_HDR)) + 1;
}

/* Writes the frame header wal_write held back, if there is one: before
 * any other call on the WAL (so that nothing reads, syncs, sizes or
 * truncates the file without it, and the order of writes to the file is
 * SQLite's) and before the main file's locks and shared memory calls (so
 * that no frame is published in the wal-index without its header). A
 * header that fails to go down stays held, for the next call to try. */
static int wal_flush(cfile *w)
{
	int rc;

	if (!w || !w->fhdr_held)
		return SQLITE_OK;
	rc = w->real->pMethods->xWrite(w->real, w->fhdr, CP_FRAME_HDR,
	                               w->fhdr_off);
	if (rc == SQLITE_OK)
		w->fhdr_held = 0;
	return rc;
}

/* The held header of f's WAL (f a WAL, or a main file whose connection has
 * one open) goes to disk. */
int cf_flush(cfile *f)
{
	return wal_flush(f->type == CF_WAL ? f : f->type == CF_DB ? f->wal :
	                 NULL);
}

/* SQLite appends a frame as two writes, its 24-byte header and then its
 * page right after it (walWriteOneFrame), with no other call between.
 * The header is held back and goes down with the sealed page as one
 * write of P + 24 bytes: one system call a frame instead of two.
 *
 * The one header no page follows is walRewriteChecksums's: at a commit
 * it reads frames whole and rewrites their headers, the commit frame's
 * last. Such a header (one at the offset of the frame just read whole) is
 * written at once, so that its failure fails the commit as it does
 * without the shim. Any other header no page follows would go down at
 * the next call on the WAL or on the main file (wal_flush), and SQLite
 * makes one on the main file before a commit returns: the shared-memory
 * barrier before the wal-index header that publishes frames, and
 * SQLITE_FCNTL_COMMIT_PHASETWO, the one call left in an exclusive-locking
 * connection. So a header is held only while the WAL is linked to its
 * connection's main file. */
int wal_write(cfile *w, const void *in, int amt, sqlite3_int64 off)
{
	const unsigned char *hdr;
	uint32_t P, frame;
	cp_walpos pos;
	int rc, whole = 0, rewrite = w->frame_rd == off;

	w->rec_next = 0;
	w->frame_rd = -1;
	P = wal_page_size(w);
	if (P && amt == CP_FRAME_HDR && off >= CP_WAL_HDR &&
	    (off - CP_WAL_HDR) % (P + CP_FRAME_HDR) == 0) {
		rc = wal_flush(w);
		if (rc)
			return rc;
		memcpy(w->fhdr, in, CP_FRAME_HDR);
		w->fhdr_off = off;
		if (rewrite || w->main->wal != w)
			return w->real->pMethods->xWrite(w->real, in, amt, off);
		w->fhdr_held = 1;
		return SQLITE_OK;
	}
	if (w->fhdr_held && (off != w->fhdr_off + CP_FRAME_HDR ||
	                     (uint32_t)amt != P)) {
		rc = wal_flush(w);
		if (rc)
			return rc;
	}
	if (off == 0 && amt == CP_WAL_HDR) {
		memcpy(w->walhdr, in, CP_WAL_HDR);
		w->walhdr_ok = 1;
		return w->real->pMethods->xWrite(w->real, in, amt, off);
	}
	frame = P && (uint32_t)amt == P ? wal_frame_of_page(P, off) : 0;
	if (!frame)
		return cv_fail(SQLITE_IOERR_WRITE, "%s: refusing a WAL write of "
		            "%d bytes at %lld (not a header or a page)", w->zname,
		            amt, (long long)off);
	if (!cp_all_zero((const unsigned char *)in + P - CP_RESERVE,
	                 CP_RESERVE))
		return cv_fail(SQLITE_IOERR_WRITE, "%s: WAL frame %u has data in "
		            "its reserved bytes", w->zname, frame);
	rc = main_ready(w->main);
	if (!rc)
		rc = cf_buf(w, P + CP_FRAME_HDR);
	if (rc) {
		w->fhdr_held = 0;
		w->fhdr_off = -1;
		return rc;
	}
	if (w->fhdr_off == off - CP_FRAME_HDR) {
		whole = w->fhdr_held;
		w->fhdr_held = 0;
		memcpy(w->buf, w->fhdr, CP_FRAME_HDR);
	} else {
		/* An in-place overwrite of a frame written earlier in this
		 * transaction: SQLite sends the page alone. */
		rc = w->real->pMethods->xRead(w->real, w->buf, CP_FRAME_HDR,
		                              off - CP_FRAME_HDR);
		if (rc)
			return cv_fail(SQLITE_IOERR_WRITE, "%s: cannot read the "
			            "header of WAL frame %u", w->zname, frame);
	}
	hdr = w->buf;
	pos.frame = frame;
	pos.hdr8 = hdr;
	cp_seal(w->main->fk, CP_WAL, cp_get32(hdr), &pos, in,
	        w->buf + CP_FRAME_HDR, P);
	if (!whole)
		return w->real->pMethods->xWrite(w->real, w->buf + CP_FRAME_HDR,
		                                 amt, off);
	rc = w->real->pMethods->xWrite(w->real, w->buf, amt + CP_FRAME_HDR,
	                               off - CP_FRAME_HDR);
	if (rc)
		w->fhdr_off = -1;
	return rc;
}

/* cp_wal_commit_after's reads, below SQLite. */
static int wal_raw_read(void *ctx, void *buf, size_t n, int64_t off)
{
	cfile *w = ctx;
	return w->real->pMethods->xRead(w->real, buf, (int)n, off);
}

/* Recovery (or a reader without a wal-index) reads frame k whole, in
 * order from frame 1, and ends the log at the first frame SQLite rejects.
 * A log that ends before a commit frame that proves it should not have
 * (wal.c) was damaged, not torn: fail, naming the frame, rather than
 * let SQLite drop every commit after it. Otherwise the log ends there, as
 * without encryption. A frame whose page fails authentication reads as
 * zeros either way (its checksum then fails too); one that opens is
 * returned as it is. */
static int wal_recovery_frame(cfile *w, uint32_t P, uint32_t k,
                              unsigned char *o)
{
	unsigned char *copy = w->buf;
	uint32_t next[2], after[2], later;
	int r;

	memcpy(copy, o, P + CP_FRAME_HDR);
	r = cp_wal_frame(w->main->fk, w->walhdr, P, k, copy, w->rec_ck, next);
	if (r == CP_OK) {
		memcpy(o + CP_FRAME_HDR, copy + CP_FRAME_HDR, P);
		w->rec_ck[0] = next[0];
		w->rec_ck[1] = next[1];
		w->rec_next = k + 1;
		return SQLITE_OK;
	}
	w->rec_next = 0;
	if (r == CP_WAL_OTHER || r == CP_WAL_CHAIN) {
		memcpy(o + CP_FRAME_HDR, copy + CP_FRAME_HDR, P);
		after[0] = next[0];
		after[1] = next[1];
	} else {
		memset(o + CP_FRAME_HDR, 0, P);
		after[0] = cp_get32(o + 16);
		after[1] = cp_get32(o + 20);
	}
	later = cp_wal_commit_after(wal_raw_read, w, w->main->fk, w->walhdr, P,
	                            k, after, copy);
	sodium_memzero(copy, P + CP_FRAME_HDR);
	if (later)
		return cv_fail(SQLITE_IOERR_DATA, "WAL frame %u of %s %s; committed "
		            "frame %u follows it, so it was damaged or tampered "
		            "with, not torn by a crash (recovery would drop every "
		            "commit after it)", k, w->zname, cp_wal_reason(r),
		            later);
	if (r != CP_WAL_OTHER && r != CP_WAL_CHAIN)
		sqlite3_log(SQLITE_WARNING, "statefs-crypt: page %u in WAL frame "
		            "%u of %s %s; the log ends before it", cp_get32(o), k,
		            w->zname, cp_reason(r));
	return SQLITE_OK;
}

int wal_read(cfile *w, void *out, int amt, sqlite3_int64 off)
{
	unsigned char *o = out;
	uint32_t P, frame;
	cp_walpos pos;
	int rc, r;

	rc = wal_flush(w);
	if (rc)
		return rc;
	w->frame_rd = -1;
	if (off == 0 && amt == CP_WAL_HDR) {
		rc = w->real->pMethods->xRead(w->real, out, amt, off);
		w->rec_next = 0;
		if (rc == SQLITE_OK) {
			memcpy(w->walhdr, out, CP_WAL_HDR);
			w->walhdr_ok = 1;
			/* Recovery starts here; a header SQLite rejects makes
			 * it ignore the whole log. */
			P = wal_page_size(w);
			if (P && cp_wal_header(w->walhdr, P, w->rec_ck))
				w->rec_next = 1;
		}
		return rc;
	}
	if (amt <= CP_FRAME_HDR) /* frame headers, checksum fields */
		return w->real->pMethods->xRead(w->real, out, amt, off);
	rc = main_ready(w->main);
	if (rc)
		return rc;
	P = wal_page_size(w);
	if (P && (uint32_t)amt == P && (frame = wal_frame_of_page(P, off))) {
		/* A page found through the wal-index: it belongs to a
		 * committed transaction and must be intact. */
		rc = cf_buf(w, P + CP_FRAME_HDR);
		if (rc)
			return rc;
		rc = w->real->pMethods->xRead(w->real, w->buf,
		                              (int)P + CP_FRAME_HDR,
		                              off - CP_FRAME_HDR);
		if (rc == SQLITE_IOERR_SHORT_READ &&
		    cp_all_zero(w->buf, P + CP_FRAME_HDR)) {
			memset(out, 0, (size_t)amt);
			return rc;
		}
		if (rc == SQLITE_IOERR_SHORT_READ)
			return cv_fail(SQLITE_IOERR_DATA, "WAL frame %u of %s is "
			            "incomplete", frame, w->zname);
		if (rc)
			return rc;
		pos.frame = frame;
		pos.hdr8 = w->buf;
		r = cp_open(w->main->fk, CP_WAL, cp_get32(w->buf), &pos,
		            w->buf + CP_FRAME_HDR, P);
		if (r) {
			memset(out, 0, (size_t)amt);
			return cv_fail(SQLITE_IOERR_DATA, "page %u in WAL frame %u "
			            "of %s %s", cp_get32(w->buf), frame,
			            w->zname, cp_reason(r));
		}
		memcpy(out, w->buf + CP_FRAME_HDR, P);
		return SQLITE_OK;
	}
	if (P && (uint32_t)amt == P + CP_FRAME_HDR &&
	    (frame = wal_frame_of_page(P, off + CP_FRAME_HDR))) {
		/* Recovery or a checksum rewrite: header and page together. */
		rc = w->real->pMethods->xRead(w->real, out, amt, off);
		if (rc)
			return rc;
		w->frame_rd = off;
		if (frame == w->rec_next) {
			rc = cf_buf(w, P + CP_FRAME_HDR);
			return rc ? rc : wal_recovery_frame(w, P, frame, o);
		}
		pos.frame = frame;
		pos.hdr8 = o;
		r = cp_open(w->main->fk, CP_WAL, cp_get32(o), &pos,
		            o + CP_FRAME_HDR, P);
		if (r != CP_OK) {
			/* A frame SQLite rewrites the checksum of was written
			 * in this transaction: it opens. Zeros fail SQLite's
			 * own checksum. */
			memset(o + CP_FRAME_HDR, 0, P);
			sqlite3_log(SQLITE_WARNING, "statefs-crypt: page %u in "
			            "WAL frame %u of %s %s", cp_get32(o), frame,
			            w->zname, cp_reason(r));
		}
		return SQLITE_OK;
	}
	return cv_fail(SQLITE_IOERR_READ, "%s: refusing a WAL read of %d bytes "
	            "at %lld (not a header or a page)", w->zname, amt,
	            (long long)off);
}

/* ---- rollback journal ---- */

/* A page record is page number (4), page (P), checksum (4) after a
 * sector-aligned header, so its page sits at an offset = 4 mod 8; header
 * chunks, which may also be P bytes long, sit at multiples of 512. Returns
 * 1 for a page, 0 for anything else, or an SQLite error (negated). */
static int journal_is_page(cfile *j, int amt, sqlite3_int64 off)
{
	int rc;

	if (amt < CP_MIN_PAGE || amt > CP_MAX_PAGE || (amt & (amt - 1)) ||
	    off % 8 != 4)
		return 0;
	rc = main_ready(j->main);
	if (rc)
		return -rc;
	if (j->main->P != (uint32_t)amt)
		return -cv_fail(SQLITE_IOERR, "%s: a journal page of %d bytes, "
		             "the database's are %u", j->zname, amt,
		             j->main->P);
	return 1;
}

static int journal_pgno(cfile *j, sqlite3_int64 off, uint32_t *pgno)
{
	unsigned char b[4];
	int rc;

	if (j->jpg_off == off - 4) {
		*pgno = cp_get32(j->jpg);
		return SQLITE_OK;
	}
	rc = j->real->pMethods->xRead(j->real, b, 4, off - 4);
	if (rc)
		return rc;
	*pgno = cp_get32(b);
	return SQLITE_OK;
}

int journal_write(cfile *j, const void *in, int amt,
                         sqlite3_int64 off)
{
	uint32_t pgno, P;
	int rc;

	if (amt == 4) {
		memcpy(j->jpg, in, 4);
		j->jpg_off = off;
	}
	rc = journal_is_page(j, amt, off);
	if (rc < 0)
		return -rc;
	if (rc == 0)
		return j->real->pMethods->xWrite(j->real, in, amt, off);
	P = j->main->P;
	if (!cp_all_zero((const unsigned char *)in + P - CP_RESERVE,
	                 CP_RESERVE))
		return cv_fail(SQLITE_IOERR_WRITE, "%s: a journal page has data "
		            "in its reserved bytes", j->zname);
	rc = journal_pgno(j, off, &pgno);
	if (rc)
		return rc;
	rc = cf_buf(j, P);
	if (rc)
		return rc;
	cp_seal(j->main->fk, CP_JOURNAL, pgno, NULL, in, j->buf, P);
	return j->real->pMethods->xWrite(j->real, j->buf, amt, off);
}

int journal_read(cfile *j, void *out, int amt, sqlite3_int64 off)
{
	uint32_t pgno;
	int rc, r;

	rc = journal_is_page(j, amt, off);
	if (rc < 0)
		return -rc;
	if (rc == 0) {
		rc = j->real->pMethods->xRead(j->real, out, amt, off);
		if (rc == SQLITE_OK && amt == 4) {
			memcpy(j->jpg, out, 4);
			j->jpg_off = off;
		}
		return rc;
	}
	rc = journal_pgno(j, off, &pgno);
	if (rc)
		return rc;
	rc = j->real->pMethods->xRead(j->real, out, amt, off);
	if (rc)
		return rc;
	r = cp_open(j->main->fk, CP_JOURNAL, pgno, NULL, out, j->main->P);
	if (r) {
		/* As a torn record: the pager's checksum ends the playback. */
		memset(out, 0, (size_t)amt);
		sqlite3_log(SQLITE_WARNING, "statefs-crypt: page %u in the "
		            "journal %s %s", pgno, j->zname, cp_reason(r));
	}
	return SQLITE_OK;
}
