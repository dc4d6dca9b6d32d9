/*
 * crypt_pending.c - TEMPORARY: lets the engine link while the encryption
 * layer (issue 3) is written. Every function fails with SFS_INTERNAL. The
 * encryption work deletes this file function by function as the real
 * implementations land in key.c, config.c, crypt_vfs.c and rekey.c; it must
 * be gone before issue 3 is resolved.
 */
#include "crypt_i.h"
#include "err_i.h"

#define PENDING(name) sfs_err(SFS_INTERNAL, "%s is not built yet", name)

int sfs_rekey(const char *p, const sfs_key *a, const sfs_key *b, sfs_progress_fn f, void *c) { (void)p; (void)a; (void)b; (void)f; (void)c; return PENDING("sfs_rekey"); }

int crypt_preflight(const char *p, const sfs_key *k, crypt_kind *kind) { (void)p; (void)k; (void)kind; return PENDING("crypt_preflight"); }
int crypt_vfs_open(const sfs_key *k, crypt_vfs **out) { (void)k; (void)out; return PENDING("crypt_vfs_open"); }
const char *crypt_vfs_name(const crypt_vfs *v) { (void)v; return NULL; }
void crypt_vfs_close(crypt_vfs *v) { (void)v; }
int crypt_db_setup(sqlite3 *db) { (void)db; return PENDING("crypt_db_setup"); }
void crypt_vfs_describe(const crypt_vfs *v, const char **c, int *f, const char **k) { (void)v; *c = "none"; *f = 0; *k = "none"; }
const char *crypt_last_error(void) { return NULL; }
int crypt_verify_file(const char *p, const crypt_vfs *v, sfs_progress_fn f, void *c) { (void)p; (void)v; (void)f; (void)c; return PENDING("crypt_verify_file"); }
/* Real ones are in config.c, which joins the build once sfs_store_open exists. */
int sfs_default_keyfile(char **out) { (void)out; return PENDING("sfs_default_keyfile"); }
int sfs_store_open_config(const sfs_config *c, sfs_store **o, char **n) { (void)c; (void)o; (void)n; return PENDING("sfs_store_open_config"); }
