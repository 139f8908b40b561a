/* SPDX-License-Identifier: MIT */
/* Analyses of the super-trace on the reader's public API: time breakdown, latency (docs/kernel.md). */
#ifndef STRATA_ANALYSIS_H
#define STRATA_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include <strata/reader.h>

/* ---- what the analyses share (util.c) --------------------------------------- */

/* Objects by tid (open addressing), and all of them in the order made. */
struct an_tidmap {
	uint32_t *key;
	void **val;
	size_t cap;  /* slots: a power of two, or 0 */
	void **all;  /* all[0 .. n): the objects, in the order made */
	size_t n, allcap;
};

void *an_tidmap_find(const struct an_tidmap *m, uint32_t tid); /* or NULL */
/* The object of tid; a new one is calloc(1, size) and *made says so.
 * NULL: out of memory. */
void *an_tidmap_get(struct an_tidmap *m, uint32_t tid, size_t size, bool *made);
void an_tidmap_fini(struct an_tidmap *m); /* frees the objects too */

/* The length of [a, b) inside the window [from, to]. */
static inline uint64_t an_clip(uint64_t from, uint64_t to, uint64_t a, uint64_t b)
{
	if (a < from)
		a = from;
	if (b > to)
		b = to;
	return b > a ? b - a : 0;
}

/* A 64-bit key from a decoded field value: integers as they are, text and
 * arrays hashed (FNV-1a). */
uint64_t an_value_key(const struct strata_value *v);
/* A 64-bit key spread over all its bits (murmur3's finalizer): the hash
 * of the analyses' open-addressing maps, which mask its low bits. */
static inline uint64_t an_mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}
/* Whether sub-trace `subtrace` is the kernel's (env domain "kernel"). */
bool an_is_kernel(const struct strata_trace *t, unsigned subtrace);
/* Which streams are the kernel's, into kernel[nstreams] (or NULL); returns
 * the number of CPUs they cover (0: no kernel stream). */
unsigned an_kernel_streams(const struct strata_trace *t, bool *kernel);

/*
 * A scoped kernel trace (record -k COMMAND, ktrace -p) lists in its env
 * the threads set_event_pid was given (scope_tids); event-fork adds what
 * they create. The kernel records a switch only when its prev or next is
 * in scope, so a thread outside it is seen only when it meets one inside
 * (docs/kernel.md, "Missing switches").
 */
struct an_scope {
	bool scoped;    /* the trace says it has a scope */
	uint32_t *tids; /* sorted; free() it */
	size_t n;
};
/* Read it (kernel: an_kernel_streams()'s flags). 0, or -ENOMEM. */
int an_scope_read(struct strata_trace *t, const bool *kernel, struct an_scope *out);
bool an_scope_has(const struct an_scope *sc, uint32_t tid);
/* "CLASS has no field 'F' (its fields: a, b)" into err[errlen]. */
void an_err_no_field(char *err, size_t errlen, const struct strata_event_class *c,
		     const char *field);

/*
 * Thread states; every tick of the window is in exactly one (so they add
 * up to the wall time). The on-CPU states of the threads that ran on a CPU
 * and that CPU's idle and unknown time add up to the wall time too: a CPU
 * runs one thread at a time, and a thread whose switch-out the trace lacks
 * (outside a -c/-p recording's scope, or lost) stops running at the last
 * event that shows it there (docs/kernel.md, "Missing switches").
 */
enum bd_state {
	BD_USER,     /* on a CPU outside system calls and interrupt handlers:
		      * user code, and the page faults and other kernel entries
		      * that no event times ("user+trap"; all on-CPU time but
		      * handlers when system calls were not traced: "running") */
	BD_SYS,      /* on a CPU, inside a system call */
	BD_RUNNABLE, /* ready, waiting for a CPU: preempted or woken */
	BD_SLEEP,    /* blocked, interruptible (S, also I, T, P) */
	BD_IO,       /* blocked, uninterruptible (D): I/O wait */
	BD_IRQ,      /* on a CPU, but in interrupt or softirq handlers */
	BD_UNKNOWN,  /* alive, but the trace lost track of it: a switch or a
		      * wakeup of it is missing from the trace */
	BD_UNSEEN,   /* before its first event, or after it exited */
	BD_NSTATES,
};

