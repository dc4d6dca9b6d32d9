/*
 * main.c - the statefs daemon: `statefs [options] [STORE] MOUNTPOINT`.
 *
 * Wires the parts together and holds no filesystem logic: parse the
 * options, open the store (sfs_store_open with SFS_OPEN_ENV: the same
 * store and key rules as statectl, creating the default store and its key
 * file on first use), create the filesystem (fs/), mount, start the claim
 * recovery thread (gc.c), serve until unmounted or told to stop, and undo
 * each step in reverse order (the goto ladder at the end). SIGINT, SIGTERM and SIGHUP, and fusermount3 -u, end it with a clean
 * unmount and status 0.
 *
 * The daemon holds keys and plaintext in memory, so it never dumps core
 * and cannot be ptraced by other processes of its user.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "mountd_i.h"

static void harden(void)
{
	struct rlimit none = { 0, 0 };

	setrlimit(RLIMIT_CORE, &none);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* The soft limit on descriptors up to the hard one, as systemd asks of
 * programs that use no select(2): the daemon keeps a pidfd per process
 * with aliases (fs/alias.c bounds them by a quarter of the soft limit, 256
 * processes under systemd's 1024) besides the store's and /dev/fuse's. */
static void raise_nofile(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* glibc's pthread_cancel loads libgcc_s (the unwinder) at its first call
 * and aborts the process when it cannot ("libgcc_s.so.1 must be installed
 * for pthread_cancel to work"). Both pools end their threads with it when
 * the session ends (fs/loop.c, libfuse's), which is when a daemon out of
 * descriptors (ulimit -n) could not open the library: SIGTERM or an
 * unmount killed it with SIGABRT, leaving the mount dead (ENOTCONN) and
 * the store unclosed. Loaded now, it is found at the cancel without
 * opening anything. Without it (a static libgcc) nothing is lost. */
static void load_unwinder(void)
{
	(void)dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NODELETE);
}

/* glibc serves blocks of 128 KiB and more with mmap and returns them at
 * free, but raises that threshold to the size of the largest such block
 * freed (up to 32 MiB): after the first large value, values' buffers come
 * from the per-thread arenas and their memory stays there when freed (a
 * daemon that wrote and deleted a hundred 16 MiB values kept 200 MiB).
 * A fixed threshold keeps large buffers mmapped, so what a value's write
 * or read took goes back to the system when it is done. */
static void tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

/* The store's name as given: -o db (or the STORE argument), else
 * $STATEFS_DB; NULL for the default store. */
static const char *given_store(const mountd_opts *o)
{
	const char *db = o->db ? o->db : getenv("STATEFS_DB");

	return db && *db ? db : NULL;
}

/* Whether a store's name is a path in this file system: not a PostgreSQL
 * name (a URI, key=value), nor a SQLite URI or :memory:. */
static int names_a_file(const char *db)
{
	return *db != ':' && strncmp(db, "file:", 5) != 0 &&
	       !strstr(db, "://") && !strchr(db, '=');
}

/* The file a store's name names, when it is a path that does not exist
 * yet (this open then makes the store), else NULL. The default store is
 * left to the engine, which says when its first run made a key. */
static const char *missing_store_file(const mountd_opts *o)
{
	const char *db = given_store(o);
	struct stat st;

	if (!db || !names_a_file(db))
		return NULL;
	if (stat(db, &st) == 0 || errno != ENOENT)
		return NULL;
	return db;
}

/* Where a store file named db is or would be made, as a real path: the
 * file's (symlinks followed), else that of what a dangling symlink there
 * names (the open makes that file), else its nearest existing
 * directory's (the open makes the missing ones). NULL when not known. */
static char *store_place(const char *db)
{
	char *path = strdup(db), *real = NULL, *slash, *next, to[PATH_MAX];
	ssize_t len;
	int hops = 0;

	while (path && !(real = realpath(*path ? path : "/", NULL)) &&
	       errno == ENOENT) {
		slash = strrchr(path, '/');
		len = readlink(path, to, sizeof(to) - 1);
		if (len > 0 && hops++ < 40) {
			to[len] = '\0';
			if (to[0] != '/' && slash)
				*slash = '\0';
			if (to[0] == '/' || !slash)
				next = strdup(to);
			else if (asprintf(&next, "%s/%s", path, to) < 0)
				next = NULL;
			free(path);
			path = next;
			continue;
		}
		if (!slash) {
			real = realpath(".", NULL);
			break;
		}
		*slash = '\0';
	}
	free(path);
	return real;
}

/* A store file at or under the mount point: once mounted, SQLite's
 * checks of the file and its directory (a new -wal's directory fsync,
 * the write check's stat) go through this daemon's own mount, which
 * waits for the very thread asking: the daemon hung at once, in D state,
 * and the mount with it, and so did every findmnt or mount(8) that
 * looked at the store's path (only an abort through fusectl ended it).
 * Refused with a sentence before anything is opened. The store is found
 * by the engine's rules (the default store included) without its key. */
static int refuse_store_under_mountpoint(const mountd_opts *o)
{
	sfs_config cfg;
	sfs_key *key = NULL;
	char *db = NULL, *real = NULL, *mp;
	size_t n;
	int inside = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.db = given_store(o);
	cfg.flags = SFS_OPEN_PLAINTEXT; /* the name only: no key is read */
	if (sfs_config_resolve(&cfg, &db, &key, NULL) != SFS_OK)
		return 0; /* the open says what is wrong */
	sfs_key_destroy(key);
	mp = realpath(o->mountpoint, NULL);
	if (mp && names_a_file(db) && (real = store_place(db))) {
		n = strlen(mp);
		inside = strncmp(real, mp, n) == 0 &&
		         (real[n] == '/' || real[n] == '\0' ||
		          strcmp(mp, "/") == 0);
	}
	if (inside)
		mountd_log(LOG_ERR, "the store %s is inside the mount point %s:"
		           " the mount would hide it from this daemon, which"
		           " would hang there; keep the store outside the"
		           " mount point", db, o->mountpoint);
	free(real);
	free(mp);
	free(db);
	return inside ? -1 : 0;
}

static int open_store(const mountd_opts *o, sfs_store **out)
{
	sfs_config cfg;
	char *notice = NULL;
	const char *made = o->ro ? NULL : missing_store_file(o);
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.db = o->db;
	cfg.keyfile = o->keyfile;
	/* SFS_OPEN_WAL_THREAD: a request waits for no checkpoint's copying
	 * and long fsyncs, only for the writer's short finish after a round
	 * (docs/engine.md, "Checkpoints off the commit path"). */
	cfg.flags = SFS_OPEN_ENV | SFS_OPEN_WAL_THREAD |
	            (o->plaintext ? SFS_OPEN_PLAINTEXT : 0) |
	            (o->ro ? SFS_OPEN_READONLY : SFS_OPEN_CREATE);
	cfg.max_value = o->max_value;
	cfg.lease_ms = o->lease_ms;
	rc = sfs_store_open(&cfg, out, &notice);
	if (notice) {
		/* The engine's sentence names the program already. */
		const char *msg = notice;
		if (strncmp(msg, "statefs: ", 9) == 0)
			msg += 9;
		mountd_log(LOG_NOTICE, "%s", msg);
		free(notice);
	} else if (rc == 0 && made) {
		/* A mistyped -o db or STATEFS_DB mounts a new, empty store:
		 * not without a word. */
		mountd_log(LOG_NOTICE, "created a new empty %s store at %s: no "
		           "store was there", o->plaintext ? "plaintext" :
		           "encrypted", made);
	}
	if (rc) {
		/* A detail that begins with the status's words ("wrong key:
		 * the key given ...") says it once, not "wrong key: wrong
		 * key: ...". */
		const char *what = sfs_strerror(rc), *why = sfs_errdetail();
		/* a store this mount may not write (a read-only medium, a
		 * -shm it may not write) may still be read */
		const char *hint = rc == SFS_READONLY && !o->ro ?
		                   " (-o ro mounts it read-only)" : "";

		if (strncmp(why, what, strlen(what)) == 0)
			mountd_log(LOG_ERR, "cannot open the store: %s%s", why,
			           hint);
		else
			mountd_log(LOG_ERR, "cannot open the store: %s: %s%s",
			           what, why, hint);
	}
	return rc;
}

/* A mount point whose daemon is gone (killed, crashed) answers ENOTCONN to
 * everything but what the kernel still caches. libfuse either refused it
 * ("failed to access mountpoint"), or, when its look came while the
 * kernel still had the directory's attributes, mounted on top of it: the
 * dead mount came back at the unmount. statfs always asks the daemon.
 * Refused here with the remedy, before the store is opened. */
static int refuse_dead_mountpoint(const char *mp)
{
	struct statfs sf;

	if (statfs(mp, &sf) == 0 || errno != ENOTCONN)
		return 0; /* whatever else is wrong, libfuse says */
	mountd_log(LOG_ERR, "%s is the mount point of a daemon that is gone "
	           "(%s): unmount it first with fusermount3 -u %s", mp,
	           strerror(ENOTCONN), mp);
	return -1;
}

/* A mountinfo field as it names a path: \ooo escapes back to bytes. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			              (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* A mount point a running statefs already serves: a second daemon would
 * mount on top of it without a word, hiding the first, which came back
 * at the second's unmount. Refused with what to do, before the store is
 * opened. Only a statefs mount at that very directory counts (mountinfo:
 * its mount point, type fuse.statefs). */
static int refuse_live_mountpoint(const char *mp)
{
	char *real = realpath(mp, NULL), *line = NULL, *f[5], *save, *sep;
	size_t cap = 0;
	int found = 0;
	FILE *mi;

	if (!real)
		return 0; /* libfuse says what is wrong with it */
	mi = fopen("/proc/self/mountinfo", "re");
	while (mi && !found && getline(&line, &cap, mi) > 0) {
		/* id parent major:minor root mountpoint options... - type */
		int n = 0;

		sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "fuse.statefs ", 13) != 0)
			continue;
		for (char *w = strtok_r(line, " ", &save); w && n < 5;
		     w = n < 5 ? strtok_r(NULL, " ", &save) : NULL)
			f[n++] = w;
		if (n < 5)
			continue;
		unescape(f[4]);
		found = strcmp(f[4], real) == 0;
	}
	if (mi)
		fclose(mi);
	free(line);
	if (found)
		mountd_log(LOG_ERR, "%s is already the mount point of a running"
		           " statefs: unmount it first (fusermount3 -u %s), or"
		           " give another directory", mp, mp);
	free(real);
	return found ? -1 : 0;
}

