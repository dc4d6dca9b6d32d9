/*
 * names.c - scopes, namespaces, keys and queue names as words on the
 * command line, in the filesystem's name codec (statefs.h, "Names").
 *
 * A name on the command line is written as the mount shows it, so a path
 * seen there pastes into a command ("a%2Fb" is the key "a/b", "%x00ff" the
 * two bytes 00 ff, "42" in namespace "worker" the 8-byte id 42); listings
 * and messages print names the same way, so they paste back. The kind of a
 * key depends on its namespace (fs_name_key_kind), so names are decoded in
 * order: scope, namespace, key.
 *
 * A name too long for a file name ends in "%~" and a hash: it names a string
 * without spelling it out, so it can only be found among what the store
 * holds. Such names are decoded to their prefix here and looked up by
 * cli_names_resolve() once the store is open.
 *
 * --raw turns the codec off: names are the bytes given (any string without
 * a NUL, however long, with '/' and '%' as themselves), for scripts that
 * pass names they did not make; listings then print names escaped for
 * people (cli_out_human) instead.
 */
#include <stdlib.h>
#include <string.h>

#include "cli_i.h"

static const char *kind_hint(fs_name_kind kind)
{
	switch (kind) {
	case FS_NAME_SCOPE:
		return "write '/' as %2F and '%' as %25; the scopes exec, queue "
		       "and counter are %65xec, %71ueue and %63ounter";
	case FS_NAME_ID:
	case FS_NAME_ID_LE:
		return "in this namespace a key is a decimal id, or as under the "
		       "mount";
	default:
		return "write '/' as %2F and '%' as %25, as under the mount";
	}
}

static int raw;                  /* --raw */

/* How many bytes of s (longer than max) to show: at most max, never
 * ending inside a UTF-8 character. */
static int utf8_cut(const char *s, int max)
{
	int n = max;

	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

void cli_names_init(const cli *c)
{
	raw = c->raw;
}

int cli_name_parse(const cli *c, const char *arg, const char *what,
                   fs_name_kind kind, cli_name *out)
{
	char spelt[FS_NAME_MAX + 1];
	int st;

	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->text = arg;
	if (raw) {
		out->s = sfs_str(arg);
		return CLI_EXIT_OK;
	}
	st = fs_name_decode(arg, strlen(arg), kind, &out->mem, &out->hashed);
	if (st == SFS_INVALID && strlen(arg) > FS_NAME_MAX)
		return cli_usage(c, "'%.*s...' is not a valid %s name: it is "
		                 "%zu bytes, and a name has at most %d (a longer "
		                 "string is written as listings and the mount "
		                 "show it, its start, %%~ and a hash; or give "
		                 "its bytes with --raw)", utf8_cut(arg, 40), arg,
		                 what, strlen(arg), FS_NAME_MAX);
	/* no escape in it: the bytes as typed, which have one spelling
	 * (the empty string is %x, a newline %0A, scope exec %65xec) */
	if (st == SFS_INVALID && !strchr(arg, '%') &&
	    fs_name_encode(sfs_str(arg), kind, spelt, NULL) == SFS_OK)
		return cli_usage(c, "'%s' is not a valid %s name: those bytes "
		                 "are written '%s', as under the mount (or give "
		                 "them as they are with --raw)", arg, what, spelt);
	if (st == SFS_INVALID)
		return cli_usage(c, "'%s' is not a valid %s name (%s)", arg, what,
		                 kind_hint(kind));
	if (st != SFS_OK)
		return cli_fail_status(c, st, "cannot read the %s name '%s'", what,
		                       arg);
	out->s = sfs_bytes(out->mem.ptr, out->mem.len);
	return CLI_EXIT_OK;
}

void cli_name_free(cli_name *n)
{
	sfs_buf_free(&n->mem);
	free(n->copy);
	n->copy = NULL;
	n->s = SFS_NONE;
}

void cli_name_print(FILE *f, const void *p, size_t n, fs_name_kind kind)
{
	char name[FS_NAME_MAX + 1];
	size_t len;

	if (raw)
		cli_out_human(f, p, n);
	else if (fs_name_encode(sfs_bytes(p ? p : "", n), kind, name, &len) == SFS_OK)
		fwrite(name, 1, len, f);
	else
		cli_out_human(f, p, n); /* only on allocation failure */
}

char *cli_name_show(const void *p, size_t n, fs_name_kind kind)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		fputs("statectl: out of memory\n", stderr);
		exit(CLI_EXIT_SYSTEM);
	}
	fputc('\'', f);
	if (raw && n > FS_NAME_MAX) {
		/* a --raw name may be far longer than a sentence (whose end
		 * would be lost): its start and its length */
		cli_out_human(f, p, (size_t)utf8_cut(p, 40));
		fprintf(f, "...' (%zu bytes)", n);
	} else {
		cli_name_print(f, p, n, kind);
		fputc('\'', f);
	}
	if (fclose(f) != 0 || !buf) {
		fputs("statectl: out of memory\n", stderr);
		exit(CLI_EXIT_SYSTEM);
	}
	return buf;
}

static const char *const labels[] = { "scope", "namespace", "key" };
static const char *const json_fields[] = { "scope", "ns", "key" };

int cli_names_parse(const cli *c, char **args, int n, cli_name *out)
{
	fs_name_kind kind;
	int rc;

	for (int i = 0; i < n; i++) {
		kind = i == 0 ? FS_NAME_SCOPE
		     : i == 1 ? FS_NAME_KEY
		              : fs_name_key_kind(out[1].s);
		if (i == 2 && out[1].hashed)
			kind = FS_NAME_KEY; /* resolved later; ids are short */
		if ((rc = cli_name_parse(c, args[i], labels[i], kind, &out[i]))) {
			cli_names_free(out, i);
			return rc;
		}
	}
	return CLI_EXIT_OK;
}

