/*
 * detach.c - becoming a daemon without lying about the outcome.
 *
 * libfuse's fuse_daemonize() forks after the mount, but the store must be
 * opened in the process that serves it (a store handle may not cross a
 * fork: SQLite's locks belong to the process that took them), and opening
 * it can fail (wrong key, corrupt file) or print the new-key notice. So
 * the fork comes first: the parent only waits on a pipe for the child's
 * status and exits with it, while the child, still on the terminal, opens
 * the store, mounts, and only then detaches.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mountd_i.h"

static int status_fd = -1;

int mountd_detach_begin(void)
{
	int fds[2];
	pid_t pid;
	char c;
	ssize_t n;

	if (pipe(fds) != 0) {
		mountd_log(LOG_ERR, "cannot detach: pipe: %m");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		mountd_log(LOG_ERR, "cannot detach: fork: %m");
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid > 0) {
		/* The parent: wait for the child's word, then go. The key
		 * is the child's to read: the parent's copy of the
		 * environment would show it in /proc/PID/environ for as long
		 * as it waits, so it is wiped (in place: that memory is what
		 * /proc shows) and unset. */
		char *key = getenv("STATEFS_KEY");

		if (key) {
			explicit_bzero(key, strlen(key));
			unsetenv("STATEFS_KEY");
		}
		close(fds[1]);
		do
			n = read(fds[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1) {
			/* The child died without a word: report how. */
			int st = 0;
			waitpid(pid, &st, 0);
			_exit(1);
		}
		_exit((unsigned char)c);
	}
	close(fds[0]);
	status_fd = fds[1];
	return 0;
}

void mountd_detach_end(int status)
{
	char c = (char)status;
	int fd;

	if (status_fd < 0)
		return;
	if (status == 0) {
		setsid();
		if (chdir("/") != 0)
			mountd_log(LOG_WARNING, "chdir /: %m");
		mountd_log_detached();
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			if (fd > STDERR_FILENO)
				close(fd);
		}
	}
	while (write(status_fd, &c, 1) < 0 && errno == EINTR)
		;
	close(status_fd);
	status_fd = -1;
}
