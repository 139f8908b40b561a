/* SPDX-License-Identifier: MIT */
/* libstrata-locks.so: LD_PRELOAD wrappers of the pthread lock, semaphore and condition-variable calls that log contended acquisitions (docs/locks.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "locks.h"

#define LK_API __attribute__((visibility("default")))
#define LK_TLS __thread __attribute__((tls_model("initial-exec")))

/* The wrapped functions; a lock goes through as void *. Every function
 * here takes one pointer (two: the timed and condition-variable ones) and
 * returns an int, which the ABIs strata runs on pass alike whatever the
 * pointers' types. */
typedef int (*lk_fn)(void *);
typedef int (*lk_fn2)(void *, const void *);
#define LK_FN(f) ((lk_fn)(void (*)(void))(f))

enum lk_real {
	F_MLOCK, F_MTRY, F_MUNLOCK, F_RDLOCK, F_TRYRD, F_WRLOCK, F_TRYWR, F_RWUNLOCK,
	F_MTIMED, F_TIMEDRD, F_TIMEDWR, F_SPINLOCK, F_SPINTRY, F_SPINUNLOCK,
	F_SEMWAIT, F_SEMTRY, F_SEMTIMED, F_SEMPOST, F_CONDWAIT, F_CONDTIMED,
	F_MINIT, F_RWINIT, F_N
};

static const char *const lk_names[F_N] = {
	"pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_unlock",
	"pthread_rwlock_rdlock", "pthread_rwlock_tryrdlock", "pthread_rwlock_wrlock",
	"pthread_rwlock_trywrlock", "pthread_rwlock_unlock",
	"pthread_mutex_timedlock", "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock",
	"pthread_spin_lock", "pthread_spin_trylock", "pthread_spin_unlock",
	"sem_wait", "sem_trywait", "sem_timedwait", "sem_post",
	"pthread_cond_wait", "pthread_cond_timedwait",
	"pthread_mutex_init", "pthread_rwlock_init",
};

/*
 * Before the constructor has asked dlsym() for the next definitions
 * (libstrata's own constructor takes mutexes first: it is a dependency,
 * so it runs before ours), the wrappers call glibc's internal aliases,
 * bound by version: a lazy dlsym() from inside a wrapper could re-enter
 * it through the loader's allocations. Where the alias's version is not
 * known, the wrappers resolve lazily instead (docs/locks.md, "Design").
 */
#if defined(__GLIBC__) && defined(__x86_64__)
#define LK_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__GLIBC__) && defined(__aarch64__)
#define LK_GLIBC_BASE "GLIBC_2.17"
#endif

