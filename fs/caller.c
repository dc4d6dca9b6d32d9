/*
 * caller.c - what a FLUSH is: the writer's last close of a file, a close
 * of one of several descriptors it still holds, or a process dying of a
 * signal.
 *
 * FLUSH carries the closing task's id (a thread id: the thread that ran
 * close(2), or the last thread of an exiting process), and close waits
 * for our answer, so the task is there to be read in /proc:
 *  - /proc/<tid>/stat: when a process dies, the kernel's do_exit sets
 *    PF_EXITING in the task's flags (field 9) and the exit code (field
 *    52, waitpid's encoding: the killing signal in the low 7 bits, else
 *    the status in bits 8-15) before it closes the task's files;
 *  - /proc/<tid>/fdinfo/<fd>: the descriptors the process still holds
 *    (the one being closed is already out of its table), each with its
 *    open flags and inode number. During an exit the table is already
 *    detached and reads as empty.
 * Checked on this project's kernel (6.18) for SIGKILL, SIGTERM, abort(),
 * exit() and _exit() with files left open, exit_group() from a second
 * thread, a SIGKILL of a process with five threads (the FLUSH then carries
 * the thread id of the last thread to exit, whose exit code is the signal
 * too), and the shells' redirections: `printf x >&3` dups fd 3 onto 1 and
 * closes that dup afterwards, a FLUSH while fd 3 still holds the file.
 *
 * What it cannot tell (docs/filesystem.md says so to users): a process
 * that handles the signal and exits (its exit code is a status); _exit()
 * right after a partial write; a task in a PID namespace the daemon cannot
 * see (pid 0) or whose /proc the daemon cannot read (another user's,
 * unless the daemon is root), for which the exit code also reads 0. Each
 * of these is taken as a close (FS_CLOSE_UNKNOWN, or LAST for an exit):
 * the check only withholds a commit when it sees a signal or another
 * descriptor.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"

#define PF_EXITING 0x00000004 /* include/linux/sched.h */
#define STAT_FLAGS 9          /* proc_pid_stat(5) field numbers */
#define STAT_EXIT_CODE 52

/* Reads a small /proc file (path relative to the directory dir, or
 * absolute with AT_FDCWD) into buf, NUL-terminated; its length, or -1. */
static ssize_t slurp(int dir, const char *path, char *buf, size_t size)
{
	int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* From /proc/<pid>/stat: 1 exiting (*killed: by a signal), 0 not, -1
 * cannot tell. */
static int exiting(pid_t pid, int *killed)
{
	char path[48], buf[1024], *p;
	unsigned long long flags = 0;
	long long code = 0;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (slurp(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return -1;
	/* The command name (field 2) may hold spaces and parentheses: the
	 * fields that follow start after the last ')'. */
	if (!(p = strrchr(buf, ')')))
		return -1;
	p++;
	for (field = 3; field <= STAT_EXIT_CODE; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -1; /* a kernel with fewer fields */
		if (field == STAT_FLAGS)
			flags = strtoull(p, NULL, 10);
		else if (field == STAT_EXIT_CODE)
			code = strtoll(p, NULL, 10);
		while (*p && *p != ' ')
			p++;
	}
	code &= 0x7f;
	*killed = code != 0 && code != 0x7f;
	return (flags & PF_EXITING) != 0;
}

/* Whether the process holds a descriptor open for writing on inode ino:
 * 1, 0, or -1 when its descriptors cannot be read. */
static int holds_for_writing(pid_t pid, uint64_t ino)
{
	char path[48], buf[512], *p;
	struct dirent *de;
	DIR *d;
	int found = 0, seen_ino = 0;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	if (!(d = opendir(path)))
		return -1;
	while (!found && (de = readdir(d))) {
		unsigned long long fino = 0;
		unsigned flags = 0;

		if (de->d_name[0] == '.')
			continue;
		if (slurp(dirfd(d), de->d_name, buf, sizeof(buf)) <= 0)
			continue; /* closed meanwhile */
		if ((p = strstr(buf, "\nflags:")))
			flags = (unsigned)strtoul(p + 7, NULL, 8);
		if ((p = strstr(buf, "\nino:"))) {
			fino = strtoull(p + 5, NULL, 10);
			seen_ino = 1;
		}
		found = fino == ino && (flags & O_ACCMODE) != O_RDONLY;
	}
	closedir(d);
	/* A kernel without ino in fdinfo (before 5.14) cannot say. */
	return found ? 1 : seen_ino ? 0 : -1;
}

fs_close_kind fs_caller_close(pid_t pid, uint64_t ino)
{
	int killed = 0, ex;

	if (pid <= 0)
		return FS_CLOSE_UNKNOWN;
	ex = exiting(pid, &killed);
	if (ex < 0)
		return FS_CLOSE_UNKNOWN;
	if (ex)
		return killed ? FS_CLOSE_KILLED : FS_CLOSE_LAST;
	switch (holds_for_writing(pid, ino)) {
	case 1:
		return FS_CLOSE_HELD;
	case 0:
		return FS_CLOSE_LAST;
	default:
		return FS_CLOSE_UNKNOWN;
	}
}
