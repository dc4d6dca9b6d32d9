/*
 * cmd_top.c - statectl top: a live view of a store, redrawn every interval
 * (one second by default): per queue its pending, in-flight and dead
 * items, its claims and the oldest one's age, how long its head has
 * waited, pushes and pops per second and a trend line of its depth over
 * the last five minutes; per scope its keys, log entries and counters;
 * the store's size and WAL.
 *
 * Each frame is one sfs_store_stats snapshot through a read-only handle:
 * one read transaction, no write lock, nothing written. Rates are the
 * differences of the engine's push and take counts between two frames
 * (statefs.h says how those lag); the trend is kept here, one sample of
 * each queue's depth per frame.
 *
 * On a terminal it draws with curses, on the alternate screen, which is
 * restored however it ends (q, SIGINT, SIGTERM, SIGHUP); the view follows
 * the window's size, dropping the least telling columns first (the trend,
 * then the claim figures, the waits, the rates) and cutting long names.
 * When stdout or stdin is not a terminal (or TERM is unusable) it prints
 * plain-text frames instead, one per interval, with every column; --once
 * prints one frame measured over one interval and exits; --json prints one
 * JSON object per frame.
 */
#include <errno.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <curses.h>

#include "cli_i.h"

#define NS 1000000000LL
#define SPAN_S 300            /* the trend's span: five minutes */
#define HIST 320              /* depth samples kept per queue */
#define PLAIN_TREND 30        /* the trend's width in plain frames */

/* A queue across frames. */
typedef struct tq {
	unsigned char *id;        /* its bytes (malloc'd) */
	size_t idlen;
	char name[FS_NAME_MAX + 1];  /* as under the mount */
	sfs_queue_stats f;        /* this frame's figures; f.queue unused */
	int64_t t0;               /* the previous frame's time (top.mono_ns);
	                             0: none */
	uint64_t pushed0, taken0; /* and its counts */
	double push_s, pop_s;     /* per second since then; < 0: unknown */
	int64_t ht[HIST];         /* depth samples: time (top.mono_ns), depth
	                             (a ring) */
	uint64_t hv[HIST];
	size_t hn, hlast;         /* samples, index of the newest */
} tq;

typedef struct top {
	sfs_store *s;
	int64_t interval_ms;
	sfs_stats *st;            /* the latest snapshot */
	int64_t mono_ns;          /* when it was taken, on the monotonic clock:
	                             what rates and the trend measure, so a
	                             step of the wall clock (st->now_ns) moves
	                             neither */
	tq *q;                    /* by queue bytes, as the snapshot */
	size_t nq;
	int utf8;                 /* the trend in block characters */
	const char *status;       /* a transient note for the footer */
} top;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;  /* no SA_RESTART: waits end at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static int64_t mono_ms(void)
{
	return mono_ns() / 1000000;
}

/* --- the model ---------------------------------------------------------- */

/* SQLite's order of BLOBs: memcmp, then the shorter first. */
static int idcmp(const void *a, size_t na, const void *b, size_t nb)
{
	int c = memcmp(a, b, na < nb ? na : nb);

	return c ? c : (na > nb) - (na < nb);
}

/* Takes a new snapshot into the model: queues matched by bytes (both
 * lists are sorted), rates from the counts' differences, one depth
 * sample each; queues gone from the store are dropped. */