#define BD_INSIDE 4 /* event types kept per system call; the rest: in_other */

/* Events of the thread between its sys_enter and sys_exit (switches away
 * while blocked, wakeups it issues, ...), K42's fine-grained breakdown. */
struct bd_inside {
	const struct strata_event_class *cls;
	uint64_t count;
};

struct bd_syscall {
	uint32_t nr;
	uint64_t count;   /* calls that entered and ended in the window */
	uint64_t time;    /* ticks from sys_enter to sys_exit (or the thread's
			   * end, for exit and exit_group), in the window */
	uint64_t oncpu;   /* of which on a CPU */
	struct bd_inside in[BD_INSIDE]; /* most frequent first at the end */
	uint64_t in_other;
};

struct bd_thread {
	uint32_t pid, tid;
	char comm[17];
	uint64_t t[BD_NSTATES];
	uint64_t *cpu;     /* on-CPU ticks per CPU [ncpus] */
	uint64_t switches_in, preempted, wakeups, user_events;
	uint64_t faults_user, faults_kernel; /* exceptions:page_fault_* */
	uint64_t lost;     /* times the trace lost track of it */
	bool created;      /* forked inside the trace (before it: unseen) */
	bool exited;       /* exited inside the trace (after it: unseen) */
	bool outside;      /* a scoped trace (record -k CMD, ktrace -p) and the
			    * thread not in it: its switches to other outside
			    * threads were never recorded */
	bool partial;      /* t[BD_UNKNOWN] > 0 or outside: only partly seen */
	/* The kernel's split of t[BD_USER] (user+trap), from its user and
	 * system tick samples over the thread's life (strata:thread_times):
	 * only for a thread seen whole over the whole trace. Statistical:
	 * right to a few ticks per thread. */
	bool split;
	uint64_t user, trap;       /* ticks: user + trap = t[BD_USER] */
	uint64_t kutime, kstime;   /* ns: the kernel's samples over it (not
				    * scaled: their sum is not the runtime) */
	struct bd_syscall *sc;
	unsigned nsc;
	/* running state, internal */
	int state;
	uint64_t since;
	int on;          /* CPU it runs on, -1 */
	bool in_sys, sys_open, sys_seen, exiting, in_scope;
	uint8_t kt_have;           /* BD_KT_* */
	uint64_t kt_base[2], kt_end[2]; /* utime, stime ns */
	uint32_t sys_nr;
	uint64_t sys_enter;
};

enum { BD_KT_BASE = 1, BD_KT_END = 2, BD_KT_TWICE = 4, BD_KT_WHOLE = 8 };

struct bd_cpu {
	uint64_t busy, idle, unknown; /* add up to the wall time; busy is
				       * the on-CPU time of its threads */
	uint64_t irq, softirq;        /* inside busy/idle: handler time */
	uint64_t lost;                /* times it lost track of its thread */
	/* internal */
	int64_t cur;    /* current tid, 0 idle, -1 unknown */
	uint64_t since; /* cur's since */
	uint64_t last;  /* the last event that showed cur there */
	uint64_t irq_at, softirq_at;
	bool in_irq, in_softirq;
	int depth; /* nested handlers (irq, vectors, softirq) */
};

/* Called by bd_compute for each stretch of a thread's states, in time order
 * per thread: th was in `state` from tick `from` to `to` (from < to). A
 * state the machine learns late (a lost wakeup makes it BD_UNKNOWN, a
 * thread first seen leaving a system call was in it) is the one reported:
 * a stretch is reported when it ends. The viewer's thread rows use it. */
