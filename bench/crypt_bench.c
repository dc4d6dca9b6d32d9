/*
 * crypt_bench.c - what encryption at rest costs, measured in one run.
 *
 * Usage: crypt_bench [-n OPS] [-r ROUNDS] [-d DIR]
 *   -n  engine operations per measurement (default 20000)
 *   -r  rounds; every number is the median over rounds (default 5)
 *   -d  directory for the scratch stores (default $TMPDIR or /tmp)
 *        crypt_bench files DIR N SIZE
 *   one round of small files in DIR (a directory of a mount, for
 *   bench/crypt_mount.sh): create+write+close N files of SIZE bytes, then
 *   open+read+close each; prints "write US" and "read US" per file.
 *
 * Part 1, the AEAD per 4096-byte page (libsodium, this machine; the best
 * of the rounds, since other processes only ever make a loop slower):
 * XChaCha20-Poly1305 (what statefs uses) against AES-256-GCM (when the CPU
 * has AES-NI and PCLMUL: libsodium has no software AES) and
 * ChaCha20-Poly1305-IETF, plus the VFS's own seal and open of a page
 * (nonce from the pool, associated data, trailer, zeroing the reserve),
 * with the cipher's bulk work done by libcrypto (what statefs does,
 * crypt/aead.c) and by libsodium alone (the same bytes), and their ratio.
 *
 * Part 2, the engine's mix (put, get, log append, counter add, push+pop;
 * 1000 keys, 100-byte values, as bench/engine_bench.c) on a plaintext and
 * on an encrypted store, rounds interleaved so that both see the same
 * machine. For each operation it prints microseconds per operation, the
 * ratio encrypted/plaintext, the pages the VFS sealed and opened per
 * operation (counted in the VFS; WAL appends, checkpoint reads and writes),
 * the cipher cost of those pages (pages x the seal/open cost of part 1),
 * and extra time / cipher cost: the target is at most 1.25, i.e. the
 * encrypted engine costs the cipher and little else.
 *
 * It asserts nothing: timings on a shared machine are noisy.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "crypt/page_i.h"
#include "statefs.h"

#define PAGE 4096
#define KEYS 1000
#define VLEN 100
#define MAXR 15

static int ops = 20000, rounds = 5;
static char dir[256];
static unsigned char value[VLEN];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check(int rc, const char *what)
{
	if (rc != SFS_OK) {
		fprintf(stderr, "crypt_bench: %s: %s: %s\n", what,
		        sfs_strerror(rc), sfs_errdetail());
		exit(1);
	}
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- part 1: the cipher ---- */

enum { A_XC_ENC, A_XC_DEC, A_GCM_ENC, A_GCM_DEC, A_GCMNM_ENC, A_GCMNM_DEC,
       A_CC_ENC, A_CC_DEC, A_NONCE, A_SEAL, A_OPEN, A_SEAL_NA, A_OPEN_NA,
       A_N };
static const char *const aead_names[A_N] = {
	"xchacha20poly1305 encrypt (detached)",
	"xchacha20poly1305 decrypt (detached)",
	"aes256gcm encrypt",
	"aes256gcm decrypt",
	"aes256gcm encrypt (precomputed key)",
	"aes256gcm decrypt (precomputed key)",
	"chacha20poly1305-ietf encrypt",
	"chacha20poly1305-ietf decrypt",
	"randombytes_buf(24) (the nonce)",
	"statefs seal of a page (VFS write)",
	"statefs open of a page (VFS read)",
	"statefs seal, libsodium only",
	"statefs open, libsodium only",
};
static double aead_ns[A_N];

