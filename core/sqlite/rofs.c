/*
 * rofs.c - stores on read-only media: a snapshot, a backup disk mounted
 * read-only, a squashfs or ISO image.
 *
 * Every process that opens a store in WAL mode opens its -wal and -shm,
 * and the first one makes them, so a store on such a medium could not be
 * read at all ("cannot create PATH-wal: Read-only file system"). Nothing
 * can write a file system whose superblock is read-only, through any of
 * its mounts, so a read-only open of a store there that has nothing in
 * its log to replay may open it immutable (SQLite's immutable=1: no
 * locks, no -wal, no -shm, pages cached for as long as it is open).
 *
 * The superblock, not the mount: a read-only bind mount (mount --bind -o
 * ro) of a file system that is read-write elsewhere shows ST_RDONLY in
 * statvfs(2) too, and a store there may be written through the other
 * mount meanwhile, which an immutable connection never notices: it read
 * stale pages, missed new keys and then failed "database disk image is
 * malformed" (8d8bc1b, reverted). /proc/self/mountinfo's last field is
 * the superblock's options, the same for every mount of it. And only a
 * local file system's (local_types): an overlay mounted read-only, or a
 * read-only NFS, CIFS or FUSE mount, has a read-only superblock while
 * its files change underneath, written through the lower directory's
 * own mount or by the server (an overlay's immutable reader missed every
 * key written to its lower store).
 *
 * Left out: a file system remounted read-write while such a store is
 * open (an immutable connection does not notice it either), and a store
 * whose -wal holds frames, or with a rollback journal: those are opened
 * as any store. A log needs its -shm to be read there (SQLite then reads
 * the read-only -shm and the log into memory, as for any reader that may
 * not write them); a log with no -shm is refused with a sentence.
 *
 * Also here, at the end: why an open failed when its -wal or -shm is the
 * cause (sqlb_explain_open), on such a medium and elsewhere.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sqlite_i.h"

/* The size of a WAL's header: a log no longer than this holds no frame */
#define WAL_HEADER 32

/* A mountinfo path with its octal escapes (\040 for a space, \011, \012,
 * \134) undone, in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			              (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* The length of mount point mp when it holds path (a real path), else -1 */
static long mount_prefix(const char *mp, const char *path)
{
	size_t n = strlen(mp);

	if (strcmp(mp, "/") == 0)
		return 1;
	if (strncmp(mp, path, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return -1;
	return (long)n;
}

/* File systems whose files only their own superblock changes: read-only,
 * nothing writes them. Not an overlay (its lower directories belong to
 * other mounts, which may write them), NFS, CIFS, virtiofs, 9p or a FUSE
 * file system (a server or another host writes behind a read-only
 * mount), nor a cluster file system on a shared disk (gfs2, ocfs2). */
static const char *const local_types[] = {
	"bcachefs", "btrfs", "cramfs", "erofs", "exfat", "ext2", "ext3",
	"ext4", "f2fs", "hfsplus", "iso9660", "jfs", "msdos", "nilfs2",
	"ntfs", "ntfs3", "ramfs", "romfs", "squashfs", "tmpfs", "udf", "vfat",
	"xfs", "zfs",
};

/* 1 when type (n bytes) is one of local_types */
static int local_type(const char *type, size_t n)
{
	for (size_t i = 0; i < sizeof(local_types) / sizeof(*local_types); i++)
		if (strlen(local_types[i]) == n &&
		    strncmp(local_types[i], type, n) == 0)
			return 1;
	return 0;
}

/* 1 when opts (comma-separated) holds the option "ro" */
static int has_ro(const char *opts)
{
	size_t n;

	for (const char *o = opts; *o; o += n + (o[n] == ',')) {
		n = strcspn(o, ",");
		if (n == 2 && strncmp(o, "ro", 2) == 0)
			return 1;
	}
	return 0;
}

int sqlb_rofs_super(const char *path)
{
	char real[PATH_MAX], *line = NULL;
	size_t cap = 0;
	long best = -1;
	int best_dev = 0, ro = 0;
	struct statvfs vs;
	struct stat st;
	FILE *f;

	/* ST_RDONLY: the mount's flag or the superblock's; without it the
	 * superblock is writable, and mountinfo is not read at all (a
	 * container host can have thousands of mounts) */
	if (!realpath(path, real) || stat(real, &st) != 0 ||
	    statvfs(real, &vs) != 0 || !(vs.f_flag & ST_RDONLY))
		return 0;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - TYPE SOURCE
	 * SUPEROPTS. The file's mount is the one with its device (btrfs
	 * gives a subvolume's files a device of their own, which no line
	 * names: the longest mount point then), of those the one with the
	 * longest mount point holding the path, and of mounts stacked on one
	 * point the last, which hides the others. */
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		char mp[PATH_MAX], *sep, *super;
		long n;
		int dev;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%*s %*s %u:%u %*s %4095s", &maj, &min, mp) != 3)
			continue;
		sep = strstr(line, " - ");
		super = strrchr(line, ' ');
		if (!sep || !super || super < sep + 2)
			continue;
		unescape(mp);
		n = mount_prefix(mp, real);
		dev = makedev(maj, min) == st.st_dev;
		if (n < 0 || (best_dev && !dev))
			continue;
		if (dev == best_dev && n < best)
			continue;
		best = n;
		best_dev = dev;
		ro = local_type(sep + 3, strcspn(sep + 3, " ")) &&
		     has_ro(super + 1);
	}
	free(line);
	fclose(f);
	return ro;
}

