/*
 * log.c - where the daemon's words go: stderr while it has a terminal (the
 * foreground, and the start-up of a detaching daemon, so its errors and the
 * new-key notice are seen), syslog once detached. The engine, fs/ and
 * libfuse all log through here. Debug lines only with -d.
 *
 * Nothing logged here ever holds key material: the engine's details are
 * documented never to, and the daemon logs no option values but paths.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "mountd_i.h"

static int use_syslog;   /* set once, at detaching; guarded by stderr_lock */
static int show_debug;
static pthread_mutex_t stderr_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *level_name(int level)
{
	switch (level) {
	case LOG_EMERG:
	case LOG_ALERT:
	case LOG_CRIT:
	case LOG_ERR:
		return "error: ";
	case LOG_WARNING:
		return "warning: ";
	default:
		return "";
	}
}

/* A message is one line: control bytes in it (a newline or an escape
 * sequence in a path it names) are written \xNN, so that it cannot end
 * its line early, forge the next, or drive the terminal; a C1 control in
 * UTF-8 too (C2 9B is CSI to xterm), as its two bytes. */
static char *one_line(const char *msg)
{
	char *out = malloc(4 * strlen(msg) + 1), *o = out;

	for (const unsigned char *p = (const unsigned char *)msg; out && *p;
	     p++) {
		if (*p < 0x20 || *p == 0x7f)
			o += sprintf(o, "\\x%02x", *p);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			o += sprintf(o, "\\x%02x\\x%02x", p[0], p[1]), p++;
		else
			*o++ = (char)*p;
	}
	if (out)
		*o = '\0';
	return out;
}

void mountd_log_sink(int level, const char *msg, void *ctx)
{
	char *line;

	(void)ctx;
	if (level >= LOG_DEBUG && !show_debug)
		return;
	line = one_line(msg);
	pthread_mutex_lock(&stderr_lock);
	if (use_syslog) {
		pthread_mutex_unlock(&stderr_lock);
		syslog(level, "%s", line ? line : msg);
		free(line);
		return;
	}
	fprintf(stderr, "statefs: %s%s\n", level_name(level),
	        line ? line : msg);
	pthread_mutex_unlock(&stderr_lock);
	free(line);
}

void mountd_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mountd_log_sink(level, msg, NULL);
}

/* libfuse's own messages ("fuse: ..."), through the same place. Some come
 * in pieces (an unknown option: the sentence, "-o ", the option, each a
 * call), so a line is said once its newline has come; a line longer than
 * the buffer is said in parts (a full buffer without a newline swallowed
 * that message and every later one of its thread). */
__attribute__((format(printf, 2, 0)))
static void fuse_sink(enum fuse_log_level level, const char *fmt, va_list ap)
{
	static __thread char msg[1024];
	static __thread size_t n;
	char *piece = NULL;

	if (vasprintf(&piece, fmt, ap) < 0)
		return;
	for (const char *p = piece; *p; p++) {
		if (*p != '\n')
			msg[n++] = *p;
		if (*p == '\n' || n == sizeof(msg) - 1) {
			msg[n] = '\0';
			if (n)
				mountd_log_sink((int)level, msg, NULL);
			n = 0;
		}
	}
	free(piece);
}

void mountd_log_open(int debug)
{
	show_debug = debug;
	openlog("statefs", LOG_PID, LOG_DAEMON);
	sfs_set_logger(mountd_log_sink, NULL);
	fuse_set_log_func(fuse_sink);
}

/* The checkpoint and claim-recovery threads run by now and may log: the
 * switch is made under the lock they write stderr under, so each line
 * goes to the terminal before it or to syslog after it (helper-44's
 * find, by reading: an unlocked flag, a race in C's memory model). */
void mountd_log_detached(void)
{
	pthread_mutex_lock(&stderr_lock);
	use_syslog = 1;
	pthread_mutex_unlock(&stderr_lock);
}

void mountd_log_close(void)
{
	sfs_set_logger(NULL, NULL);
	closelog();
}
