/*
 * progress.c - the progress bar of long operations (export, import, verify,
 * rekey, checkpoint, restore), and Ctrl-C as a clean cancel.
 *
 * The bar goes to stderr, so it never mixes with results or JSON on stdout.
 * By default it is drawn only when stderr is a terminal and only once the
 * operation has run for a quarter of a second: quick operations and pipes
 * stay quiet. --progress draws it always (also into a file, one line per
 * update, for logs and tests); --no-progress never.
 *
 * While a bar is active, the first SIGINT, SIGTERM or SIGHUP (Ctrl-C, a
 * kill, a closed terminal) sets a flag that makes the engine's progress
 * callback return nonzero, so the engine stops with SFS_CANCELLED and
 * leaves the store as it was (it rolls back), and the command removes
 * what it was writing (export FILE); the handler is one-shot, so a second
 * signal kills the process the usual way.
 */
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli_i.h"

#define DELAY_NS (250 * 1000000LL)
#define INTERVAL_NS (100 * 1000000LL)

static volatile sig_atomic_t interrupted;
static cli_progress *active;     /* the bar on the screen, if any */
static const int stops[] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction old_stop[sizeof(stops) / sizeof(stops[0])];
static int tty;                  /* stderr is a terminal */

static void on_stop(int sig)
{
	(void)sig;
	interrupted = 1;
}

int cli_interrupted(void)
{
	return interrupted != 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void cli_progress_begin(cli_progress *p, const cli *c, const char *label,
                        const char *unit)
{
	struct sigaction sa;

	memset(p, 0, sizeof(*p));
	p->label = label;
	p->unit = unit;
	tty = isatty(STDERR_FILENO);
	/* 1: a bar after a delay (a terminal); 2: a bar from the start */
	p->on = c->progress == CLI_PROGRESS_ALWAYS ? 2
	      : c->progress == CLI_PROGRESS_AUTO && tty ? 1 : 0;
	p->start_ns = now_ns();
	interrupted = 0;
	active = p;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sa.sa_flags = (int)SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		sigaction(stops[i], &sa, &old_stop[i]);
}

static int term_width(void)
{
	struct winsize ws;

	if (tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		return ws.ws_col;
	return 80;
}

static void draw(cli_progress *p)
{
	char right[96], bar[128];
	int width = term_width(), barw, fill, pct;

	if (p->total > 0) {
		uint64_t done = p->done > p->total ? p->total : p->done;
		pct = (int)(done * 100 / p->total);
		snprintf(right, sizeof(right), " %3d%% %llu/%llu %s", pct,
		         (unsigned long long)done, (unsigned long long)p->total,
		         p->unit);
	} else {
		pct = -1;
		snprintf(right, sizeof(right), " %llu %s",
		         (unsigned long long)p->done, p->unit);
	}
	barw = width - (int)strlen(p->label) - (int)strlen(right) - 4;
	if (barw > (int)sizeof(bar) - 1)
		barw = (int)sizeof(bar) - 1;
	if (barw < 10)
		barw = 10;
	fill = pct < 0 ? 0 : pct * barw / 100;
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, pct < 0 ? '?' : '-', (size_t)(barw - fill));
	bar[barw] = 0;
	if (tty)
		fprintf(stderr, "\r%s [%s]%s\033[K", p->label, bar, right);
	else
		fprintf(stderr, "%s [%s]%s\n", p->label, bar, right);
	fflush(stderr);
	p->drawn = 1;
	p->shown = p->done;
}

int cli_progress_cb(uint64_t done, uint64_t total, void *ctx)
{
	cli_progress *p = ctx;
	int64_t t;

	p->done = done;
	p->total = total;
	if (p->on) {
		t = now_ns();
		if (p->on == 1 && !p->drawn && t - p->start_ns < DELAY_NS)
			return interrupted;
		/* into a file (--progress): no delay, a line a second */
		if (p->drawn && t - p->last_ns < (tty ? INTERVAL_NS
		                                      : 10 * INTERVAL_NS))
			return interrupted;
		p->last_ns = t;
		draw(p);
	}
	return interrupted;
}

void cli_progress_clear(void)
{
	if (active && active->drawn && tty) {
		fputs("\r\033[K", stderr);
		active->drawn = 0;
	}
}

void cli_progress_end(cli_progress *p)
{
	active = NULL;
	if (p->on && p->drawn) {
		if (tty) {
			fputs("\r\033[K", stderr);
		} else if (p->shown != p->done) {
			draw(p); /* the final count */
		}
		fflush(stderr);
	}
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		sigaction(stops[i], &old_stop[i], NULL);
}
