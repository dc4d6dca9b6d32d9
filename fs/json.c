/*
 * json.c - one line of what a .drain or a .follow reads (JSON Lines):
 *
 *   namespace: {"name":"<file name>","key":"...","value":"...","mtime_ns":N}
 *   queue:     {"id":N,"name":"<file name>","value":"...","mtime_ns":N}
 *   log:       the same as a queue's, for its entries
 *
 * Bytes that are valid UTF-8 are JSON strings; others are base64 in a field
 * of the same name with "_b64" appended ("key_b64", "value_b64"), as
 * statectl prints them. "name" is the file name the row had under the
 * mount. mtime_ns is left out when unknown (rows written by the Go SDK).
 *
 * Lines are written straight into the caller's buffer, escaping as they
 * go: a value of tens of megabytes is held once as the engine gave it and
 * once as its line, never copied again on the way (jansson would build a
 * string of it, then its text, then we would copy that).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_i.h"

/* Makes room for n more bytes (and a NUL) in out. 0 or ENOMEM. */
static int room(sfs_buf *out, size_t *cap, size_t n)
{
	size_t nc;
	char *p;

	if (out->len + n + 1 <= *cap)
		return 0;
	nc = *cap ? *cap : 4096;
	while (nc < out->len + n + 1)
		nc = nc > SIZE_MAX / 2 ? out->len + n + 1 : nc * 2;
	p = realloc(out->ptr, nc);
	if (!p)
		return ENOMEM;
	out->ptr = p;
	*cap = nc;
	return 0;
}

static int put(sfs_buf *out, size_t *cap, const char *s, size_t n)
{
	if (room(out, cap, n))
		return ENOMEM;
	memcpy((char *)out->ptr + out->len, s, n);
	out->len += n;
	((char *)out->ptr)[out->len] = '\0';
	return 0;
}

/* The length of the UTF-8 sequence at p (1-4), or 0 if it is not one
 * (overlong forms, surrogates and values past U+10FFFF included). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	uint32_t c;
	size_t k;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		k = 2, c = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		k = 3, c = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		k = 4, c = p[0] & 0x07;
	else
		return 0;
	if (k > n)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((k == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (k == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return k;
}

static int is_utf8(const unsigned char *p, size_t n)
{
	for (size_t i = 0, k; i < n; i += k)
		if (!(k = utf8_len(p + i, n - i)))
			return 0;
	return 1;
}

/* "field":"<escaped UTF-8>" */
static int put_string(sfs_buf *out, size_t *cap, const unsigned char *p,
                      size_t n)
{
	char esc[8];

	/* At most 6 bytes per byte (\u00XX), plus the quotes. */
	if (room(out, cap, 6 * n + 2))
		return ENOMEM;
	put(out, cap, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		const char *e = NULL;

		switch (p[i]) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		default:
			/* controls as \u00XX: C0, and DEL and C1 too (U+009B
			 * is CSI to xterm), which JSON would allow raw; the
			 * same string, and no control byte for a terminal */
			if (p[i] < 0x20 || p[i] == 0x7f) {
				snprintf(esc, sizeof(esc), "\\u%04x", p[i]);
				e = esc;
			} else if (p[i] == 0xc2 && i + 1 < n &&
			           p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) {
				snprintf(esc, sizeof(esc), "\\u%04x", p[++i]);
				e = esc;
			}
			break;
		}
		if (e)
			put(out, cap, e, strlen(e));
		else
			put(out, cap, (const char *)p + i, 1);
	}
	return put(out, cap, "\"", 1);
}

/* "<field>":"..." for valid UTF-8, else "<field>_b64":"<base64>". */
static int put_bytes(sfs_buf *out, size_t *cap, const char *field,
                     const sfs_buf *b)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = b->ptr ? b->ptr : (const unsigned char *)"";
	size_t n = b->len, i;
	char name[40], *o;

	if (is_utf8(p, n)) {
		snprintf(name, sizeof(name), "\"%s\":", field);
		return put(out, cap, name, strlen(name)) ||
		       put_string(out, cap, p, n) ? ENOMEM : 0;
	}
	snprintf(name, sizeof(name), "\"%s_b64\":\"", field);
	if (put(out, cap, name, strlen(name)) ||
	    room(out, cap, (n + 2) / 3 * 4 + 1))
		return ENOMEM;
	o = (char *)out->ptr + out->len;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 |
		             p[i + 2];
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = tab[(v >> 6) & 63];
		*o++ = tab[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 |
		             (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	out->len = (size_t)(o - (char *)out->ptr);
	return put(out, cap, "\"", 1);
}

int fs_json_line(sfs_buf *out, size_t *cap, const sfs_item *it, int by_id,
                 fs_name_kind kind)
{
	char name[FS_NAME_MAX + 1], num[64];
	int err;

	if (by_id) {
		fs_id_name(it->id, name);
		snprintf(num, sizeof(num), "{\"id\":%lld,\"name\":",
		         (long long)it->id);
		err = put(out, cap, num, strlen(num)) ||
		      put_string(out, cap, (const unsigned char *)name,
		                 strlen(name));
	} else {
		if (fs_name_encode(sfs_bytes(it->key.ptr ? it->key.ptr : "",
		                              it->key.len), kind, name, NULL))
			return ENOMEM;
		err = put(out, cap, "{\"name\":", 8) ||
		      put_string(out, cap, (const unsigned char *)name,
		                 strlen(name)) ||
		      put(out, cap, ",", 1) ||
		      put_bytes(out, cap, "key", &it->key);
	}
	if (!err)
		err = put(out, cap, ",", 1) ||
		      put_bytes(out, cap, "value", &it->value);
	if (!err && it->st.mtime_ns) {
		snprintf(num, sizeof(num), ",\"mtime_ns\":%lld",
		         (long long)it->st.mtime_ns);
		err = put(out, cap, num, strlen(num));
	}
	if (!err)
		err = put(out, cap, "}\n", 2);
	return err ? ENOMEM : 0;
}