#ifdef LK_GLIBC_BASE
#define LK_GLIBC(local, name)                                                  \
	int local(void *l);                                                    \
	__asm__(".symver " #local ", " name "@" LK_GLIBC_BASE)
LK_GLIBC(lk_g_mlock, "__pthread_mutex_lock");
LK_GLIBC(lk_g_mtry, "__pthread_mutex_trylock");
LK_GLIBC(lk_g_munlock, "__pthread_mutex_unlock");
LK_GLIBC(lk_g_rdlock, "__pthread_rwlock_rdlock");
LK_GLIBC(lk_g_tryrd, "__pthread_rwlock_tryrdlock");
LK_GLIBC(lk_g_wrlock, "__pthread_rwlock_wrlock");
LK_GLIBC(lk_g_trywr, "__pthread_rwlock_trywrlock");
LK_GLIBC(lk_g_rwunlock, "__pthread_rwlock_unlock");
LK_GLIBC(lk_g_minit, "__pthread_mutex_init");
LK_GLIBC(lk_g_rwinit, "__pthread_rwlock_init");
/* the rest is resolved in the constructor (or lazily): the loader and
 * libstrata's start-up take only mutexes */
static lk_fn real[F_N] = {
	lk_g_mlock, lk_g_mtry, lk_g_munlock, lk_g_rdlock,
	lk_g_tryrd, lk_g_wrlock, lk_g_trywr, lk_g_rwunlock,
	[F_MINIT] = lk_g_minit, [F_RWINIT] = lk_g_rwinit,
};
#define LK_COND_VERSION "GLIBC_2.3.2" /* the condition variables since 2.3.2 */
#else
static lk_fn real[F_N];
#endif

/* The next definition of lk_names[f]; the condition variables by their
 * current version (an unversioned dlsym may find the 2.2.5 ones, whose
 * layout differs). */
static lk_fn lk_lookup(enum lk_real f)
{
#ifdef LK_COND_VERSION
	if (f == F_CONDWAIT || f == F_CONDTIMED) {
		void *p = dlvsym(RTLD_NEXT, lk_names[f], LK_COND_VERSION);
		if (p)
			return LK_FN(p);
	}
#endif
	return LK_FN(dlsym(RTLD_NEXT, lk_names[f]));
}

static inline lk_fn lk_real(enum lk_real f)
{
	if (strata_unlikely(!real[f]))
		real[f] = lk_lookup(f);
	return real[f];
}

static inline lk_fn2 lk_real2(enum lk_real f)
{
	return (lk_fn2)(void (*)(void))lk_real(f);
}

/* Contended acquisitions a thread may hold at once and still see released;
 * deeper nesting is counted, its release not logged (an open hold). */
#define LK_HELD 8

/*
 * Per thread, in static TLS (initial-exec: no allocation on first use, so
 * the wrappers are safe in signal handlers and before main).
 */
struct lk_thread {
	/* acquisitions per lock since their last lock:tally, direct-mapped
	 * by address (docs/locks.md, "Acquisitions per lock"); addr stored
	 * with release after n is reset, so that lk_fini, reading another
	 * thread's table, never adds one lock's count to another */
	struct lk_tally {
		uintptr_t addr;
		uint64_t n;
	} tally[LOCKS_TALLY_SLOTS];
	uint64_t acquisitions; /* every successful lock and trylock */
	uint64_t contended;    /* of which after a wait */
	uintptr_t held[LK_HELD];
	unsigned nheld;
	int busy;              /* inside a wrapper: nested calls (the
				* tracer's own locks, a signal handler)
				* go straight to glibc, untraced */
	bool keyed;            /* the exit destructor is armed */
	int slot;              /* its lk_live slot + 1, or 0 */
};

static LK_TLS struct lk_thread lk;
/* STRATA_LOCKS_CHAINS=all: every acquisition logs its call chain
 * (lock:acquire), not only the contended ones (docs/locks.md, "Call
 * chains"). Set once, in the constructor. */
static bool lk_chain_all;
static pthread_key_t lk_key;
#define LK_KEYS_STATIC 32 /* glibc's PTHREAD_KEY_2NDLEVEL_SIZE */
static bool lk_have_key;

/* The thread's running totals, so that the analysis knows the
 * uncontended acquisitions without an event for each. */
static void lk_log_count(struct lk_thread *t)
{
	STRATA_EVENT2(LOCKS_MAJOR, LOCKS_COUNT, t->acquisitions, t->contended);
}

/*
 * Threads alive, so that the process's exit (lk_fini) can log the totals
 * of those that never reach their own exit (lock:alive): a slot per
 * thread that acquired a lock, claimed with its first acquisition (with
 * the exit key, so that lk_thread_exit gives it back), a claim by CAS
 * on the tid. A full table: those threads' totals at the end are only
 * their last release's (docs/locks.md, "Limits").
 */
#define LK_LIVE 1024
static struct {
	uint32_t tid;           /* 0: free */
	struct lk_thread *t;    /* NULL until published (release; pairs with
				 * lk_fini's acquire) */
} lk_live[LK_LIVE];

static void lk_live_claim(struct lk_thread *t)
{
	uint32_t tid = (uint32_t)syscall(SYS_gettid); /* once per thread */
	for (int i = 0; i < LK_LIVE; i++) {
		uint32_t free_tid = 0;
		if (__atomic_compare_exchange_n(&lk_live[i].tid, &free_tid, tid, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			__atomic_store_n(&lk_live[i].t, t, __ATOMIC_RELEASE);
			t->slot = i + 1;
			return;
		}
	}
}

/* Entry e's count, logged (alive: read from another thread at the
 * process's exit, so partial) and reset. */
static void lk_tally_log(struct lk_tally *e, uintptr_t addr, uint64_t n, unsigned alive)
{
	if (n)
		STRATA_EVENT3(LOCKS_MAJOR, LOCKS_TALLY, addr, n, alive);
	__atomic_store_n(&e->n, 0, __ATOMIC_RELAXED);
}

static void lk_tally_flush(struct lk_thread *t)
{
	for (int i = 0; i < LOCKS_TALLY_SLOTS; i++)
		lk_tally_log(&t->tally[i], t->tally[i].addr, t->tally[i].n, 0);
}

static void lk_thread_exit(void *arg)
{
	struct lk_thread *t = arg;
	lk_tally_flush(t);
	lk_log_count(t);
	if (t->slot) { /* the pointer first: lk_fini skips an unpublished slot */
		__atomic_store_n(&lk_live[t->slot - 1].t, NULL, __ATOMIC_RELEASE);
		__atomic_store_n(&lk_live[t->slot - 1].tid, 0, __ATOMIC_RELEASE);
		t->slot = 0;
	}
}

/* An acquisition of l by this thread, inside a wrapper (busy): counted
 * overall and per lock. The per-lock count is one multiply and compare
 * in a 32-entry table; a lock that takes another's entry logs the
 * other's count (lock:tally), so a thread cycling through more locks
 * than entries pays about an event per acquisition, as a compact record
 * would. */
static inline void lk_acquired(struct lk_thread *t, const void *l)
{
	uintptr_t a = (uintptr_t)l;
	struct lk_tally *e = &t->tally[(uint64_t)(a >> 3) * 0x9E3779B97F4A7C15ull >> 59];
	if (strata_unlikely(e->addr != a)) {
		lk_tally_log(e, e->addr, e->n, 0);
		__atomic_store_n(&e->addr, a, __ATOMIC_RELEASE);
	}
	/* release (a plain store on x86): lk_fini, reading it from another
	 * thread, then sees this entry's address */
	__atomic_store_n(&e->n, e->n + 1, __ATOMIC_RELEASE);
	t->acquisitions++;
	if (strata_unlikely(!t->keyed) && lk_have_key) {
		/* a key below glibc's first level (32 keys): setspecific
		 * allocates nothing, safe in a signal handler */
		t->keyed = true;
		pthread_setspecific(lk_key, t);
		lk_live_claim(t);
	}
}

/*
 * Call chains of contended acquisitions (docs/locks.md, "Call chains"):
 * glibc's backtrace(), which unwinds with the binaries' own CFI
 * (.eh_frame, through libgcc), so chains are right in Debian's programs
 * built without frame pointers, which a frame-pointer walk would cut
 * short or misread. It costs about a microsecond, paid only by a thread
 * about to sleep on a lock. Its first call loads libgcc_s (malloc, the
 * loader's lock): the constructor makes it, not a signal handler.
 *
 * A chain is named by a hash of its frames; the first wait with a chain
 * logs it (lock:chain), later ones its id only. `seen` is the process's
 * dictionary: a claimed slot is never given back, so a chain is logged
 * once, or twice when two threads race to claim it (same id, same frames:
 * harmless); a full table logs every new chain again.
 */
#define LK_SEEN 4096
static uint64_t lk_seen[LK_SEEN];
static uintptr_t lk_self_lo, lk_self_hi; /* our code: its frames are left out */

static uint64_t lk_chain(void)
{
	void *fr[LOCKS_FRAMES + 4];
	uint64_t w[2 + LOCKS_FRAMES] = { 0 };
	int n = backtrace(fr, LOCKS_FRAMES + 4), k = 0;
	uint64_t h = 0xcbf29ce484222325ull;

	for (int i = 0; i < n && k < LOCKS_FRAMES; i++) {
		if ((uintptr_t)fr[i] >= lk_self_lo && (uintptr_t)fr[i] < lk_self_hi)
			continue; /* the wrapper's own frames */
		w[2 + k++] = (uintptr_t)fr[i];
		h = (h ^ (uintptr_t)fr[i]) * 0x100000001b3ull;
	}
	if (!k)
		return 0;
	h |= 1; /* 0 means no chain */
	for (unsigned i = (unsigned)(h % LK_SEEN), probe = 0; probe < 16;
	     i = (i + 1) % LK_SEEN, probe++) {
		/* relaxed: the slot orders nothing else (the chain's event
		 * is in the trace whoever logged it) */
		uint64_t cur = strata_load_relaxed(&lk_seen[i]);
		if (cur == h)
			return h; /* logged already */
		if (!cur && strata_cas_relaxed(&lk_seen[i], &cur, h))
			break;
		if (cur == h)
			return h;
	}
	w[0] = h;
	w[1] = (uint64_t)k;
	strata_log_words(LOCKS_MAJOR, LOCKS_CHAIN, w, 2 + LOCKS_FRAMES);
	return h;
}

/* An acquisition without a wait (the thread is busy, in a wrapper):
 * counted, and with STRATA_LOCKS_CHAINS=all logged with its chain. Off,
 * the flag is the only cost beside the count. */
static inline void lk_acquired_chain(struct lk_thread *t, void *l, unsigned kind)
{
	lk_acquired(t, l);
	if (strata_unlikely(lk_chain_all) && strata_major_enabled(LOCKS_MAJOR))
		STRATA_EVENT3(LOCKS_MAJOR, LOCKS_ACQUIRE, (uintptr_t)l, kind, lk_chain());
}

/* The waiting call: real[lock](l), or real[lock](l, arg) when arg (the
 * timed calls' deadline); a spin lock spins here, counted, on its try. */
static inline int lk_wait(void *l, enum lk_real try, enum lk_real lock, const void *arg,
			  unsigned kind)
{
	if (kind == LOCKS_KIND_SPIN) {
		uint64_t spins = 0;
		int r;
		/* what pthread_spin_lock does, with the count: no fairness
		 * is promised either way */
		while ((r = lk_real(try)(l)) == EBUSY) {
			spins++;
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		}
		STRATA_EVENT2(LOCKS_MAJOR, LOCKS_SPINS, (uintptr_t)l, spins);
		return r;
	}
	return arg ? lk_real2(lock)(l, arg) : lk_real(lock)(l);
}

/* Lock `l` with real[lock] (arg: its second argument, or NULL), trying
 * real[try] first. */
static inline int lk_acquire_arg(void *l, enum lk_real try, enum lk_real lock,
				 const void *arg, unsigned kind)
{
	struct lk_thread *t = &lk;
	int r;

	if (t->busy || !strata_major_enabled(LOCKS_MAJOR))
		return arg ? lk_real2(lock)(l, arg) : lk_real(lock)(l);
	t->busy = 1;
	/* Try first: only a failed try pays for timestamps. Every return
	 * of a try but EBUSY is what the lock returns in the same state
	 * (0, EOWNERDEAD, EAGAIN, EINVAL, ENOTRECOVERABLE); EBUSY on a lock
	 * the thread owns becomes the lock's own EDEADLK (or deadlock, as
	 * without the preload) by calling it. */
	r = lk_real(try)(l);
	if (r != EBUSY) {
		if (r == 0 || r == EOWNERDEAD)
			lk_acquired_chain(t, l, kind);
		t->busy = 0;
		return r;
	}
	STRATA_EVENT3(LOCKS_MAJOR, LOCKS_WAIT_BEGIN, (uintptr_t)l, kind, lk_chain());
	r = lk_wait(l, try, lock, arg, kind);
	STRATA_EVENT2(LOCKS_MAJOR, LOCKS_WAIT_END, (uintptr_t)l, (unsigned)r);
	if (r == 0 || r == EOWNERDEAD) {
		lk_acquired(t, l);
		t->contended++;
		if (t->nheld < LK_HELD)
			t->held[t->nheld++] = (uintptr_t)l;
	}
	t->busy = 0;
	return r;
}

static inline int lk_acquire(void *l, enum lk_real try, enum lk_real lock, unsigned kind)
{
	return lk_acquire_arg(l, try, lock, NULL, kind);
}

static inline int lk_try(void *l, enum lk_real try, unsigned kind)
{
	struct lk_thread *t = &lk;
	int r = lk_real(try)(l);
	if ((r == 0 || r == EOWNERDEAD) && !t->busy) {
		t->busy = 1;
		lk_acquired_chain(t, l, kind);
		t->busy = 0;
	}
	return r;
}

/* A contended acquisition of l by this thread, if it holds one, ends
 * here: logged before the lock is let go, so that the release precedes
 * the next owner's wait_end. */
static inline void lk_end_hold(struct lk_thread *t, void *l)
{
	for (unsigned i = t->nheld; i-- > 0 && !t->busy;) {
		if (t->held[i] != (uintptr_t)l)
			continue;
		t->busy = 1;
		t->held[i] = t->held[--t->nheld];
		STRATA_EVENT3(LOCKS_MAJOR, LOCKS_RELEASE, (uintptr_t)l, t->acquisitions,
			      t->contended);
		t->busy = 0;
		break;
	}
}

static inline int lk_release(void *l, enum lk_real unlock)
{
	lk_end_hold(&lk, l);
	return lk_real(unlock)(l);
}

/*
 * fork(): the atfork handlers (libstrata's own take and release its
 * locks around a fork) run inside it, untraced, as every nested call;
 * and the child's thread starts with no contended acquisition of its
 * own. It inherits copies of the locks its parent held, but the wait for
 * them was the parent's: a release of such a copy in the child, logged,
 * would end an acquisition the child never made (an orphan to the
 * analysis) while the parent's own release ends the real one.
 */
#ifdef LK_GLIBC_BASE
pid_t lk_g_fork(void);
__asm__(".symver lk_g_fork, __fork@" LK_GLIBC_BASE);
#define LK_REAL_FORK lk_g_fork
#else
#define LK_REAL_FORK lk_dl_fork
static pid_t lk_dl_fork(void)
{
	static pid_t (*f)(void);
	if (!f)
		f = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
	return f ? f() : (errno = ENOSYS, -1);
}
#endif

LK_API pid_t fork(void)
{
	struct lk_thread *t = &lk;
	int busy = t->busy;

	t->busy = 1;
	pid_t pid = LK_REAL_FORK();
	if (pid == 0) {
		t->nheld = 0;
		/* the counts per lock not yet logged are the parent's, which
		 * logs them: the child's start at 0 */
		memset(t->tally, 0, sizeof(t->tally));
		/* the other threads are not in the child: not alive at its
		 * exit; this one has a new tid */
		memset(lk_live, 0, sizeof(lk_live));
		if (t->slot) {
			t->slot = 0;
			lk_live_claim(t);
		}
	}
	t->busy = busy;
	return pid;
}

/*
 * An init names the lock by its call site (docs/locks.md, "Heap locks"):
 * the wrapper's return address is the first frame outside glibc and this
 * library, since glibc's own inits do not come through here. One event,
 * no unwinding: inits are rare, but some programs make a lock per object.
 */
static inline int lk_init_lock(void *l, const void *attr, enum lk_real init, unsigned kind,
			       void *site)
{
	struct lk_thread *t = &lk;
	int r = lk_real2(init)(l, attr);

	if (r || t->busy || !strata_major_enabled(LOCKS_MAJOR))
		return r;
	t->busy = 1;
	STRATA_EVENT3(LOCKS_MAJOR, LOCKS_INIT, (uintptr_t)l, kind, (uintptr_t)site);
	t->busy = 0;
	return r;
}

LK_API int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	return lk_init_lock(m, a, F_MINIT, LOCKS_KIND_MUTEX, __builtin_return_address(0));
}

LK_API int pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a)
{
	return lk_init_lock(l, a, F_RWINIT, LOCKS_KIND_RWLOCK_WRITE,
			    __builtin_return_address(0));
}

