// SPDX-License-Identifier: MIT
/* strata view: the model's big arrays in a file while it is built, so that the server's memory does not grow with the trace (docs/view.md, "Memory"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "view.h"

/* The file's room, reserved as address space and as a sparse file, never
 * as memory or disk: each region is allocated on disk (fallocate) when it
 * is handed out, and a region left by a growth is punched out again.
 * 1 TiB, or less where the address space is bounded (ulimit -v, the
 * sanitizers' layouts): 128 GiB, then 16 GiB. */
#define SPILL_ROOM (1ull << 40)
#define SPILL_ROOM_MIN (1ull << 34)
/* Arrays smaller than this stay on the heap: most rows' levels are.
 * STRATA_VIEW_SPILL_MIN=BYTES (at least a page) moves it, for the tests:
 * the file's arrays then appear on small traces (docs/view.md, "Memory"). */
#define SPILL_MIN (4u << 20)
/* Written through the mapping since the last trim: past this, the pages
 * are unmapped (they stay in the page cache, dirty until written back). */
#define SPILL_TRIM (64u << 20)
#define PAGE 4096u

struct vw_spill {
	int fd;
	char *base;
	uint64_t room;    /* the mapping's length and the file's */
	uint64_t used;    /* the next region's offset: a bump, page-aligned */
	uint64_t touched; /* bytes written through the mapping since the last trim */
	size_t min;       /* arrays of this many bytes or more go in the file */
};

int vw_spill_open(struct vw_spill **out, const char *dir)
{
	*out = NULL;
	struct vw_spill *sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	struct statfs fs;
	int err = 0;
	sp->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (sp->fd < 0)
		err = -errno;
	else if (fstatfs(sp->fd, &fs) || fs.f_type == TMPFS_MAGIC)
		err = -EOPNOTSUPP; /* a file in memory saves none */
	for (sp->room = SPILL_ROOM; !err; sp->room >>= 3) {
		if (ftruncate(sp->fd, (off_t)sp->room)) {
			err = -errno;
			break;
		}
		sp->base = mmap(NULL, sp->room, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_NORESERVE, sp->fd, 0);
		if (sp->base != MAP_FAILED)
			break;
		if (sp->room >> 3 < SPILL_ROOM_MIN)
			err = -errno;
	}
	if (err) {
		if (sp->fd >= 0)
			close(sp->fd);
		free(sp);
		return err;
	}
	const char *v = getenv("STRATA_VIEW_SPILL_MIN");
	unsigned long long min = v ? strtoull(v, NULL, 10) : 0;
	sp->min = min >= PAGE && min <= SPILL_MIN ? (size_t)min : SPILL_MIN;
	*out = sp;
	return 0;
}

void vw_spill_close(struct vw_spill *sp)
{
	if (!sp)
		return;
	munmap(sp->base, sp->room);
	close(sp->fd); /* the last reference: the file and its blocks go */
	free(sp);
}

bool vw_spill_has(const struct vw_spill *sp, const void *p)
{
	return sp && (const char *)p >= sp->base && (const char *)p < sp->base + sp->used;
}