typedef void (*bd_state_fn)(const struct bd_thread *th, int state, uint64_t from,
			    uint64_t to, void *arg);

struct bd_options {
	uint64_t from, to; /* window in ticks; 0 and UINT64_MAX: the trace */
	bd_state_fn on_state; /* NULL: none */
	void *arg;            /* on_state's and on_record's */
	/* strata's own records, in the pass's merged order, to a caller that
	 * wants them without a pass of its own (strata view's names); and
	 * NULL every 4096 events, so that it can stop the pass: a non-zero
	 * return ends it, and bd_compute returns that. NULL: none. */
	int (*on_record)(void *arg, const struct strata_event *ev);
};

struct bd_result {
	uint64_t begin, end;  /* the window, ticks */
	bool have_sched, have_syscalls, have_faults, have_irq;
	bool scoped;          /* the kernel recorded some threads' switches only */
	bool have_split;      /* some thread has the kernel's split (bd_thread) */
	unsigned nthreads, ncpus;
	struct bd_thread *threads; /* sorted by pid, tid */
	struct bd_cpu *cpus;
	uint64_t kernel_events, user_events;
};

/* Compute the breakdown over the whole trace, counting the window only.
 * Returns 0, -ENOENT (no sched_switch event up to the window's end: record
 * with -k sched), -ENOMEM. */
int bd_compute(struct strata_trace *t, const struct bd_options *o,
	       struct bd_result **out);
void bd_free(struct bd_result *r); /* NULL ok */

/*
 * The same machines fed one event at a time, for a trace read while it is
 * written (strata view --live: docs/view.md, "Live"): the events of the
 * whole trace, strata's own records among them, in the reader's merged
 * order, through bd_feed_event, a window after another. Only on_state
 * (and from, to) of the options are used: the stretches are reported as
 * bd_compute reports them. bd_feed_create returns 0, -ENOENT (no kernel
 * stream yet) or -ENOMEM.
 */
struct bd_feed;
int bd_feed_create(struct strata_trace *t, const struct bd_options *o, struct bd_feed **out);
/* t grew streams, CPUs or classes (or is another handle of the same
 * trace): before its new events are fed. 0 or -ENOMEM. */
int bd_feed_adopt(struct bd_feed *f, struct strata_trace *t);
/* 0 or -ENOMEM (then every later call too). */
int bd_feed_event(struct bd_feed *f, const struct strata_event *ev);
/* Each thread's state still open, reported as the stretch from its start
 * to `to`, as if it ended there: the same state is reported again, from
 * the same start, when it ends (or once more by the next call), and a
 * state the machine learns late (analysis.h: bd_state_fn) is reported
 * for that start in its place. Not seen threads are not reported. */
void bd_feed_open(const struct bd_feed *f, uint64_t to);
void bd_feed_destroy(struct bd_feed *f); /* NULL ok */
/* The name of system call `nr` from the kernel sub-trace's env, or NULL. */
const char *bd_syscall_name(struct strata_trace *t, uint32_t nr);
/* A sched_switch prev_state as the letters ps(1) shows ("S", "D", "R+",
 * "Z"...), into buf (at least 8 bytes); returns buf. */
const char *bd_state_letters(int64_t prev_state, char *buf);

/* Threads summed per process (pid) or per command (comm). */
enum bd_by { BD_BY_PROCESS = 1, BD_BY_COMMAND };

struct bd_group {
	uint32_t pid;       /* BD_BY_PROCESS; the lowest pid for a command */
	char comm[17];      /* the main thread's, or the first named one's */
	unsigned nthreads, npartial, nprocs;
	uint64_t t[BD_NSTATES];      /* summed over its threads */
	uint64_t faults_user, faults_kernel, switches_in, preempted;
	bool split;    /* the kernel's split of t[BD_USER], as bd_thread's */
	uint64_t trap; /* ticks */
	/* internal */
	uint64_t kutime, kstime;
	bool notwhole;
};

