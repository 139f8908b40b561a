/* SPDX-License-Identifier: MIT */
/* Lock contention per lock address from libstrata-locks.so's lock:* events (docs/locks.md). */
#ifndef STRATA_ANALYSIS_LOCKS_H
#define STRATA_ANALYSIS_LOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include <strata/reader.h>

#define LOCK_FRAMES 16 /* as the preload's LOCKS_FRAMES */
#define LOCK_KINDS 6   /* wait kinds 1..5, and 0: unknown */
#define LOCK_CAUSES 4  /* causes of the longest hold's switches kept */

/* Why a holder was switched out (with -k sched): blocked, in which
 * system call (with -k syscalls), or preempted, by whom. */
struct lock_cause {
	bool blocked;
	uint32_t sys1;  /* blocked: its system call's number + 1; 0: none seen */
	uint32_t next;  /* preempted: the thread that ran next on its CPU */
	uint64_t n;     /* switches out for this cause */
};

/* A call chain of contended acquisitions (lock:chain): return addresses,
 * innermost (the lock call's caller) first. */
struct lock_chain {
	uint32_t pid;
	uint64_t id;
	unsigned n;
	uint64_t frames[LOCK_FRAMES];
};

/* The waits of one lock from one chain. */
struct lock_chain_use {
	uint64_t id; /* 0: the trace has no chain for them */
	uint64_t waits, wait_total;
};

/* One lock: an address in one process. Times in ns. */
struct lock_stats {
	uint32_t pid;
	uint64_t addr;
	unsigned kind;               /* wait_begin's: 1 mutex, 2 rwlock read,
				      * 3 rwlock write, 4 spin, 5 semaphore
				      * (the last one seen) */
	/* the waits by what they waited for (LOCK_KINDS: index kind, 0 for
	 * an unknown one): an rwlock's reads and writes apart */
	struct lock_kind_stats {
		uint64_t waits, contended, wait_total;
	} by_kind[LOCK_KINDS];
	uint64_t contended;          /* waits that acquired it */
	uint64_t acquisitions;       /* every acquisition, contended or not
				      * (lock:tally; 0 in traces without) */
	bool acquisitions_partial;   /* some counted by the process's exit
				      * from a thread still running, or a
				      * wait still open: a bound, not exact */
	uint64_t failed;             /* waits that returned an error */
	uint64_t wait_total, wait_max; /* open waits' time so far included */
	uint64_t open_waits;         /* waits still open at the trace's end
				      * (a hang, a deadlock): the lock's
				      * totals are then partial, lower bounds */
	uint64_t open_wait_total;    /* their time, to the trace's last event */
	uint64_t spins;              /* spin locks: turns of the waits' loops */
	uint64_t futex_total;        /* with -k syscalls: futex calls' time
				      * inside its waits (a cross-check) */
	uint64_t holds;              /* contended acquisitions released */
	uint64_t hold_total, hold_max;
	/* with -k sched: the longest hold's holder and its switches out
	 * meanwhile (K42: why a hold was long) */
	uint32_t max_hold_tid;
	uint64_t max_hold_preempted, max_hold_blocked;
	/* the causes of those switches, most first (K42: what the holder
	 * waited for, who ran instead); other: the rest, and those the
	 * analysis no longer had (more than 32 switches in the hold) */
	struct lock_cause max_hold_causes[LOCK_CAUSES];
	unsigned max_hold_ncauses;
	uint64_t max_hold_other;
	uint64_t init_site;          /* lock:init: the return address of the
				      * init call before its first wait, or 0 */
	uint32_t *tids;              /* threads that waited for it, sorted */
	unsigned ntids;
	struct lock_chain_use *chains; /* most wait first */
	unsigned nchains;
	/* STRATA_LOCKS_CHAINS=all: acquisitions without a wait (lock:acquire)
	 * and their chains (`waits` counts the acquisitions), most first */
	uint64_t acquired;
	struct lock_chain_use *acq_chains;
	unsigned nacq_chains;
};

/* One thread's totals (all its locks). */
struct lock_thread {
	uint32_t tid, pid;
	uint64_t acquisitions, contended;
	bool partial;       /* no lock:count of its own exit: it still ran
			     * at the end, its totals those of lock:alive or
			     * of its last release (lower bounds) */
	bool alive;         /* lock:alive: running at its process's exit */
	uint64_t wait_addr; /* waiting at the end: that lock, else 0 */
	uint64_t wait_ns;   /* that wait so far (to the trace's last event) */
	unsigned holding;   /* contended acquisitions it still held */
};

struct lock_result {
	struct lock_stats *locks;
	size_t nlocks;
	/* over every thread: its last lock:release or lock:count totals
	 * (uncontended acquisitions are only counted, docs/locks.md) */
	uint64_t acquisitions, contended;
	unsigned nthreads;
	uint64_t open_waits;         /* wait_begin with no wait_end */
	uint64_t open_holds;         /* contended acquisitions never released */
	uint64_t orphans;            /* wait_end or release with nothing open */
	bool have_futex, have_sched; /* kernel events recorded beside (-k) */
	bool have_syscalls;          /* system calls among them (-k syscalls) */
	bool have_tally;             /* acquisitions per lock (lock:tally) */
	struct lock_chain *chains;   /* every chain the processes logged */
	size_t nchains;
	struct lock_thread *threads; /* with lock:* events, by pid then tid */
	size_t nthreads_listed;
	struct an_names *names;      /* the threads' names (state dump, kernel) */
};

/* Thread tid's name, or NULL; a process's is its main thread's (pid). */
const char *lock_name_of(const struct lock_result *r, uint32_t tid);

/* The chain `id` of process pid, or NULL. */
const struct lock_chain *lock_chain_find(const struct lock_result *r, uint32_t pid,
					 uint64_t id);

enum lock_sort { LOCK_SORT_WAIT, LOCK_SORT_COUNT, LOCK_SORT_MAX, LOCK_SORT_HOLD, LOCK_SORT_SPIN,
		 LOCK_SORT_ACQ };

/* Read every lock:* event of the trace (pid: only that process; 0 all).
 * Returns 0, -ENOENT (no lock:wait_begin class: the trace was not taken
 * with libstrata-locks.so), -ENOMEM. */
int lock_compute(struct strata_trace *t, uint32_t pid, struct lock_result **out);
/* Most first by `by`, then by address. */
void lock_sort(struct lock_result *r, enum lock_sort by);
void lock_free(struct lock_result *r); /* NULL ok */

#endif /* STRATA_ANALYSIS_LOCKS_H */
