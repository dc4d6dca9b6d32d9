/*
 * json.c - what a .drain reads: one JSON object per line (JSON Lines).
 *
 *   namespace: {"name":"<file name>","key":"...","value":"...","mtime_ns":N}
 *   queue:     {"id":N,"name":"<file name>","value":"...","mtime_ns":N}
 *
 * Bytes that are valid UTF-8 are JSON strings; others are base64 in a field
 * of the same name with "_b64" appended ("key_b64", "value_b64"), as
 * statectl prints them. "name" is the file name the row had under the
 * mount. mtime_ns is left out when unknown (rows written by the Go SDK).
 * A drain that takes nothing reads as empty.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fs_i.h"

/* Standard base64 with padding (fs/ may not use libsodium's). */
static char *base64(const unsigned char *p, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = tab[(v >> 6) & 63];
		*o++ = tab[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

/* obj[field] = the bytes as a string, or obj[field_b64] = base64. */
static int set_bytes(json_t *obj, const char *field, const sfs_buf *b)
{
	const char *p = b->ptr ? b->ptr : "";
	json_t *s = json_stringn(p, b->len); /* NULL unless valid UTF-8 */
	char name[32], *enc;

	if (s)
		return json_object_set_new(obj, field, s);
	enc = base64((const unsigned char *)p, b->len);
	if (!enc)
		return -1;
	snprintf(name, sizeof(name), "%s_b64", field);
	s = json_string(enc);
	free(enc);
	return s ? json_object_set_new(obj, name, s) : -1;
}

/* Appends the object as one line to *out. */
static int append_line(json_t *obj, sfs_buf *out, size_t *cap)
{
	char *line = json_dumps(obj, JSON_COMPACT);
	size_t n;
	char *p;

	if (!line)
		return ENOMEM;
	n = strlen(line);
	if (out->len + n + 2 > *cap) {
		size_t nc = (*cap ? *cap * 2 : 4096);
		while (nc < out->len + n + 2)
			nc *= 2;
		p = realloc(out->ptr, nc);
		if (!p) {
			free(line);
			return ENOMEM;
		}
		out->ptr = p;
		*cap = nc;
	}
	p = out->ptr;
	memcpy(p + out->len, line, n);
	p[out->len + n] = '\n';
	out->len += n + 1;
	p[out->len] = '\0';
	free(line);
	return 0;
}

static int lines(const sfs_list *l, fs_name_kind nk, int queue, sfs_buf *out)
{
	sfs_buf b = { NULL, 0 };
	size_t cap = 0;
	char name[FS_NAME_MAX + 1];
	int err = 0;

	for (size_t i = 0; i < l->n && !err; i++) {
		const sfs_item *it = &l->items[i];
		json_t *obj = json_object();

		if (!obj) {
			err = ENOMEM;
			break;
		}
		if (queue) {
			char id[FS_ID_NAME];
			fs_id_name(it->id, id);
			err = json_object_set_new(obj, "id", json_integer(it->id)) ||
			      json_object_set_new(obj, "name", json_string(id));
		} else {
			err = fs_name_encode(sfs_bytes(it->key.ptr ? it->key.ptr : "",
			                                it->key.len), nk, name, NULL) ||
			      json_object_set_new(obj, "name", json_string(name)) ||
			      set_bytes(obj, "key", &it->key);
		}
		if (!err)
			err = set_bytes(obj, "value", &it->value);
		if (!err && it->st.mtime_ns)
			err = json_object_set_new(obj, "mtime_ns",
			                          json_integer(it->st.mtime_ns));
		err = err ? ENOMEM : append_line(obj, &b, &cap);
		json_decref(obj);
	}
	if (err) {
		free(b.ptr);
		return err;
	}
	*out = b;
	return 0;
}

int fs_json_kv_lines(const sfs_list *l, fs_name_kind kind, sfs_buf *out)
{
	return lines(l, kind, 0, out);
}

int fs_json_queue_lines(const sfs_list *l, sfs_buf *out)
{
	return lines(l, FS_NAME_KEY, 1, out);
}