static uint64_t pages(uint64_t bytes)
{
	return (bytes + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

/* A region is a page of header, its reservation's length, then its
 * array: the reservation is address space and file offsets for RESERVE
 * times the array's room when it was placed, of which only the room is
 * allocated on disk; the array doubles in place, allocating the next
 * part, until it outgrows the reservation and moves to a new one. So an
 * array of 1 GB was copied twice (at 4 and at 64 MiB), where doubling
 * regions would copy 1 GB. */
#define RESERVE 16

static uint64_t *header(const void *p)
{
	return (uint64_t *)((const char *)p - PAGE);
}

/* A region for an array of room `bytes` (page-rounded), allocated on
 * disk up to it; NULL when out of room or when the file system refused
 * (a full disk: then the heap). */
static char *take(struct vw_spill *sp, uint64_t bytes)
{
	uint64_t reserve = PAGE + RESERVE * bytes;
	if (sp->used + reserve > sp->room ||
	    fallocate(sp->fd, 0, (off_t)sp->used, (off_t)(PAGE + bytes)))
		return NULL;
	char *p = sp->base + sp->used + PAGE;
	sp->used += reserve;
	*header(p) = RESERVE * bytes;
	return p;
}

/* The region of p back to the file system: its blocks and its pages in
 * the page cache and in the mapping. */
static void give(struct vw_spill *sp, char *p)
{
	fallocate(sp->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)(p - PAGE - sp->base), (off_t)(PAGE + *header(p)));
}

/* The array p's room from `from` to `to` bytes (page-rounded), in place
 * when its reservation holds it and the disk takes it. */
static bool widen(struct vw_spill *sp, char *p, uint64_t from, uint64_t to)
{
	return to <= *header(p) &&
	       !fallocate(sp->fd, 0, (off_t)(p - sp->base + from), (off_t)(to - from));
}

/* n bytes from region `from` to region `to`, both in the file: by the
 * kernel, from page cache to page cache, so that none of it is mapped
 * here; by hand (then unmapped) where it cannot. */
static void move(struct vw_spill *sp, char *to, const char *from, uint64_t n)
{
	loff_t in = from - sp->base, out = to - sp->base;
	uint64_t left = n;
	while (left) {
		ssize_t k = copy_file_range(sp->fd, &in, sp->fd, &out, left, 0);
		if (k <= 0)
			break;
		left -= (uint64_t)k;
	}
	if (left) {
		memcpy(to + (n - left), from + (n - left), left);
		madvise(to, pages(n), MADV_DONTNEED);
	}
}

void *vw_spill_grow(struct vw_spill *sp, void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	size_t c = *cap ? *cap * 2 : 64;
	bool in = vw_spill_has(sp, p);
	if (!in && (!sp || c * size < sp->min))
		return vw_grow(p, cap, n, size);
	if (in && widen(sp, p, pages(*cap * size), pages(c * size))) {
		*cap = c;
		return p;
	}
	char *q = take(sp, pages(c * size));
	if (!q) {
		if (!in)
			return vw_grow(p, cap, n, size);
		if (!(q = malloc(c * size)))
			return NULL;
		memcpy(q, p, n * size);
	} else if (in) {
		move(sp, q, p, n * size);
	} else if (vw_spill_put(sp, q, 0, p, n * size)) {
		/* by pwrite: stores through the mapping would fault each
		 * page in (and ext4 zeroes the unwritten blocks first) */
		memcpy(q, p, n * size);
		vw_spill_wrote(sp, n * size);
	}
	if (in)
		give(sp, p);
	else
		free(p);
	*cap = c;
	return q;
}

void vw_spill_free(struct vw_spill *sp, void *p)
{
	if (!vw_spill_has(sp, p))
		free(p);
}

void vw_spill_wrote(struct vw_spill *sp, size_t bytes)
{
	if (sp && (sp->touched += bytes) >= SPILL_TRIM)
		vw_spill_trim(sp);
}

void vw_spill_trim(struct vw_spill *sp)
{
	if (!sp || !sp->used)
		return;
	madvise(sp->base, sp->used, MADV_DONTNEED);
	sp->touched = 0;
}

void vw_pages_release(const void *p, size_t n)
{
	/* the whole pages inside [p, p + n) */
	uintptr_t a = ((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
	uintptr_t b = ((uintptr_t)p + n) & ~(uintptr_t)(PAGE - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

uint64_t vw_rss(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	unsigned long long size, rss = 0;
	if (f && fscanf(f, "%llu %llu", &size, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

void vw_spill_release(const struct vw_spill *sp, const void *p, size_t n)
{
	if (vw_spill_has(sp, p))
		vw_pages_release(p, n);
}

/* pwrite or pread of n bytes at byte `off` of the file's array arr. */
static int file_io(const struct vw_spill *sp, const void *arr, size_t off, void *buf, size_t n,
		   bool put)
{
	off_t at = (off_t)((const char *)arr - sp->base + off);
	char *b = buf;
	while (n) {
		ssize_t k = put ? pwrite(sp->fd, b, n, at) : pread(sp->fd, b, n, at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		b += k;
		at += k;
		n -= (size_t)k;
	}
	return 0;
}

int vw_spill_put(const struct vw_spill *sp, const void *arr, size_t off, const void *buf,
		 size_t n)
{
	return file_io(sp, arr, off, (void *)buf, n, true);
}

int vw_spill_get(const struct vw_spill *sp, const void *arr, size_t off, void *buf, size_t n)
{
	return file_io(sp, arr, off, buf, n, false);
}