/* Groups of r's threads, most on-CPU time first; *out freed with free().
 * Returns the number of groups, or -ENOMEM. */
int bd_group(const struct bd_result *r, enum bd_by by, struct bd_group **out);

/* ---- what the trace lost ---------------------------------------------------
 *
 * Every analysis says when the trace it reads lost events: its counts,
 * times and states then miss what the lost events would have shown. The
 * numbers are the streams' own (format.md §2: events_discarded of the last
 * packet, packet_seq_num gaps), over the whole trace.
 */
struct an_loss {
	uint64_t kernel_events, user_events;   /* discarded by the writers */
	uint64_t kernel_packets, user_packets; /* packets missing (seq gaps) */
	unsigned kernel_streams, user_streams; /* streams that lost any */
};

void an_loss_get(struct strata_trace *t, struct an_loss *out);
static inline int an_loss_any(const struct an_loss *l)
{
	return l->kernel_events || l->user_events || l->kernel_packets || l->user_packets;
}

/* ---- the switch out of idle that ftrace did not record -------------------
 *
 * Some kernels never record the sched_switch that takes a CPU out of its
 * idle task: on this project's 6.18 Firecracker guest, CPU 1 records every
 * switch *to* idle and none *from* it, in a plain tracefs instance with no
 * strata involved (docs/kernel.md). A CPU that a recorded switch left idle
 * is then known to run thread T at T's first event there (kernel or user
 * space: user events carry their CPU); the switch happened after the idle
 * task's last event on that CPU (the interrupt that woke T) and before T's
 * first. The analyses take the former: the idle task's last event is
 * followed by nothing but the scheduler's return to T, a microsecond here.
 */
struct idle_cpu {
	uint64_t last; /* time of the idle task's last event */
	bool idle;     /* a recorded switch left the CPU idle */
};

/* Feed every event in time order; `is_switch` with sched_switch's prev and
 * next pids. True when `ev` reveals an unrecorded switch out of idle on
 * its CPU: *at is then the inferred time of that switch. */
bool idle_infer(struct idle_cpu *cpus, unsigned ncpus, const struct strata_event *ev,
		bool is_switch, int64_t prev, int64_t next, uint64_t *at);

/* ---- latency: from an event to the next matching one --------------------- */

struct lat_options {
	const char *begin, *end; /* event name globs */
	bool same_tid;           /* pair only events of the same thread */
	const char *by;          /* pair only events with the same value of
				  * this field (a job id, a request), any
				  * thread; NULL: not by a field */
	uint64_t wfrom, wto;     /* window, ticks; 0: its edge */
	char *err;               /* why -EINVAL, one line (optional) */
	size_t errlen;
};

struct lat_result {
	uint64_t n;               /* pairs */
	uint64_t total;           /* ns, summed */
	uint64_t unmatched_begins; /* a begin closed by no end: replaced by a
				   * newer begin of its key, or open at the end */
	uint64_t unmatched_ends;  /* an end with no begin open for its key */
	uint64_t *ns;             /* sorted latencies, n of them */
};

/* Each `begin` event opens a pair for its key (its thread with same_tid,
 * the value of `by`, both, or one global key), closed by the next `end`
 * event of that key; an event that matches both globs closes, then opens.
 * Returns 0, -EINVAL (no class matches a glob, or a matching class has no
 * field `by`: o->err says which), -ENOMEM. */
int lat_compute(struct strata_trace *t, const struct lat_options *o,
		struct lat_result *out);
void lat_fini(struct lat_result *r);
/* The p-quantile (0..1) of r's latencies, nearest rank; 0 when empty. */
uint64_t lat_quantile(const uint64_t *sorted, uint64_t n, double p);