static void model_update(top *t, sfs_stats *st)
{
	tq *nv = st->nqueues ? calloc(st->nqueues, sizeof(*nv)) : NULL;
	size_t j = 0;

	if (st->nqueues && !nv) {
		fputs("statectl: out of memory\n", stderr);
		exit(CLI_EXIT_SYSTEM);
	}
	t->mono_ns = mono_ns();
	for (size_t i = 0; i < st->nqueues; i++) {
		const sfs_queue_stats *f = &st->queues[i];
		tq *q = &nv[i];
		double dt;

		while (j < t->nq && idcmp(t->q[j].id, t->q[j].idlen,
		                          f->queue.ptr, f->queue.len) < 0)
			free(t->q[j++].id);
		if (j < t->nq && !idcmp(t->q[j].id, t->q[j].idlen, f->queue.ptr,
		                        f->queue.len)) {
			*q = t->q[j++];
		} else {
			q->id = cli_xmalloc(f->queue.len + 1);
			memcpy(q->id, f->queue.ptr, f->queue.len);
			q->idlen = f->queue.len;
			if (fs_name_encode(sfs_bytes(q->id, q->idlen),
			                    FS_NAME_SCOPE, q->name, NULL))
				snprintf(q->name, sizeof(q->name), "?");
		}
		dt = (double)(t->mono_ns - q->t0) / NS;
		q->push_s = q->pop_s = -1;
		/* a count that went down was forgotten (a reset): unknown */
		if (q->t0 && dt > 0 && f->pushed >= q->pushed0 &&
		    f->taken >= q->taken0) {
			q->push_s = (double)(f->pushed - q->pushed0) / dt;
			q->pop_s = (double)(f->taken - q->taken0) / dt;
		}
		q->f = *f;
		memset(&q->f.queue, 0, sizeof(q->f.queue));
		q->t0 = t->mono_ns;
		q->pushed0 = f->pushed;
		q->taken0 = f->taken;
		/* at most HIST samples per span, however short the interval */
		if (!q->hn || t->mono_ns - q->ht[q->hlast] >=
		    (int64_t)SPAN_S * NS / HIST) {
			q->hlast = q->hn ? (q->hlast + 1) % HIST : 0;
			q->ht[q->hlast] = t->mono_ns;
			q->hv[q->hlast] = f->pending;
			if (q->hn < HIST)
				q->hn++;
		} else {
			q->hv[q->hlast] = f->pending;
		}
	}
	while (j < t->nq)
		free(t->q[j++].id);
	free(t->q);
	t->q = nv;
	t->nq = st->nqueues;
	sfs_stats_free(t->st);
	t->st = st;
}

static void model_free(top *t)
{
	for (size_t i = 0; i < t->nq; i++)
		free(t->q[i].id);
	free(t->q);
	sfs_stats_free(t->st);
}

/* --- text --------------------------------------------------------------- */

/* Display columns of a UTF-8 string (a byte that is not UTF-8 counts 1). */
static int swidth(const char *s)
{
	mbstate_t ps;
	wchar_t wc;
	size_t n;
	int w = 0, cw;

	memset(&ps, 0, sizeof(ps));
	while (*s) {
		n = mbrtowc(&wc, s, MB_CUR_MAX, &ps);
		if (n == (size_t)-1 || n == (size_t)-2) {
			memset(&ps, 0, sizeof(ps));
			w++;
			s++;
			continue;
		}
		cw = wcwidth(wc);
		w += cw > 0 ? cw : 0;
		s += n;
	}
	return w;
}

/* Appends s to the line at *len, cut to cols columns ("~" marks a cut) and
 * padded to exactly cols, on the left (right != 0) or the right. */
static void put(char *line, size_t cap, size_t *len, const char *s, int cols,
                int right)
{
	char cut[4 * FS_NAME_MAX + 8];
	int w = swidth(s);

	if (cols <= 0)
		return;
	if (w > cols) {
		mbstate_t ps;
		size_t o = 0, n;
		wchar_t wc;
		int used = 0, cw;

		memset(&ps, 0, sizeof(ps));
		while (s[o] && o < sizeof(cut) - 2) {
			n = mbrtowc(&wc, s + o, MB_CUR_MAX, &ps);
			if (n == (size_t)-1 || n == (size_t)-2) {
				memset(&ps, 0, sizeof(ps));
				n = 1;
				cw = 1;
			} else {
				cw = wcwidth(wc) > 0 ? wcwidth(wc) : 0;
			}
			if (used + cw > cols - 1)
				break;
			memcpy(cut + o, s + o, n);
			o += n;
			used += cw;
		}
		cut[o++] = '~';
		cut[o] = '\0';
		s = cut;
		w = used + 1;
	}
	*len += (size_t)snprintf(line + *len, cap - *len, "%*s%s%*s",
	                         right ? cols - w : 0, "", s,
	                         right ? 0 : cols - w, "");
	if (*len >= cap)
		*len = cap - 1;
}

static void fmt_u(char *b, size_t n, uint64_t v)
{
	snprintf(b, n, "%llu", (unsigned long long)v);
}

