/*
 * fuzz_import.c - libFuzzer target: statectl's import of JSON Lines
 * (statectl/cmd_transfer.c, cli_import_read): the header, then one row a
 * line, parsed with jansson and validated by the engine.
 *
 * Each input is read as the whole export, through a file descriptor as
 * `statectl import` reads one, into a store in memory that is opened
 * afresh after an input that imported rows, so every input starts from the
 * same empty store. Checked:
 * no crash, no leak, no undefined behaviour, and an answer that is an exit
 * code statectl documents (0, or bad data, or a conflict).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli_i.h"

#define CHECK(c)                                                         \
	do {                                                             \
		if (!(c)) {                                              \
			fprintf(stderr, "fuzz_import: %s:%d: %s\n",         \
			        __FILE__, __LINE__, #c);                   \
			abort();                                         \
		}                                                        \
	} while (0)

static sfs_store *store;
static int memfd = -1;

static void open_store(void)
{
	sfs_config o;

	memset(&o, 0, sizeof(o));
	o.db = ":memory:";
	o.flags = SFS_OPEN_CREATE | SFS_OPEN_PLAINTEXT;
	CHECK(sfs_store_open(&o, &store, NULL) == SFS_OK);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	open_store();
	memfd = memfd_create("fuzz_import", MFD_CLOEXEC);
	CHECK(memfd >= 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	cli c;
	uint64_t rows = 0;
	FILE *in;
	int rc;

	memset(&c, 0, sizeof(c));
	c.progress = CLI_PROGRESS_NEVER;
	CHECK(ftruncate(memfd, 0) == 0);
	CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size);
	CHECK(lseek(memfd, 0, SEEK_SET) == 0);
	in = fdopen(dup(memfd), "r");
	CHECK(in);
	rc = cli_import_read(&c, in, "fuzz input", store, &rows);
	CHECK(rc == CLI_EXIT_OK || rc == CLI_EXIT_DATA || rc == CLI_EXIT_EXISTS);
	CHECK(rc != CLI_EXIT_OK || rows < size);
	if (rc == CLI_EXIT_OK && rows) {
		sfs_store_close(store);
		open_store();
	}
	fclose(in);
	return 0;
}