/* ---- scheduling latency per task (perf sched latency) ---------------------
 *
 * The delay from a task's wakeup (sched_wakeup, sched_wakeup_new) or its
 * preemption (switched out runnable) to its next switch in: how long it
 * waited for a CPU. A switch in that the trace lacks
 * (analysis.h, "the switch out of idle") is inferred as the breakdown does;
 * a wait whose end is not known otherwise is not counted.
 */
struct sl_task {
	uint32_t pid, tid;
	char comm[17];
	uint64_t runtime;        /* ticks on a CPU, between recorded switches */
	uint64_t delays;         /* waits counted */
	uint64_t total, max;     /* ticks */
	uint64_t max_at;         /* when the longest wait began (ticks) */
	uint64_t wakeups, preemptions; /* what the waits began with */
	uint64_t kpreempted, kpreempted_total; /* of the preemptions, those in
				  * kernel mode (prev_state R+), and their ticks */
	uint64_t inferred, inferred_total; /* waits ended by a switch out of
				  * idle the trace lacks, inferred */
	bool in_scope;           /* internal: in the trace's scope (an_scope) */
	bool outside;            /* a scoped trace, and the task not in it: it
				  * may have run unrecorded during its waits,
				  * which are then upper bounds */
	int max_cause;           /* SL_CAUSE_* of the longest wait */
	bool max_inferred;
	uint64_t unknown;        /* waits whose end the trace lacks */
	/* internal */
	int state, cause;
	uint64_t since;
	int on;
};

enum { SL_CAUSE_WAKEUP, SL_CAUSE_PREEMPTED, SL_CAUSE_KPREEMPTED };

struct sl_result {
	struct sl_task *tasks;   /* longest max delay first */
	unsigned ntasks;
};

/* Returns 0, -ENOENT (no sched_switch event), -ENOMEM. wfrom/wto: waits
 * that end in the window (0: its edge). */
int sl_compute(struct strata_trace *t, uint64_t wfrom, uint64_t wto,
	       struct sl_result *out);
void sl_fini(struct sl_result *r);

/* ---- thread names ----------------------------------------------------------
 *
 * The name of each thread, from what the trace says: the state dump and
 * strata:thread_name records (the process's own word, which wins), else
 * the kernel's comm in sched_switch, sched_wakeup and the fork. Feed it
 * every event (iterate with STRATA_ITER_INTERNAL for the state dump).
 */
struct an_names;

int an_names_create(struct strata_trace *t, struct an_names **out); /* 0, -ENOMEM */
void an_names_destroy(struct an_names *n); /* NULL ok */
/* 0, or -ENOMEM (the name is then not kept). */
int an_names_feed(struct an_names *n, const struct strata_event *ev);
/* The name of `tid`, or NULL. */
const char *an_names_get(const struct an_names *n, uint32_t tid);

/* ---- intervals: begin and end events paired by kind --------------------------
 *
 * Kinds come from the event names and the DSL's begin/end marks (the
 * pairing rules are docs/cli.md's, "strata intervals"), or from two globs.
 * A begin opens an interval of its kind for its key, the next end of that
 * kind and key closes the most recent one still open (LIFO: nested
 * intervals of one kind pair inside out). The key is the thread, or the
 * value of a field (`by`), whatever thread ends it.
 */
struct iv_options {
	const char *begin, *end; /* globs: one kind of these; NULL: the trace's kinds */
	const char *kinds;       /* glob on the kinds' names; NULL: all */
	const char *by;          /* pair by this field, any thread; NULL: per thread */
	uint64_t from, to;       /* window, ticks; 0: its edge */
	char *err;               /* why -EINVAL, one line (optional) */
	size_t errlen;
};

struct iv_interval {
	unsigned kind;
	uint64_t begin, end;     /* ticks */
	uint32_t pid, tid;       /* of the begin event */
	unsigned depth;          /* intervals of its kind and key open around it */
};

typedef void (*iv_fn)(const struct iv_interval *iv, void *arg);

