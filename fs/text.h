/*
 * text.h - how statefs writes its things for people, shared by the mount
 * and statectl: the names the mount reserves, the name codec that turns
 * byte strings into file names and back, and durations as people write
 * them. It lives in fs/ because the mount owns these names; statectl shows
 * the same names so that a path seen under the mount can be pasted into a
 * command, and links this small library (libstatefs_text) without the
 * FUSE layer. The engine knows none of it: it stores bytes.
 *
 * Thread-safe; no store needed. Functions return an sfs_status and set no
 * engine detail: a name that is not a name is simply SFS_INVALID.
 */
#ifndef STATEFS_FS_TEXT_H
#define STATEFS_FS_TEXT_H

#include "statefs.h"

/* ------------------------------------------------------------------------
 * The mount's reserved names, written once. A new special file is a name
 * here, in FS_NAMES_SPECIAL when it sits where keys or scopes are listed,
 * and a row of the class table (kind.c).
 */
#define FS_NAME_DRAIN ".drain"   /* a namespace's or a queue's drain */
#define FS_NAME_POP ".pop"       /* a queue's head, taken */
#define FS_NAME_WAIT ".wait"     /* a queue's head, waited for */
#define FS_NAME_CLAIM ".claim"   /* a queue's head, claimed */
#define FS_NAME_FOLLOW ".follow" /* a log key's or a queue's live stream;
                                    only among ids, so never escaped */
#define FS_NAME_EXEC "exec"      /* the root's directories */
#define FS_NAME_QUEUE "queue"
#define FS_NAME_COUNTER "counter"
#define FS_NAME_INFLIGHT "inflight" /* a queue's fixed directories; item */
#define FS_NAME_DEAD "dead"         /* names are digits: never reserved */

/* The codec escapes the first byte of a byte string spelled like one of
 * these: the special files in every directory, the root's directories
 * among scopes (FS_NAME_SCOPE). */
#define FS_NAMES_SPECIAL FS_NAME_DRAIN, FS_NAME_POP, FS_NAME_WAIT, FS_NAME_CLAIM
#define FS_NAMES_ROOT FS_NAME_EXEC, FS_NAME_QUEUE, FS_NAME_COUNTER

/* ------------------------------------------------------------------------
 * Names: byte strings as file names.
 *
 * Scopes, namespaces and keys are byte strings; file names are not. One
 * codec turns each into a name and back. Per kind it is a bijection: every
 * byte string has exactly one name, and a name decodes to at most one byte
 * string (any other spelling is SFS_INVALID, never an alias).
 *
 *   text      printable UTF-8 stays as it is ("user 42", "café"); other
 *             bytes (C0/C1 controls, DEL, invalid UTF-8) and '/' '%' become
 *             %XX with upper-case hex: "a/b" -> "a%2Fb", "x\n" -> "x%0A".
 *   hex       when that would be longer than hex, "%x" and lower-case hex:
 *             16 random bytes -> "%x9f03..."; the empty string is "%x".
 *   reserved  ".", "..", the special files and, for FS_NAME_SCOPE, the
 *             root's directories get their first byte escaped: ".pop" ->
 *             "%2Epop", scope "exec" -> "%65xec".
 *   id        FS_NAME_ID (keys of the Go SDK's typed namespaces worker,
 *             agg, win) and FS_NAME_ID_LE (the Python SDK's namespaces of
 *             packed ids: _vgi/aggregate_state, _vgi/aggregate_window_
 *             partition, _vgi/buffering_init, _vgi/streaming_session,
 *             _vgi/tio_state): an 8-byte key is the decimal int64 it
 *             encodes, big- or little-endian ("42", "-1"); another key
 *             whose text looks like a decimal number gets its first byte
 *             escaped ("123" as 3 bytes -> "%3123"). Listings stay in key
 *             (byte) order, which is numeric order for big-endian ids >= 0
 *             but not for little-endian ones.
 *   long      an encoding over FS_NAME_MAX bytes is cut (never inside an
 *             escape or a character) and ends in "%~" plus 32 hex digits of
 *             a BLAKE2b-128 hash of the whole string. Such a name is found,
 *             not decoded: fs_name_decode gives the byte prefix and sets
 *             *hashed; the string it names is the one starting with that
 *             prefix whose fs_name_encode is the name.
 */
#define FS_NAME_MAX 255 /* longest name the codec produces (NAME_MAX) */

typedef enum fs_name_kind {
	FS_NAME_KEY = 0, /* a key or a namespace */
	FS_NAME_SCOPE,   /* a scope or a queue id (also escapes the root's
	                    directories) */
	FS_NAME_ID,      /* a key of a typed namespace: 8-byte ids in decimal */
	FS_NAME_ID_LE,   /* the same for 8-byte little-endian ids */
} fs_name_kind;

/* FS_NAME_ID for the keys of ns "worker", "agg" and "win", FS_NAME_ID_LE
 * for those of the Python SDK's id namespaces (above), else
 * FS_NAME_KEY. */
fs_name_kind fs_name_key_kind(sfs_slice ns);

/* Writes the name of bytes into out, NUL-terminated; *len (may be NULL)
 * gets its length (1..FS_NAME_MAX). Errors: SFS_INVALID for a NULL slice or
 * an unknown kind, SFS_NOMEM. */
int fs_name_encode(sfs_slice bytes, fs_name_kind kind,
                   char out[FS_NAME_MAX + 1], size_t *len);

/* Decodes the name (len bytes, no NUL needed) into *out, a buffer the
 * caller frees with sfs_buf_free. *hashed (may be NULL) is set to 1 for a
 * long name, whose *out is only the byte prefix (see above), else 0.
 * Errors: SFS_INVALID when the name is not the codec's name of any byte
 * string (wrong escapes, lower-case %xx, a non-canonical spelling, '/',
 * empty), SFS_NOMEM. */
int fs_name_decode(const char *name, size_t len, fs_name_kind kind,
                   sfs_buf *out, int *hashed);

/* ------------------------------------------------------------------------
 * Durations (leases, times-to-live) as a person writes them (statectl,
 * mount options): a whole number with an optional unit ms, s, m, h or d,
 * no unit meaning seconds ("90", "30s", "1500ms", "10m"), into *ms.
 * Errors: SFS_INVALID for anything else (a negative number too),
 * SFS_TOOBIG for more than 100 years.
 */
int fs_duration_parse(const char *text, int64_t *ms);

/* ------------------------------------------------------------------------
 * Sizes (the largest value, buffers) as a person writes them (statectl,
 * mount options): a whole number of bytes with an optional K, M or G
 * (powers of 1024, "MiB" too). 0 for anything else (and for 0 or an
 * overflow).
 */
uint64_t fs_size_parse(const char *text);

/* The most a store's max_value may be: SQLite's default SQLITE_MAX_LENGTH,
 * the largest value one row holds (Debian's SQLite keeps that default), so
 * 953M; 1G is more. */
#define FS_MAX_VALUE_CEILING 1000000000ull

#endif /* STATEFS_FS_TEXT_H */
