/*
 * test_threads.c - one store handle used from many threads at once, as the
 * FUSE daemon uses it: no lost counter updates (vgi-python's 8 x 200 ->
 * 1600), every queue item popped exactly once, readers and writers mixed,
 * and a second handle's writes interleaved.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

#define THREADS 8
#define ADDS 200
#define ITEMS 400

typedef struct job {
	sfs_store *s;
	pthread_barrier_t *go;
	int idx;
	int failures;
	int popped[ITEMS];   /* per consumer: count per item */
} job;

static void *adder(void *arg)
{
	job *j = arg;

	pthread_barrier_wait(j->go);
	for (int i = 0; i < ADDS; i++)
		if (sfs_counter_add(j->s, S("t"), S("n"), S("c"), 1, NULL) != SFS_OK)
			j->failures++;
	return NULL;
}

static void test_counter_threads(void **state)
{
	tfx *t = *state;
	pthread_barrier_t go;
	pthread_t th[THREADS];
	job jobs[THREADS];
	int64_t v = 0;

	pthread_barrier_init(&go, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].s = t->s;
		jobs[i].go = &go;
		pthread_create(&th[i], NULL, adder, &jobs[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(jobs[i].failures, 0);
	}
	pthread_barrier_destroy(&go);
	OK(sfs_counter_get(t->s, S("t"), S("n"), S("c"), &v, NULL));
	assert_int_equal(v, THREADS * ADDS);
}

static void *producer(void *arg)
{
	job *j = arg;
	char buf[16];

	pthread_barrier_wait(j->go);
	for (int i = j->idx; i < ITEMS; i += THREADS / 2) {
		sfs_slice it;

		snprintf(buf, sizeof(buf), "%d", i);
		it = S(buf);
		if (sfs_queue_push(j->s, S("q"), &it, 1, NULL) != SFS_OK)
			j->failures++;
	}
	return NULL;
}

static void *consumer(void *arg)
{
	job *j = arg;
	int idle = 0;
	sfs_list l;

	pthread_barrier_wait(j->go);
	while (idle < 2000) {
		int rc = sfs_queue_pop(j->s, S("q"), 1, &l);

		if (rc == SFS_NOTFOUND) {
			idle++;
			continue;
		}
		if (rc != SFS_OK) {
			j->failures++;
			break;
		}
		idle = 0;
		j->popped[atoi(l.items[0].value.ptr)]++;
		sfs_list_free(&l);
	}
	return NULL;
}

static void test_queue_threads(void **state)
{
	tfx *t = *state;
	pthread_barrier_t go;
	pthread_t th[THREADS];
	job *jobs = calloc(THREADS, sizeof(*jobs));
	uint64_t left = 1;

	assert_non_null(jobs);
	pthread_barrier_init(&go, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		jobs[i].s = t->s;
		jobs[i].go = &go;
		jobs[i].idx = i % (THREADS / 2);
		pthread_create(&th[i], NULL, i < THREADS / 2 ? producer : consumer,
		               &jobs[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(jobs[i].failures, 0);
	}
	pthread_barrier_destroy(&go);
	/* whatever the consumers missed at the end is still queued */
	for (;;) {
		sfs_list l;

		if (sfs_queue_pop(t->s, S("q"), 1, &l) != SFS_OK)
			break;
		jobs[THREADS - 1].popped[atoi(l.items[0].value.ptr)]++;
		sfs_list_free(&l);
	}
	for (int item = 0; item < ITEMS; item++) {
		int n = 0;

		for (int i = THREADS / 2; i < THREADS; i++)
			n += jobs[i].popped[item];
		if (n != 1)
			fail_msg("item %d popped %d times", item, n);
	}
	OK(sfs_item_count(t->s, S("q"), SFS_ITEM_PENDING, &left));
	assert_int_equal(left, 0);
	free(jobs);
}

static void *mixed(void *arg)
{
	job *j = arg;
	char k[16], v[16];
	sfs_list l;
	sfs_buf b;

	pthread_barrier_wait(j->go);
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%d-%d", j->idx, i);
		snprintf(v, sizeof(v), "v%d", i);
		if (sfs_kv_put(j->s, S("m"), S("n"), S(k), S(v)) != SFS_OK)
			j->failures++;
		if (sfs_kv_get(j->s, S("m"), S("n"), S(k), &b) != SFS_OK ||
		    strcmp(b.ptr, v))
			j->failures++;
		else
			sfs_buf_free(&b);
		if (i % 10 == 0) {
			if (sfs_kv_scan(j->s, S("m"), S("n"), NULL, &l) != SFS_OK)
				j->failures++;
			else
				sfs_list_free(&l);
			if (sfs_log_append(j->s, S("m"), S("log"), S("k"), S(v),
			                   NULL) != SFS_OK)
				j->failures++;
		}
		/* errors are per thread: a failure here must not leak into
		 * another thread's detail */
		if (sfs_kv_get(j->s, S("m"), S("n"), S("absent"), &b) !=
		    SFS_NOTFOUND)
			j->failures++;
	}
	return NULL;
}

static void test_mixed_threads(void **state)
{
	tfx *t = *state;
	pthread_barrier_t go;
	pthread_t th[THREADS];
	job jobs[THREADS];
	sfs_store *other;
	sfs_list l;

	OK(tfx_open(t->path, 0, &other));
	pthread_barrier_init(&go, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		/* half the threads on a second handle to the same file */
		jobs[i].s = i % 2 ? other : t->s;
		jobs[i].go = &go;
		jobs[i].idx = i;
		pthread_create(&th[i], NULL, mixed, &jobs[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(jobs[i].failures, 0);
	}
	pthread_barrier_destroy(&go);
	OK(sfs_kv_scan(t->s, S("m"), S("n"), NULL, &l));
	assert_int_equal(l.n, THREADS * 100);
	sfs_list_free(&l);
	OK(sfs_log_scan(t->s, S("m"), S("log"), S("k"), -1, 0, 1, &l));
	assert_int_equal(l.n, THREADS * 10);
	sfs_list_free(&l);
	sfs_store_close(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfx_setup, tfx_teardown)
		T(test_counter_threads),
		T(test_queue_threads),
		T(test_mixed_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