LK_API int pthread_mutex_lock(pthread_mutex_t *m)
{
	return lk_acquire(m, F_MTRY, F_MLOCK, LOCKS_KIND_MUTEX);
}

LK_API int pthread_mutex_trylock(pthread_mutex_t *m)
{
	return lk_try(m, F_MTRY, LOCKS_KIND_MUTEX);
}

LK_API int pthread_mutex_unlock(pthread_mutex_t *m)
{
	return lk_release(m, F_MUNLOCK);
}

LK_API int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	return lk_acquire(l, F_TRYRD, F_RDLOCK, LOCKS_KIND_RWLOCK_READ);
}

LK_API int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	return lk_acquire(l, F_TRYWR, F_WRLOCK, LOCKS_KIND_RWLOCK_WRITE);
}

LK_API int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	return lk_try(l, F_TRYRD, LOCKS_KIND_RWLOCK_READ);
}

LK_API int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	return lk_try(l, F_TRYWR, LOCKS_KIND_RWLOCK_WRITE);
}

LK_API int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	return lk_release(l, F_RWUNLOCK);
}

LK_API int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	return lk_acquire_arg(m, F_MTRY, F_MTIMED, abstime, LOCKS_KIND_MUTEX);
}

LK_API int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	return lk_acquire_arg(l, F_TRYRD, F_TIMEDRD, abstime, LOCKS_KIND_RWLOCK_READ);
}

