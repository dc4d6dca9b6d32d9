/*
 * test_pg.c - what only the PostgreSQL backend has (placeholder).
 */
#include "fixture.h"

static void test_placeholder(void **state)
{
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_placeholder, tfx_setup,
		                                tfx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
