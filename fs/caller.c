/*
 * caller.c - what a FLUSH is: the writer's last close of a file, a close
 * of one of several descriptors that still hold it, or a process dying of
 * a signal.
 *
 * FLUSH carries the closing task's id (a thread id: the thread that ran
 * close(2), or the last thread of an exiting process), and close waits
 * for our answer, so the task is there to be read in /proc:
 *  - /proc/<tid>/status: its parent, and FDSize 0 once do_exit has
 *    detached its file table, which is where an exiting task's FLUSH
 *    comes from;
 *  - /proc/<tid>/stat, for an exiting task only: do_exit sets PF_EXITING
 *    (field 9) and the exit code (field 52, waitpid's encoding: the
 *    killing signal in the low 7 bits, else the status in bits 8-15)
 *    before it closes the task's files. Never for a live task: a FLUSH
 *    also comes from inside execve, which closes the close-on-exec files
 *    while it holds the task's exec lock, and reading stat (like the exe
 *    link) waits for that lock: the daemon would wait for the exec and
 *    the exec for the daemon (a Python program that runs a subprocess
 *    while it has a file open, dash's `cmd 3>&-`);
 *  - /proc/<tid>/fdinfo/<fd>: the descriptors a process still holds
 *    (the one being closed is already out of its table), each with its
 *    open flags and inode number, read without locks that could wait.
 * A close is not the last while the closing process (unless it exits)
 * or its parent holds the file for writing through another descriptor:
 * the shells' redirections (`printf x >&3` dups fd 3 onto 1 and closes
 * the dup after), a command run by a script under `exec 3>k` or in
 * `(a; b) > k` (it exits holding the script's descriptor), a child whose
 * copy of a close-on-exec descriptor closes when it execs.
 *
 * Not read: the links in /proc/<tid>/fd (which would tell the mount's
 * files by name for a third of fdinfo's cost) and /proc/<tid>/ns: since
 * the stable fix "proc: protect ptrace_may_access() with exec_update_lock
 * (FD links)" (6.18.40) reading them waits for the exec lock too, and the
 * daemon hung on a FLUSH from execve (docs/performance-rounds.md, "The FLUSH
 * check by name"). Should a kernel lock fdinfo the same way, this check
 * must leave /proc.
 *
 * What is read, cheapest first (every /proc read costs a few system
 * calls, and this is on the path of every create): the task's fdinfo
 * directory; its status only when it has no descriptors left (it exits)
 * or its parent must be read; the parent's fdinfo only when the parent
 * could hold the file: the closing task is not the one that opened it (a
 * command of a script, a child), or another handle has the file open for
 * writing. A close by the task that opened the file, the common case,
 * reads one directory (docs/performance.md). The fdinfo files of the
 * tasks that closed files lately stay open between checks (fs_procs,
 * below): a task's next close reads them again instead of opening them.
 *
 * Checked on this project's kernel (6.18) for SIGKILL, SIGTERM, abort(),
 * exit() and _exit() with files left open, exit_group() from a second
 * thread, a SIGKILL of a process with five threads (the FLUSH then carries
 * the thread id of the last thread to exit, whose exit code is the signal
 * too), the redirections of bash and dash, and an execve with a
 * close-on-exec file on the mount.
 *
 * What it cannot tell (docs/filesystem.md says so to users): a process
 * that handles the signal and exits (its exit code is a status); _exit()
 * right after a partial write; a task in a PID namespace the daemon cannot
 * see (pid 0) or whose /proc the daemon cannot read (another user's,
 * unless the daemon is root: the exit code then reads 0); a holder that is
 * neither the closing process nor its parent, or a parent that holds a
 * file its child opened because it was passed the descriptor. Each of these is taken as a
 * close: the check only withholds a commit when it sees a signal or
 * another descriptor.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"

#define PF_EXITING 0x00000004 /* include/linux/sched.h */
#define STAT_FLAGS 9          /* proc_pid_stat(5) field numbers */
#define STAT_EXIT_CODE 52

/* Opens /proc/<pid>/<file>; a descriptor, or -1. */
static int proc_file(pid_t pid, const char *file, int flags)
{
	char path[48];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	return open(path, flags | O_CLOEXEC);
}