LK_API int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	return lk_acquire_arg(l, F_TRYWR, F_TIMEDWR, abstime, LOCKS_KIND_RWLOCK_WRITE);
}

LK_API int pthread_spin_lock(pthread_spinlock_t *l)
{
	return lk_acquire((void *)l, F_SPINTRY, F_SPINLOCK, LOCKS_KIND_SPIN);
}

LK_API int pthread_spin_trylock(pthread_spinlock_t *l)
{
	return lk_try((void *)l, F_SPINTRY, LOCKS_KIND_SPIN);
}

LK_API int pthread_spin_unlock(pthread_spinlock_t *l)
{
	return lk_release((void *)l, F_SPINUNLOCK);
}

/*
 * Semaphores: -1 and errno, not an error number; no owner, so a wait is
 * logged (contended when the try found it at zero) but no hold. errno
 * is the call's own on return, whatever logging did.
 */
static int lk_sem(sem_t *s, enum lk_real lock, const struct timespec *abstime)
{
	struct lk_thread *t = &lk;

	if (t->busy || !strata_major_enabled(LOCKS_MAJOR))
		return abstime ? lk_real2(lock)(s, abstime) : lk_real(lock)(s);
	t->busy = 1;
	int r = lk_real(F_SEMTRY)(s);
	if (r == 0 || errno != EAGAIN) {
		int e = errno;
		if (r == 0)
			lk_acquired(t, s);
		t->busy = 0;
		errno = e;
		return r;
	}
	STRATA_EVENT3(LOCKS_MAJOR, LOCKS_WAIT_BEGIN, (uintptr_t)s, LOCKS_KIND_SEM, lk_chain());
	r = abstime ? lk_real2(lock)(s, abstime) : lk_real(lock)(s);
	int e = errno;
	STRATA_EVENT2(LOCKS_MAJOR, LOCKS_WAIT_END, (uintptr_t)s, r ? (unsigned)e : 0u);
	if (r == 0) {
		lk_acquired(t, s);
		t->contended++;
	}
	t->busy = 0;
	errno = e;
	return r;
}

