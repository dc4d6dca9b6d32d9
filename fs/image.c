/*
 * image.c - what a handle open for writing a value changed since its last
 * commit: the bytes written (extents), the shortest length it was cut to,
 * its length, and for O_APPEND the bytes to add after the value's end.
 *
 * The value itself stays in the store: a handle never copies it. Reading
 * through the handle (O_RDWR) composes the store's bytes below the cut
 * with the extents; the commit is one sfs_kv_edit of the same changes
 * (fs_image_edits), so a small write to a large value costs what it
 * changes, and appends from two handles both land, each whole, at the end
 * of the value as it is when each commits. Memory is what was written:
 * a 1-byte write at 64 MiB holds one byte (bytes never written are zeros
 * that exist only in the store, and only after the commit).
 *
 * Extents are kept sorted, disjoint and not touching, so their number is
 * bounded by the writes and a sequential writer (cp, cat >) grows one
 * extent in place. An O_APPEND handle only appends, and other handles
 * only write: appended bytes and extents mix only after a truncation,
 * which turns the appended bytes into an extent first. What is
 * deliberately left out: reads do not cache the
 * store's bytes (each read of an O_RDWR handle asks the engine for the
 * part below the cut).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fs_i.h"

/* Buffers of MAP_FROM bytes and more (extents, appended bytes) are
 * mappings of their own, grown with mremap, which moves page tables rather
 * than bytes: realloc of a block in the heap copies it, and a 16 MiB cp
 * spent 11 % of the daemon's CPU copying its doubling buffer. A mapping is
 * also given back to the system at once when freed. */
#define MAP_FROM ((size_t)256 * 1024)

/* p (capacity cap, 0 when p is NULL) grown to ncap > cap bytes; NULL when
 * out of memory, p then untouched. */
static void *buf_grow(void *p, size_t cap, size_t ncap)
{
	void *q;

	if (ncap < MAP_FROM)
		return realloc(p, ncap);
	if (cap >= MAP_FROM) {
		q = mremap(p, cap, ncap, MREMAP_MAYMOVE);
		return q == MAP_FAILED ? NULL : q;
	}
	q = mmap(NULL, ncap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	         -1, 0);
	if (q == MAP_FAILED)
		return NULL;
	if (cap)
		memcpy(q, p, cap);
	free(p);
	return q;
}

static void buf_free(void *p, size_t cap)
{
	if (cap >= MAP_FROM)
		munmap(p, cap);
	else
		free(p);
}

void fs_image_init(fs_image *im, uint64_t base, int truncated)
{
	memset(im, 0, sizeof(*im));
	im->base = truncated ? 0 : base;
	im->cut = truncated ? 0 : FS_NO_CUT;
	im->size = im->base;
}

void fs_image_free(fs_image *im)
{
	for (size_t i = 0; i < im->n; i++)
		buf_free(im->ext[i].p, im->ext[i].cap);
	free(im->ext);
	buf_free(im->app, im->appcap);
	memset(im, 0, sizeof(*im));
}

void fs_image_reset(fs_image *im, uint64_t base)
{
	fs_image_free(im);
	fs_image_init(im, base, 0);
}

int fs_image_changed(const fs_image *im)
{
	return im->n || im->applen || im->cut != FS_NO_CUT ||
	       im->size != im->base;
}

static uint64_t ext_end(const fs_extent *e)
{
	return e->off + e->len;
}

