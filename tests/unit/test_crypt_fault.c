/*
 * test_crypt_fault.c - I/O failures under the encrypting VFS.
 *
 * The fault VFS (faultvfs.h) is registered as SQLite's default before any
 * store opens, so every encrypted store's VFS wraps it: the engine sits on
 * the encryption layer, which sits on it, which sits on "unix". It makes
 * the Nth read, write or sync fail: EIO once, a full disk from then on, or
 * a torn write (half the bytes written, then an error). For each kind and
 * several N the engine must report SFS_IO or SFS_FULL (never a crash, never
 * wrong data), and once the fault is gone the store must reopen, verify
 * (every page authenticates, SQLite's integrity check) and hold every
 * acknowledged write. This is the error path of the decrypting reads and
 * encrypting writes that a crash test cannot reach.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faultvfs.h"
#include "fixture.h"
#include "statefs.h"

static char dir[64];
static sfs_key *key;
static int seq;

static int setup(void **state)
{
	(void)state;
	if (tfx_mkdtemp(dir, sizeof(dir), "fault") || sfs_key_generate(&key))
		return -1;
	/* The default from now on: the encrypting VFS wraps the default. */
	return faultvfs_register();
}

static int teardown(void **state)
{
	(void)state;
	faultvfs_unregister();
	sfs_key_destroy(key);
	return tfx_rmtree(dir);
}

static void value_of(int i, unsigned char *v, size_t *n)
{
	*n = i % 10 == 0 ? 9000 : 300 + (size_t)i % 200;
	for (size_t j = 0; j < *n; j++)
		v[j] = (unsigned char)(i * 7 + j * 13);
}

static int put(sfs_store *s, int i)
{
	unsigned char v[9000];
	char k[16];
	size_t n;

	value_of(i, v, &n);
	snprintf(k, sizeof(k), "k%05d", i);
	return sfs_kv_put(s, sfs_str("f"), sfs_str("ns"), sfs_str(k),
	                  sfs_bytes(v, n));
}

/* Every key below n (except those in gaps[]) reads exactly; returns how
 * many reads failed with rc_allowed (0: none allowed). */
static int check_all(sfs_store *s, int n, int rc_allowed)
{
	unsigned char v[9000];
	int failed = 0;

	for (int i = 0; i < n; i++) {
		sfs_buf b = { 0 };
		char k[16];
		size_t len;
		int rc;

		snprintf(k, sizeof(k), "k%05d", i);
		rc = sfs_kv_get(s, sfs_str("f"), sfs_str("ns"), sfs_str(k), &b);
		if (rc && rc == rc_allowed) {
			failed++;
			continue;
		}
		if (rc)
			fail_msg("get %s: %s: %s", k, sfs_strerror(rc),
			         sfs_errdetail());
		value_of(i, v, &len);
		assert_int_equal(b.len, len);
		assert_memory_equal(b.ptr, v, len);
		sfs_buf_free(&b);
	}
	return failed;
}

static sfs_store *open_store(const char *path)
{
	sfs_config o = { 0 };
	sfs_store *s = NULL;
	int rc;

	o.db = path;
	o.key = key;
	o.flags = SFS_OPEN_CREATE;
	rc = sfs_store_open(&o, &s, NULL);
	if (rc)
		fail_msg("open %s: %s", sfs_strerror(rc), sfs_errdetail());
	return s;
}

static void write_fault(fault_kind kind, long after)
{
	char path[128];
	sfs_store *s;
	int acked = 0, rc = SFS_OK, i;

	snprintf(path, sizeof(path), "%s/w%d.db", dir, ++seq);
	s = open_store(path);
	for (i = 0; i < 100; i++)
		assert_int_equal(put(s, i), SFS_OK);
	acked = i;
	faultvfs_arm(FAULT_WRITE, kind, after);
	for (; i < 3000; i++) {
		rc = put(s, i);
		if (rc)
			break;
		acked = i + 1;
	}
	faultvfs_disarm();
	assert_true(faultvfs_fired() > 0);
	if (kind == FAULT_FULL)
		assert_int_equal(rc, SFS_FULL);
	else
		assert_int_equal(rc, SFS_IO);
	assert_true(sfs_errdetail()[0] != '\0');
	/* The same handle works again once the disk does. */
	rc = put(s, acked);
	if (rc == SFS_OK)
		acked++;
	sfs_store_close(s);

	s = open_store(path);
	if (sfs_store_verify(s, NULL, NULL) != SFS_OK)
		fail_msg("kind %d after %ld: verify: %s", kind, after,
		         sfs_errdetail());
	assert_int_equal(check_all(s, acked, 0), 0);
	sfs_store_close(s);
}

static void test_write_eio(void **state)
{
	(void)state;
	for (long n = 1; n <= 4000; n = n * 3 + 1)
		write_fault(FAULT_EIO, n);
}

static void test_write_full(void **state)
{
	(void)state;
	for (long n = 1; n <= 4000; n = n * 3 + 1)
		write_fault(FAULT_FULL, n);
}

static void test_write_torn(void **state)
{
	(void)state;
	for (long n = 1; n <= 4000; n = n * 3 + 1)
		write_fault(FAULT_TORN, n);
}

/* A failing read is an I/O error, not "corrupt", never other bytes; the
 * next read works. */
static void test_read_eio(void **state)
{
	char path[128];
	sfs_store *s;
	(void)state;

	snprintf(path, sizeof(path), "%s/r.db", dir);
	s = open_store(path);
	for (int i = 0; i < 300; i++)
		assert_int_equal(put(s, i), SFS_OK);
	sfs_store_close(s);
	for (long n = 1; n <= 200; n = n * 2 + 1) {
		int failed;
		s = open_store(path);
		faultvfs_arm(FAULT_READ, FAULT_EIO, n);
		failed = check_all(s, 300, SFS_IO);
		faultvfs_disarm();
		if (faultvfs_fired())
			assert_true(failed <= 1);
		assert_int_equal(check_all(s, 300, 0), 0);
		sfs_store_close(s);
	}
}

static void test_sync_eio(void **state)
{
	char path[128];
	sfs_store *s;
	(void)state;

	snprintf(path, sizeof(path), "%s/y.db", dir);
	s = open_store(path);
	assert_int_equal(put(s, 0), SFS_OK);
	faultvfs_arm(FAULT_SYNC, FAULT_EIO, 1);
	assert_int_equal(sfs_store_sync(s), SFS_IO);
	faultvfs_disarm();
	assert_int_equal(sfs_store_sync(s), SFS_OK);
	sfs_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_eio),
		cmocka_unit_test(test_write_full),
		cmocka_unit_test(test_write_torn),
		cmocka_unit_test(test_read_eio),
		cmocka_unit_test(test_sync_eio),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