LK_API int sem_wait(sem_t *s)
{
	return lk_sem(s, F_SEMWAIT, NULL);
}

LK_API int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	return lk_sem(s, F_SEMTIMED, abstime);
}

LK_API int sem_trywait(sem_t *s)
{
	int r = lk_real(F_SEMTRY)(s);
	if (r == 0 && !lk.busy) {
		lk.busy = 1;
		lk_acquired(&lk, s); /* r 0: errno is not the call's */
		lk.busy = 0;
	}
	return r;
}

/*
 * Condition variables release the mutex and take it again inside glibc,
 * not through the interposed calls: the hold of a contended acquisition
 * ends where the wait starts (logged as its release), and the mutex taken
 * again on return counts as an acquisition whose contention is not seen
 * (docs/locks.md, "Limits").
 */
static int lk_cond(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
	struct lk_thread *t = &lk;

	lk_end_hold(t, m);
	int r = abstime ? ((int (*)(void *, void *, const void *))(void (*)(void))
				   lk_real(F_CONDTIMED))(c, m, abstime)
			: lk_real2(F_CONDWAIT)(c, m);
	if ((r == 0 || r == ETIMEDOUT || r == EOWNERDEAD) && !t->busy) {
		int e = errno;
		t->busy = 1;
		lk_acquired(t, m); /* the mutex is held again */
		t->busy = 0;
		errno = e;
	}
	return r;
}

