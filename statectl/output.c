/*
 * output.c - everything statectl writes: results (JSON or text), errors and
 * their exit codes, bytes in JSON, and reading a whole stream.
 *
 * Results go to stdout, errors to stderr, always: with --json an error is
 * one JSON object on stderr ({"error": sentence, "status": name, "exit": N})
 * so that stdout stays either empty or one valid document. The engine's
 * status becomes an exit code in cli_exit_for_status() and nowhere else.
 *
 * Bytes in JSON: a UTF-8 string when the bytes are valid UTF-8 (jansson
 * checks, rejecting overlong forms and surrogates), else base64 in a field
 * named with "_b64" appended. A reader that ignores "_b64" fields therefore
 * never mistakes base64 for text. The export format uses the same rule.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "cli_i.h"

void *cli_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fputs("statectl: out of memory\n", stderr);
		exit(CLI_EXIT_SYSTEM);
	}
	return p;
}

char *cli_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *out;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&out, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fputs("statectl: out of memory\n", stderr);
		exit(CLI_EXIT_SYSTEM);
	}
	return out;
}

char *cli_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(cli_xmalloc(n), s, n);
}

int cli_exit_for_status(int status)
{
	switch (status) {
	case SFS_OK: return CLI_EXIT_OK;
	case SFS_NOTFOUND: return CLI_EXIT_NOTFOUND;
	case SFS_INVALID:
	case SFS_UNSUPPORTED: /* refused by this store's backend, with what
	                         to do instead */
	case SFS_TOOBIG:
	case SFS_OVERFLOW: return CLI_EXIT_DATA;
	case SFS_EXISTS:
	case SFS_NOTEMPTY: return CLI_EXIT_EXISTS;
	case SFS_BUSY: return CLI_EXIT_BUSY;
	case SFS_READONLY:
	case SFS_IO:
	case SFS_FULL:
	case SFS_NOMEM: return CLI_EXIT_SYSTEM;
	case SFS_CORRUPT: return CLI_EXIT_CORRUPT;
	case SFS_FORMAT: return CLI_EXIT_NOSTORE;
	case SFS_WRONGKEY:
	case SFS_NOKEY:
	case SFS_NOTENCRYPTED:
	case SFS_KEYPERM:
	case SFS_BADKEY: return CLI_EXIT_KEY;
	case SFS_CLAIMLOST: return CLI_EXIT_CLAIMLOST;
	case SFS_CANCELLED: return CLI_EXIT_INTERRUPTED;
	default: return CLI_EXIT_INTERNAL;
	}
}

/* A short machine name for an exit code, for JSON errors. */
static const char *exit_name(int code)
{
	switch (code) {
	case CLI_EXIT_NOTFOUND: return "not_found";
	case CLI_EXIT_USAGE: return "usage";
	case CLI_EXIT_KEY: return "key";
	case CLI_EXIT_CORRUPT: return "corrupt";
	case CLI_EXIT_NOSTORE: return "no_store";
	case CLI_EXIT_EXISTS: return "exists";
	case CLI_EXIT_BUSY: return "busy";
	case CLI_EXIT_DATA: return "data";
	case CLI_EXIT_SYSTEM: return "system";
	case CLI_EXIT_CLAIMLOST: return "claim_lost";
	case CLI_EXIT_INTERRUPTED: return "interrupted";
	default: return "internal";
	}
}

static size_t printable_utf8(const unsigned char *p, size_t n);

/* msg with every byte that is not part of valid UTF-8 (a name or a path
 * given on the command line) written as \xNN, and control bytes (a
 * newline or an escape sequence in a path) as \n, \t, \r or \xNN, as
 * listings write them, so that it is one line and a JSON string:
 * malloc'd. (Backslashes stay: the engine's details have escaped names.) */
