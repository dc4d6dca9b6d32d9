/*
 * mountd_i.h - the statefs daemon's parts (mountd/ only): options, logging,
 * detaching and the claim recovery thread. The daemon wires the store, the
 * filesystem (fs/) and the libfuse session together and holds no
 * filesystem logic.
 */
#ifndef STATEFS_MOUNTD_I_H
#define STATEFS_MOUNTD_I_H

#include <stdint.h>
#include <syslog.h>

#include "fs.h"
#include "text.h"

typedef struct mountd_opts {
	/* statefs options (-o name=value) */
	char *db;
	char *keyfile;
	int plaintext;
	int ro;
	char *max_value_text;
	uint64_t max_value;       /* parsed from max_value_text; 0: default */
	char *lease_text;
	int64_t lease_ms;         /* parsed from lease_text; 0: ten minutes */
	char *max_buffered_text;
	uint64_t max_buffered;    /* parsed; 0: fs_default_max_buffered */
	char *umask_text;
	unsigned umask;           /* parsed from umask_text; default 077 */
	char *threads_text;
	unsigned threads;         /* parsed from threads_text; 0: by the
	                             store's backend (main.c) */
	int async_close;          /* -o async_close */
	int allow_other;          /* -o allow_other (kept for libfuse) */
	int default_permissions;  /* given, or added with allow_other */
	/* general options */
	int show_help;
	int show_version;
	int foreground;           /* -f, also implied by -d */
	int debug;                /* -d, -o debug */
	int singlethread;         /* -s */
	/* positional arguments: [STORE] MOUNTPOINT, as mount(8) passes them */
	char *args[3];
	int nargs;
	char *mountpoint;         /* borrowed from args */
	int key_on_command_line;  /* -o key=... was given: refused */
} mountd_opts;

/* Parses argv into *o and leaves in *args what libfuse should see (-o
 * options it knows, plus fsname and subtype). Prints a sentence ending in
 * "see -h" and returns -1 on a bad command line; 0 otherwise (also for -h
 * and -V, which the caller answers). */
int mountd_opts_parse(struct fuse_args *args, mountd_opts *o);
void mountd_opts_free(mountd_opts *o);
void mountd_usage(const char *prog);
/* Overwrites the value of any key=... option in argv (what ps shows). */
void mountd_wipe_argv_keys(int argc, char **argv);

/* Logging: to stderr until the daemon detaches (and always with -f), to
 * syslog after. Installed as the engine's logger too. */
void mountd_log_open(int debug);
void mountd_log_detached(void);
void mountd_log_close(void);
void mountd_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* An sfs_log_fn for sfs_set_logger and fs_config. */
void mountd_log_sink(int level, const char *msg, void *ctx);

/* Detaching: mountd_detach_begin forks; the parent waits for the child to
 * say whether the mount is up and exits with that status (so `statefs`
 * returns only once the mount works, or fails with the child's sentence
 * printed). The child calls mountd_detach_end(0) once mounted (it then
 * loses its terminal), or mountd_detach_end(1) on failure. */
int mountd_detach_begin(void);
void mountd_detach_end(int status);

/* Claim recovery (gc.c): a thread that runs sfs_queue_gc over every queue
 * every tenth of lease_ms (0: the store's ten minutes), 1 s to 1 min
 * apart, and f's timer (fs_tick) every second and once more when it
 * stops. The store must outlive it: stop it before closing the store.
 * Returns 0 or an errno. mountd_gc_stop joins the thread; NULL is fine. */
typedef struct mountd_gc mountd_gc;
int mountd_gc_start(sfs_store *store, fs *f, int64_t lease_ms,
                    mountd_gc **out);
void mountd_gc_stop(mountd_gc *g);

#endif /* STATEFS_MOUNTD_I_H */
