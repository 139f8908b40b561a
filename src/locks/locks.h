/* SPDX-License-Identifier: MIT */
/* The lock events libstrata-locks.so writes and `strata locks` reads (docs/locks.md). */
#ifndef STRATA_LOCKS_EVENTS_H
#define STRATA_LOCKS_EVENTS_H

/*
 * One major class of its own, the highest a program may use (strata.h:
 * 62 is STRATA_MAJOR_MAX), so that it rarely meets a program's own DSL
 * numbering; a clash is refused by strata_register() with -EEXIST and
 * the preload then logs nothing (docs/locks.md, "Limits").
 */
#define LOCKS_MAJOR 62

enum locks_minor {
	LOCKS_WAIT_BEGIN = 1, /* addr, kind, chain: a try failed, the thread
			       * waits; chain: the id of its lock:chain */
	LOCKS_WAIT_END = 2,   /* addr, ret: the waiting call returned */
	LOCKS_RELEASE = 3,    /* addr: a contended acquisition released */
	LOCKS_COUNT = 4,      /* acquisitions, contended: this thread's
			       * running totals (all locks together) */
	LOCKS_SPINS = 5,      /* addr, spins: a spin lock's wait spun this
			       * often (just before its wait_end) */
	LOCKS_CHAIN = 6,      /* id, n, frames[LOCKS_FRAMES]: a call chain,
			       * once per process before its first use */
	LOCKS_INIT = 7,       /* addr, kind, site: pthread_mutex_init or
			       * pthread_rwlock_init returned 0; site: its
			       * caller (the init's return address) */
	LOCKS_ALIVE = 8,      /* tid, acquisitions, contended: a thread still
			       * running at the process's exit, its totals
			       * then, logged by the exiting thread */
	LOCKS_ACQUIRE = 9,    /* addr, kind, chain: an uncontended
			       * acquisition, logged only with
			       * STRATA_LOCKS_CHAINS=all (its call chain) */
	LOCKS_TALLY = 10,     /* addr, n, alive: this thread acquired the
			       * lock n times since its last tally of it
			       * (an entry of its table evicted, or its
			       * exit); alive 1: read by the process's exit
			       * from a thread still running (partial) */
};

/* Entries of a thread's table of acquisitions per lock (a power of 2). */
#define LOCKS_TALLY_SLOTS 32

/* Return addresses kept per call chain, innermost (the lock's caller)
 * first. */
#define LOCKS_FRAMES 16

/* What kind of lock an address is (wait_begin's `kind`). */
enum locks_kind {
	LOCKS_KIND_MUTEX = 1,
	LOCKS_KIND_RWLOCK_READ = 2,
	LOCKS_KIND_RWLOCK_WRITE = 3,
	LOCKS_KIND_SPIN = 4,      /* pthread_spinlock_t */
	LOCKS_KIND_SEM = 5,       /* sem_t: no owner, so no hold time */
};

#endif /* STRATA_LOCKS_EVENTS_H */