LK_API int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	return lk_cond(c, m, NULL);
}

LK_API int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				  const struct timespec *abstime)
{
	return lk_cond(c, m, abstime);
}

/* ---- descriptors, set-up ---------------------------------------------------- */

static const struct strata_field_desc lk_f_wait_begin[] = {
	{ "addr", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "kind", STRATA_T_U64, 0, 0 },
	{ "chain", STRATA_T_U64, 0, STRATA_F_HEX },
};
static const struct strata_field_desc lk_f_wait_end[] = {
	{ "addr", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "ret", STRATA_T_U64, 0, 0 },
};
static const struct strata_field_desc lk_f_release[] = {
	{ "addr", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "acquisitions", STRATA_T_U64, 0, 0 },
	{ "contended", STRATA_T_U64, 0, 0 },
};
static const struct strata_field_desc lk_f_chain[] = {
	{ "id", STRATA_T_U64, 0, STRATA_F_HEX },
	{ "n", STRATA_T_U64, 0, 0 },
	{ "frames", STRATA_T_PTR, LOCKS_FRAMES, STRATA_F_HEX },
};
static const struct strata_field_desc lk_f_spins[] = {
	{ "addr", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "spins", STRATA_T_U64, 0, 0 },
};
static const struct strata_field_desc lk_f_init[] = {
	{ "addr", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "kind", STRATA_T_U64, 0, 0 },
	{ "site", STRATA_T_PTR, 0, STRATA_F_HEX },
};
static const struct strata_field_desc lk_f_acquire[] = {
	{ "addr", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "kind", STRATA_T_U64, 0, 0 },
	{ "chain", STRATA_T_U64, 0, STRATA_F_HEX },
};
static const struct strata_field_desc lk_f_alive[] = {
	{ "tid", STRATA_T_U64, 0, 0 },
	{ "acquisitions", STRATA_T_U64, 0, 0 },
	{ "contended", STRATA_T_U64, 0, 0 },
};
static const struct strata_field_desc lk_f_tally[] = {
	{ "addr", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "n", STRATA_T_U64, 0, 0 },
	{ "alive", STRATA_T_U64, 0, 0 },
};
static const struct strata_field_desc lk_f_count[] = {
	{ "acquisitions", STRATA_T_U64, 0, 0 },
	{ "contended", STRATA_T_U64, 0, 0 },
};