/* Reads a small /proc file open on fd (closed here) into buf,
 * NUL-terminated; its length, or -1. */
static ssize_t slurp(int fd, char *buf, size_t size)
{
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* From /proc/<tid>/status, which can be read whatever the task is doing:
 * *exiting when its file table is already detached (FDSize 0: do_exit's
 * exit_files, which is where an exiting task's FLUSH comes from), and its
 * parent. 0, or -1 when it cannot be read. */
static int status_of(pid_t pid, int *exiting, pid_t *ppid, pid_t *tgid)
{
	char buf[2048], *p;

	if (slurp(proc_file(pid, "status", O_RDONLY), buf, sizeof(buf)) <= 0 ||
	    !(p = strstr(buf, "\nTgid:")))
		return -1;
	*tgid = (pid_t)strtol(p + 6, NULL, 10);
	if (!(p = strstr(buf, "\nPPid:")))
		return -1;
	*ppid = (pid_t)strtol(p + 6, NULL, 10);
	if (!(p = strstr(buf, "\nFDSize:")))
		return -1;
	*exiting = strtol(p + 8, NULL, 10) == 0;
	return 0;
}

pid_t fs_caller_tgid(pid_t tid)
{
	pid_t ppid, tgid;
	int exiting;

	return tid > 0 && status_of(tid, &exiting, &ppid, &tgid) == 0 ? tgid
	                                                               : 0;
}

/* Whether an exiting task dies of a signal, from /proc/<tid>/stat (the
 * exit code, field 52; PF_EXITING, field 9, confirms the exit). Only for
 * a task already exiting: reading stat takes the task's exec lock, which
 * a task in execve holds while it closes its close-on-exec files, sending
 * a FLUSH that waits for us. */
static int killed_by_signal(pid_t pid)
{
	char buf[1024], *p;
	unsigned long long flags = 0;
	long long code = 0;
	int field;

	if (slurp(proc_file(pid, "stat", O_RDONLY), buf, sizeof(buf)) <= 0)
		return 0;
	/* The command name (field 2) may hold spaces and parentheses: the
	 * fields that follow start after the last ')'. */
	if (!(p = strrchr(buf, ')')))
		return 0;
	p++;
	for (field = 3; field <= STAT_EXIT_CODE; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return 0; /* a kernel with fewer fields */
		if (field == STAT_FLAGS)
			flags = strtoull(p, NULL, 10);
		else if (field == STAT_EXIT_CODE)
			code = strtoll(p, NULL, 10);
		while (*p && *p != ' ')
			p++;
	}
	code &= 0x7f;
	return (flags & PF_EXITING) && code != 0 && code != 0x7f;
}

/* Whether a descriptor's fdinfo says it is open for writing on inode
 * ino: 1 or 0; *seen_ino when it names an inode (kernels from 5.14). */
static int fdinfo_writes(const char *info, uint64_t ino, int *seen_ino)
{
	const char *p;
	unsigned flags = 0;

	if ((p = strstr(info, "\nflags:")))
		flags = (unsigned)strtoul(p + 7, NULL, 8);
	if (!(p = strstr(info, "\nino:")))
		return 0;
	*seen_ino = 1;
	return strtoull(p + 5, NULL, 10) == ino &&
	       (flags & O_ACCMODE) != O_RDONLY;
}

/*
 * The /proc files of the tasks that closed files lately, kept open.
 * Opening a /proc file is most of what reading it costs (a path walk and
 * an inode made for it: 6-9 us here against 2 us for a pread of one kept
 * open; docs/performance-rounds.md, "The FLUSH check's /proc files kept open"),
 * and a program or a shell loop that writes many files closes them from
 * one task. Each read is still live: a kept fdinfo/<n> shows whatever
 * descriptor n is at the time of the read (the kernel looks n up in the
 * task's table on every read from offset 0), and the kept directory
 * lists the descriptors the task has now. The files of a task that is
 * gone fail to be read (ENOENT, also when its pid was given to a new
 * process: they name the old one); the task is then read afresh.
 *
 * At most PROCS_TASKS tasks, the least recently used replaced, and of
 * each the fdinfo of PROCS_FDS of its descriptors (the standard three, a
 * shell's 255 and a few more; beyond them each read opens its file):
 * 8 x 17 descriptors in all. An entry serves one thread at a time; a
 * check that finds its task's entry in use reads /proc afresh.
 */
#define PROCS_TASKS 8
#define PROCS_FDS 16

typedef struct proc_task {
	pid_t pid;          /* 0: a free entry; the task the files are of */
	int busy;
	unsigned long used; /* LRU clock */
	int dir;            /* /proc/<pid>/fdinfo, or -1 */
	int nfds;           /* kept: info[i] is fdinfo/<fd[i]> */
	int fd[PROCS_FDS], info[PROCS_FDS];
	unsigned char seen[PROCS_FDS]; /* listed by the read under way */
} proc_task;

struct fs_procs {
	pthread_mutex_t lock;
	unsigned long clock;
	proc_task task[PROCS_TASKS];
};

fs_procs *fs_procs_new(void)
{
	fs_procs *c = calloc(1, sizeof(*c));
	int i;

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	for (i = 0; i < PROCS_TASKS; i++)
		c->task[i].dir = -1;
	return c;
}

/* Forgets kept descriptor i of t (its owner only). */
static void task_drop_fd(proc_task *t, int i)
{
	close(t->info[i]);
	t->nfds--;
	t->fd[i] = t->fd[t->nfds];
	t->info[i] = t->info[t->nfds];
	t->seen[i] = t->seen[t->nfds];
}

/* Closes every file t keeps (its owner only). */
static void task_close(proc_task *t)
{
	if (t->dir >= 0)
		close(t->dir);
	t->dir = -1;
	while (t->nfds > 0)
		task_drop_fd(t, t->nfds - 1);
}

void fs_procs_free(fs_procs *c)
{
	int i;

	if (!c)
		return;
	for (i = 0; i < PROCS_TASKS; i++)
		task_close(&c->task[i]);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* The entry for pid, taken for this thread's use: the task's own, or the
 * least recently used free one (what it kept is closed by its new user).
 * NULL when there is no cache or the task's entry is in use. */
static proc_task *task_take(fs_procs *c, pid_t pid)
{
	proc_task *t = NULL;
	int i, other = 0;

	if (!c)
		return NULL;
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < PROCS_TASKS; i++) {
		proc_task *e = &c->task[i];

		if (e->pid == pid) {
			t = e->busy ? NULL : e;
			goto out;
		}
		if (!e->busy && (!t || e->used < t->used))
			t = e;
	}
	if (t) {
		other = 1;
		t->pid = pid;
	}
out:
	if (t)
		t->busy = 1;
	pthread_mutex_unlock(&c->lock);
	if (other)
		task_close(t); /* another task's files */
	return t;
}

/* Gives t back; keep 0 forgets the task (its files are closed). */
static void task_give(fs_procs *c, proc_task *t, int keep)
{
	if (!keep)
		task_close(t);
	pthread_mutex_lock(&c->lock);
	t->busy = 0;
	t->used = ++c->clock;
	if (!keep)
		t->pid = 0;
	pthread_mutex_unlock(&c->lock);
}

/* Reads the fdinfo of descriptor name (an entry of dir, the task's fdinfo
 * directory) into info, through the file t keeps for it when there is
 * one or room for one; its length, or -1 when the descriptor is gone. */
static ssize_t fdinfo_read(proc_task *t, int dir, const char *name,
                           char *info, size_t size)
{
	char *end;
	long n = strtol(name, &end, 10);
	ssize_t got;
	int i = 0;

	if (t && !*end)
		for (i = 0; i < t->nfds && t->fd[i] != n; i++)
			;
	if (!t || *end || (i == t->nfds && i == PROCS_FDS))
		return slurp(openat(dir, name, O_RDONLY | O_CLOEXEC), info, size);
	if (i == t->nfds) {
		if ((t->info[i] = openat(dir, name, O_RDONLY | O_CLOEXEC)) < 0)
			return -1;
		t->fd[i] = (int)n;
		t->nfds++;
	}
	if ((got = pread(t->info[i], info, size - 1, 0)) <= 0) {
		task_drop_fd(t, i); /* descriptor n was closed meanwhile */
		return -1;
	}
	t->seen[i] = 1;
	info[got] = '\0';
	return got;
}

/* Lists the task's fdinfo directory from its start, through the one t
 * keeps (opened afresh when that task is gone) or a new one (then kept in
 * t, if any): the first getdents64's result in dents, and the directory
 * in *dir. *dir is -1 when the directory cannot be opened; t is then
 * given back, forgotten. */
static ssize_t list_fdinfo(fs_procs *c, proc_task *t, pid_t pid, int *dir,
                           char *dents, size_t size)
{
	ssize_t n = -1;

	if (t && t->dir >= 0 &&
	    (lseek(t->dir, 0, SEEK_SET) != 0 ||
	     (n = getdents64(t->dir, dents, size)) < 0))
		task_close(t);
	if (t && t->dir >= 0) {
		*dir = t->dir;
		return n;
	}
	if ((*dir = proc_file(pid, "fdinfo", O_RDONLY | O_DIRECTORY)) < 0) {
		if (t)
			task_give(c, t, 0);
		return -1;
	}
	if (t)
		t->dir = *dir;
	return getdents64(*dir, dents, size);
}

/* Whether the process holds more than skip descriptors open for writing
 * on inode ino: 1, 0, or -1 when its descriptors cannot be read; *fds
 * counts those it has (up to the one found). The directory is read with getdents64 and
 * each entry with openat on it, or through the files kept in c (above):
 * the fewest system calls, and each one counts on the path of every
 * create. */
static int holds_for_writing(fs_procs *c, pid_t pid, uint64_t ino,
                             unsigned skip, int *fds)
{
	char dents[4096], info[512];
	proc_task *t = task_take(c, pid);
	unsigned found = 0;
	int dir, seen_ino = 0, i;
	ssize_t n, at;

	*fds = 0;
	n = list_fdinfo(c, t, pid, &dir, dents, sizeof(dents));
	if (dir < 0)
		return -1;
	if (t)
		memset(t->seen, 0, sizeof(t->seen));
	while (n > 0) {
		for (at = 0; found <= skip && at < n;) {
			struct dirent64 *de = (struct dirent64 *)(dents + at);

			at += de->d_reclen;
			if (de->d_name[0] == '.' ||
			    fdinfo_read(t, dir, de->d_name, info, sizeof(info)) <= 0)
				continue; /* closed meanwhile */
			++*fds;
			found += fdinfo_writes(info, ino, &seen_ino);
		}
		if (found > skip)
			break;
		n = getdents64(dir, dents, sizeof(dents));
	}
	if (!t) {
		close(dir);
	} else {
		/* Descriptors the whole listing did not show are closed. */
		for (i = t->nfds - 1; n == 0 && i >= 0; i--)
			if (!t->seen[i])
				task_drop_fd(t, i);
		task_give(c, t, n >= 0);
	}
	/* A kernel without ino in fdinfo (before 5.14) cannot say. */
	return found > skip ? 1 : seen_ino ? 0 : -1;
}

/* How many of the file's other handles open for writing task pid opened
 * and may still hold descriptors of. */
static unsigned theirs(const fs_others *others, pid_t pid)
{
	unsigned k = 0;

	for (unsigned i = 0; others && i < others->n; i++)
		k += others->opener[i] == pid;
	return k;
}

void fs_writers_add(fs_writers *w, pid_t pid)
{
	for (unsigned i = 0; i < w->n && i < FS_WRITERS; i++)
		if (w->pid[i] == pid)
			return;
	if (w->n < FS_WRITERS)
		w->pid[w->n++] = pid;
	else
		w->n = FS_WRITERS + 1;
}

void fs_writers_remove(fs_writers *w, pid_t pid)
{
	for (unsigned i = 0; i < w->n && w->n <= FS_WRITERS; i++)
		if (w->pid[i] == pid) {
			w->pid[i] = w->pid[--w->n];
			return;
		}
}

/* Whether task pid of process tgid, dying, made any of w's changes: it
 * or a thread of its process did, or cannot be ruled out (a writer that
 * is gone: a thread of the dying process may already be reaped; more
 * writers than w holds). */
static int made_changes(pid_t pid, pid_t tgid, const fs_writers *w)
{
	char path[64];

	if (!w || w->n > FS_WRITERS)
		return 1;
	for (unsigned i = 0; i < w->n; i++) {
		pid_t t = w->pid[i];

		if (t == pid || t == tgid)
			return 1;
		snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)tgid,
		         (int)t);
		if (access(path, F_OK) == 0)
			return 1;
		snprintf(path, sizeof(path), "/proc/%d", (int)t);
		if (access(path, F_OK) != 0)
			return 1;
	}
	return 0;
}

