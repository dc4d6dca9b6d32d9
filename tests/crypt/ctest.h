/*
 * ctest.h - helpers shared by the crypt suite's programs: temporary
 * directories, byte-level access to store files (as an attacker or a
 * crash sees them), searching files for a secret in every encoding we can
 * check, and opening stores through the public API.
 */
#ifndef STATEFS_CTEST_H
#define STATEFS_CTEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "statefs.h"

/* A new directory under /tmp (out holds >= 64 bytes); aborts on failure. */
void ct_mkdir(char *out, const char *tag);
void ct_rmtree(const char *dir);

/* Whole-file and ranged I/O; abort on failure. */
off_t ct_size(const char *path);
void ct_pread(const char *path, void *buf, size_t n, off_t off);
void ct_pwrite(const char *path, const void *buf, size_t n, off_t off);
void ct_flip(const char *path, off_t off);
void ct_copy(const char *from, const char *to);

/* Does the file contain secret (n bytes) raw, as lower- or upper-case hex,
 * or as standard or URL-safe base64 at any alignment? Returns a static
 * string naming the encoding found, or NULL. */
const char *ct_file_leaks(const char *path, const unsigned char *secret,
                          size_t n);
/* The same over every regular file in dir; *which gets the file name. */
const char *ct_dir_leaks(const char *dir, const unsigned char *secret,
                         size_t n, char *which, size_t whichlen);

/* Opens path with key (NULL: plaintext mode) and flags. */
int ct_open(const char *path, const sfs_key *key, unsigned flags,
            sfs_store **out);

/* Milliseconds of sleep. */
void ct_sleep_ms(long ms);

/* Fails the program (exit 1) with a message: for code outside cmocka
 * (children, setup). */
void ct_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                 noreturn));

#endif /* STATEFS_CTEST_H */