static double time_aead(int which, int n)
{
	static unsigned char m[PAGE], c[PAGE + 32], mac[16], nonce[24];
	static unsigned char k[32], ad[48];
	static crypto_aead_aes256gcm_state gst;
	static cp_filekey fk;
	static int ready;
	unsigned long long clen;
	double t0;

	if (!ready) {
		randombytes_buf(m, sizeof(m));
		randombytes_buf(k, sizeof(k));
		randombytes_buf(nonce, sizeof(nonce));
		randombytes_buf(fk.salt, sizeof(fk.salt));
		randombytes_buf(fk.page_key, sizeof(fk.page_key));
		if (crypto_aead_aes256gcm_is_available())
			crypto_aead_aes256gcm_beforenm(&gst, k);
		ready = 1;
	}
	/* Set up the ciphertexts the decryptions check. */
	switch (which) {
	case A_XC_DEC:
		crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
			c, mac, NULL, m, PAGE, ad, sizeof(ad), NULL, nonce, k);
		break;
	case A_GCM_DEC:
	case A_GCMNM_DEC:
		crypto_aead_aes256gcm_encrypt(c, &clen, m, PAGE, ad,
		                              sizeof(ad), NULL, nonce, k);
		break;
	case A_CC_DEC:
		crypto_aead_chacha20poly1305_ietf_encrypt(
			c, &clen, m, PAGE, ad, sizeof(ad), NULL, nonce, k);
		break;
	default:
		break;
	}
	/* The page cipher's bulk work is libcrypto's unless told otherwise
	 * (crypt/aead.c); the _NA rows time libsodium's, the same bytes. */
	cp_aead_libcrypto(which != A_SEAL_NA && which != A_OPEN_NA);
	t0 = now();
	for (int i = 0; i < n; i++) {
		int rc = 0;
		switch (which) {
		case A_XC_ENC:
			crypto_aead_xchacha20poly1305_ietf_encrypt_detached(
				c, mac, NULL, m, PAGE, ad, sizeof(ad), NULL,
				nonce, k);
			break;
		case A_XC_DEC:
			rc = crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
				m, NULL, c, PAGE, mac, ad, sizeof(ad), nonce, k);
			break;
		case A_GCM_ENC:
			crypto_aead_aes256gcm_encrypt(c, &clen, m, PAGE, ad,
			                              sizeof(ad), NULL, nonce,
			                              k);
			break;
		case A_GCM_DEC:
			rc = crypto_aead_aes256gcm_decrypt(
				m, NULL, NULL, c, PAGE + 16, ad, sizeof(ad),
				nonce, k);
			break;
		case A_GCMNM_ENC:
			crypto_aead_aes256gcm_encrypt_afternm(
				c, &clen, m, PAGE, ad, sizeof(ad), NULL, nonce,
				&gst);
			break;
		case A_GCMNM_DEC:
			rc = crypto_aead_aes256gcm_decrypt_afternm(
				m, NULL, NULL, c, PAGE + 16, ad, sizeof(ad),
				nonce, &gst);
			break;
		case A_CC_ENC:
			crypto_aead_chacha20poly1305_ietf_encrypt(
				c, &clen, m, PAGE, ad, sizeof(ad), NULL, nonce,
				k);
			break;
		case A_CC_DEC:
			rc = crypto_aead_chacha20poly1305_ietf_decrypt(
				m, NULL, NULL, c, PAGE + 16, ad, sizeof(ad),
				nonce, k);
			break;
		case A_NONCE:
			randombytes_buf(nonce, sizeof(nonce));
			break;
		case A_SEAL:
		case A_SEAL_NA:
			memset(m + PAGE - CP_RESERVE, 0, CP_RESERVE);
			cp_seal(&fk, CP_DB, 7, NULL, m, c, PAGE);
			break;
		case A_OPEN:
		case A_OPEN_NA:
			if (i == 0) {
				memset(m + PAGE - CP_RESERVE, 0, CP_RESERVE);
				cp_seal(&fk, CP_DB, 7, NULL, m, c, PAGE);
			}
			/* open works in place: reseal is not timed, so open
			 * a copy of the sealed page */
			memcpy(m, c, PAGE);
			rc = cp_open(&fk, CP_DB, 7, NULL, m, PAGE);
			break;
		}
		if (rc) {
			fprintf(stderr, "crypt_bench: %s failed\n",
			        aead_names[which]);
			exit(1);
		}
	}
	return (now() - t0) / n * 1e9;
}