#define LK_DESC(nm, minor_, kind_, f, desc)                                    \
	{ .subsystem = "lock", .name = nm, .major = LOCKS_MAJOR,               \
	  .kind = kind_, .minor = minor_,                                      \
	  .nfields = sizeof(f) / sizeof(f[0]), .fields = f, .description = desc }

static const struct strata_event_desc lk_d_wait_begin = LK_DESC(
	"wait_begin", LOCKS_WAIT_BEGIN, STRATA_EV_BEGIN, lk_f_wait_begin,
	"a try of the lock failed: the thread waits for it");
static const struct strata_event_desc lk_d_wait_end = LK_DESC(
	"wait_end", LOCKS_WAIT_END, STRATA_EV_END, lk_f_wait_end,
	"the waiting call returned ret (0: acquired)");
static const struct strata_event_desc lk_d_release = LK_DESC(
	"release", LOCKS_RELEASE, STRATA_EV_POINT, lk_f_release,
	"a contended acquisition released; the thread's totals so far");
static const struct strata_event_desc lk_d_count = LK_DESC(
	"count", LOCKS_COUNT, STRATA_EV_POINT, lk_f_count,
	"the thread's acquisitions at its exit");

static const struct strata_event_desc lk_d_spins = LK_DESC(
	"spins", LOCKS_SPINS, STRATA_EV_POINT, lk_f_spins,
	"a spin lock's wait spun this often");

static const struct strata_event_desc lk_d_chain = LK_DESC(
	"chain", LOCKS_CHAIN, STRATA_EV_POINT, lk_f_chain,
	"a call chain of contended acquisitions (n frames, innermost first)");

static const struct strata_event_desc lk_d_init = LK_DESC(
	"init", LOCKS_INIT, STRATA_EV_POINT, lk_f_init,
	"a lock was initialised; site: the return address of its init call");

static const struct strata_event_desc lk_d_alive = LK_DESC(
	"alive", LOCKS_ALIVE, STRATA_EV_POINT, lk_f_alive,
	"thread tid still runs at the process's exit: its totals then (partial)");