static char *utf8_sentence(const char *msg)
{
	const unsigned char *p = (const unsigned char *)msg;
	size_t n = strlen(msg), i = 0, k, o = 0;
	char *out = cli_xmalloc(4 * n + 1);

	while (i < n) {
		k = p[i] < 0x80 ? (p[i] >= 0x20 && p[i] != 0x7f)
		                : printable_utf8(p + i, n - i);
		if (k) {
			memcpy(out + o, p + i, k);
			o += k;
			i += k;
			continue;
		}
		switch (p[i]) {
		case '\n': o += (size_t)sprintf(out + o, "\\n"); break;
		case '\t': o += (size_t)sprintf(out + o, "\\t"); break;
		case '\r': o += (size_t)sprintf(out + o, "\\r"); break;
		default: o += (size_t)sprintf(out + o, "\\x%02x", p[i]); break;
		}
		i++;
	}
	out[o] = 0;
	return out;
}

/* Whether an error sentence was printed (cli_out_finish). */
static int emitted;
/* errno of the first failed write to stdout (cli_out_json, cli_out_raw),
 * which a later fflush may not repeat. */
static int out_errno;

static int emit_error(const cli *c, int code, const char *msg)
{
	json_t *o;
	char *s, *text;

	emitted = 1;
	fflush(stdout);
	cli_progress_clear();
	if (c && c->json) {
		text = utf8_sentence(msg);
		o = json_pack("{s:s, s:s, s:i}", "error", text, "status",
		              exit_name(code), "exit", code);
		free(text);
		s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		fprintf(stderr, "%s\n", s ? s : "{\"error\":\"out of memory\"}");
		free(s);
		json_decref(o);
	} else {
		text = utf8_sentence(msg);
		fprintf(stderr, "statectl: %s\n", text);
		free(text);
	}
	return code;
}

int cli_fail(const cli *c, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return emit_error(c, code, msg);
}

int cli_fail_status(const cli *c, int status, const char *fmt, ...)
{
	char ctx[768], msg[1536];
	const char *detail = sfs_errdetail();
	const char *what = sfs_strerror(status);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	if (detail && *detail && strcmp(detail, what) != 0)
		snprintf(msg, sizeof(msg), "%s: %s (%s)", ctx, what, detail);
	else
		snprintf(msg, sizeof(msg), "%s: %s", ctx, what);
	return emit_error(c, cli_exit_for_status(status), msg);
}

int cli_usage(const cli *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	emit_error(c, CLI_EXIT_USAGE, msg);
	if (c && !c->json) {
		if (c->cmd && !c->cmd->sub)
			cli_print_usage_line(stderr, c, c->cmd);
		fputs("see statectl --help\n", stderr);
	}
	return CLI_EXIT_USAGE;
}

/* jansson writes DEL and the C1 controls (U+0080..U+009F, C2 80..C2 9F in
 * UTF-8) inside strings as they are, which JSON allows; U+009B is CSI to a
 * terminal that honours C1 in UTF-8 (xterm), so a name holding it drove the
 * terminal of whoever ran `statectl --json ls`. Written as \u00XX they
 * mean the same to every JSON reader. Outside strings jansson writes no
 * such byte, and it hands a string's bytes over in whole characters, so
 * a C2 is never the last byte of a piece (kept for the next all the same). */
typedef struct json_sink {
	FILE *f;
	int c2;                  /* the last piece ended in the byte C2 */
} json_sink;

static int json_sink_put(const char *buf, size_t size, void *data)
{
	json_sink *k = data;
	const unsigned char *p = (const unsigned char *)buf;
	size_t from = 0, i = 0;

	if (k->c2 && size > 0) {
		k->c2 = 0;
		if (p[0] >= 0x80 && p[0] <= 0x9f) {
			if (fprintf(k->f, "\\u%04x", p[0]) < 0)
				return -1;
			from = i = 1;
		} else if (fputc(0xc2, k->f) == EOF) {
			return -1;
		}
	}
	for (; i < size; i++) {
		int skip = p[i] == 0x7f ? 1
		         : p[i] == 0xc2 && i + 1 < size && p[i + 1] >= 0x80 &&
		           p[i + 1] <= 0x9f ? 2
		         : p[i] == 0xc2 && i + 1 == size ? -1 : 0;

		if (!skip)
			continue;
		if (i > from && fwrite(p + from, 1, i - from, k->f) != i - from)
			return -1;
		if (skip < 0) {
			k->c2 = 1;
			return 0;
		}
		if (fprintf(k->f, "\\u%04x", skip == 1 ? 0x7f : p[i + 1]) < 0)
			return -1;
		i += (size_t)skip - 1;
		from = i + 1;
	}
	if (size > from && fwrite(p + from, 1, size - from, k->f) != size - from)
		return -1;
	return 0;
}