static void part1(void)
{
	int have_aes = crypto_aead_aes256gcm_is_available();
	double v[MAXR], copy_ns;

	printf("== The AEAD per %d-byte page (best of %d x 20000: the "
	       "machine is shared) ==\n", PAGE, rounds);
	{
		/* The memcpy the open measurement includes, to subtract. */
		static unsigned char a[PAGE], b[PAGE];
		double t0 = now();
		for (int i = 0; i < 200000; i++) {
			memcpy(a, b, PAGE);
			__asm__ volatile("" : : "r"(a) : "memory");
		}
		copy_ns = (now() - t0) / 200000 * 1e9;
	}
	for (int w = 0; w < A_N; w++) {
		if (!have_aes && (w == A_GCM_ENC || w == A_GCM_DEC ||
		                  w == A_GCMNM_ENC || w == A_GCMNM_DEC)) {
			printf("%-40s  not available (no AES-NI/PCLMUL)\n",
			       aead_names[w]);
			continue;
		}
		for (int r = 0; r < rounds; r++)
			v[r] = time_aead(w, 20000);
		qsort(v, (size_t)rounds, sizeof(*v), cmpd);
		aead_ns[w] = v[0];
		if (w == A_OPEN || w == A_OPEN_NA)
			aead_ns[w] -= copy_ns;
		printf("%-40s %7.0f ns  %6.0f MB/s\n", aead_names[w],
		       aead_ns[w], PAGE / aead_ns[w] * 1e3);
	}
	cp_aead_libcrypto(1);
	printf("ratio libsodium only / statefs (libcrypto's cipher): seal "
	       "%.2f, open %.2f\n", aead_ns[A_SEAL_NA] / aead_ns[A_SEAL],
	       aead_ns[A_OPEN_NA] / aead_ns[A_OPEN]);
	if (have_aes)
		printf("ratio xchacha20poly1305 / aes256gcm: encrypt %.2f, "
		       "decrypt %.2f\n", aead_ns[A_XC_ENC] / aead_ns[A_GCM_ENC],
		       aead_ns[A_XC_DEC] / aead_ns[A_GCM_DEC]);
	/* What a passphrase costs per open (once per file and process). */
	{
		static const struct { const char *name; unsigned long long ops;
		                      size_t mem; } lim[] = {
			{ "INTERACTIVE", crypto_pwhash_OPSLIMIT_INTERACTIVE,
			  crypto_pwhash_MEMLIMIT_INTERACTIVE },
			{ "MODERATE (new stores)",
			  crypto_pwhash_OPSLIMIT_MODERATE,
			  crypto_pwhash_MEMLIMIT_MODERATE },
		};
		unsigned char out[32], salt[16] = { 0 };
		for (size_t i = 0; i < 2; i++) {
			double t0 = now();
			if (crypto_pwhash(out, sizeof(out), "passphrase", 10,
			                  salt, lim[i].ops, lim[i].mem,
			                  crypto_pwhash_ALG_ARGON2ID13) != 0) {
				printf("argon2id %s: out of memory\n",
				       lim[i].name);
				continue;
			}
			printf("argon2id %-30s %7.0f ms  (%zu MiB)\n",
			       lim[i].name, (now() - t0) * 1e3,
			       lim[i].mem >> 20);
		}
	}
	printf("\n");
}

/* ---- part 2: the engine ---- */

enum { OP_PUT, OP_GET, OP_APPEND, OP_COUNTER, OP_PUSHPOP, OP_N };
static const char *const op_names[OP_N] = {
	"put", "get", "append", "counter add", "push+pop",
};

static void keyname(char k[16], int i)
{
	snprintf(k, 16, "key%06d", i);
}

static sfs_store *fresh(const sfs_key *key, int round)
{
	char path[400];
	sfs_config o = { 0 };
	sfs_store *s;

	snprintf(path, sizeof(path), "%s/crypt-bench-%s-%d-%d.db", dir,
	         key ? "enc" : "plain", (int)getpid(), round);
	unlink(path);
	o.db = path;
	o.key = key;
	o.flags = SFS_OPEN_CREATE | (key ? 0 : SFS_OPEN_PLAINTEXT);
	check(sfs_store_open(&o, &s, NULL), "open");
	for (int i = 0; i < KEYS; i++) {
		char k[16];
		keyname(k, i);
		check(sfs_kv_put(s, sfs_str("bench"), sfs_str("ns"), sfs_str(k),
		                 sfs_bytes(value, VLEN)), "fill");
	}
	return s;
}

static void drop(sfs_store *s)
{
	static const char *const sfx[] = { "", "-wal", "-shm", "-reserve" };
	char base[400], path[420];
	sfs_info in;

	check(sfs_store_info(s, &in), "info");
	snprintf(base, sizeof(base), "%s", in.path); /* borrowed from s */
	sfs_store_close(s);
	/* the store, its WAL and index, and the room kept for deletes on a
	 * full disk (core/sqlite/: the reserve file beside the store) */
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", base, sfx[i]);
		unlink(path);
	}
}

static double run_op(sfs_store *s, int op)
{
	double t0 = now();
	char k[16];

	for (int i = 0; i < ops; i++) {
		int j = (int)((unsigned)i * 2654435761u % KEYS);
		keyname(k, j);
		switch (op) {
		case OP_PUT:
			value[0] = (unsigned char)i;
			check(sfs_kv_put(s, sfs_str("bench"), sfs_str("ns"),
			                 sfs_str(k), sfs_bytes(value, VLEN)),
			      "put");
			break;
		case OP_GET: {
			sfs_buf b = { 0 };
			check(sfs_kv_get(s, sfs_str("bench"), sfs_str("ns"),
			                 sfs_str(k), &b), "get");
			sfs_buf_free(&b);
			break;
		}
		case OP_APPEND:
			check(sfs_log_append(s, sfs_str("bench"), sfs_str("log"),
			                     sfs_str(k), sfs_bytes(value, VLEN),
			                     NULL), "append");
			break;
		case OP_COUNTER:
			check(sfs_counter_add(s, sfs_str("bench"), sfs_str("c"),
			                      sfs_str(k), 1, NULL), "counter");
			break;
		case OP_PUSHPOP: {
			sfs_slice it = sfs_bytes(value, VLEN);
			sfs_list l;
			check(sfs_queue_push(s, sfs_str("q"), &it, 1, NULL),
			      "push");
			check(sfs_queue_pop(s, sfs_str("q"), 1, &l), "pop");
			sfs_list_free(&l);
			break;
		}
		}
	}
	return (now() - t0) / ops * 1e6;
}

