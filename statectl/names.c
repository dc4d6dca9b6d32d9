/*
 * names.c - scopes, namespaces and keys as words on the command line.
 *
 * A name on the command line is written as the filesystem shows it, so a
 * path seen under the mount pastes into a command; the codec is the
 * engine's (the "Names" section of statefs.h). Messages and plain listings
 * show names in the same form, so what statectl prints pastes back too.
 */
#include <stdlib.h>
#include <string.h>

#include "cli_i.h"

int cli_name_parse(const cli *c, const char *arg, const char *what,
                   cli_name *out)
{
	(void)c;
	(void)what;
	out->mem = NULL;
	out->s = sfs_str(arg);
	return CLI_EXIT_OK;
}

void cli_name_free(cli_name *n)
{
	free(n->mem);
	n->mem = NULL;
}

void cli_name_print(FILE *f, const void *p, size_t n)
{
	cli_out_human(f, p, n);
}

char *cli_name_show(const void *p, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		fputs("statectl: out of memory\n", stderr);
		exit(CLI_EXIT_SYSTEM);
	}
	fputc('\'', f);
	cli_name_print(f, p, n);
	fputc('\'', f);
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
	int rc;

	for (int i = 0; i < n; i++) {
		if ((rc = cli_name_parse(c, args[i], labels[i], &out[i]))) {
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

char *cli_names_where(const cli_name *nm, int n, const char *noun)
{
	char *s[3] = { NULL, NULL, NULL }, *out = NULL;
	int len = -1;

	for (int i = 0; i < n && i < 3; i++)
		s[i] = cli_name_show(nm[i].s.ptr, nm[i].s.len);
	if (n >= 3)
		len = asprintf(&out, "%s %s in scope %s namespace %s",
		               noun ? noun : "key", s[2], s[0], s[1]);
	else if (n == 2)
		len = asprintf(&out, "namespace %s of scope %s", s[1], s[0]);
	else
		len = asprintf(&out, "scope %s", s[0]);
	for (int i = 0; i < 3; i++)
		free(s[i]);
	if (len < 0) {
		fputs("statectl: out of memory\n", stderr);
		exit(CLI_EXIT_SYSTEM);
	}
	return out;
}

void cli_names_json(json_t *obj, const cli_name *nm, int n)
{
	for (int i = 0; i < n && i < 3; i++)
		cli_json_set_bytes(obj, json_fields[i], nm[i].s.ptr, nm[i].s.len);
}
