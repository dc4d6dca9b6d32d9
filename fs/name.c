/*
 * name.c - the name codec of text.h: byte strings (scopes, namespaces,
 * keys) as file names, and file names back to byte strings.
 *
 * The mount shows names and statectl accepts them, so both use this one
 * codec and a path seen under the mount pastes into a command. The design
 * choice is that decoding is strict: a name decodes only if encoding the
 * result gives the same name back. That single check makes the codec a
 * bijection however the grammar below is extended, and it is why a name can
 * never have two spellings (a second spelling would be a hard link that
 * tar, rsync and diff see as two files).
 *
 * The forms, tried in this order (text.h's "Names" section is the
 * contract; docs/filesystem.md has a table of examples):
 *   id      id namespaces only: an 8-byte key is its int64 in decimal
 *           (big-endian in the Go SDK's worker, agg, win; little-endian
 *           in the Python SDK's _vgi/ namespaces of packed ids);
 *   text    printable UTF-8 as is, other bytes and '/' '%' as %XX;
 *   hex     "%x" + lower-case hex, when shorter than the text form, and for
 *           the empty string;
 *   long    a name over FS_NAME_MAX: a prefix cut at a unit boundary, then
 *           "%~" and a 128-bit BLAKE2b hash of the whole string in hex.
 * What it leaves out: Unicode normalisation (names are bytes, as in Linux)
 * and escaping of merely confusable characters (bidi controls, spaces).
 *
 * The hash is the engine's sfs_digest: no key and no secret passes
 * through it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

#define HASH_SUFFIX (2 + 2 * SFS_DIGEST_BYTES) /* "%~" + 32 hex digits */
#define CUT_MAX (FS_NAME_MAX - HASH_SUFFIX)  /* longest prefix of a long name */

static const char hex_lower[] = "0123456789abcdef";
static const char hex_upper[] = "0123456789ABCDEF";

/* Names that are directories or special files of the mount (text.h): a
 * byte string spelled like one of them gets its first byte escaped. */
static const char *const reserved_all[] = {
	".", "..", FS_NAMES_SPECIAL, NULL,
};
static const char *const reserved_scope[] = {
	FS_NAMES_ROOT, NULL,
};

/* Namespaces whose keys are 8-byte ids: the Go SDK's typed families (and
 * the TypeScript SDK's worker state), big-endian; the Python SDK's
 * framework namespaces (FrameworkNS) keyed by BoundStorage.pack_int_key,
 * little-endian (the TypeScript SDK's buffering init too). Its
 * _vgi/streaming_finalize is a log keyed by b"", not by ids. */
static const char *const id_namespaces[] = {
	SFS_NS_WORKER, SFS_NS_AGG, SFS_NS_WIN, NULL,
};
static const char *const id_le_namespaces[] = {
	"_vgi/aggregate_state", "_vgi/aggregate_window_partition",
	"_vgi/buffering_init", "_vgi/streaming_session", "_vgi/tio_state",
	NULL,
};

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 if there is none; *cp gets the
 * code point. */
static size_t utf8_seq(const unsigned char *p, size_t n, uint32_t *cp)
{
	uint32_t c;
	size_t len, i;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xC2 && p[0] <= 0xDF) {
		len = 2;
		c = p[0] & 0x1F;
	} else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
		len = 3;
		c = p[0] & 0x0F;
	} else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
		len = 4;
		c = p[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3F);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
		return 0;
	*cp = c;
	return len;
}

/* Code points shown as %XX even though they are valid UTF-8: C0 and C1
 * controls, DEL, the path separator and the escape character itself. */
static int cp_escaped(uint32_t c)
{
	return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) ||
	       c == '/' || c == '%';
}