/* An age in ns as "45s", "3m05s", "2h05m", "3d04h"; "-" for none. */
static void fmt_age(char *b, size_t n, int64_t since_ns, int64_t now_ns)
{
	int64_t s;

	if (since_ns <= 0) {
		snprintf(b, n, "-");
		return;
	}
	s = since_ns < now_ns ? (now_ns - since_ns) / NS : 0;
	if (s < 60)
		snprintf(b, n, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(b, n, "%lldm%02llds", (long long)(s / 60),
		         (long long)(s % 60));
	else if (s < 86400)
		snprintf(b, n, "%lldh%02lldm", (long long)(s / 3600),
		         (long long)(s / 60 % 60));
	else
		snprintf(b, n, "%lldd%02lldh", (long long)(s / 86400),
		         (long long)(s / 3600 % 24));
}

/* A rate per second, short. Each form ends where its rounding would
 * carry into the next one's width (9.96 is "10", not "10.0"; 9999.6 is
 * "10.0k", not "10000"). */
static void fmt_rate(char *b, size_t n, double r)
{
	if (r < 0)
		snprintf(b, n, "-");
	else if (r == 0)
		snprintf(b, n, "0");
	else if (r < 9.95)
		snprintf(b, n, "%.1f", r);
	else if (r < 9999.5)
		snprintf(b, n, "%.0f", r);
	else if (r < 9999.95e3)
		snprintf(b, n, "%.1fk", r / 1e3);
	else
		snprintf(b, n, "%.1fM", r / 1e6);
}

static void fmt_bytes(char *b, size_t n, uint64_t v)
{
	if (v < 1024)
		snprintf(b, n, "%llu B", (unsigned long long)v);
	else if (v < 1024 * 1024)
		snprintf(b, n, "%.1f KiB", (double)v / 1024);
	else if (v < 1024ull * 1024 * 1024)
		snprintf(b, n, "%.1f MiB", (double)v / (1024 * 1024));
	else
		snprintf(b, n, "%.1f GiB", (double)v / (1024.0 * 1024 * 1024));
}

/* The depth over the last SPAN_S seconds in cols characters: each the
 * largest depth sampled in its slice of time, in eight heights relative
 * to the largest of all; blank where the depth was 0 or not yet known. */
static void fmt_trend(const top *t, const tq *q, char *b, size_t n, int cols)
{
	static const char *const blocks[9] = {
		" ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586",
		"\u2587", "\u2588",
	};
	static const char ascii[] = " .:-=+*#@";
	uint64_t v[512], max = 0;
	int64_t from = t->mono_ns - (int64_t)SPAN_S * NS;
	size_t len = 0;

	if (cols > 512)
		cols = 512;
	memset(v, 0, sizeof(v));
	for (size_t k = 0; k < q->hn; k++) {
		int64_t ts = q->ht[k];
		int64_t c;

		if (ts < from)
			continue;
		c = (ts - from) * cols / ((int64_t)SPAN_S * NS + 1);
		if (c >= cols)
			c = cols - 1;
		if (q->hv[k] > v[c])
			v[c] = q->hv[k];
		if (q->hv[k] > max)
			max = q->hv[k];
	}
	b[0] = '\0';
	for (int c = 0; c < cols && len + 4 < n; c++) {
		int lv = v[c] ? (int)((v[c] * 8 + max - 1) / max) : 0;

		if (t->utf8)
			len += (size_t)snprintf(b + len, n - len, "%s", blocks[lv]);
		else
			b[len++] = ascii[lv];
		b[len] = '\0';
	}
}

/* --- layout ------------------------------------------------------------- */

enum { C_QUEUE, C_PEND, C_FLIGHT, C_DEAD, C_CLAIMS, C_EXP, C_OLDEST, C_WAIT,
       C_PUSH, C_POP, C_TREND, C_N };

static const struct {
	const char *title;
	int prio;                 /* who stays when the width runs out */
	int right;                /* right-aligned */
} qcols[C_N] = {
	[C_QUEUE] = { "QUEUE", 100, 0 },
	[C_PEND] = { "PENDING", 90, 1 },
	[C_FLIGHT] = { "INFLIGHT", 80, 1 },
	[C_DEAD] = { "DEAD", 70, 1 },
	[C_POP] = { "POP/s", 60, 1 },
	[C_PUSH] = { "PUSH/s", 55, 1 },
	[C_OLDEST] = { "OLDEST", 50, 1 },
	[C_WAIT] = { "WAIT", 40, 1 },
	[C_CLAIMS] = { "CLAIMS", 30, 1 },
	[C_EXP] = { "EXPIRED", 20, 1 },
	[C_TREND] = { "DEPTH, 5 MIN", 10, 0 },
};

#define MIN_NAME 6
#define MIN_TREND 10
#define LINE (8 * 1024)

typedef struct sink {
	FILE *f;                  /* plain frames; NULL: the curses screen */
	int row, height;
} sink;

static void emit(sink *k, const char *line, int attr)
{
	if (k->f) {
		size_t n = strlen(line);

		/* asked to quit: no more writes, each of which could wait
		 * for a reader that does not read (frame_written) */
		if (stop)
			return;
		while (n && line[n - 1] == ' ')
			n--;
		fprintf(k->f, "%.*s\n", (int)n, line);
		return;
	}
	if (k->row >= k->height)
		return;
	if (attr)
		attron(attr);
	mvaddstr(k->row, 0, line);
	clrtoeol();
	if (attr)
		attroff(attr);
	k->row++;
}

/* Display order: most pending first, then most in flight, then by name. */
static int by_load(const void *a, const void *b)
{
	const tq *x = *(tq *const *)a, *y = *(tq *const *)b;

	if (x->f.pending != y->f.pending)
		return x->f.pending < y->f.pending ? 1 : -1;
	if (x->f.inflight != y->f.inflight)
		return x->f.inflight < y->f.inflight ? 1 : -1;
	return strcmp(x->name, y->name);
}

static uint64_t scope_total(const sfs_scope_stats *c)
{
	return c->kv + c->log + c->counter;
}

static int by_size(const void *a, const void *b)
{
	const sfs_scope_stats *x = *(sfs_scope_stats *const *)a;
	const sfs_scope_stats *y = *(sfs_scope_stats *const *)b;

	if (scope_total(x) != scope_total(y))
		return scope_total(x) < scope_total(y) ? 1 : -1;
	return idcmp(x->scope.ptr, x->scope.len, y->scope.ptr, y->scope.len);
}

/* One queue's cell of column c. */
static void qcell(const top *t, const tq *q, int c, char *b, size_t n,
                  int trend_cols)
{
	int64_t now = t->st->now_ns;

	switch (c) {
	case C_QUEUE: snprintf(b, n, "%s", q->name); break;
	case C_PEND: fmt_u(b, n, q->f.pending); break;
	case C_FLIGHT: fmt_u(b, n, q->f.inflight); break;
	case C_DEAD: fmt_u(b, n, q->f.dead); break;
	case C_CLAIMS: fmt_u(b, n, q->f.claims); break;
	case C_EXP: fmt_u(b, n, q->f.expired); break;
	case C_OLDEST: fmt_age(b, n, q->f.oldest_claim_ns, now); break;
	case C_WAIT: fmt_age(b, n, q->f.head_ns, now); break;
	case C_PUSH: fmt_rate(b, n, q->push_s); break;
	case C_POP: fmt_rate(b, n, q->pop_s); break;
	default: fmt_trend(t, q, b, n, trend_cols); break;
	}
}

/* A frame being drawn: where it goes, the screen's size (INT_MAX for
 * plain frames: every column, every row, names uncut) and the line being
 * built. */
typedef struct frame {
	top *t;
	sink *k;
	int width, height, plain;
	char line[LINE];
	size_t len;
} frame;

/* Appends a cell of cols columns to the line (put's rules). */
static void cell(frame *fr, const char *s, int cols, int right)
{
	put(fr->line, sizeof(fr->line), &fr->len, s, cols, right);
}

/* Emits the line built so far and starts the next. */
static void endline(frame *fr, int attr)
{
	emit(fr->k, fr->line, attr);
	fr->len = 0;
	fr->line[0] = '\0';
}

/* A whole line of text, cut to the screen. */
static void text(frame *fr, const char *s, int attr)
{
	cell(fr, s, fr->plain ? swidth(s) : fr->width - 1, 0);
	endline(fr, attr);
}

static void scope_name(const sfs_scope_stats *c, char nm[FS_NAME_MAX + 1])
{
	if (fs_name_encode(sfs_bytes(c->scope.ptr, c->scope.len),
	                    FS_NAME_SCOPE, nm, NULL) != SFS_OK)
		snprintf(nm, FS_NAME_MAX + 1, "?");
}

/* The three lines at the top: the store and the time, its size, totals. */
static void render_header(frame *fr, uint64_t pend, uint64_t infl,
                          uint64_t dead)
{
	const sfs_stats *st = fr->t->st;
	const sfs_info *in = &st->info;
	char s[4 * FS_NAME_MAX + 8], a[40], b[80], *path;
	uint64_t file, wal, pages;
	time_t now = (time_t)(st->now_ns / NS);
	struct tm tmv;

	localtime_r(&now, &tmv);
	strftime(a, sizeof(a), fr->plain ? "%Y-%m-%dT%H:%M:%S%z" : "%H:%M:%S",
	         &tmv);
	/* escaped: a newline in the path broke the frame's first line */
	path = cli_human(in->path);
	snprintf(s, sizeof(s), "statefs top  %s", path);
	free(path);
	snprintf(b, sizeof(b), "%s  every %.1fs", a,
	         (double)fr->t->interval_ms / 1000);
	cell(fr, s, fr->plain ? swidth(s) : fr->width - 2 - swidth(b), 0);
	cell(fr, " ", 1, 0);
	cell(fr, b, swidth(b), 0);
	endline(fr, A_BOLD);
	if (cli_info_fact(in, "file_size", &file) &&
	    cli_info_fact(in, "wal_size", &wal) &&
	    cli_info_fact(in, "page_count", &pages)) {
		fmt_bytes(a, sizeof(a), file);
		fmt_bytes(b, sizeof(b), wal);
		snprintf(s, sizeof(s), "store %s (%llu pages), WAL %s, %s%s",
		         a, (unsigned long long)pages, b,
		         in->encrypted ? "encrypted, " : "plaintext",
		         in->encrypted ? in->cipher : "");
	} else { /* a backend without files */
		fmt_bytes(a, sizeof(a), in->size);
		snprintf(s, sizeof(s), "store %s (%s), %s%s", a, in->backend,
		         in->encrypted ? "encrypted, " : "plaintext",
		         in->encrypted ? in->cipher : "");
	}
	text(fr, s, 0);
	snprintf(s, sizeof(s), "%zu queue%s: %llu pending, %llu in flight, "
	         "%llu dead   %zu scope%s: %llu key%s, %llu log entr%s, %llu "
	         "counter%s", fr->t->nq, fr->t->nq == 1 ? "" : "s",
	         (unsigned long long)pend, (unsigned long long)infl,
	         (unsigned long long)dead, st->nscopes,
	         st->nscopes == 1 ? "" : "s", (unsigned long long)in->kv_rows,
	         in->kv_rows == 1 ? "" : "s", (unsigned long long)in->log_rows,
	         in->log_rows == 1 ? "y" : "ies",
	         (unsigned long long)in->counter_rows,
	         in->counter_rows == 1 ? "" : "s");
	text(fr, s, 0);
	text(fr, "", 0);
}

/* The queue table's columns: widths from the titles and the data, and on
 * a screen the least telling ones dropped until a line fits (names are
 * cut first, down to MIN_NAME); the trend takes what is left. */
static void queue_columns(frame *fr, tq **order, int w[C_N], int on[C_N])
{
	char s[4 * FS_NAME_MAX + 8];
	int total, room = fr->width - 1;

	for (int c = 0; c < C_N; c++) {
		w[c] = swidth(qcols[c].title);
		on[c] = 1;
	}
	for (size_t i = 0; i < fr->t->nq; i++)
		for (int c = 0; c < C_TREND; c++) {
			qcell(fr->t, order[i], c, s, sizeof(s), 0);
			if (swidth(s) > w[c])
				w[c] = swidth(s);
		}
	w[C_TREND] = fr->plain ? PLAIN_TREND : MIN_TREND;
	if (fr->plain)
		return;
	for (;;) {
		int lowest = -1;

		total = -1;
		for (int c = 0; c < C_N; c++)
			if (on[c])
				total += w[c] + 1;
		if (total <= room)
			break;
		if (w[C_QUEUE] > MIN_NAME && total - room <= w[C_QUEUE] - MIN_NAME) {
			w[C_QUEUE] -= total - room;
			continue;
		}
		for (int c = 0; c < C_N; c++)
			if (on[c] && c != C_QUEUE &&
			    (lowest < 0 || qcols[c].prio < qcols[lowest].prio))
				lowest = c;
		if (lowest < 0) {
			w[C_QUEUE] = room > 1 ? room : 1;
			return;
		}
		on[lowest] = 0;
	}
	if (on[C_TREND])
		w[C_TREND] += room - total;
}

/* How many rows each table gets below the header: all it has, or, on a
 * short screen, the queues what the scopes leave of the rest but a third
 * (two headers and the blank line between the tables come off first). */
static void table_rows(const frame *fr, int *qrows, int *srows)
{
	int avail = fr->height - fr->k->row - 1; /* the footer */
	int room = avail - 3 > 2 ? avail - 3 : 2, keep;

	*qrows = fr->t->nq ? (int)fr->t->nq : 1;
	*srows = fr->t->st->nscopes ? (int)fr->t->st->nscopes : 1;
	if (fr->plain || *qrows + *srows <= room)
		return;
	keep = *srows < room / 3 ? *srows : room / 3;
	if (keep < 1)
		keep = 1;
	if (*qrows > room - keep)
		*qrows = room - keep;
	*srows = room - *qrows;
}

/* "(N more ...)" in place of the last row a table has room for. */
static int more(frame *fr, int i, int rows, size_t n, const char *what)
{
	char s[64];

	if (i != rows - 1 || (int)n <= rows)
		return 0;
	snprintf(s, sizeof(s), "(%d more %s)", (int)n - rows + 1, what);
	text(fr, s, A_DIM);
	return 1;
}

static void render_queues(frame *fr, tq **order, int rows)
{
	char s[4 * FS_NAME_MAX + 8];
	int w[C_N], on[C_N];

	queue_columns(fr, order, w, on);
	for (int c = 0; c < C_N; c++)
		if (on[c]) {
			cell(fr, qcols[c].title, w[c], qcols[c].right);
			cell(fr, " ", 1, 0);
		}
	endline(fr, A_REVERSE);
	if (!fr->t->nq)
		text(fr, "(no queue holds items, claims, dead letters or counts)",
		     0);
	for (int i = 0; i < (int)fr->t->nq && i < rows; i++) {
		if (more(fr, i, rows, fr->t->nq, "queues"))
			break;
		for (int c = 0; c < C_N; c++)
			if (on[c]) {
				qcell(fr->t, order[i], c, s, sizeof(s), w[C_TREND]);
				cell(fr, s, w[c], qcols[c].right);
				cell(fr, " ", 1, 0);
			}
		endline(fr, 0);
	}
}

static void render_scopes(frame *fr, const sfs_scope_stats **order,
                          int rows)
{
	static const char *const titles[] = { "KEYS", "LOG", "COUNTERS" };
	const sfs_stats *st = fr->t->st;
	char nm[FS_NAME_MAX + 1], a[32];
	/* on a narrow screen, the keys only */
	int ncols = fr->plain || fr->width > 40 ? 3 : 1, sw = 5, nw = 8;

	for (size_t i = 0; i < st->nscopes; i++) {
		scope_name(order[i], nm);
		if (swidth(nm) > sw)
			sw = swidth(nm);
		fmt_u(a, sizeof(a), scope_total(order[i]));
		if ((int)strlen(a) > nw)
			nw = (int)strlen(a);
	}
	if (!fr->plain && sw > fr->width - 1 - ncols * (nw + 1))
		sw = fr->width - 1 - ncols * (nw + 1) > MIN_NAME ?
		     fr->width - 1 - ncols * (nw + 1) : MIN_NAME;
	cell(fr, "SCOPE", sw, 0);
	for (int c = 0; c < ncols; c++) {
		cell(fr, " ", 1, 0);
		cell(fr, titles[c], nw, 1);
	}
	endline(fr, A_REVERSE);
	if (!st->nscopes)
		text(fr, "(no key/value, log or counter entries)", 0);
	for (int i = 0; i < (int)st->nscopes && i < rows; i++) {
		const uint64_t v[3] = { order[i]->kv, order[i]->log,
		                        order[i]->counter };

		if (more(fr, i, rows, st->nscopes, "scopes"))
			break;
		scope_name(order[i], nm);
		cell(fr, nm, sw, 0);
		for (int c = 0; c < ncols; c++) {
			cell(fr, " ", 1, 0);
			fmt_u(a, sizeof(a), v[c]);
			cell(fr, a, nw, 1);
		}
		endline(fr, 0);
	}
}

/* The frame: header, the queue table, the scope table and, on a screen,
 * the footer on the last line. */
static void render(top *t, sink *k, int width, int height)
{
	const sfs_stats *st = t->st;
	frame *fr = cli_xmalloc(sizeof(*fr));
	tq **order = cli_xmalloc((t->nq + 1) * sizeof(*order));
	const sfs_scope_stats **sorder =
		cli_xmalloc((st->nscopes + 1) * sizeof(*sorder));
	uint64_t pend = 0, infl = 0, dead = 0;
	int qrows, srows;

	fr->t = t;
	fr->k = k;
	fr->width = width;
	fr->height = height;
	fr->plain = width == INT_MAX;
	fr->len = 0;
	fr->line[0] = '\0';
	for (size_t i = 0; i < t->nq; i++) {
		order[i] = &t->q[i];
		pend += t->q[i].f.pending;
		infl += t->q[i].f.inflight;
		dead += t->q[i].f.dead;
	}
	qsort(order, t->nq, sizeof(*order), by_load);
	for (size_t i = 0; i < st->nscopes; i++)
		sorder[i] = &st->scopes[i];
	qsort(sorder, st->nscopes, sizeof(*sorder), by_size);

	render_header(fr, pend, infl, dead);
	table_rows(fr, &qrows, &srows);
	render_queues(fr, order, qrows);
	text(fr, "", 0);
	render_scopes(fr, sorder, srows);
	if (!fr->plain) {
		char s[160];

		snprintf(s, sizeof(s), "q quit%s%s", t->status ? "   " : "",
		         t->status ? t->status : "");
		k->row = height - 1 > k->row ? height - 1 : k->row;
		text(fr, s, A_DIM);
	}
	free(order);
	free(sorder);
	free(fr);
}

/* --- JSON --------------------------------------------------------------- */

static json_t *rate_json(double r)
{
	return r < 0 ? json_null() : json_real(r);
}

static json_t *frame_json(const top *t)
{
	const sfs_stats *st = t->st;
	const sfs_info *in = &st->info;
	json_t *o = json_object(), *qs = json_array(), *ss = json_array();
	json_t *store;

	json_object_set_new(o, "time_ns", json_integer(st->now_ns));
	json_object_set_new(o, "interval_ms", json_integer(t->interval_ms));
	store = cli_json_path_object("path", in->path);
	json_object_update_new(store, json_pack("{s:s, s:b, s:I, s:i}",
	        "backend", in->backend, "encrypted", in->encrypted,
	        "size", (json_int_t)in->size,
	        "schema_version", in->schema_version));
	cli_json_set_facts(store, in); /* SQLite: file_size, wal_size, ... */
	json_object_set_new(o, "store", store);
	json_object_set_new(o, "rows", json_pack("{s:I, s:I, s:I, s:I, s:I, "
	        "s:I}", "kv", (json_int_t)in->kv_rows,
	        "counter", (json_int_t)in->counter_rows,
	        "log", (json_int_t)in->log_rows,
	        "queue", (json_int_t)in->queue_rows,
	        "claimed", (json_int_t)in->claimed_rows,
	        "dead", (json_int_t)in->dead_rows));
	for (size_t i = 0; i < t->nq; i++) {
		const tq *q = &t->q[i];
		json_t *j = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		        "pending", (json_int_t)q->f.pending,
		        "inflight", (json_int_t)q->f.inflight,
		        "dead", (json_int_t)q->f.dead,
		        "claims", (json_int_t)q->f.claims,
		        "expired", (json_int_t)q->f.expired,
		        "pushed", (json_int_t)q->f.pushed,
		        "taken", (json_int_t)q->f.taken);

		cli_json_set_bytes(j, "queue", q->id, q->idlen);
		if (q->f.oldest_claim_ns > 0)
			json_object_set_new(j, "oldest_claim_ns",
			                    json_integer(q->f.oldest_claim_ns));
		if (q->f.head_ns > 0)
			json_object_set_new(j, "head_ns",
			                    json_integer(q->f.head_ns));
		json_object_set_new(j, "push_per_s", rate_json(q->push_s));
		json_object_set_new(j, "pop_per_s", rate_json(q->pop_s));
		json_array_append_new(qs, j);
	}
	for (size_t i = 0; i < st->nscopes; i++) {
		const sfs_scope_stats *c = &st->scopes[i];
		json_t *j = json_pack("{s:I, s:I, s:I}", "kv", (json_int_t)c->kv,
		                      "log", (json_int_t)c->log,
		                      "counter", (json_int_t)c->counter);

		cli_json_set_bytes(j, "scope", c->scope.ptr, c->scope.len);
		json_array_append_new(ss, j);
	}
	json_object_set_new(o, "queues", qs);
	json_object_set_new(o, "scopes", ss);
	return o;
}

