/*
 * clockshift.c - an LD_PRELOAD library for the mount and cli tests (a
 * daemon, statectl): the wall clock (CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE) as clock_gettime(2) gives it to the process,
 * moved by the whole seconds written in the file $CLOCKSHIFT_FILE, read at
 * every call (missing or empty: 0), so a test steps a running process's
 * wall clock by rewriting the file. gettimeofday(2) too: bash's
 * $EPOCHREALTIME reads it, and glibc's does not go through the
 * clock_gettime above.
 *
 * What it changes is the process's reading of the clock, not the kernel's
 * clock: a wait the kernel times on CLOCK_REALTIME (an absolute deadline
 * of pthread_cond_timedwait) runs on the real one. A daemon whose clock
 * reads an hour ahead therefore waits, on the wall clock, for what a daemon
 * waits for after the clock was stepped back by an hour; the monotonic
 * clock is left alone, as a step of the wall clock leaves it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long long shift_s(void)
{
	const char *path = getenv("CLOCKSHIFT_FILE");
	long long s = 0;
	FILE *f;

	if (!path || !(f = fopen(path, "re")))
		return 0;
	if (fscanf(f, "%lld", &s) != 1)
		s = 0;
	fclose(f);
	return s;
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	int rc;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "clock_gettime");
	rc = real(clock, ts);
	if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE))
		ts->tv_sec += (time_t)shift_s();
	return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	struct timespec ts;

	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}
