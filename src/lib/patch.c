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
#define OP_JMP 0xe9
#define OP_INT3 0xcc
#ifdef PATCH_ARCH
static const uint8_t nop5[INSN_LEN] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
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

/* One site to rewrite in a batch: `insn` is what it becomes, `to` where
 * a thread caught on its int3 goes (the jump's target, or past it). */
struct poke {
	uint8_t *addr;
	uint8_t *to;
	const struct dso *d;
	uint8_t insn[INSN_LEN];
};

/*
 * Everything below is under patch_lock, but for `live`, `live_n` and
 * `trapped`, which the SIGTRAP handler reads (see trap()). `self`: this
 * thread holds the lock, so a nested call (a signal handler) only leaves
 * `pending` for the holder to run.
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
#ifdef PATCH_ARCH
static struct poke *live;   /* the batch being applied, for trap() */
static size_t live_n;
static int trapped;         /* trap() calls inside the batch */
static struct sigaction old_trap;
#endif

/*
 * Every load and store of code goes through these, in assembly: the
 * compiler must not merge, split or reorder them across the syncs, and
 * ThreadSanitizer, which instruments C accesses, has no shadow for the
 * text it would then record them in.
 */
#ifdef PATCH_ARCH
static inline uint8_t text_load(const uint8_t *p)
{
	uint8_t v;
	__asm__ __volatile__("movb %1, %0" : "=q"(v) : "m"(*p) : "memory");
	return v;
}

static inline void text_store(uint8_t *p, uint8_t v)
{
	__asm__ __volatile__("movb %1, %0" : "=m"(*p) : "q"(v) : "memory");
}

/* The 5 bytes at `p` are the no-op. */
static int text_is_nop(const uint8_t *p)
{
	for (int k = 0; k < INSN_LEN; k++)
		if (text_load(p + k) != nop5[k])
			return 0;
	return 1;
}
#endif

/* ---- the SIGTRAP handler (docs/patch.md, "A thread on the int3") ---- */

#ifdef PATCH_ARCH
/*
 * A thread executed the int3 of a site being patched: send it where the
 * site's new instruction would. Either old or new is correct, the jump
 * and the no-op differing only in whether the mask is tested. A thread
 * can take the trap before the last byte is written and enter here after
 * the batch is over: then the site holds a whole instruction again, and
 * the thread runs it from its start. Any other SIGTRAP goes to the
 * handler that was there before.
 *
 * `trapped` is raised before `live` is read, and the patcher clears
 * `live` before it waits for `trapped` to fall (both seq_cst, a Dekker
 * pair): either the patcher waits for this call, or this call sees no
 * batch; a batch is never reused under it.
 */
static void trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint8_t *pc = (uint8_t *)uc->uc_mcontext.gregs[REG_RIP] - 1;
	uint8_t *to = NULL;
	int saved = errno;

	strata_add_fetch_seq_cst(&trapped, 1);
	struct poke *b = strata_load_seq_cst(&live);
	size_t n = b ? strata_load_acquire(&live_n) : 0;
	for (size_t i = 0; i < n; i++)
		if (b[i].addr == pc)
			to = b[i].to;
	strata_add_fetch_seq_cst(&trapped, -1);

	if (!to && si->si_code == SI_KERNEL &&
	    (text_load(pc) == OP_JMP || text_is_nop(pc)))
		to = pc; /* the late case above: a site again, run it */
	if (to) {
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)to;
	} else if (old_trap.sa_flags & SA_SIGINFO) {
		old_trap.sa_sigaction(sig, si, ucv);
	} else if (old_trap.sa_handler != SIG_DFL &&
		   old_trap.sa_handler != SIG_IGN) {
		old_trap.sa_handler(sig);
	} else {
		/* The default: the trap kills, as without us. Blocked in
		 * here, it is delivered on return. */
		signal(SIGTRAP, SIG_DFL);
		raise(SIGTRAP);
	}
	errno = saved;
}

/* Ours, again if the program installed its own since (it is chained). */
static int trap_install(void)
{
	struct sigaction sa, cur;

	if (sigaction(SIGTRAP, NULL, &cur))
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == trap)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = trap;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	old_trap = cur;
	return sigaction(SIGTRAP, &sa, NULL) ? -errno : 0;
}

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
		size_t m = site_pages(batch[i].addr, pages + k);
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
 * text_poke_bp's order, each step for the whole batch then one sync:
 * 1. an int3 on each first byte: a core that fetches the site from now
 *    on traps instead of running a mix of old and new bytes;
 * 2. the 4 tail bytes, which no core can run any more (they are behind
 *    the int3 for everyone, once step 1's sync is done);
 * 3. the new first byte: the whole new instruction appears at once.
 * The last sync makes sure no core still holds the int3. `single`: the
 * process has one thread (a fork child), nothing to sync.
 */
static int apply(size_t n, int single)
{
	size_t np = batch_pages(n);
	int ret;

	if (!single && (ret = trap_install()))
		return ret;
	ret = pages_protect(pages, np, PROT_WRITE);
	if (ret)
		goto restore;
	strata_store_release(&live_n, n);
	strata_store_seq_cst(&live, batch); /* trap()'s pair */
	for (size_t i = 0; i < n; i++)
		text_store(batch[i].addr, OP_INT3);
	if ((ret = sync_or_none(single)))
		goto unsafe;
	for (size_t i = 0; i < n; i++)
		for (int k = 1; k < INSN_LEN; k++)
			text_store(batch[i].addr + k, batch[i].insn[k]);
	if ((ret = sync_or_none(single)))
		goto unsafe;
	for (size_t i = 0; i < n; i++)
		text_store(batch[i].addr, batch[i].insn[0]);
	ret = sync_or_none(single);
unsafe:
	/* A failed sync after step 1 leaves int3s that trap() still serves
	 * (a correct, slow site): membarrier does not fail once registered,
	 * short of the kernel running out of memory. */
	strata_store_seq_cst(&live, NULL);
	while (strata_load_seq_cst(&trapped))
		sched_yield(); /* trap() runs a few loads and returns */
	if (ret)
		strata_store_seq_cst(&live, batch);
restore:
	(void)pages_protect(pages, np, 0);
	return ret;
}

/* Each registered site that is not what control_site_wanted() says
 * (or not a jump, with `all_on`). */
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
			int on = all_on || control_site_wanted(s->major, flag);
			int is_on = text_load(at) == OP_JMP;

			if (!is_on && !text_is_nop(at))
				continue; /* not ours to touch (never happens) */
			if (on == is_on)
				continue;
			struct poke *p = &batch[n++];
			p->addr = at;
			p->d = d;
			if (on) {
				int32_t rel = (int32_t)(to - (at + INSN_LEN));
				p->insn[0] = OP_JMP;
				memcpy(p->insn + 1, &rel, 4);
				p->to = to;
			} else {
				memcpy(p->insn, nop5, INSN_LEN);
				p->to = at + INSN_LEN;
			}
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
	if (!why && trap_install())
		why = "SIGTRAP handler refused";
	mode = why ? MODE_MASK : MODE_PATCHED;
	mode_why = why ? why : "membarrier SYNC_CORE, int3";
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