int cli_json_dumpf(const json_t *obj, FILE *f, size_t flags)
{
	json_sink k = { f, 0 };

	if (json_dump_callback(obj, json_sink_put, &k, flags) < 0)
		return -1;
	return k.c2 && fputc(0xc2, f) == EOF ? -1 : 0;
}

int cli_out_json(json_t *obj)
{
	int rc;

	if (!obj) {
		fputs("statectl: out of memory\n", stderr);
		return CLI_EXIT_SYSTEM;
	}
	errno = 0;
	rc = cli_json_dumpf(obj, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(obj);
	if (rc < 0 || fputc('\n', stdout) == EOF) {
		if (!out_errno)
			out_errno = errno ? errno : EIO;
		return CLI_EXIT_SYSTEM; /* cli_out_finish says why */
	}
	return CLI_EXIT_OK;
}

int cli_json_set_bytes(json_t *obj, const char *name, const void *p,
                       size_t n)
{
	json_t *v = json_stringn(p ? (const char *)p : "", n);
	char field[64];
	char *b64;
	size_t blen;

	if (v)
		return json_object_set_new(obj, name, v);
	/* not UTF-8: base64 with padding, the standard alphabet */
	blen = sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
	b64 = cli_xmalloc(blen);
	sodium_bin2base64(b64, blen, p, n, sodium_base64_VARIANT_ORIGINAL);
	snprintf(field, sizeof(field), "%s_b64", name);
	v = json_string(b64);
	free(b64);
	return json_object_set_new(obj, field, v);
}

int cli_json_set_path(json_t *obj, const char *name, const char *path)
{
	return cli_json_set_bytes(obj, name, path, strlen(path));
}

json_t *cli_json_path_object(const char *name, const char *path)
{
	json_t *o = json_object();

	cli_json_set_path(o, name, path);
	return o;
}

int cli_json_get_bytes(json_t *obj, const char *name, void **p, size_t *n,
                       int *present, const char **err)
{
	char field[64];
	json_t *v = json_object_get(obj, name);
	json_t *b;
	const char *text;
	unsigned char *out;
	size_t len, outlen;

	snprintf(field, sizeof(field), "%s_b64", name);
	b = json_object_get(obj, field);
	*present = 0;
	if (v && b) {
		*err = "has both the text and the base64 form of a field";
		return -1;
	}
	if (!v && !b)
		return 0;
	if (!json_is_string(v ? v : b)) {
		*err = "a byte field is not a string";
		return -1;
	}
	text = json_string_value(v ? v : b);
	len = json_string_length(v ? v : b);
	if (v) {
		out = cli_xmalloc(len + 1);
		memcpy(out, text, len);
		outlen = len;
	} else {
		out = cli_xmalloc(len / 4 * 3 + 4);
		if (sodium_base642bin(out, len / 4 * 3 + 3, text, len, NULL,
		                      &outlen, NULL,
		                      sodium_base64_VARIANT_ORIGINAL) != 0) {
			free(out);
			*err = "a _b64 field is not valid base64";
			return -1;
		}
	}
	out[outlen] = 0;
	*p = out;
	*n = outlen;
	*present = 1;
	return 0;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes) that is not a
 * control character, or 0. */
static size_t printable_utf8(const unsigned char *p, size_t n)
{
	size_t len;
	uint32_t cp;

	if (p[0] >= 0x20 && p[0] < 0x7f)
		return 1;
	if (p[0] < 0xc2 || p[0] > 0xf4)
		return 0;
	len = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
	if (len > n)
		return 0;
	cp = p[0] & (0x3f >> (len - 1));
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
	    (cp >= 0x80 && cp < 0xa0))
		return 0;
	return len;
}

void cli_out_human(FILE *f, const void *ptr, size_t n)
{
	const unsigned char *p = ptr;
	size_t i = 0, k;

	while (i < n) {
		if (p[i] == '\\') {
			fputs("\\\\", f);
			i++;
		} else if ((k = printable_utf8(p + i, n - i)) > 0) {
			fwrite(p + i, 1, k, f);
			i += k;
		} else {
			switch (p[i]) {
			case '\n': fputs("\\n", f); break;
			case '\t': fputs("\\t", f); break;
			case '\r': fputs("\\r", f); break;
			default: fprintf(f, "\\x%02x", p[i]); break;
			}
			i++;
		}
	}
}

