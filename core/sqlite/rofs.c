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
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

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
