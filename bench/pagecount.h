/*
 * pagecount.h - pages per operation, for the benchmarks.
 *
 * pc_install() registers a pass-through SQLite VFS as the process's
 * default. Every store the engine opens afterwards goes through it: a
 * plaintext store directly, an encrypted one below the encrypting VFS
 * (which wraps the default VFS when it is opened), so the counts are of
 * the same file I/O in both modes: full pages moved between SQLite and the
 * files. It counts, per file kind, the page-sized reads and writes (a WAL
 * frame's page counts, its 24-byte header does not) and the syncs.
 *
 * The counters are process-wide and only ever grow; take a pc_counts
 * before and after the work and subtract.
 */
#ifndef STATEFS_BENCH_PAGECOUNT_H
#define STATEFS_BENCH_PAGECOUNT_H

#include <stdint.h>

typedef struct pc_counts {
	uint64_t db_read, db_written;   /* the main file: cache misses,
	                                 * checkpoint writes */
	uint64_t wal_read, wal_written; /* the -wal file: commits' frames,
	                                 * reads of frames (lookups,
	                                 * checkpoints) */
	uint64_t syncs;                 /* xSync calls on any file */
} pc_counts;

/* Registers the counting VFS as the default (once; later calls do
 * nothing). 0, or -1 when SQLite refused. */
int pc_install(void);
void pc_get(pc_counts *out);
/* b - a, field by field. */
pc_counts pc_diff(const pc_counts *b, const pc_counts *a);

#endif /* STATEFS_BENCH_PAGECOUNT_H */