fs_exit fs_caller_exit(fs_procs *c, pid_t pid, uint64_t ino,
                       const fs_writers *w)
{
	int exiting = 0, fds, own;
	pid_t ppid, tgid;

	if (pid <= 0)
		return FS_EXIT_NONE;
	/* A task with descriptors is not exiting (fs_caller_close). */
	if ((own = holds_for_writing(c, pid, ino, 0, &fds)) >= 0)
		return own ? FS_EXIT_NONE : FS_EXIT_LEFT;
	if (fds > 0 || status_of(pid, &exiting, &ppid, &tgid) != 0)
		return FS_EXIT_NONE;
	/* None at all: a live task that closed every one (head closes
	 * its stdin, then its stdout and stderr, before it exits), or
	 * one exiting, normally or not. */
	if (!exiting || !killed_by_signal(pid))
		return FS_EXIT_LEFT;
	return made_changes(pid, tgid, w) ? FS_EXIT_KILLED : FS_EXIT_NONE;
}

fs_close_kind fs_caller_close(fs_procs *c, pid_t pid, pid_t opener,
                              const fs_others *others, uint64_t ino,
                              const fs_writers *w)
{
	int exiting = 0, own, fds, parent_fds, status = 1;
	int shared = others && others->writers > 0;
	unsigned skip = theirs(others, pid);
	pid_t ppid = 0, tgid = 0;

	if (pid <= 0)
		return FS_CLOSE_UNKNOWN;
	/* Its own other descriptors first. A task that has any is not
	 * exiting: do_exit detaches the file table before it closes the
	 * files, so an exiting task's FLUSH finds none. Those it may hold
	 * of the file's other handles do not count: its own, and its
	 * parent's, inherited (`exec 3>k; /bin/echo v > k`: echo closes
	 * its stdout holding fd 3). */
	own = holds_for_writing(c, pid, ino, skip, &fds);
	if (own == 1 && others && others->n > skip &&
	    (status = status_of(pid, &exiting, &ppid, &tgid)) == 0 &&
	    ppid > 0 && theirs(others, ppid) > 0)
		own = holds_for_writing(c, pid, ino,
		                        skip + theirs(others, ppid), &fds);
	if (own == 1)
		return FS_CLOSE_HELD;
	/* A live task that opened the file itself, with no other handle
	 * open for writing on it: its parent cannot hold it (short of being
	 * passed the descriptor). Most closes end here, having read one
	 * directory of /proc. */
	if (fds > 0 && pid == opener && !shared)
		return own < 0 ? FS_CLOSE_UNKNOWN : FS_CLOSE_LAST;
	if (status != 0 && (status = status_of(pid, &exiting, &ppid, &tgid)))
		return FS_CLOSE_UNKNOWN;
	if (exiting && killed_by_signal(pid) && made_changes(pid, tgid, w))
		return FS_CLOSE_KILLED;
	/* Its parent's: a command a script runs with `exec 3>k` in effect
	 * exits holding fd 3, as does every command of `(a; b) > k`, and a
	 * child that inherited a close-on-exec descriptor closes it when it
	 * execs, while the parent still writes to the file. */
	if ((pid != opener || shared) && ppid > 0 &&
	    holds_for_writing(c, ppid, ino, theirs(others, ppid),
	                      &parent_fds) == 1)
		return FS_CLOSE_PARENT;
	return own < 0 && !exiting ? FS_CLOSE_UNKNOWN : FS_CLOSE_LAST;
}