static const struct strata_event_desc lk_d_acquire = LK_DESC(
	"acquire", LOCKS_ACQUIRE, STRATA_EV_POINT, lk_f_acquire,
	"an acquisition without a wait, with its call chain (STRATA_LOCKS_CHAINS=all)");

static const struct strata_event_desc lk_d_tally = LK_DESC(
	"tally", LOCKS_TALLY, STRATA_EV_POINT, lk_f_tally,
	"the thread acquired lock addr n times since its last tally of it "
	"(alive 1: read at the process's exit, partial)");

static const struct strata_event_desc *const lk_events[] = {
	&lk_d_wait_begin, &lk_d_wait_end, &lk_d_release, &lk_d_count, &lk_d_spins,
	&lk_d_chain, &lk_d_init, &lk_d_alive, &lk_d_acquire, &lk_d_tally,
};
static const struct strata_subsys_desc lk_subsys = {
	"lock", LOCKS_MAJOR, "pthread lock contention (libstrata-locks.so)"
};

/* The executable segment of this library, whose frames a chain leaves
 * out (a range check per frame: dladdr() would search symbol tables). */
static int lk_find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t me = (uintptr_t)lk_chain;
	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo &&
		    me < lo + ph->p_memsz) {
			lk_self_lo = lo;
			lk_self_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

__attribute__((constructor)) static void lk_init(void)
{
	lk.busy = 1; /* the loader and the registry take locks of their own */
	const char *chains = getenv("STRATA_LOCKS_CHAINS");
	lk_chain_all = chains && !strcmp(chains, "all");
	/* only a first-level key (LK_KEYS_STATIC); else no exit totals:
	 * the release events still carry them */
	lk_have_key = pthread_key_create(&lk_key, lk_thread_exit) == 0 &&
		      lk_key < LK_KEYS_STATIC;
	for (int i = 0; i < F_N; i++) {
		lk_fn f = lk_lookup((enum lk_real)i);
		if (f)
			real[i] = f;
	}
	if (strata_register(&lk_subsys, lk_events, sizeof(lk_events) / sizeof(lk_events[0])))
		strata_disable_majors(STRATA_MAJOR_BIT(LOCKS_MAJOR));
	/* backtrace()'s first call loads libgcc_s: here, not in a wrapper */
	void *warm[2];
	backtrace(warm, 2);
	dl_iterate_phdr(lk_find_self, NULL);
	lk.busy = 0;
}

/* The main thread's totals: it runs no key destructor at exit. Before
 * libstrata's own destructor stops the trace (we depend on it). */
__attribute__((destructor)) static void lk_fini(void)
{
	/* the others still running: their counters read as they are now
	 * (relaxed; they may go on counting meanwhile, hence partial). A
	 * thread that exits meanwhile clears its pointer before it is gone;
	 * its static TLS block stays mapped (glibc caches thread stacks). */
	for (int i = 0; i < LK_LIVE; i++) {
		struct lk_thread *t = __atomic_load_n(&lk_live[i].t, __ATOMIC_ACQUIRE);
		uint32_t tid = __atomic_load_n(&lk_live[i].tid, __ATOMIC_RELAXED);
		if (!t || !tid || t == &lk)
			continue;
		STRATA_EVENT3(LOCKS_MAJOR, LOCKS_ALIVE, tid,
			      __atomic_load_n(&t->acquisitions, __ATOMIC_RELAXED),
			      __atomic_load_n(&t->contended, __ATOMIC_RELAXED));
		/* its counts per lock: an address read before its count
		 * (acquire, pairing with lk_acquired's release) and again
		 * after, unchanged, so the count is that lock's, reset or
		 * grown since but never another's */
		for (int k = 0; k < LOCKS_TALLY_SLOTS; k++) {
			struct lk_tally *e = &t->tally[k];
			uintptr_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
			uint64_t n = __atomic_load_n(&e->n, __ATOMIC_ACQUIRE);
			if (n && __atomic_load_n(&e->addr, __ATOMIC_RELAXED) == a)
				STRATA_EVENT3(LOCKS_MAJOR, LOCKS_TALLY, a, n, 1);
		}
	}
	lk_tally_flush(&lk);
	lk_log_count(&lk);
}