/* The pairing engine, for any reader of intervals (the viewer's
 * activities, iv_compute): feed it events in time order. */
struct iv_pairer;

/* Returns 0, -EINVAL (a glob matches no class, or a class of a kind has
 * no field `by`: o->err says which), -ENOMEM. */
int iv_pairer_create(struct strata_trace *t, const struct iv_options *o,
		     struct iv_pairer **out);
void iv_pairer_destroy(struct iv_pairer *p); /* NULL ok */
unsigned iv_pairer_nkinds(const struct iv_pairer *p);
const char *iv_pairer_kind(const struct iv_pairer *p, unsigned kind);
/* Calls fn for each interval ev closes (ev may close one of several
 * kinds and open another: work:lock_acquire ends a wait, begins a hold).
 * Returns 0, or -ENOMEM. */
int iv_pairer_feed(struct iv_pairer *p, const struct strata_event *ev, iv_fn fn, void *arg);
/* Of a kind: begins still open, ends that found nothing open, and begins
 * dropped when a key nested deeper than 256. */
void iv_pairer_unmatched(const struct iv_pairer *p, unsigned kind, uint64_t *open,
			 uint64_t *orphan_ends, uint64_t *too_deep);
/* The begin time of the oldest interval still open, of any kind;
 * UINT64_MAX when none is. */
uint64_t iv_pairer_oldest_open(const struct iv_pairer *p);

struct iv_stats {
	uint64_t count, total, min, max, p50, p99; /* ns */
};

struct iv_kind_stats {
	const char *name;        /* "work:job_begin..job_end" */
	struct iv_stats s;
	uint64_t open, orphan_ends, too_deep;
};

struct iv_thread_stats {
	unsigned kind;
	uint32_t pid, tid;
	struct iv_stats s;
};

struct iv_result {
	struct iv_kind_stats *kinds; /* by kind, in iv_pairer's order */
	unsigned nkinds;
	struct iv_thread_stats *threads; /* by kind, then pid, tid */
	size_t nthreads;
	struct an_names *names;  /* the threads' names */
	struct iv_pairer *pairer;
};

/* Statistics per kind and per kind and thread over the window. Returns
 * what iv_pairer_create returns, or -ENOMEM. */
int iv_compute(struct strata_trace *t, const struct iv_options *o, struct iv_result **out);
void iv_free(struct iv_result *r); /* NULL ok */

/* ---- what happened inside a pair of user events ------------------------- */

struct inside_options {
	const char *from, *to; /* event name globs, paired per thread */
	uint64_t wfrom, wto;   /* pairs that begin in this window (ticks; 0: its edge) */
};

struct inside_pair {
	uint64_t begin, end;   /* ticks; end valid when closed */
	uint32_t pid, tid;
	bool closed;
	uint32_t switches;     /* times the thread left a CPU inside the pair */
	uint64_t runnable;     /* ticks off CPU while runnable (preempted) */
	uint64_t blocked;      /* ticks off CPU while blocked (S or D) */
};

struct inside_switch {
	size_t pair;           /* index in pairs */
	uint64_t out_at, back_at; /* ticks; back_at 0 if not back in the pair */
	uint32_t cpu, next_tid;
	int64_t prev_state;    /* sched_switch prev_state */
};

struct inside_result {
	struct inside_pair *pairs;
	size_t npairs;
	struct inside_switch *sw;  /* in time order */
	size_t nsw;
	struct an_names *names; /* the threads' names */
};

/* Pair `from` and `to` events per thread and list the context switches of
 * that thread inside each pair. Returns 0, -EINVAL (no class matches a
 * glob), -ENOENT (no sched_switch event: record with -k sched), -ENOMEM. */
int inside_compute(struct strata_trace *t, const struct inside_options *o,
	       struct inside_result *out);
void inside_fini(struct inside_result *r);

#endif /* STRATA_ANALYSIS_H */