static int is_decimal(const unsigned char *p, size_t n)
{
	size_t i = 0;

	if (n > 0 && p[0] == '-')
		i = 1;
	if (i == n)
		return 0;
	for (; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return 1;
}

static int in_list(const char *const *list, const void *p, size_t n)
{
	if (n == 0) /* no list holds "" */
		return 0;
	for (; *list; list++)
		if ((*list)[0] == *(const char *)p && strlen(*list) == n &&
		    memcmp(*list, p, n) == 0)
			return 1;
	return 0;
}

static int is_id_kind(fs_name_kind kind)
{
	return kind == FS_NAME_ID || kind == FS_NAME_ID_LE;
}

/* 8-byte two's complement ids, big-endian for FS_NAME_ID (the encoding
 * of sfs_id_encode, repeated here so the codec stands alone), else
 * little-endian. Byte i of the key is bits 8*shift(i) of the id. */
static int id_shift(fs_name_kind kind, int i)
{
	return kind == FS_NAME_ID ? 7 - i : i;
}

static int64_t id_get(fs_name_kind kind, const unsigned char *p)
{
	uint64_t u = 0;

	for (int i = 0; i < 8; i++)
		u |= (uint64_t)p[i] << (8 * id_shift(kind, i));
	return (int64_t)u;
}

static void id_put(fs_name_kind kind, int64_t id, unsigned char *p)
{
	uint64_t u = (uint64_t)id;

	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(u >> (8 * id_shift(kind, i)));
}

fs_name_kind fs_name_key_kind(sfs_slice ns)
{
	if (ns.ptr && in_list(id_namespaces, ns.ptr, ns.len))
		return FS_NAME_ID;
	if (ns.ptr && in_list(id_le_namespaces, ns.ptr, ns.len))
		return FS_NAME_ID_LE;
	return FS_NAME_KEY;
}

/* The encoding being built: the full form (which may be far longer than a
 * name), and the last unit boundary at or before CUT_MAX, where a long name
 * is cut so that its prefix never ends inside an escape or a character. */
typedef struct enc {
	char *p;
	size_t len;
	size_t cut;
} enc;

static void enc_mark(enc *e)
{
	if (e->len <= CUT_MAX)
		e->cut = e->len;
}

static void enc_escape(enc *e, unsigned char b)
{
	e->p[e->len++] = '%';
	e->p[e->len++] = hex_upper[b >> 4];
	e->p[e->len++] = hex_upper[b & 15];
	enc_mark(e);
}

static void encode_text(enc *e, const unsigned char *p, size_t n,
                        int escape_first)
{
	size_t i = 0, l;
	uint32_t c;

	if (escape_first) {
		enc_escape(e, p[0]);
		i = 1;
	}
	while (i < n) {
		l = utf8_seq(p + i, n - i, &c);
		if (l == 0 || cp_escaped(c)) {
			if (l == 0)
				l = 1;
			for (size_t k = 0; k < l; k++)
				enc_escape(e, p[i + k]);
		} else {
			memcpy(e->p + e->len, p + i, l);
			e->len += l;
			enc_mark(e);
		}
		i += l;
	}
}

static void encode_hex(enc *e, const unsigned char *p, size_t n)
{
	e->p[e->len++] = '%';
	e->p[e->len++] = 'x';
	enc_mark(e);
	for (size_t i = 0; i < n; i++) {
		e->p[e->len++] = hex_lower[p[i] >> 4];
		e->p[e->len++] = hex_lower[p[i] & 15];
		enc_mark(e);
	}
}

/* Whether the text form of p is p itself: printable ASCII other than the
 * escaped '/' and '%' (cp_escaped). */
static int plain_text(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7E || p[i] == '/' || p[i] == '%')
			return 0;
	return 1;
}

/* How many bytes the text form escapes. */
static size_t text_escapes(const unsigned char *p, size_t n)
{
	size_t i = 0, l, esc = 0;
	uint32_t c;

	while (i < n) {
		l = utf8_seq(p + i, n - i, &c);
		if (l == 0)
			esc++, l = 1;
		else if (cp_escaped(c))
			esc += l;
		i += l;
	}
	return esc;
}

int fs_name_encode(sfs_slice bytes, fs_name_kind kind,
                    char out[FS_NAME_MAX + 1], size_t *len)
{
	const unsigned char *p = bytes.ptr;
	size_t n = bytes.len, tlen, hlen;
	unsigned char hash[SFS_DIGEST_BYTES];
	char space[3 * FS_NAME_MAX + 8];
	enc e = { NULL, 0, 0 };
	int64_t id;
	int first;

	if (!out || !bytes.ptr ||
	    (kind != FS_NAME_KEY && kind != FS_NAME_SCOPE &&
	     !is_id_kind(kind)))
		return SFS_INVALID;

	if (is_id_kind(kind) && n == 8) {
		id = id_get(kind, p);
		tlen = (size_t)snprintf(out, FS_NAME_MAX + 1, "%" PRId64, id);
		goto done;
	}

	first = n > 0 && (in_list(reserved_all, p, n) ||
	                  (kind == FS_NAME_SCOPE &&
	                   in_list(reserved_scope, p, n)) ||
	                  (is_id_kind(kind) && is_decimal(p, n)));
	if (n > 0 && n <= FS_NAME_MAX && !first && plain_text(p, n)) {
		/* Its own text form (the common case, and what the forms
		 * below would give): no escapes, short enough. */
		memcpy(out, p, n);
		tlen = n;
		out[tlen] = '\0';
		goto done;
	}
	tlen = n + 2 * text_escapes(p, n);
	hlen = 2 + 2 * n;
	/* Worst case: the text form escapes every byte (3n), plus the
	 * escaped first byte; the hex form is 2n + 2. */
	e.p = 3 * n + 8 <= sizeof(space) ? space : malloc(3 * n + 8);
	if (!e.p)
		return SFS_NOMEM;
	if (n > 0 && tlen <= hlen) {
		encode_text(&e, p, n, first);
	} else {
		encode_hex(&e, p, n);
	}

	if (e.len <= FS_NAME_MAX) {
		memcpy(out, e.p, e.len);
		tlen = e.len;
	} else {
		sfs_digest(p, n, hash);
		memcpy(out, e.p, e.cut);
		tlen = e.cut;
		out[tlen++] = '%';
		out[tlen++] = '~';
		for (size_t i = 0; i < sizeof(hash); i++) {
			out[tlen++] = hex_lower[hash[i] >> 4];
			out[tlen++] = hex_lower[hash[i] & 15];
		}
	}
	out[tlen] = '\0';
	if (e.p != space)
		free(e.p);
done:
	if (len)
		*len = tlen;
	return SFS_OK;
}