char *cli_human(const char *s)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	if (f)
		cli_out_human(f, s, strlen(s));
	if (!f || fclose(f) != 0 || !out) {
		fputs("statectl: out of memory\n", stderr);
		exit(CLI_EXIT_SYSTEM);
	}
	return out;
}

int cli_out_raw(const void *p, size_t n)
{
	errno = 0;
	if (n && fwrite(p, 1, n, stdout) != n) {
		if (!out_errno)
			out_errno = errno ? errno : EIO;
		return CLI_EXIT_SYSTEM; /* cli_out_finish says why */
	}
	return CLI_EXIT_OK;
}

int cli_out_flush(void)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return CLI_EXIT_OK;
	if (!out_errno)
		out_errno = errno ? errno : EIO;
	return CLI_EXIT_SYSTEM; /* cli_out_finish says why */
}

void cli_out_discard(void)
{
	__fpurge(stdout);
	clearerr(stdout);
	out_errno = 0;
}

int cli_out_finish(const cli *c, int code)
{
	int saverr;

	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return code;
	saverr = out_errno ? out_errno : errno ? errno : EIO;
	/* a failure that was reported keeps its sentence and exit; one
	 * that was not (a write that failed, help, a frame of top) gets
	 * one, also when its exit is already 9 */
	if (code != CLI_EXIT_OK && emitted)
		return code;
	/* a command that changed the store did so: a script that runs it
	 * again on exit 9 would push, append or add twice */
	if (c && c->writer)
		cli_fail(c, CLI_EXIT_SYSTEM, "cannot write the output: %s (the "
		         "%s was done: only what it prints is lost)",
		         strerror(saverr), c->cmdname);
	else
		cli_fail(c, CLI_EXIT_SYSTEM, "cannot write the output: %s",
		         strerror(saverr));
	return code != CLI_EXIT_OK ? code : CLI_EXIT_SYSTEM;
}

void cli_out_no_sigpipe(void)
{
	signal(SIGPIPE, SIG_IGN);
}

int cli_out_settle(const cli *c, sfs_store *s, int64_t claim, int rc,
                   const char *where, int ack)
{
	int saverr = 0, st;

	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout))
		saverr = out_errno ? out_errno : errno ? errno : EIO;
	if (rc == CLI_EXIT_OK && !saverr && !ack)
		return CLI_EXIT_OK;
	if (rc == CLI_EXIT_OK && !saverr) {
		st = sfs_claim_end(s, claim, SFS_OUTCOME_DONE);
		if (st != SFS_OK)
			return cli_fail_status(c, st, "printed, but cannot remove "
			                       "it from %s (it may be delivered "
			                       "again)", where);
		return CLI_EXIT_OK;
	}
	if (!saverr)
		saverr = out_errno ? out_errno : EIO;
	st = sfs_claim_end(s, claim, SFS_OUTCOME_RELEASE);
	if (st != SFS_OK)
		return cli_fail_status(c, st, "cannot write the output (%s), and "
		                       "cannot put back what was taken from %s "
		                       "now (it comes back when the lease of "
		                       "claim %lld ends)", strerror(saverr), where,
		                       (long long)claim);
	return cli_fail(c, CLI_EXIT_SYSTEM, "cannot write the output: %s; "
	                "nothing was taken from %s", strerror(saverr), where);
}

size_t cli_max_value(const cli *c)
{
	return c->max_value ? (size_t)c->max_value : SFS_DEFAULT_MAX_VALUE;
}

int cli_fail_too_long(const cli *c, const char *what)
{
	return cli_fail(c, CLI_EXIT_DATA, "%s on stdin is too large: more "
	                "than the store's limit of %zu bytes%s; nothing was "
	                "written",
	                what, cli_max_value(c), c->max_value ? ""
	                : " (--max-value SIZE takes larger values)");
}

void cli_tty_notice(const char *what)
{
	if (isatty(STDIN_FILENO))
		fprintf(stderr, "statectl: reading %s from the terminal; end it "
		        "with Ctrl-D\n", what);
}

