/*
 * ext.c - the encryption layer as a SQLite loadable extension,
 * libstatefs_sqlite.so, for processes that do not link statefs: the sqlite3
 * shell, Python's sqlite3 module, an SDK worker's own SQLite code.
 *
 * Loading it once registers the page-encrypting VFS (vfs.c) under the
 * name "statefs", holding the key found by the same rules as statefs
 * (STATEFS_KEY, STATEFS_KEY_FILE, the default key file; cfg_env_key in
 * core/config.c), and keeps it loaded for the life of the process
 * (SQLITE_OK_LOAD_PERMANENTLY, and -z nodelete so a failed load cannot
 * unmap a registered VFS). The key is never taken from SQL text or a URI.
 *
 *   sqlite3_statefssqlite_init  (the default entry, from the file name)
 *       makes "statefs" the process's default VFS: every database opened
 *       afterwards, with a plain path, is encrypted. Other databases of the
 *       process open with ?vfs=unix.
 *   sqlite3_statefs_uri_init
 *       registers "statefs" without making it the default: only URIs with
 *       ?vfs=statefs use it.
 *
 * An automatic extension then runs on every connection the process opens
 * (before its first statement) and makes the connection what the engine
 * would make it, or refuses it with the engine's sentence:
 *  - a connection through "statefs": the preflight (check.c) says
 *    "wrong key", "not encrypted" and the rest before SQLite can say "file
 *    is not a database", then crypt_db_setup sets the per-page reserve
 *    and temp_store=MEMORY. Whatever the connection does later, the VFS
 *    refuses temporary files and pages without the reserve, so a setting
 *    changed afterwards fails closed instead of writing plaintext.
 *  - a connection through another VFS to an encrypted store would read
 *    ciphertext: refused with a sentence naming the VFS to use.
 * The sentence reaches the caller as SQLite's error text ("automatic
 * extension loading failed: wrong key: ...").
 *
 * The connection the extension is loaded into was opened before the VFS
 * existed (the sqlite3 shell opens the file named on its command line
 * before it runs -cmd), and SQLite cannot move an open connection to
 * another VFS. When that connection is an encrypted store, or a new file
 * that would be written in plaintext, the load says so and how to open it
 * again; the VFS stays registered, so the next open works.
 *
 * Everything here and in the core objects linked in calls the libsqlite3
 * the module was linked against; the host calls its own. They must be the
 * same library, or the process would have two sets of file locks on one
 * store: the load checks that the host finds the VFS just registered.
 *
 * What it leaves out: per-connection keys (one key per process, as one
 * daemon has one), passphrases (no prompt in a library), and attached
 * databases' settings (ATTACH of an existing store works; a new file made
 * by ATTACH has no reserve, so its first write is refused).
 */
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#include "err_i.h"
#include "store_i.h"
#include "vfs_i.h"

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#define EXT_VFS "statefs"

static pthread_mutex_t ext_mu = PTHREAD_MUTEX_INITIALIZER;
/* Set once under ext_mu, never freed: the module is never unloaded. */
static crypt_vfs *ext_vfs;

/* The SQLite result code that says what an engine status says. */
static int ext_code(int status)
{
	switch (status) {
	case SFS_WRONGKEY:
	case SFS_NOKEY:
	case SFS_KEYPERM:
	case SFS_BADKEY:
		return SQLITE_AUTH;
	case SFS_NOTENCRYPTED:
	case SFS_FORMAT:
		return SQLITE_NOTADB;
	case SFS_CORRUPT:
		return SQLITE_CORRUPT;
	case SFS_NOMEM:
		return SQLITE_NOMEM;
	case SFS_IO:
		return SQLITE_IOERR;
	case SFS_NOTFOUND:
		return SQLITE_CANTOPEN;
	default:
		return SQLITE_ERROR;
	}
}

/* Hands SQLite a sentence (it frees it with sqlite3_free) and returns
 * code. */
SFS_PRINTF(3, 4)
static int ext_fail(char **err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		*err = sqlite3_vmprintf(fmt, ap);
		va_end(ap);
	}
	return code;
}

/* The main database of db: its path ("" for memory and temporary
 * databases) and the VFS it was opened through. */
static const char *main_file(sqlite3 *db, sqlite3_vfs **vfs)
{
	const char *path = sqlite3_db_filename(db, "main");

	*vfs = NULL;
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, vfs) !=
	    SQLITE_OK)
		*vfs = NULL;
	return path ? path : "";
}

/* A connection through another VFS: fine unless the file is an encrypted
 * store (it would read ciphertext), or, for the connection the extension
 * is loaded into (loading), a new file (it would be written in
 * plaintext). */
