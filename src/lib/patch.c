/* SPDX-License-Identifier: MIT */
/* Static branches: registering tracepoint sites and patching them while other threads run them (docs/patch.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define STRATA_SITES_DEFINE /* inline/branch.h: strong definitions here */
#include <strata/strata.h>

#include "common/log.h"
#include "lib/patch.h"
#include "lib/session.h"

/* Where sites can be patched (inline/branch.h builds them elsewhere as a
 * plain mask test, and a library built without them patches nothing). */
#if defined(__x86_64__) && defined(__linux__) && !defined(STRATA_NO_STATIC_BRANCH)
#include <linux/membarrier.h>
#define PATCH_ARCH 1
#endif

enum { MODE_MASK, MODE_PATCHED };

#define INSN_LEN 5
#define SITE_LEN 8 /* the jump or no-op, then a 3-byte no-op (inline/branch.h) */
#define OP_JMP 0xe9
#ifdef PATCH_ARCH
static const uint8_t nop5[INSN_LEN] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
static const uint8_t nop3[SITE_LEN - INSN_LEN] = {0x0f, 0x1f, 0x00};
#endif

/* A page that holds sites, and its protection (what to give back). */
struct page {
	uintptr_t addr;
	int prot;
};

/*
 * The sites of one binary or shared library, as it registered them, and
 * the pages they are on with their protections, read from
 * /proc/self/maps once, at registration: a batch then needs no file
 * (a program may have used every descriptor) and cannot fail but in
 * mprotect. No pages (unreadable maps): its sites are never patched.
 */
struct dso {
	const struct strata_site *start, *stop;
	struct page *pg;
	size_t npg;
	struct dso *next;
};

/* One site to rewrite in a batch: its 8 aligned bytes become `word`, the
 * jump (on) or the no-op (off), the 3-byte no-op after it unchanged. */
struct poke {
	uint64_t *site;
	uint64_t word;
	const struct dso *d;
};

/*
 * Everything below is under patch_lock. `self`: this thread holds the
 * lock, so a nested call (a signal handler) only leaves `pending` for the
 * holder to run.
 */
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int self;
static int pending;
static int mode = MODE_MASK;
static const char *mode_why = "not initialised";
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static struct dso *dsos;
static size_t nsites;       /* over every dso: the batch's capacity */
static struct poke *batch;
static struct page *pages;
static size_t cap;

/*
 * Every load and store of code goes through these, in assembly: the
 * compiler must not merge, split or reorder them across the sync, and
 * ThreadSanitizer, which instruments C accesses, has no shadow for the
 * text it would then record them in. A site is 8-byte aligned
 * (inline/branch.h), so each is one access that no other core sees torn.
 */
#ifdef PATCH_ARCH
static inline uint8_t text_load(const uint8_t *p)
{
	uint8_t v;
	__asm__ __volatile__("movb %1, %0" : "=q"(v) : "m"(*p) : "memory");
	return v;
}

static inline uint64_t site_load(const uint64_t *p)
{
	uint64_t v;
	__asm__ __volatile__("movq %1, %0" : "=r"(v) : "m"(*p) : "memory");
	return v;
}

static inline void site_store(uint64_t *p, uint64_t v)
{
	__asm__ __volatile__("movq %1, %0" : "=m"(*p) : "r"(v) : "memory");
}
#endif

#ifdef PATCH_ARCH
/*
 * Every core that runs this process serialises its instruction stream
 * before the call returns (cores running other threads through an IPI,
 * the others when they next return to user space); cpuid does it here.
 */
static int sync_cores(void)
{
	unsigned a = 0, b, c = 0, d;

	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0))
		return -errno;
	__asm__ __volatile__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) : : "memory");
	return 0;
}

static const char *membarrier_init(void)
{
	long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		return "no membarrier SYNC_CORE";
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0))
		return "membarrier SYNC_CORE refused";
	return NULL;
}
#endif /* PATCH_ARCH */

/* ---- W^X: pages writable only inside a batch (docs/patch.md, "W^X") -- */