/* The first extent that ends at or after off (touching counts). */
static size_t first_touching(const fs_image *im, uint64_t off)
{
	size_t lo = 0, hi = im->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ext_end(&im->ext[mid]) < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t fs_image_added(const fs_image *im, uint64_t off, size_t n)
{
	uint64_t end = off + n;
	size_t added = n;

	for (size_t i = first_touching(im, off);
	     i < im->n && im->ext[i].off < end; i++) {
		uint64_t a = im->ext[i].off > off ? im->ext[i].off : off;
		uint64_t b = ext_end(&im->ext[i]) < end ? ext_end(&im->ext[i]) : end;
		if (b > a)
			added -= (size_t)(b - a);
	}
	return added;
}

/* Grows extent e to hold len bytes (capacity doubles: a sequential writer
 * appends in amortised constant time). */
static int ext_reserve(fs_extent *e, size_t len)
{
	unsigned char *p;
	size_t cap = e->cap ? e->cap : 64;

	if (len <= e->cap)
		return 0;
	while (cap < len)
		cap = cap > SIZE_MAX / 2 ? len : cap * 2;
	if (!(p = buf_grow(e->p, e->cap, cap)))
		return ENOMEM;
	e->p = p;
	e->cap = cap;
	return 0;
}

int fs_image_write(fs_image *im, uint64_t off, const void *p, size_t n)
{
	uint64_t end = off + n, lo, hi;
	size_t i, j, added = fs_image_added(im, off, n);
	fs_extent x = { 0 };

	if (n == 0)
		return 0;
	i = first_touching(im, off);
	for (j = i; j < im->n && im->ext[j].off <= end; j++)
		;
	if (j == i + 1 && im->ext[i].off <= off) {
		/* Inside or extending one extent: in place. */
		fs_extent *e = &im->ext[i];
		if (end > ext_end(e)) {
			if (ext_reserve(e, (size_t)(end - e->off)))
				return ENOMEM;
			e->len = (size_t)(end - e->off);
		}
		memcpy(e->p + (off - e->off), p, n);
	} else {
		/* New, or merging several: one new extent over [lo, hi). */
		lo = j > i && im->ext[i].off < off ? im->ext[i].off : off;
		hi = j > i && ext_end(&im->ext[j - 1]) > end
		     ? ext_end(&im->ext[j - 1]) : end;
		if (ext_reserve(&x, (size_t)(hi - lo)))
			return ENOMEM;
		x.off = lo;
		x.len = (size_t)(hi - lo);
		for (size_t k = i; k < j; k++)
			memcpy(x.p + (im->ext[k].off - lo), im->ext[k].p,
			       im->ext[k].len);
		memcpy(x.p + (off - lo), p, n);
		if (j == i && im->n == im->cap) {
			size_t nc = im->cap ? im->cap * 2 : 4;
			fs_extent *ne = realloc(im->ext, nc * sizeof(*ne));
			if (!ne) {
				buf_free(x.p, x.cap);
				return ENOMEM;
			}
			im->ext = ne;
			im->cap = nc;
		}
		for (size_t k = i; k < j; k++)
			buf_free(im->ext[k].p, im->ext[k].cap);
		if (j == i) {
			memmove(&im->ext[i + 1], &im->ext[i],
			        (im->n - i) * sizeof(*im->ext));
			im->n++;
		} else if (j > i + 1) {
			memmove(&im->ext[i + 1], &im->ext[j],
			        (im->n - j) * sizeof(*im->ext));
			im->n -= j - i - 1;
		}
		im->ext[i] = x;
	}
	im->held += added;
	if (end > im->size)
		im->size = end;
	return 0;
}

int fs_image_append(fs_image *im, const void *p, size_t n)
{
	unsigned char *np;
	size_t cap = im->appcap ? im->appcap : 64;

	if (im->applen + n > im->appcap) {
		while (cap < im->applen + n)
			cap = cap > SIZE_MAX / 2 ? im->applen + n : cap * 2;
		if (!(np = buf_grow(im->app, im->appcap, cap)))
			return ENOMEM;
		im->app = np;
		im->appcap = cap;
	}
	memcpy(im->app + im->applen, p, n);
	im->applen += n;
	im->held += n;
	im->size += n;
	return 0;
}

int fs_image_truncate(fs_image *im, uint64_t size)
{
	/* Appended bytes take their place now: they are cut like the rest,
	 * and later appends go after them. */
	if (im->applen) {
		uint64_t at = im->size - im->applen;
		size_t n = im->applen;

		im->applen = 0;
		im->size = at;
		if (fs_image_write(im, at, im->app, n)) {
			im->applen = n;
			im->size = at + n;
			return ENOMEM;
		}
		buf_free(im->app, im->appcap);
		im->app = NULL;
		im->appcap = 0;
	}
	while (im->n && im->ext[im->n - 1].off >= size) {
		buf_free(im->ext[im->n - 1].p, im->ext[im->n - 1].cap);
		im->n--;
	}
	if (im->n && ext_end(&im->ext[im->n - 1]) > size)
		im->ext[im->n - 1].len = (size_t)(size - im->ext[im->n - 1].off);
	if (size < im->cut)
		im->cut = size;
	im->size = size;
	im->held = 0;
	for (size_t i = 0; i < im->n; i++)
		im->held += im->ext[i].len;
	return 0;
}

int fs_image_read(const fs_image *im, uint64_t off, size_t n,
                  unsigned char *out, size_t *got,
                  int (*base)(void *ctx, uint64_t off, size_t n,
                              unsigned char *out),
                  void *ctx)
{
	uint64_t kept = im->cut < im->base ? im->cut : im->base, end;
	uint64_t app_at = im->size - im->applen;
	int rc = 0;

	if (off >= im->size) {
		*got = 0;
		return 0;
	}
	end = off + n < im->size ? off + n : im->size;
	memset(out, 0, (size_t)(end - off));
	if (off < kept)
		rc = base(ctx, off, (size_t)((end < kept ? end : kept) - off), out);
	if (rc)
		return rc;
	for (size_t i = first_touching(im, off);
	     i < im->n && im->ext[i].off < end; i++) {
		uint64_t a = im->ext[i].off > off ? im->ext[i].off : off;
		uint64_t b = ext_end(&im->ext[i]) < end ? ext_end(&im->ext[i]) : end;
		if (b > a)
			memcpy(out + (a - off), im->ext[i].p + (a - im->ext[i].off),
			       (size_t)(b - a));
	}
	if (im->applen && end > app_at) {
		uint64_t a = off > app_at ? off : app_at;
		memcpy(out + (a - off), im->app + (a - app_at), (size_t)(end - a));
	}
	*got = (size_t)(end - off);
	return 0;
}

size_t fs_image_edits(const fs_image *im, sfs_edit *e)
{
	size_t k = 0;

	if (im->cut != FS_NO_CUT) {
		e[k++] = (sfs_edit){ SFS_EDIT_TRUNCATE, im->cut, SFS_NONE };
		if (im->size - im->applen > im->cut)
			e[k++] = (sfs_edit){ SFS_EDIT_TRUNCATE,
			                     im->size - im->applen, SFS_NONE };
	}
	for (size_t i = 0; i < im->n; i++)
		e[k++] = (sfs_edit){ SFS_EDIT_WRITE, im->ext[i].off,
		                     sfs_bytes(im->ext[i].p, im->ext[i].len) };
	if (im->applen)
		e[k++] = (sfs_edit){ SFS_EDIT_APPEND, 0,
		                     sfs_bytes(im->app, im->applen) };
	return k;
}
