/* SPDX-License-Identifier: MIT */
/* libstrata-locks.so: LD_PRELOAD wrappers of the pthread mutex calls that log contended acquisitions (docs/locks.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <strata/strata.h>

#include "locks.h"

#define LK_API __attribute__((visibility("default")))
#define LK_TLS __thread __attribute__((tls_model("initial-exec")))

typedef int (*mutex_fn)(pthread_mutex_t *);

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
int lk_glibc_lock(pthread_mutex_t *m);
int lk_glibc_trylock(pthread_mutex_t *m);
int lk_glibc_unlock(pthread_mutex_t *m);
__asm__(".symver lk_glibc_lock, __pthread_mutex_lock@" LK_GLIBC_BASE);
__asm__(".symver lk_glibc_trylock, __pthread_mutex_trylock@" LK_GLIBC_BASE);
__asm__(".symver lk_glibc_unlock, __pthread_mutex_unlock@" LK_GLIBC_BASE);
static mutex_fn real_lock = lk_glibc_lock;
static mutex_fn real_trylock = lk_glibc_trylock;
static mutex_fn real_unlock = lk_glibc_unlock;
#define LK_REAL(fn, name) (fn)
#else
static mutex_fn real_lock, real_trylock, real_unlock;
static mutex_fn lk_resolve(mutex_fn *slot, const char *name)
{
	if (!*slot)
		*slot = (mutex_fn)dlsym(RTLD_NEXT, name);
	return *slot;
}
#define LK_REAL(fn, name) lk_resolve(&(fn), name)
#endif

/* Contended acquisitions a thread may hold at once and still see released;
 * deeper nesting is counted, its release not logged (an open hold). */
#define LK_HELD 8

/*
 * Per thread, in static TLS (initial-exec: no allocation on first use, so
 * the wrappers are safe in signal handlers and before main).
 */
struct lk_thread {
	uint64_t acquisitions; /* every successful lock and trylock */
	uint64_t contended;    /* of which after a wait */
	uintptr_t held[LK_HELD];
	unsigned nheld;
	int busy;              /* inside a wrapper: nested calls (the
				* tracer's own locks, a signal handler)
				* go straight to glibc, untraced */
	bool keyed;            /* the exit destructor is armed */
};

static LK_TLS struct lk_thread lk;
static pthread_key_t lk_key;
static bool lk_have_key;

/* The thread's running totals, so that the analysis knows the
 * uncontended acquisitions without an event for each. */
static void lk_log_count(struct lk_thread *t)
{
	STRATA_EVENT2(LOCKS_MAJOR, LOCKS_COUNT, t->acquisitions, t->contended);
}

static void lk_thread_exit(void *arg)
{
	lk_log_count(arg);
}

static inline void lk_acquired(struct lk_thread *t)
{
	t->acquisitions++;
	if (strata_unlikely(!t->keyed) && lk_have_key) {
		/* key < PTHREAD_KEY_2NDLEVEL_SIZE: setspecific allocates
		 * nothing (created first thing in the constructor) */
		t->keyed = true;
		pthread_setspecific(lk_key, t);
	}
}

LK_API int pthread_mutex_lock(pthread_mutex_t *m)
{
	struct lk_thread *t = &lk;
	int r;

	if (t->busy || !strata_major_enabled(LOCKS_MAJOR))
		return LK_REAL(real_lock, "pthread_mutex_lock")(m);
	t->busy = 1;
	/* Try first: only a failed try pays for timestamps. Every return
	 * of trylock but EBUSY is what lock returns in the same state
	 * (0, EOWNERDEAD, EAGAIN, EINVAL, ENOTRECOVERABLE); EBUSY on an
	 * error-checking mutex the thread owns becomes lock's EDEADLK. */
	r = LK_REAL(real_trylock, "pthread_mutex_trylock")(m);
	if (r != EBUSY) {
		if (r == 0 || r == EOWNERDEAD)
			lk_acquired(t);
		t->busy = 0;
		return r;
	}
	STRATA_EVENT2(LOCKS_MAJOR, LOCKS_WAIT_BEGIN, (uintptr_t)m, LOCKS_KIND_MUTEX);
	r = LK_REAL(real_lock, "pthread_mutex_lock")(m);
	STRATA_EVENT2(LOCKS_MAJOR, LOCKS_WAIT_END, (uintptr_t)m, (unsigned)r);
	if (r == 0 || r == EOWNERDEAD) {
		lk_acquired(t);
		t->contended++;
		if (t->nheld < LK_HELD)
			t->held[t->nheld++] = (uintptr_t)m;
	}
	t->busy = 0;
	return r;
}

LK_API int pthread_mutex_trylock(pthread_mutex_t *m)
{
	int r = LK_REAL(real_trylock, "pthread_mutex_trylock")(m);
	if ((r == 0 || r == EOWNERDEAD) && !lk.busy)
		lk_acquired(&lk);
	return r;
}

LK_API int pthread_mutex_unlock(pthread_mutex_t *m)
{
	struct lk_thread *t = &lk;

	/* A contended acquisition of m ends here: the release is logged
	 * before the unlock so that it precedes the next owner's wait_end. */
	for (unsigned i = t->nheld; i-- > 0 && !t->busy;) {
		if (t->held[i] != (uintptr_t)m)
			continue;
		t->busy = 1;
		t->held[i] = t->held[--t->nheld];
		STRATA_EVENT3(LOCKS_MAJOR, LOCKS_RELEASE, (uintptr_t)m, t->acquisitions,
			      t->contended);
		t->busy = 0;
		break;
	}
	return LK_REAL(real_unlock, "pthread_mutex_unlock")(m);
}

/* ---- descriptors, set-up ---------------------------------------------------- */

static const struct strata_field_desc lk_f_wait_begin[] = {
	{ "addr", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "kind", STRATA_T_U64, 0, 0 },
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

static const struct strata_event_desc *const lk_events[] = {
	&lk_d_wait_begin, &lk_d_wait_end, &lk_d_release, &lk_d_count,
};
static const struct strata_subsys_desc lk_subsys = {
	"lock", LOCKS_MAJOR, "pthread lock contention (libstrata-locks.so)"
};

__attribute__((constructor)) static void lk_init(void)
{
	mutex_fn f;

	lk.busy = 1; /* the loader and the registry take locks of their own */
	lk_have_key = pthread_key_create(&lk_key, lk_thread_exit) == 0;
	if ((f = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_trylock")))
		real_trylock = f;
	if ((f = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_unlock")))
		real_unlock = f;
	if ((f = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_lock")))
		real_lock = f;
	if (strata_register(&lk_subsys, lk_events, sizeof(lk_events) / sizeof(lk_events[0])))
		strata_disable_majors(STRATA_MAJOR_BIT(LOCKS_MAJOR));
	lk.busy = 0;
}

/* The main thread's totals: it runs no key destructor at exit. Before
 * libstrata's own destructor stops the trace (we depend on it). */
__attribute__((destructor)) static void lk_fini(void)
{
	lk_log_count(&lk);
}