#ifdef PATCH_ARCH

static int cmp_page(const void *a, const void *b)
{
	uintptr_t x = ((const struct page *)a)->addr, y = ((const struct page *)b)->addr;
	return x < y ? -1 : x > y;
}

/* The protections of `pg` (sorted) from /proc/self/maps: what to give
 * back. -ENOENT when a page is not mapped, or the file is unreadable. */
static int pages_prot(struct page *pg, size_t np)
{
	char buf[4096], line[512];
	size_t ll = 0, pi = 0;
	ssize_t r;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < np; i++)
		pg[i].prot = -1;
	while (pi < np && (r = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t k = 0; k < r && pi < np; k++) {
			unsigned long lo, hi;
			char perm[5];

			if (buf[k] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[k];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) != 3)
				continue;
			int prot = (perm[0] == 'r' ? PROT_READ : 0) |
				   (perm[1] == 'w' ? PROT_WRITE : 0) |
				   (perm[2] == 'x' ? PROT_EXEC : 0);
			while (pi < np && pg[pi].addr < lo)
				pi++;
			while (pi < np && pg[pi].addr < hi)
				pg[pi++].prot = prot;
		}
	}
	close(fd);
	for (size_t i = 0; i < np; i++)
		if (pg[i].prot < 0)
			return -ENOENT;
	return 0;
}

/* Runs of consecutive pages of one protection get `extra` added (or
 * their own back, extra = 0). Returns 0 or the first mprotect's -errno. */
static int pages_protect(const struct page *pg, size_t np, int extra)
{
	long psz = sysconf(_SC_PAGESIZE);
	int ret = 0;

	for (size_t i = 0, j; i < np; i = j) {
		for (j = i + 1; j < np && pg[j].addr == pg[j - 1].addr + (uintptr_t)psz &&
				pg[j].prot == pg[i].prot; j++)
			;
		if (mprotect((void *)pg[i].addr, (size_t)(j - i) * (size_t)psz,
			     pg[i].prot | extra) && !ret)
			ret = -errno;
	}
	return ret;
}

/* Sort and merge pages[0..k) into distinct pages; returns how many. */
static size_t pages_unique(struct page *pg, size_t k)
{
	size_t u = 0;

	qsort(pg, k, sizeof(*pg), cmp_page);
	for (size_t i = 0; i < k; i++)
		if (!u || pg[u - 1].addr != pg[i].addr)
			pg[u++] = pg[i];
	return u;
}

/* The page(s) of a site: two when it straddles a boundary. */
static size_t site_pages(const uint8_t *at, struct page *pg)
{
	uintptr_t mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	uintptr_t a = (uintptr_t)at & mask, b = ((uintptr_t)at + INSN_LEN - 1) & mask;

	pg[0].addr = a;
	pg[0].prot = 0;
	if (b == a)
		return 1;
	pg[1].addr = b;
	pg[1].prot = 0;
	return 2;
}

static const struct page *page_find(const struct dso *d, uintptr_t addr)
{
	struct page key = {addr, 0};

	return bsearch(&key, d->pg, d->npg, sizeof(key), cmp_page);
}

/* The distinct pages of the batch, sorted, with their dso's protections. */
static size_t batch_pages(size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t m = site_pages((const uint8_t *)batch[i].site, pages + k);
		for (size_t j = k; j < k + m; j++)
			pages[j].prot = page_find(batch[i].d, pages[j].addr)->prot;
		k += m;
	}
	return pages_unique(pages, k);
}

/* At registration: the pages of the dso's sites and their protections. */
static int dso_pages(struct dso *d)
{
	size_t n = (size_t)(d->stop - d->start), k = 0;
	int ret;

	d->pg = malloc(2 * n * sizeof(*d->pg));
	if (!d->pg)
		return -ENOMEM;
	for (const struct strata_site *s = d->start; s < d->stop; s++)
		k += site_pages((const uint8_t *)&s->site + s->site, d->pg + k);
	d->npg = pages_unique(d->pg, k);
	ret = pages_prot(d->pg, d->npg);
	if (ret) {
		free(d->pg);
		d->pg = NULL;
		d->npg = 0;
	}
	return ret;
}