/* A mount point that holds files: the mount hides them until it ends
 * (Linux allows it, as mount(8) does; libfuse 2 refused without -o
 * nonempty), so it is said, once, with how many. */
static void say_nonempty(const char *mp)
{
	DIR *d = opendir(mp);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	if (n)
		mountd_log(LOG_NOTICE, "%s is not empty: its %zu entr%s hidden"
		           " under the store while it is mounted", mp, n,
		           n == 1 ? "y is" : "ies are");
}

/* Two daemons started at once on one mount point (a unit and a login
 * script, two runs of scripts/setup) both found it free and both mounted,
 * one over the other. The checks and the mount are one step under an
 * exclusive flock of the mount point's directory, held until the mount is
 * there: the second looks once the first has mounted, and is refused.
 * Returns the descriptor to close then, or -1 when there is nothing to
 * lock (a path libfuse will refuse, a dead mount point). A lock already
 * held (another start, or any process's flock of the directory) is said
 * before the wait, which has no end of its own: a start that seemed to
 * hang said nothing. */
static int lock_mountpoint(const char *mp)
{
	int fd = open(mp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno == EWOULDBLOCK)
		mountd_log(LOG_NOTICE, "%s is locked by another process (another"
		           " statefs starting there, or a flock of the"
		           " directory): waiting for it to let go", mp);
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* The loop's result as an exit status: a stop by signal is a clean end. */
static int loop_status(int rc)
{
	if (rc == 0 || rc == SIGINT || rc == SIGTERM || rc == SIGHUP)
		return 0;
	mountd_log(LOG_ERR, "the session ended with an error: %s",
	           rc < 0 ? strerror(-rc) : "unknown");
	return 1;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_loop_config *loop = NULL;
	struct fuse_session *se = NULL;
	sfs_store *store = NULL;
	mountd_gc *gc = NULL;
	mountd_opts o;
	fs_config fcfg;
	fs *f = NULL;
	int ret = 1, detaching = 0, mp_lock = -1, concurrent, rc;
	unsigned threads;

	harden();
	raise_nofile();
	tune_malloc();
	load_unwinder();
	mountd_wipe_argv_keys(argc, argv);
	if (mountd_opts_parse(&args, &o) != 0)
		goto out_args;
	if (o.show_help) {
		mountd_usage(argv[0]);
		ret = 0;
		goto out_args;
	}
	if (o.show_version) {
		printf("statefs %s\nlibfuse %s\n", SFS_VERSION_STRING,
		       fuse_pkgversion());
		ret = 0;
		goto out_args;
	}

	mountd_log_open(o.debug);
	if (!o.foreground) {
		if (mountd_detach_begin() != 0)
			goto out_log;
		detaching = 1;
	}
	memset(&fcfg, 0, sizeof(fcfg));
	fcfg.readonly = o.ro;
	fcfg.max_value = o.max_value;
	fcfg.lease_ms = o.lease_ms;
	fcfg.max_buffered = o.max_buffered;
	fcfg.umask = o.umask;
	fcfg.async_close = o.async_close;
	fcfg.log = mountd_log_sink;
	if ((rc = fs_create(&fcfg, &f)) != 0) {
		mountd_log(LOG_ERR, "cannot start: %s", strerror(rc));
		goto out_detach;
	}
	/* The session checks the FUSE options: a typo must not create a
	 * store and a key file first. */
	se = fuse_session_new(&args, fs_lowlevel_ops(),
	                      sizeof(*fs_lowlevel_ops()), f);
	if (!se)
		goto out_fs; /* libfuse said why */
	mp_lock = lock_mountpoint(o.mountpoint);
	if (refuse_dead_mountpoint(o.mountpoint) != 0 ||
	    refuse_live_mountpoint(o.mountpoint) != 0 ||
	    refuse_store_under_mountpoint(&o) != 0)
		goto out_session;
	say_nonempty(o.mountpoint);
	if (open_store(&o, &store) != 0)
		goto out_session;
	fs_set_store(f, store);
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, o.mountpoint) != 0)
		goto out_signals;
	if (mp_lock >= 0)
		close(mp_lock);
	mp_lock = -1;
	if (!o.ro && mountd_gc_start(store, f, o.lease_ms, &gc) != 0)
		mountd_log(LOG_ERR, "cannot start the claim recovery thread: "
		                    "expired claims return at the next claim");
	if (detaching) {
		mountd_detach_end(0);
		detaching = 0;
	}

	/* A SQLite store runs one call at a time: fs_loop's pool, where one
	 * thread reads the device and answers in turn (libfuse's pool, where
	 * every idle thread reads, hands each request from thread to thread:
	 * docs/performance-rounds.md, "How many threads" and "One reader at a
	 * time"), with spare threads that read only while a .pop, .claim or
	 * .drain reader must be heard if interrupted (fs/loop.c). PostgreSQL
	 * gives each call a connection of its own, and threads overlap its
	 * round trips: libfuse's pool of ten. */
	concurrent = sfs_store_concurrent(store);
	threads = o.threads ? o.threads : concurrent ? 10 : 4;
	if (o.async_close && (concurrent || o.singlethread || threads == 1))
		mountd_log(LOG_WARNING, "-o async_close changes nothing here: %s",
		           concurrent ? "on PostgreSQL every change commits by "
		                        "itself"
		                      : "one thread answers only after the commit");
	if (o.singlethread || threads == 1) {
		rc = fuse_session_loop(se);
	} else if (!concurrent) {
		rc = fs_loop(f, se, threads);
	} else {
		loop = fuse_loop_cfg_create();
		if (!loop) {
			mountd_log(LOG_ERR, "out of memory");
			goto out_unmount;
		}
		fuse_loop_cfg_set_max_threads(loop, threads);
		fuse_loop_cfg_set_idle_threads(loop, threads);
		rc = fuse_session_loop_mt(se, loop);
		fuse_loop_cfg_destroy(loop);
	}
	ret = loop_status(rc);
	fs_stop(f); /* answer kept .wait reads while the device is open */

out_unmount:
	mountd_gc_stop(gc);
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	if (mp_lock >= 0)
		close(mp_lock);
	/* Before the store closes, though it opened after the session: the
	 * session's destroy stops the .wait thread, which uses the store. */
	fuse_session_destroy(se);
	sfs_store_close(store);
out_fs:
	fs_destroy(f);
out_detach:
	if (detaching)
		mountd_detach_end(1);
out_log:
	mountd_log_close();
out_args:
	mountd_opts_free(&o);
	fuse_opt_free_args(&args);
	return ret;
}