/* --- the loops ----------------------------------------------------------- */

/* A snapshot into the model. SFS_BUSY is left to the caller (a frame can
 * wait for the next one); anything else has been reported. */
static int snapshot(const cli *c, top *t)
{
	sfs_stats *st = NULL;
	int status = sfs_store_stats(t->s, &st);

	if (status == SFS_OK) {
		model_update(t, st);
		t->status = NULL;
		return CLI_EXIT_OK;
	}
	if (status == SFS_BUSY) {
		t->status = "(the store is busy: this frame is an older one)";
		return -1;
	}
	return cli_fail_status((cli *)c, status, "cannot read the store's "
	                       "figures");
}

/* Sleeps until ms from start have passed, or a signal. */
static void wait_until(int64_t start, int64_t ms)
{
	int64_t left;

	while (!stop && (left = start + ms - mono_ms()) > 0) {
		struct timespec ts = { left / 1000, (left % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
}

/* rc of writing a frame: a frame that could not be written because a
 * signal asked top to quit while it waited for its reader (a full pipe:
 * `statectl top | less`, paused) is that quit, exit 0, and what it left
 * unwritten is dropped (flushed at the exit, it would wait for that
 * reader again). It was exit 9, "cannot write the output: Interrupted
 * system call". */
static int frame_written(int rc)
{
	if (rc && stop) {
		cli_out_discard();
		return CLI_EXIT_OK;
	}
	return rc;
}

/* Frames on stdout: plain text or JSON, one per interval, or one. */
static int run_frames(const cli *c, top *t, int once)
{
	int64_t start;
	int rc, first = 1, printed = 0;

	for (;;) {
		start = mono_ms();
		rc = snapshot(c, t);
		if (rc > 0)
			return rc;
		if (rc == 0 && !(once && first)) {
			if (c->json) {
				if ((rc = frame_written(cli_out_json(frame_json(t)))))
					return rc;
			} else {
				sink k = { stdout, 0, INT_MAX };

				if (printed++)
					putchar('\n');
				render(t, &k, INT_MAX, INT_MAX);
			}
			if ((rc = frame_written(cli_out_flush())))
				return rc;
			if (once)
				return CLI_EXIT_OK;
		}
		if (rc == 0)
			first = 0;
		wait_until(start, t->interval_ms);
		/* --once stopped before its frame printed nothing: not a
		 * success (`statectl top --once > snapshot`) */
		if (stop)
			return once ? CLI_EXIT_INTERRUPTED : CLI_EXIT_OK;
	}
}

/* The full-screen view. Returns -1 when the terminal cannot be used (the
 * caller prints frames instead). */
static int run_screen(const cli *c, top *t)
{
	SCREEN *scr = newterm(NULL, stdout, stdin);
	int64_t start;
	int rc = CLI_EXIT_OK, ch, redraw;

	if (!scr)
		return -1;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	while (!stop && rc == CLI_EXIT_OK) {
		start = mono_ms();
		rc = snapshot(c, t);
		if (rc > 0)
			break;
		rc = CLI_EXIT_OK;
		redraw = 1;
		while (!stop) {
			int64_t left = start + t->interval_ms - mono_ms();

			if (redraw && t->st) {
				sink k = { NULL, 0, LINES };

				erase();
				if (COLS < 20 || LINES < 6)
					mvaddstr(0, 0, "(too small)");
				else
					render(t, &k, COLS, LINES);
				refresh();
				redraw = 0;
			}
			if (left <= 0)
				break;
			timeout((int)(left > INT_MAX ? INT_MAX : left));
			ch = getch();
			if (ch == 'q' || ch == 'Q') {
				stop = 1;
			} else if (ch == KEY_RESIZE || ch == 12 /* ^L */) {
				clearok(curscr, TRUE);
				redraw = 1;
			} else if (ch == ' ') {
				break; /* a new frame now */
			}
		}
	}
	endwin();
	delscreen(scr);
	return rc;
}

/* top */
int cmd_top(cli *c, cli_args *a)
{
	top t;
	int rc;

	memset(&t, 0, sizeof(t));
	t.interval_ms = a->interval_ms > 0 ? a->interval_ms : 1000;
	setlocale(LC_CTYPE, "");
	t.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	if ((rc = cli_store_open(c, CLI_STORE_READ, &t.s)))
		return rc;
	catch_signals();
	rc = -1;
	if (!a->once && !c->json && isatty(STDOUT_FILENO) &&
	    isatty(STDIN_FILENO))
		rc = run_screen(c, &t);
	if (rc < 0)
		rc = run_frames(c, &t, a->once);
	model_free(&t);
	sfs_store_close(t.s);
	return rc;
}