/* ---- the patch protocol (docs/patch.md, "Patching") ----------------- */
static int sync_or_none(int single)
{
	return single ? 0 : sync_cores();
}

/*
 * The batch (docs/patch.md, "The patch protocol"): each site's 8 aligned
 * bytes are rewritten whole by one store, so a core running the site
 * meanwhile runs the old instruction or the new one, never a mix, and
 * both are correct (one tests the mask, the other goes on). Then one
 * sync: no core runs an old one after the call returns. No int3 and no
 * signal handler, as text_poke_bp() needs for an instruction it writes
 * byte by byte: a thread that blocks SIGTRAP (servers often block every
 * signal in their workers) would be killed by one. `single`: the process
 * has one thread (a fork child), nothing to sync.
 */
static int apply(size_t n, int single)
{
	size_t np = batch_pages(n);
	int ret = pages_protect(pages, np, PROT_WRITE);

	if (!ret) {
		for (size_t i = 0; i < n; i++)
			site_store(batch[i].site, batch[i].word);
		ret = sync_or_none(single);
	}
	(void)pages_protect(pages, np, 0);
	return ret;
}

/* Each registered site that is not what control_site_wanted() says
 * (or not on, with `all_on`). */
static size_t collect(int all_on)
{
	size_t n = 0;

	for (struct dso *d = dsos; d; d = d->next) {
		if (!d->pg)
			continue; /* its protections unknown: jumps for good */
		for (const struct strata_site *s = d->start; s < d->stop; s++) {
			uint8_t *at = (uint8_t *)&s->site + s->site;
			uint8_t *to = (uint8_t *)&s->target + s->target;
			const volatile uint8_t *flag =
				s->flag ? (const volatile uint8_t *)&s->flag + s->flag : NULL;
			uint64_t *site = (uint64_t *)at, cur, word;
			int32_t rel = (int32_t)(to - (at + INSN_LEN));
			uint8_t b[SITE_LEN];

			if ((uintptr_t)at % SITE_LEN)
				continue; /* not ours to touch (never happens) */
			cur = site_load(site);
			memcpy(b, &cur, SITE_LEN);
			if (memcmp(b + INSN_LEN, nop3, sizeof(nop3)) ||
			    (b[0] != OP_JMP && memcmp(b, nop5, INSN_LEN)))
				continue;
			if (all_on || control_site_wanted(s->major, flag)) {
				b[0] = OP_JMP;
				memcpy(b + 1, &rel, 4);
			} else {
				memcpy(b, nop5, INSN_LEN);
			}
			memcpy(&word, b, SITE_LEN);
			if (word != cur)
				batch[n++] = (struct poke){ .site = site, .word = word, .d = d };
		}
	}
	return n;
}

static void follow_locked(int single)
{
	do {
		pending = 0;
		if (mode != MODE_PATCHED)
			return;
		size_t n = collect(0);
		int ret = n ? apply(n, single) : 0;
		if (ret) {
			/* Those sites stay as they were: jumps already on,
			 * or off ones that a later call may yet turn on. */
			slog_once("patching %zu tracepoint sites failed (%s)",
				  n, strerror(-ret));
		}
	} while (strata_load_relaxed(&pending));
}
#else
static void follow_locked(int single)
{
	(void)single;
}
#endif /* PATCH_ARCH */

static void lock(void)
{
	pthread_mutex_lock(&patch_lock);
	self = 1;
}

static void unlock(void)
{
	self = 0;
	pthread_mutex_unlock(&patch_lock);
}

/* ---- fork: the child's text is the parent's ------------------------- */

/*
 * Taken last before fork() (this handler is installed before
 * lib/fork.c's, and prepare handlers run in reverse): the registry lock
 * is taken before ours everywhere (control_registered()), so in that
 * order too. No batch is then half applied in the child, whose text and
 * mask are the parent's: its sites already match. The membarrier
 * registration belongs to the old mm, so it is made again.
 */