void cli_names_free(cli_name *nm, int n)
{
	for (int i = 0; i < n; i++)
		cli_name_free(&nm[i]);
}

/* Whether the encoding of bytes is exactly the name text. */
static int same_name(const sfs_buf *bytes, fs_name_kind kind,
                     const char *text)
{
	char name[FS_NAME_MAX + 1];

	return fs_name_encode(sfs_bytes(bytes->ptr, bytes->len), kind, name,
	                       NULL) == SFS_OK && strcmp(name, text) == 0;
}

/* The candidates for a hashed name at position i: every scope, namespace
 * or key there (the store has no index on the hash; long names are rare). */
static int candidates(sfs_store *s, sfs_family fam, const cli_name *nm,
                      int i, sfs_list *out)
{
	sfs_scan_opts so = { .start = SFS_NONE, .end = SFS_NONE,
	                     .keys_only = 1 };
	unsigned char end[FS_NAME_MAX];
	size_t k = nm[i].s.len < sizeof(end) ? nm[i].s.len : sizeof(end);

	/* keys in [prefix, the prefix's successor) */
	so.start = nm[i].s;
	memcpy(end, nm[i].s.ptr, k);
	while (k > 0 && end[k - 1] == 0xff)
		k--;
	if (k > 0) {
		end[k - 1]++;
		so.end = sfs_bytes(end, k);
	}
	switch (i == 2 ? fam : SFS_FAM_DIR) {
	case SFS_FAM_COUNTER: return sfs_counter_scan(s, nm[0].s, nm[1].s, &so, out);
	case SFS_FAM_KV: return sfs_kv_scan(s, nm[0].s, nm[1].s, &so, out);
	default: /* scopes, namespaces, a log's keys */
		return sfs_dir_list(s, fam, i > 0 ? nm[0].s : SFS_NONE,
		                    i > 1 ? nm[1].s : SFS_NONE, SFS_NONE, 0, out);
	}
}

/* Resolves the hashed name nm[i] among its candidates in fam: 1 (nm[i]
 * is now the string it names), 0 when it names none there, or a negative
 * sfs_status. */
static int resolve_in(sfs_store *s, sfs_family fam, cli_name *nm, int i)
{
	sfs_list l = { NULL, 0 };
	const sfs_buf *found = NULL;
	int st;

	if ((st = candidates(s, fam, nm, i, &l)) != SFS_OK)
		return -st;
	for (size_t k = 0; k < l.n && !found; k++)
		if (same_name(&l.items[k].key, nm[i].kind, nm[i].text))
			found = &l.items[k].key;
	if (found) {
		/* the list's strings live only as long as the list */
		sfs_buf_free(&nm[i].mem);
		nm[i].copy = cli_xmalloc(found->len + 1);
		memcpy(nm[i].copy, found->ptr, found->len);
		nm[i].s = sfs_bytes(nm[i].copy, found->len);
		nm[i].hashed = 0;
	}
	sfs_list_free(&l);
	return found != NULL;
}

int cli_names_resolve(const cli *c, sfs_store *s, sfs_family fam,
                      cli_name *nm, int n)
{
	static const sfs_family scope_fams[] = { SFS_FAM_KV, SFS_FAM_LOG,
	                                         SFS_FAM_COUNTER };
	int r;

	for (int i = 0; i < n; i++) {
		if (!nm[i].hashed)
			continue;
		if (i == 2)
			nm[i].kind = fs_name_key_kind(nm[1].s);
		if (fam == SFS_FAM_DIR && i == 0) {
			/* a scope of any family (exec-clear) */
			r = 0;
			for (size_t f = 0; r == 0 && f < sizeof(scope_fams) /
			                                  sizeof(scope_fams[0]); f++)
				r = resolve_in(s, scope_fams[f], nm, i);
		} else {
			r = resolve_in(s, fam, nm, i);
		}
		if (r < 0)
			return cli_fail_status(c, -r, "cannot look up the name '%s'",
			                       nm[i].text);
		if (r == 0)
			return cli_fail(c, CLI_EXIT_NOTFOUND, "no %s is named '%s'",
			                fam == SFS_FAM_QUEUE ? "queue" : labels[i],
			                nm[i].text);
	}
	return CLI_EXIT_OK;
}

char *cli_names_where(const cli_name *nm, int n, const char *noun)
{
	char *s[3] = { NULL, NULL, NULL }, *out;

	for (int i = 0; i < n && i < 3; i++)
		s[i] = cli_name_show(nm[i].s.ptr, nm[i].s.len, nm[i].kind);
	if (n >= 3)
		out = cli_xasprintf("%s %s in scope %s namespace %s",
		                    noun ? noun : "key", s[2], s[0], s[1]);
	else if (n == 2)
		out = cli_xasprintf("namespace %s of scope %s", s[1], s[0]);
	else
		out = cli_xasprintf("scope %s", s[0]);
	for (int i = 0; i < 3; i++)
		free(s[i]);
	return out;
}

int cli_fail_names(const cli *c, int status, const cli_name *nm, int n,
                   const char *noun, const char *doing)
{
	char *where = cli_names_where(nm, n, noun);
	int rc = status == SFS_NOTFOUND
	       ? cli_fail(c, CLI_EXIT_NOTFOUND, "no such %s", where)
	       : cli_fail_status(c, status, "cannot %s %s", doing, where);

	free(where);
	return rc;
}

void cli_names_json(json_t *obj, const cli_name *nm, int n)
{
	for (int i = 0; i < n && i < 3; i++)
		cli_json_set_bytes(obj, json_fields[i], nm[i].s.ptr, nm[i].s.len);
}