int sqlb_rofs_unclean(const char *db)
{
	static const struct {
		const char *sfx;
		off_t empty; /* the most such a file holds with nothing in it */
	} aux[] = { { "-wal", WAL_HEADER }, { "-journal", 0 } };
	char real[PATH_MAX], name[PATH_MAX + 16];
	struct stat st;

	/* beside the file SQLite opens, which is the link's target */
	if (!realpath(db, real))
		return 1;
	for (size_t i = 0; i < sizeof(aux) / sizeof(aux[0]); i++) {
		snprintf(name, sizeof(name), "%s%s", real, aux[i].sfx);
		if (stat(name, &st) != 0 ? errno != ENOENT
		                         : st.st_size > aux[i].empty)
			return 1;
	}
	return 0;
}

char *sqlb_rofs_uri(const char *db)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(db);
	char *uri, *o;

	uri = malloc(sizeof("file:") + 3 * n + sizeof("?immutable=1"));
	if (!uri)
		return NULL;
	o = uri + sprintf(uri, "file:");
	for (const unsigned char *c = (const unsigned char *)db; *c; c++) {
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("/-._~", *c)) {
			*o++ = (char)*c;
		} else {
			*o++ = '%';
			*o++ = hex[*c >> 4];
			*o++ = hex[*c & 15];
		}
	}
	strcpy(o, "?immutable=1");
	return uri;
}

/* ---- why an open failed ------------------------------------------------ */

/* The store's file as the -wal and -shm are named by: given, or its
 * target when given is a symbolic link (SQLite opens the target and
 * makes them beside it). In real (PATH_MAX) then. */
static const char *aux_beside(const char *given, char *real)
{
	struct stat st;

	if (lstat(given, &st) == 0 && S_ISLNK(st.st_mode) &&
	    realpath(given, real))
		return real;
	return given;
}

/* Why an open failed, when the cause is the store's -wal or -shm file:
 * every process that reads a store in WAL mode opens both, and creates
 * them in the store's directory when they are not there (no process has
 * the store open). Another user who may read the store but not its -shm
 * (SQLite makes it with the store's mode, whoever opened it), or not
 * write its directory, was told "I/O error (setting connection pragmas:
 * unable to open database file (sqlite 14))" or "store is read-only
 * (setting connection pragmas: attempt to write a readonly database
 * (sqlite 1544))", for a command that only reads. Returns status as it is
 * when these files are not the cause. The files are the ones beside the
 * file SQLite opened, the target of a store named by a symbolic link. */
static int explain_aux(const char *given, int status)
{
	static const char *const sfx[] = { "-wal", "-shm" };
	char real[PATH_MAX], aux[4096], dir[4096];
	const char *db = aux_beside(given, real);
	const char *slash = strrchr(db, '/');

	if ((status != SFS_IO && status != SFS_READONLY) || !slash)
		return status;
	snprintf(dir, sizeof(dir), "%.*s", slash == db ? 1 : (int)(slash - db),
	         db);
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if ((size_t)snprintf(aux, sizeof(aux), "%s%s", db, sfx[i]) >=
		    sizeof(aux))
			return status;
		/* access(2), not open(2): closing a descriptor of the -shm
		 * would drop the fcntl locks another handle of this process
		 * holds on it */
		if (access(aux, R_OK) == 0)
			continue;
		if (errno != ENOENT)
			return sfs_err(SFS_IO, "cannot open %s: %s: a process "
			               "that opens the store, even to read it, "
			               "opens its -wal and -shm files too", aux,
			               strerror(errno));
		if (access(dir, W_OK | X_OK) != 0)
			return sfs_err(SFS_IO, "cannot create %s: %s: the first "
			               "process to open the store, even to read "
			               "it, makes its -wal and -shm files in %s",
			               aux, strerror(errno), dir);
	}
	return status;
}

/* Why a store on a read-only medium whose -wal holds frames could not be
 * opened: without its -shm nothing can read the log there (SQLite said
 * "cannot create PATH-shm: Read-only file system", as if making it were
 * the way out). explain_aux's answer when the -shm is there. */
static int explain_rofs_wal(const char *given, int status)
{
	char real[PATH_MAX], wal[4096], shm[4096];
	const char *db = aux_beside(given, real);
	struct stat st;

	if ((status != SFS_IO && status != SFS_READONLY) ||
	    (size_t)snprintf(wal, sizeof(wal), "%s-wal", db) >= sizeof(wal) ||
	    (size_t)snprintf(shm, sizeof(shm), "%s-shm", db) >= sizeof(shm) ||
	    stat(wal, &st) != 0 || st.st_size <= 32 ||
	    access(shm, F_OK) == 0 || errno != ENOENT)
		return explain_aux(given, status);
	return sfs_err(SFS_IO, "%s-wal holds commits that are not in the "
	               "store's file (it was open, or not closed cleanly, "
	               "when this copy was made), and they cannot be read on "
	               "a read-only file system without its -shm: copy the "
	               "store with its -wal to a writable place to read it",
	               db);
}

/* Why a read-write open of a store on a read-only medium failed: it said
 * "cannot create PATH-wal: Read-only file system: the first process to
 * open the store, even to read it, makes its -wal and -shm files", but a
 * read-only open reads such a store (rofs.c). explain_aux's answer
 * elsewhere. */
static int explain_rofs_write(const char *db, int status)
{
	if ((status != SFS_IO && status != SFS_READONLY) ||
	    !sqlb_rofs_super(db))
		return explain_aux(db, status);
	return sfs_err(SFS_READONLY, "%s is on a read-only file system: only "
	               "a read-only open can use it", db);
}

int sqlb_explain_open(const char *db, int status, int unclean_rofs,
                      int readonly)
{
	if (unclean_rofs)
		return explain_rofs_wal(db, status);
	return readonly ? explain_aux(db, status)
	                : explain_rofs_write(db, status);
}