static int hexval(char c, const char *digits)
{
	const char *q = memchr(digits, c, 16);

	return (c && q) ? (int)(q - digits) : -1;
}

/* Parses a decimal int64 without sign tricks; 0 on any deviation. */
static int parse_id(const char *s, size_t n, int64_t *out)
{
	char buf[24];
	char *end;
	long long v;

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || *end)
		return 0;
	*out = v;
	return 1;
}

int fs_name_decode(const char *name, size_t len, fs_name_kind kind,
                    sfs_buf *out, int *hashed)
{
	char canon[FS_NAME_MAX + 1];
	unsigned char *b = NULL;
	size_t body = len, n = 0, clen;
	int is_hashed = 0, rc;
	int64_t id;

	if (!name || !out ||
	    (kind != FS_NAME_KEY && kind != FS_NAME_SCOPE &&
	     !is_id_kind(kind)))
		return SFS_INVALID;
	if (len == 0 || len > FS_NAME_MAX || memchr(name, '\0', len) ||
	    memchr(name, '/', len))
		goto invalid;

	if (is_id_kind(kind) && is_decimal((const unsigned char *)name, len)) {
		if (!parse_id(name, len, &id))
			goto invalid;
		b = malloc(9);
		if (!b)
			return SFS_NOMEM;
		id_put(kind, id, b);
		n = 8;
		goto check;
	}

	if (len > HASH_SUFFIX && name[len - HASH_SUFFIX] == '%' &&
	    name[len - HASH_SUFFIX + 1] == '~') {
		for (size_t i = len - 2 * SFS_DIGEST_BYTES; i < len; i++)
			if (hexval(name[i], hex_lower) < 0)
				goto invalid;
		is_hashed = 1;
		body = len - HASH_SUFFIX;
	}

	b = malloc(body + 1);
	if (!b)
		return SFS_NOMEM;
	if (body >= 2 && name[0] == '%' && name[1] == 'x') {
		if ((body - 2) % 2)
			goto invalid;
		for (size_t i = 2; i < body; i += 2) {
			int hi = hexval(name[i], hex_lower);
			int lo = hexval(name[i + 1], hex_lower);
			if (hi < 0 || lo < 0)
				goto invalid;
			b[n++] = (unsigned char)(hi << 4 | lo);
		}
	} else {
		for (size_t i = 0; i < body; i++) {
			if (name[i] != '%') {
				b[n++] = (unsigned char)name[i];
				continue;
			}
			if (i + 2 >= body)
				goto invalid;
			int hi = hexval(name[i + 1], hex_upper);
			int lo = hexval(name[i + 2], hex_upper);
			if (hi < 0 || lo < 0)
				goto invalid;
			b[n++] = (unsigned char)(hi << 4 | lo);
			i += 2;
		}
	}

check:
	b[n] = '\0';
	if (!is_hashed) {
		rc = fs_name_encode(sfs_bytes(b, n), kind, canon, &clen);
		if (rc)
			goto fail;
		if (clen != len || memcmp(canon, name, len) != 0)
			goto invalid;
	}
	out->ptr = b;
	out->len = n;
	if (hashed)
		*hashed = is_hashed;
	return SFS_OK;
invalid:
	rc = SFS_INVALID;
fail:
	free(b);
	return rc;
}