static void part2(const sfs_key *key)
{
	double t[2][OP_N][MAXR], pg_enc[OP_N][MAXR], pg_dec[OP_N][MAXR];

	printf("== The engine: plaintext vs encrypted store (%d ops, median "
	       "of %d rounds) ==\n", ops, rounds);
	for (int r = 0; r < rounds; r++) {
		for (int m = 0; m < 2; m++) {
			sfs_store *s = fresh(m ? key : NULL, r);
			for (int op = 0; op < OP_N; op++) {
				crypt_stats a, b;
				uint64_t e = 0, d = 0;
				crypt_stats_get(&a);
				t[m][op][r] = run_op(s, op);
				crypt_stats_get(&b);
				for (int k = 0; k < CRYPT_FILE_KINDS; k++) {
					e += b.encrypted[k] - a.encrypted[k];
					d += b.decrypted[k] - a.decrypted[k];
				}
				if (m) {
					pg_enc[op][r] = (double)e / ops;
					pg_dec[op][r] = (double)d / ops;
				}
			}
			drop(s);
		}
	}
	printf("%-12s %9s %9s %6s %8s %8s %8s %9s %12s\n", "operation",
	       "plain us", "enc us", "ratio", "extra us", "sealed", "opened",
	       "cipher us", "extra/cipher");
	for (int op = 0; op < OP_N; op++) {
		double p = median(t[0][op], rounds), e = median(t[1][op], rounds);
		double se = median(pg_enc[op], rounds);
		double sd = median(pg_dec[op], rounds);
		double cipher = (se * aead_ns[A_SEAL] + sd * aead_ns[A_OPEN]) /
		                1e3;
		printf("%-12s %9.2f %9.2f %6.2f %8.2f %8.2f %8.2f %9.2f ",
		       op_names[op], p, e, e / p, e - p, se, sd, cipher);
		if (cipher > 0.05)
			printf("%12.2f\n", (e - p) / cipher);
		else
			printf("%12s\n", "(no pages)");
	}
	printf("sealed/opened: pages per operation through the VFS (WAL "
	       "writes, checkpoint reads and writes, cache misses).\n"
	       "extra/cipher: target <= 1.25 (the cipher is the only cost "
	       "we accept).\n");
}

/* ---- small files in a directory (through a mount) ---- */

static int files(const char *d, int n, size_t size)
{
	char path[4096];
	unsigned char *buf = malloc(size + 1);
	double t0, tw, tr;

	if (!buf || n < 1)
		return 2;
	randombytes_buf(buf, size);
	t0 = now();
	for (int i = 0; i < n; i++) {
		int fd;
		snprintf(path, sizeof(path), "%s/f%06d", d, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, buf, size) != (ssize_t)size ||
		    close(fd) != 0) {
			perror(path);
			return 1;
		}
	}
	tw = now() - t0;
	t0 = now();
	for (int i = 0; i < n; i++) {
		int fd;
		ssize_t r;
		snprintf(path, sizeof(path), "%s/f%06d", d, i);
		fd = open(path, O_RDONLY);
		if (fd < 0 || (r = read(fd, buf, size + 1)) != (ssize_t)size) {
			fprintf(stderr, "crypt_bench: reading %s\n", path);
			return 1;
		}
		close(fd);
	}
	tr = now() - t0;
	printf("write %.2f\nread %.2f\n", tw / n * 1e6, tr / n * 1e6);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	sfs_key *key;
	int c;

	if (argc == 5 && strcmp(argv[1], "files") == 0)
		return sodium_init() < 0 ? 1 :
		       files(argv[2], atoi(argv[3]), (size_t)atol(argv[4]));
	snprintf(dir, sizeof(dir), "%s", tmp && *tmp ? tmp : "/tmp");
	while ((c = getopt(argc, argv, "n:r:d:")) != -1) {
		switch (c) {
		case 'n':
			ops = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'd':
			snprintf(dir, sizeof(dir), "%s", optarg);
			break;
		default:
			fprintf(stderr, "usage: crypt_bench [-n OPS] [-r ROUNDS] "
			        "[-d DIR]\n");
			return 2;
		}
	}
	if (ops < 1 || rounds < 1 || rounds > MAXR) {
		fprintf(stderr, "crypt_bench: -n >= 1, 1 <= -r <= %d\n", MAXR);
		return 2;
	}
	if (sodium_init() < 0)
		return 1;
	randombytes_buf(value, sizeof(value));
	check(sfs_key_generate(&key), "key");
	part1();
	part2(key);
	sfs_key_destroy(key);
	return 0;
}
