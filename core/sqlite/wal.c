/*
 * wal.c - the WAL's checksum chain as SQLite's recovery reads it, so
 * that the encryption layer can tell a log that ends (a torn last frame, an
 * older generation, frames whose checksums SQLite has not written yet) from
 * a log that was cut short by damage (used by vfs.c during recovery
 * and by check.c in sfs_store_verify).
 *
 * A frame's page is authenticated (core/crypt/page.c), but its header bytes
 * 8-23, the salts and the running checksum, are not and cannot be: SQLite
 * writes them as zeros and fills them in later when a big transaction
 * rewrites pages in place. SQLite ends the log at the
 * first frame whose salts differ from the WAL header's or whose checksum
 * does not continue the chain, and replays only the commits before it. A
 * flipped bit in one header therefore dropped every later commit without a
 * word. What damage leaves and a legitimate end does not: a later frame of
 * the same generation that is a commit frame, whose page authenticates and
 * whose checksum continues the chain from the frame before it. A crash
 * cannot leave one (SQLite writes frames in order and a commit frame last;
 * a transaction whose checksums are being rewritten has its commit frame
 * zeroed until the rewrite reaches it), an older generation has other
 * salts, and a stale frame whose header was rewritten over an older page
 * does not continue any chain.
 *
 * What it leaves out: a damaged WAL header (SQLite then ignores the whole
 * log; its salts are the only way to know which frames are current), and
 * damage to the header of the last commit frame, which looks exactly like
 * a torn write: both lose the newest commits, as truncating the WAL would
 * (docs/encryption.md, "Not protected").
 */
#include <string.h>

#include "wal_i.h"

#define WAL_MAGIC 0x377f0682u
#define WAL_VERSION 3007000u

void cp_wal_cksum(int big, const unsigned char *p, size_t n, uint32_t s[2])
{
	uint32_t s1 = s[0], s2 = s[1];

	/* SQLite's two-word Fletcher-like sum over 32-bit words, in the byte
	 * order the WAL header's magic names (walChecksumBytes). */
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint32_t a, b;
		if (big) {
			a = cp_get32(p + i);
			b = cp_get32(p + i + 4);
		} else {
			a = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 |
			    (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
			b = (uint32_t)p[i + 4] | (uint32_t)p[i + 5] << 8 |
			    (uint32_t)p[i + 6] << 16 | (uint32_t)p[i + 7] << 24;
		}
		s1 += a + s2;
		s2 += b + s1;
	}
	s[0] = s1;
	s[1] = s2;
}

int cp_wal_header(const unsigned char *whdr, uint32_t P, uint32_t ck[2])
{
	uint32_t magic = cp_get32(whdr), s[2] = { 0, 0 };

	if ((magic & ~1u) != WAL_MAGIC || cp_get32(whdr + 4) != WAL_VERSION ||
	    cp_get32(whdr + 8) != P)
		return 0;
	cp_wal_cksum(magic & 1, whdr, 24, s);
	if (s[0] != cp_get32(whdr + 24) || s[1] != cp_get32(whdr + 28))
		return 0;
	ck[0] = s[0];
	ck[1] = s[1];
	return 1;
}

int cp_wal_frame(const cp_filekey *fk, const unsigned char *whdr, uint32_t P,
                 uint32_t k, unsigned char *frame, const uint32_t prev[2],
                 uint32_t next[2])
{
	cp_walpos pos = { k, frame };
	uint32_t s[2] = { prev[0], prev[1] };
	int r = cp_open(fk, CP_WAL, cp_get32(frame), &pos, frame + CP_FRAME_HDR,
	                P);

	if (r != CP_OK)
		return r;
	cp_wal_cksum(cp_get32(whdr) & 1, frame, 8, s);
	cp_wal_cksum(cp_get32(whdr) & 1, frame + CP_FRAME_HDR, P, s);
	next[0] = s[0];
	next[1] = s[1];
	if (memcmp(frame + 8, whdr + 16, 8) != 0)
		return CP_WAL_OTHER;
	if (cp_get32(frame) == 0 || s[0] != cp_get32(frame + 16) ||
	    s[1] != cp_get32(frame + 20))
		return CP_WAL_CHAIN;
	return CP_OK;
}

uint32_t cp_wal_commit_after(cp_wal_read_fn rd, void *ctx,
                             const cp_filekey *fk, const unsigned char *whdr,
                             uint32_t P, uint32_t k, const uint32_t after[2],
                             unsigned char *buf)
{
	const int64_t fsz = (int64_t)P + CP_FRAME_HDR;
	uint32_t prev[2] = { after[0], after[1] }, next[2];
	unsigned char h[CP_FRAME_HDR];

	for (uint32_t j = k + 1;; j++) {
		int64_t off = CP_WAL_HDR + (int64_t)(j - 1) * fsz;

		if (rd(ctx, h, CP_FRAME_HDR, off) != 0)
			return 0;
		/* Only a commit frame of this generation can say that commits
		 * were lost; its page is read only then. */
		if (cp_get32(h + 4) != 0 && memcmp(h + 8, whdr + 16, 8) == 0 &&
		    rd(ctx, buf, (size_t)fsz, off) == 0 &&
		    cp_wal_frame(fk, whdr, P, j, buf, prev, next) == CP_OK)
			return j;
		/* The chain a frame continues is the one its predecessor's
		 * stored checksum says (for k + 1: the caller's value). */
		prev[0] = cp_get32(h + 16);
		prev[1] = cp_get32(h + 20);
	}
}

const char *cp_wal_reason(int r)
{
	switch (r) {
	case CP_WAL_OTHER:
		return "has the salts of another WAL generation in its header";
	case CP_WAL_CHAIN:
		return "has a header whose checksum does not continue the log";
	default:
		return cp_reason(r);
	}
}