static int check_foreign(const char *path, const sqlite3_vfs *vfs,
                         int loading, char **err)
{
	crypt_kind kind;
	int st = crypt_preflight(path, NULL, &kind);

	sfs_err_clear();
	if (st == SFS_NOKEY && loading)
		return ext_fail(err, SQLITE_ERROR, "%s was opened before the "
		                "statefs extension was loaded, through the VFS "
		                "'%s', which reads an encrypted store as "
		                "ciphertext: open it again now that the "
		                "extension is loaded (in the sqlite3 shell: "
		                ".open %s)", path, vfs->zName, path);
	if (st == SFS_NOKEY)
		return ext_fail(err, SQLITE_NOTADB, "%s is an encrypted statefs "
		                "store, and this connection opened it through "
		                "the VFS '%s', which reads it as ciphertext: open "
		                "it through '" EXT_VFS "' (the default VFS once "
		                "the extension is loaded, or file:%s?vfs="
		                EXT_VFS ")", path, vfs->zName, path);
	if (st == SFS_OK && kind == CRYPT_KIND_NEW && loading)
		return ext_fail(err, SQLITE_ERROR, "%s was opened before the "
		                "statefs extension was loaded, through the VFS "
		                "'%s', so what this connection writes would not "
		                "be encrypted: open it again now that the "
		                "extension is loaded (in the sqlite3 shell: "
		                ".open %s)", path, vfs->zName, path);
	return SQLITE_OK;
}

/* The automatic extension: every connection the process opens. */
static int ext_connection(sqlite3 *db, char **err,
                          const sqlite3_api_routines *api)
{
	sqlite3_vfs *vfs;
	const char *path;
	crypt_kind kind;
	int st;

	(void)api; /* sqlite3_api was set when the extension was loaded */
	path = main_file(db, &vfs);
	if (!*path || !vfs)
		return SQLITE_OK;
	if (!crypt_vfs_is(vfs))
		return check_foreign(path, vfs, 0, err);
	/* The engine's own connections (a process that links statefs and
	 * loads the extension) have a VFS of their own, with their key. */
	if (strcmp(vfs->zName, crypt_vfs_name(ext_vfs)) != 0)
		return SQLITE_OK;
	st = crypt_preflight(path, crypt_vfs_key(ext_vfs), &kind);
	if (st == SFS_OK)
		st = crypt_db_setup(db);
	if (st != SFS_OK)
		return ext_fail(err, ext_code(st), "%s", sfs_errdetail());
	return SQLITE_OK;
}

/* Registers the VFS with the key by the rules, and the automatic
 * extension. Under ext_mu, once. */
static int ext_setup(int make_default, char **err)
{
	crypt_vfs *v = NULL;
	sqlite3_vfs *found;
	sfs_key *key = NULL;
	int st;

	st = cfg_env_key(&key);
	if (st == SFS_OK)
		st = crypt_vfs_register(key, EXT_VFS, make_default, &v);
	sfs_key_destroy(key);
	if (st != SFS_OK)
		return ext_fail(err, ext_code(st), "statefs: %s",
		                sfs_errdetail());
	found = sqlite3_vfs_find(EXT_VFS);
	if (!found || !crypt_vfs_is(found)) {
		crypt_vfs_close(v);
		return ext_fail(err, SQLITE_ERROR, "statefs: this process's "
		                "SQLite is not the system libsqlite3 the "
		                "extension is linked with, and two copies of "
		                "SQLite in one process do not share their file "
		                "locks");
	}
	st = sqlite3_auto_extension((void (*)(void))ext_connection);
	if (st != SQLITE_OK) {
		crypt_vfs_close(v);
		return ext_fail(err, st, "statefs: cannot register the "
		                "connection check");
	}
	ext_vfs = v;
	return SQLITE_OK;
}

static int ext_init(sqlite3 *db, char **err, const sqlite3_api_routines *api,
                    int make_default)
{
	sqlite3_vfs *vfs;
	const char *path;
	int rc = SQLITE_OK;

	SQLITE_EXTENSION_INIT2(api);
	pthread_mutex_lock(&ext_mu);
	if (!ext_vfs)
		rc = ext_setup(make_default, err);
	else if (make_default)
		rc = sqlite3_vfs_register(sqlite3_vfs_find(EXT_VFS), 1);
	pthread_mutex_unlock(&ext_mu);
	if (rc != SQLITE_OK)
		return rc;
	path = main_file(db, &vfs);
	if (*path && vfs && !crypt_vfs_is(vfs) &&
	    (rc = check_foreign(path, vfs, 1, err)) != SQLITE_OK)
		return rc;
	return SQLITE_OK_LOAD_PERMANENTLY;
}

/* Entry points; the only symbols the module exports (ext.map).
 * Prototypes here because no header declares them to SQLite. */
int sqlite3_statefssqlite_init(sqlite3 *db, char **err,
                               const sqlite3_api_routines *api);
int sqlite3_statefs_uri_init(sqlite3 *db, char **err,
                             const sqlite3_api_routines *api);

int sqlite3_statefssqlite_init(sqlite3 *db, char **err,
                               const sqlite3_api_routines *api)
{
	return ext_init(db, err, api, 1);
}

int sqlite3_statefs_uri_init(sqlite3 *db, char **err,
                             const sqlite3_api_routines *api)
{
	return ext_init(db, err, api, 0);
}
