/*
 * test_async_err.c - how fsync tells a failed asynchronous commit (-o
 * async_close; fs/file.c, fs_async_*), as Linux's errseq_t tells a failed
 * writeback: once to every descriptor open when it failed, once to the
 * first fsync after it if nobody has told it yet, never to a descriptor
 * opened after it was told; a later failure is told again.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "fs_i.h"

static void test_nothing_failed(void **state)
{
	fs f = { 0 };
	uint32_t a = fs_async_sample(&f);

	(void)state;
	assert_int_equal(fs_async_check(&f, &a), 0);
	assert_int_equal(fs_async_check(&f, &a), 0);
}

static void test_told_once_to_each(void **state)
{
	fs f = { 0 };
	uint32_t a = fs_async_sample(&f), b = fs_async_sample(&f), c, d;

	(void)state;
	fs_async_failed(&f, ENOSPC);
	c = fs_async_sample(&f); /* not told yet: this one tells it too */
	assert_int_equal(fs_async_check(&f, &a), ENOSPC);
	assert_int_equal(fs_async_check(&f, &a), 0);
	d = fs_async_sample(&f); /* opened after it was told */
	assert_int_equal(fs_async_check(&f, &d), 0);
	assert_int_equal(fs_async_check(&f, &b), ENOSPC);
	assert_int_equal(fs_async_check(&f, &c), ENOSPC);
	assert_int_equal(fs_async_check(&f, &b), 0);
}

static void test_later_failure_told_again(void **state)
{
	fs f = { 0 };
	uint32_t a = fs_async_sample(&f), b;

	(void)state;
	fs_async_failed(&f, ENOSPC);
	assert_int_equal(fs_async_check(&f, &a), ENOSPC);
	b = fs_async_sample(&f);
	fs_async_failed(&f, EIO);
	assert_int_equal(fs_async_check(&f, &a), EIO);
	assert_int_equal(fs_async_check(&f, &b), EIO);
	/* the same errno again, after it was told: a new failure */
	fs_async_failed(&f, EIO);
	assert_int_equal(fs_async_check(&f, &a), EIO);
	/* two failures before anyone looks: told once, the last errno */
	fs_async_failed(&f, ENOSPC);
	fs_async_failed(&f, EIO);
	assert_int_equal(fs_async_check(&f, &b), EIO);
	assert_int_equal(fs_async_check(&f, &b), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_failed),
		cmocka_unit_test(test_told_once_to_each),
		cmocka_unit_test(test_later_failure_told_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