int cli_read_all(FILE *f, size_t max, int sep, size_t max_seps, void **p,
                 size_t *n)
{
	size_t cap = 65536, len = 0, got, seps = 0;
	char *buf, *nb;

	/* room for max + 1 bytes at most: one more than max tells */
	if (max < SIZE_MAX - 1 && cap > max + 1)
		cap = max + 1;
	buf = cli_xmalloc(cap + 1);
	errno = 0;
	while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
		for (char *q = buf + len, *end = q + got; sep >= 0 &&
		     (q = memchr(q, sep, (size_t)(end - q))); q++)
			seps++;
		len += got;
		if (len > max || seps > max_seps) {
			free(buf);
			return -2;
		}
		if (len == cap) {
			cap = cap > max / 2 ? max + 1 : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				return -1;
			}
			buf = nb;
		}
	}
	if (ferror(f)) {
		int saverr = errno ? errno : EIO;

		free(buf);
		errno = saverr;
		return -1;
	}
	buf[len] = 0;
	*p = buf;
	*n = len;
	return 0;
}

int cli_out_count(const cli *c, const cli_name *nm, int nnames,
                  uint64_t count)
{
	json_t *o;

	if (!c->json) {
		printf("%llu\n", (unsigned long long)count);
		return CLI_EXIT_OK;
	}
	o = json_object();
	cli_names_json(o, nm, nnames);
	json_object_set_new(o, "count", json_integer((json_int_t)count));
	return cli_out_json(o);
}

int cli_out_entries(const cli *c, json_t *head, const sfs_list *l,
                    int keys_only, int kind)
{
	int by_id = kind == CLI_LIST_IDS;
	json_t *arr, *e;

	if (!c->json) {
		json_decref(head);
		for (size_t i = 0; i < l->n; i++) {
			const sfs_item *it = &l->items[i];

			if (by_id)
				printf("%lld", (long long)it->id);
			else
				cli_name_print(stdout, it->key.ptr, it->key.len,
				               (fs_name_kind)kind);
			if (!keys_only) {
				fputc('\t', stdout);
				cli_out_human(stdout, it->value.ptr, it->value.len);
			}
			fputc('\n', stdout);
		}
		return CLI_EXIT_OK;
	}
	arr = json_array();
	for (size_t i = 0; i < l->n; i++) {
		const sfs_item *it = &l->items[i];

		e = json_object();
		if (by_id)
			json_object_set_new(e, "id", json_integer(it->id));
		else
			cli_json_set_bytes(e, "key", it->key.ptr, it->key.len);
		if (!keys_only)
			cli_json_set_bytes(e, "value", it->value.ptr,
			                   it->value.len);
		json_object_set_new(e, "size", json_integer((json_int_t)it->st.size));
		if (it->st.mtime_ns)
			json_object_set_new(e, "mtime_ns", json_integer(
			        it->st.mtime_ns == SFS_MTIME_EPOCH
			        ? 0 : it->st.mtime_ns));
		json_array_append_new(arr, e);
	}
	json_object_set_new(head, "entries", arr);
	return cli_out_json(head);
}

int cli_info_fact(const sfs_info *in, const char *name, uint64_t *value)
{
	for (size_t i = 0; i < in->nfacts; i++) {
		if (strcmp(in->facts[i].name, name) == 0) {
			*value = in->facts[i].value;
			return 1;
		}
	}
	return 0;
}

void cli_json_set_facts(json_t *obj, const sfs_info *in)
{
	for (size_t i = 0; i < in->nfacts; i++)
		json_object_set_new(obj, in->facts[i].name,
		        json_integer((json_int_t)in->facts[i].value));
}

void cli_json_set_queue(json_t *obj, const cli_name *q)
{
	cli_json_set_bytes(obj, "queue", q->s.ptr, q->s.len);
}

int cli_fail_queue(const cli *c, int status, const char *verb,
                   const cli_name *q)
{
	char *where = cli_name_show(q->s.ptr, q->s.len, FS_NAME_SCOPE);
	int rc = cli_fail_status(c, status, "cannot %s queue %s", verb, where);

	free(where);
	return rc;
}
