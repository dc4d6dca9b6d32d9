/*
 * test_caller.c - the FLUSH check (fs/caller.c) against live processes,
 * read afresh and through the daemon's kept /proc files (fs_procs): the
 * same answers as a child's descriptors change under the kept files
 * (closed, reused for another file, reopened read-only, more of them than
 * are kept), after the child is gone, with more tasks than the cache keeps,
 * and from several threads at once; descriptors of the file's other
 * handles.
 *
 * A child here plays a writer: it obeys one-letter commands on a pipe
 * and answers each once done, so the check runs while it sleeps, as a
 * closing task does while the daemon answers its FLUSH.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs_i.h"

static char dir_path[] = "/tmp/statefs-caller-XXXXXX";
static char target[64], other[64];
static uint64_t target_ino;

typedef struct child {
	pid_t pid;
	int cmd, ack; /* our ends of its pipes */
} child;

/* The child's loop: each command, then one byte back. Descriptors are
 * put where the test says with dup2, so the numbers are known. */
static void child_loop(int cmd, int ack)
{
	char c;

	while (read(cmd, &c, 1) == 1) {
		int fd = -1;

		switch (c) {
		case 'w': /* the target for writing at 10 */
			fd = open(target, O_WRONLY);
			dup2(fd, 10);
			break;
		case 'm': /* 20 more descriptors (20-39): more than are kept */
			for (fd = 20; fd < 40; fd++)
				dup2(0, fd);
			fd = -1;
			break;
		case 'W': /* the target for writing at 40 */
			fd = open(target, O_WRONLY);
			dup2(fd, 40);
			break;
		case 'r': /* the target read-only at 10 */
			fd = open(target, O_RDONLY);
			dup2(fd, 10);
			break;
		case 'o': /* another file for writing at 10 */
			fd = open(other, O_WRONLY);
			dup2(fd, 10);
			break;
		case 'c':
			close(10);
			break;
		case 'C':
			close(40);
			break;
		default:
			_exit(0);
		}
		if (fd >= 0 && fd != 10 && fd != 40)
			close(fd);
		if (write(ack, &c, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

static child spawn(void)
{
	int cmd[2], ack[2];
	child k;

	assert_int_equal(pipe(cmd), 0);
	assert_int_equal(pipe(ack), 0);
	k.pid = fork();
	assert_true(k.pid >= 0);
	if (k.pid == 0) {
		close(cmd[1]);
		close(ack[0]);
		child_loop(cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	k.cmd = cmd[1];
	k.ack = ack[0];
	return k;
}

static void tell(child *k, char c)
{
	char got;

	assert_int_equal(write(k->cmd, &c, 1), 1);
	assert_int_equal(read(k->ack, &got, 1), 1);
}

static void reap(child *k)
{
	int st;

	/* Told, not left to see the end of its pipe: the children made
	 * after it hold copies of our end. */
	assert_int_equal(write(k->cmd, "q", 1), 1);
	close(k->cmd);
	close(k->ack);
	assert_int_equal(waitpid(k->pid, &st, 0), k->pid);
}

/* The check for a close by the child that opened the file. */
static fs_close_kind own_close(fs_procs *c, child *k)
{
	return fs_caller_close(c, k->pid, k->pid, 0, target_ino, NULL);
}

static int setup(void **state)
{
	struct stat st;
	int fd;

	(void)state;
	if (!mkdtemp(dir_path))
		return -1;
	snprintf(target, sizeof(target), "%s/target", dir_path);
	snprintf(other, sizeof(other), "%s/other", dir_path);
	if ((fd = open(target, O_CREAT | O_WRONLY, 0600)) < 0)
		return -1;
	close(fd);
	if ((fd = open(other, O_CREAT | O_WRONLY, 0600)) < 0)
		return -1;
	close(fd);
	if (stat(target, &st) != 0)
		return -1;
	target_ino = (uint64_t)st.st_ino;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(target);
	unlink(other);
	rmdir(dir_path);
	return 0;
}

/* One child's descriptors changing under the kept files: each answer as
 * afresh, and twice (the second read through files kept by the first). */
static void test_kept_files_follow_the_descriptors(void **state)
{
	static const struct {
		char cmd;
		fs_close_kind want;
	} steps[] = {
		{'w', FS_CLOSE_HELD}, /* another descriptor holds it */
		{'c', FS_CLOSE_LAST}, /* closed: descriptor 10 is gone */
		{'o', FS_CLOSE_LAST}, /* 10 reused for another file */
		{'w', FS_CLOSE_HELD}, /* and for the target again */
		{'r', FS_CLOSE_LAST}, /* read-only does not hold it */
		{'m', FS_CLOSE_LAST}, /* more descriptors than are kept */
		{'W', FS_CLOSE_HELD}, /* 40: among those read afresh */
		{'C', FS_CLOSE_LAST},
		{'c', FS_CLOSE_LAST},
		{'w', FS_CLOSE_HELD},
	};
	fs_procs *c = fs_procs_new();
	child k = spawn();
	size_t i;

	(void)state;
	assert_non_null(c);
	assert_int_equal(own_close(c, &k), FS_CLOSE_LAST);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		tell(&k, steps[i].cmd);
		assert_int_equal(own_close(NULL, &k), steps[i].want);
		assert_int_equal(own_close(c, &k), steps[i].want);
		assert_int_equal(own_close(c, &k), steps[i].want);
	}
	reap(&k);
	fs_procs_free(c);
}

/* A task that is gone: its kept files fail, it reads as unknown, and a
 * new task after it is read right. */
static void test_gone_task(void **state)
{
	fs_procs *c = fs_procs_new();
	child k = spawn(), n;

	(void)state;
	tell(&k, 'w');
	assert_int_equal(own_close(c, &k), FS_CLOSE_HELD);
	reap(&k);
	assert_int_equal(own_close(c, &k), FS_CLOSE_UNKNOWN);
	assert_int_equal(own_close(c, &k), FS_CLOSE_UNKNOWN);
	n = spawn();
	assert_int_equal(own_close(c, &n), FS_CLOSE_LAST);
	tell(&n, 'w');
	assert_int_equal(own_close(c, &n), FS_CLOSE_HELD);
	reap(&n);
	fs_procs_free(c);
}

/* The parent's descriptors (a close by a task that did not open the
 * file), kept like any task's: this process holds the target, then not. */
static void test_parent(void **state)
{
	fs_procs *c = fs_procs_new();
	child k = spawn();
	int fd;

	(void)state;
	assert_int_equal(fs_caller_close(c, k.pid, 1, 0, target_ino, NULL),
	                 FS_CLOSE_LAST);
	assert_true((fd = open(target, O_WRONLY)) >= 0);
	assert_int_equal(fs_caller_close(NULL, k.pid, 1, 0, target_ino, NULL),
	                 FS_CLOSE_PARENT);
	assert_int_equal(fs_caller_close(c, k.pid, 1, 0, target_ino, NULL),
	                 FS_CLOSE_PARENT);
	close(fd);
	assert_int_equal(fs_caller_close(c, k.pid, 1, 0, target_ino, NULL),
	                 FS_CLOSE_LAST);
	reap(&k);
	fs_procs_free(c);
}

/* The file's other handles open for writing (fs_others): descriptors a
 * task may hold of them do not make its close HELD or PARENT, as many as
 * it or its parent opened and did not close (`exec 3>k; echo v > k`),
 * and no more. */
static void test_other_handles(void **state)
{
	fs_procs *c = fs_procs_new();
	child k = spawn();
	fs_others mine = { 1, 1, { k.pid } }, parents = { 1, 1, { getpid() } };
	fs_others closed = { 1, 0, { 0 } }, elsewhere = { 1, 1, { 1 } };
	int fd;

	(void)state;
	tell(&k, 'w'); /* fd 10: one descriptor on the file */
	assert_int_equal(fs_caller_close(c, k.pid, k.pid, &mine, target_ino,
	                                 NULL), FS_CLOSE_LAST);
	assert_int_equal(fs_caller_close(c, k.pid, k.pid, &parents,
	                                 target_ino, NULL), FS_CLOSE_LAST);
	/* an other handle its opener closed, or someone else's: fd 10 is
	 * the closing file's */
	assert_int_equal(fs_caller_close(c, k.pid, k.pid, &closed, target_ino,
	                                 NULL), FS_CLOSE_HELD);
	assert_int_equal(fs_caller_close(c, k.pid, k.pid, &elsewhere,
	                                 target_ino, NULL), FS_CLOSE_HELD);
	tell(&k, 'W'); /* fd 40: two, one more than the other handles */
	assert_int_equal(fs_caller_close(c, k.pid, k.pid, &mine, target_ino,
	                                 NULL), FS_CLOSE_HELD);
	tell(&k, 'C');
	tell(&k, 'c');
	/* its parent holds one: PARENT unless that is an other handle */
	assert_true((fd = open(target, O_WRONLY)) >= 0);
	assert_int_equal(fs_caller_close(c, k.pid, 1, &closed, target_ino,
	                                 NULL), FS_CLOSE_PARENT);
	assert_int_equal(fs_caller_close(c, k.pid, 1, &parents, target_ino,
	                                 NULL), FS_CLOSE_LAST);
	close(fd);
	reap(&k);
	fs_procs_free(c);
}

#define MANY 13 /* more tasks than the cache keeps */

/* More tasks than entries: each is replaced in turn and read again. */
static void test_more_tasks_than_kept(void **state)
{
	fs_procs *c = fs_procs_new();
	child k[MANY];
	int i, round;

	(void)state;
	for (i = 0; i < MANY; i++) {
		k[i] = spawn();
		if (i % 2)
			tell(&k[i], 'w');
	}
	for (round = 0; round < 3; round++)
		for (i = 0; i < MANY; i++)
			assert_int_equal(own_close(c, &k[i]),
			                 i % 2 ? FS_CLOSE_HELD : FS_CLOSE_LAST);
	for (i = 0; i < MANY; i++)
		reap(&k[i]);
	fs_procs_free(c);
}

typedef struct racer {
	fs_procs *c;
	child *k;
	int nk, wrong;
} racer;

static void *race(void *arg)
{
	racer *r = arg;
	int i;

	for (i = 0; i < 300; i++) {
		child *k = &r->k[i % r->nk];

		if (own_close(r->c, k) !=
		    (i % r->nk == 1 ? FS_CLOSE_HELD : FS_CLOSE_LAST))
			r->wrong++;
	}
	return NULL;
}

/* Four threads checking the same three tasks: an entry in use by one is
 * read afresh by the others, and every answer is right. */
static void test_threads(void **state)
{
	fs_procs *c = fs_procs_new();
	child k[3];
	racer r[4];
	pthread_t t[4];
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		k[i] = spawn();
	tell(&k[1], 'w');
	for (i = 0; i < 4; i++) {
		r[i] = (racer){c, k, 3, 0};
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].wrong, 0);
	}
	for (i = 0; i < 3; i++)
		reap(&k[i]);
	fs_procs_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_files_follow_the_descriptors),
		cmocka_unit_test(test_gone_task),
		cmocka_unit_test(test_parent),
		cmocka_unit_test(test_other_handles),
		cmocka_unit_test(test_more_tasks_than_kept),
		cmocka_unit_test(test_threads),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
