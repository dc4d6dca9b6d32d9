/*
 * leakcheck.c - the canary search of canary.c as a command, for tests that
 * write a canary through something else than the engine (the SQLite
 * extension under Python, tests/mount/sdkpython.sh).
 *
 * Usage: leakcheck DIR HEX
 *   Searches every regular file in DIR for the bytes HEX stands for, raw,
 *   as hex and as base64 at any alignment (ct_dir_leaks).
 * Output: "no canary in any file", or "FILE: ENCODING".
 * Exit: 0 when no file holds it, 1 when one does, 2 on bad usage.
 */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "ctest.h"

int main(int argc, char **argv)
{
	unsigned char secret[256];
	char which[256] = "";
	const char *how;
	size_t n;

	if (argc != 3 || sodium_init() < 0 ||
	    sodium_hex2bin(secret, sizeof(secret), argv[2], strlen(argv[2]),
	                   NULL, &n, NULL) != 0 || n < 8) {
		fprintf(stderr, "usage: leakcheck DIR HEX (8 to 256 bytes)\n");
		return 2;
	}
	how = ct_dir_leaks(argv[1], secret, n, which, sizeof(which));
	if (!how) {
		printf("no canary in any file\n");
		return 0;
	}
	printf("%s: %s\n", which, how);
	return 1;
}