static int fork_locked; /* before_fork() took the lock (not a handler's fork) */

static void before_fork(void)
{
	fork_locked = !self;
	if (fork_locked)
		lock();
}

static void after_fork_parent(void)
{
	if (fork_locked)
		unlock();
}

/* The default mutex has no owner check: the child's thread, a copy of
 * the one that locked, unlocks it (what ThreadSanitizer also expects). */
static void after_fork_child(void)
{
	if (fork_locked)
		unlock();
#ifdef PATCH_ARCH
	if (mode == MODE_PATCHED && membarrier_init()) {
		/* One thread in the child: turn every site back into its
		 * jump without a sync, and stay with the mask test. */
		lock();
		size_t n = collect(1);
		if (n)
			(void)apply(n, 1);
		mode = MODE_MASK;
		mode_why = "membarrier lost at fork";
		unlock();
	}
#endif
}

__attribute__((constructor(101))) static void patch_atfork(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* ---- the mode, registration ----------------------------------------- */

static void patch_init(void)
{
#ifdef PATCH_ARCH
	const char *why = env_patch_off() ? "STRATA_PATCH=0" : membarrier_init();
	mode = why ? MODE_MASK : MODE_PATCHED;
	mode_why = why ? why : "aligned 8-byte stores, membarrier SYNC_CORE";
#else
	mode_why = "no static branches on this build (x86-64 only)";
#endif
	slog("tracepoints %s (%s)", mode == MODE_PATCHED ? "patched" : "mask",
	     mode_why);
}

STRATA_API const char *strata_sites_mode(void)
{
	pthread_once(&init_once, patch_init);
	return mode == MODE_PATCHED ? "patched" : "mask";
}

void patch_follow(void)
{
	if (!strata_load_relaxed(&nsites))
		return; /* nothing registered: nothing to patch */
	if (self) {
		strata_store_relaxed(&pending, 1);
		return;
	}
	lock();
	follow_locked(0);
	unlock();
}

STRATA_API int strata_sites_register(const struct strata_site *start,
				     const struct strata_site *stop)
{
	size_t n = (size_t)(stop - start);
	int ret = 0;

	if (!start || stop < start)
		return -EINVAL;
	pthread_once(&init_once, patch_init);
	lock();
	for (struct dso *d = dsos; d; d = d->next)
		if (d->start == start)
			goto out; /* another translation unit of that dso */
	if (nsites + n > cap) {
		size_t c = (nsites + n) * 2;
		struct poke *b = realloc(batch, c * sizeof(*b));
		if (b)
			batch = b;
		struct page *p = realloc(pages, 2 * c * sizeof(*p));
		if (p)
			pages = p;
		if (!b || !p) {
			ret = -ENOMEM;
			goto out;
		}
		cap = c;
	}
	struct dso *d = malloc(sizeof(*d));
	if (!d) {
		ret = -ENOMEM;
		goto out;
	}
	d->start = start;
	d->stop = stop;
	d->pg = NULL;
	d->npg = 0;
#ifdef PATCH_ARCH
	if (mode == MODE_PATCHED && dso_pages(d))
		slog("%zu tracepoint sites left unpatched: their pages' "
		     "protections are unknown (/proc/self/maps)", n);
#endif
	d->next = dsos;
	dsos = d;
	strata_store_relaxed(&nsites, nsites + n);
	follow_locked(0);
out:
	unlock();
	return ret;
}

STRATA_API void strata_sites_unregister(const struct strata_site *start)
{
	lock();
	for (struct dso **p = &dsos; *p; p = &(*p)->next) {
		if ((*p)->start == start) {
			struct dso *d = *p;
			*p = d->next;
			strata_store_relaxed(&nsites, nsites - (size_t)(d->stop - d->start));
			free(d->pg);
			free(d);
			break;
		}
	}
	unlock();
}
