/* SPDX-License-Identifier: MIT */
/* strata view: the model of a trace the server answers from, and its API (docs/view.md). */
#ifndef STRATA_VIEW_H
#define STRATA_VIEW_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <strata/reader.h>

#include "analysis/analysis.h"
#include "json.h"

/* A CPU's running thread from time `t` on (sched_switch's next_pid):
 * 0 the idle task. */
struct vw_switch {
	uint64_t t;
	int32_t tid;
};

struct vw_cpu {
	uint32_t cpu;
	struct vw_switch *sw;    /* in time order */
	size_t nsw, swcap;
	uint32_t *bins;          /* events on this CPU per bin */
	uint32_t **cbins;        /* per class (or NULL): VW_CBINS bins */
};

/* A closed begin/end interval of a thread (analysis.h's pairer). */
struct vw_iv {
	uint64_t begin, end;
	uint32_t kind;
	uint32_t depth;
};

/* Bins per row and event class, coarser than the row's own: what a filter
 * on event names draws from when the window is too wide to read. */
#define VW_CBINS_SHIFT 3
#define VW_CBINS ((1u << 15) >> VW_CBINS_SHIFT)

#define VW_IV_BLOCK 64 /* intervals per block of blockmax (view.md) */
#define VW_IV_LEVELS 40 /* level L: durations in (span / 2^(L+1), span / 2^L] */

/* A thread's intervals of one level of duration, so that a window reads
 * those at least a pixel long one by one and probes the shorter ones per
 * pixel (view.md, "Level of detail"). */
struct vw_ivlevel {
	struct vw_iv *iv;        /* sorted by begin */
	size_t n, cap;
	bool unsorted;           /* to sort at the end of the build */
	uint64_t *blockmax;      /* latest end of each VW_IV_BLOCK intervals */
	/* Of a level of VW_IV_CNT_MIN intervals or more (fewer than 2^32):
	 * cnt[k] the intervals that begin before bin k, nbins + 1 of them, so
	 * that a pixel of several bins knows whether one begins in it without
	 * reading the intervals (view.md, "Level of detail"); else NULL. */
	uint32_t *cnt;
	/* While the model is built, a level in the spill file keeps its
	 * intervals from `flushed` to n here, written to the file a buffer
	 * at a time (model.c, iv_flush); NULL otherwise. */
	struct vw_iv *tail;
	size_t flushed;
	/* A live model's (live.c): the intervals from the first whose
	 * block's blockmax is not up to date; the model built whole sets
	 * blockmax once instead. */
	size_t clean;
};

#define VW_IV_CNT_MIN 4096
/* Whether a level of n intervals has cnt. */
static inline bool vw_iv_has_cnt(size_t n)
{
	return n >= VW_IV_CNT_MIN && n < UINT32_MAX;
}

struct vw_thread {
	uint32_t pid, tid;
	uint64_t events;         /* user events */
	uint32_t *bins;          /* its user events per bin */
	uint32_t **cbins;        /* per class (or NULL): VW_CBINS bins */
	struct vw_ivlevel lev[VW_IV_LEVELS];
	struct vw_switch *run;   /* from t on: on CPU tid - 1, or off (0) */
	size_t nrun, runcap;
	size_t niv;              /* intervals, all levels */
	unsigned row;            /* its index in vw_model.rows */
	/* Its states (analysis.h's bd_state, from the breakdown's machine):
	 * st[i].tid is the state from st[i].t to st[i + 1].t, the last one's
	 * to st_end; stcum[b] the ticks in each state before st[b *
	 * VW_ST_BLOCK].t, so that a pixel's dominant state costs a binary
	 * search and a block at most (view.md, "Level of detail"). */
	struct vw_switch *st;
	size_t nst, stcap;
	uint64_t st_end;
	uint64_t (*stcum)[BD_NSTATES];
	bool seen;               /* some state other than BD_UNSEEN */
	size_t st_dirty;         /* states from st[st_dirty] on changed since
				  * stcum was summed (a live model's) */
	const char *name;        /* from the cache (else m->names), or NULL */
};

#define VW_ST_BLOCK 32 /* states per block of stcum */

/* A wakeup (sched:sched_wakeup or sched_wakeup_new): thread `waker` (0:
 * idle or an interrupt on `cpu`) woke `wakee` at t; it next ran at `run`
 * (0: not in the trace). An arrow of the window's answer. */
struct vw_wake {
	uint64_t t, run;         /* ticks */
	int32_t waker, wakee;
	uint32_t cpu, cls;
};

#define VW_ARROWS_MAX 256 /* arrows a window's answer draws at most */

/* A message (docs/dsl.md, "Flows"): a send paired with the receive of its
 * key, or either alone when the other is not in the trace (its tid -1,
 * its time 0, its class UINT32_MAX). An arrow of the window's answer. */
struct vw_flow {
	uint64_t t;              /* ticks: the receive's time, else the send's */
	uint64_t ts, tr;         /* ticks: sent, received */
	uint64_t key;
	int32_t stid, rtid;
	uint32_t scpu, rcpu;
	uint32_t scls, rcls;     /* class indexes */
};

/* An activity rule of the command line (--activity NAME=BEGIN..END[,by=F]):
 * BEGIN and END events (globs) paired per thread, or by field F's value,
 * by analysis.h's pairer; each pair an interval of kind NAME, after the
 * trace's own kinds. */
#define VW_ACT_MAX 16

struct vw_activity {
	char *name, *begin, *end, *by; /* one allocation, from name */
	struct iv_pairer *pairer;
};

/* NAME=BEGIN..END[,by=FIELD] into *a (its strings one allocation, from
 * name), as the command line and the page give it (rules.c). Returns 0,
 * -EINVAL (why, one line, in why), -ENOMEM. */
int vw_activity_parse(const char *arg, struct vw_activity *a, char *why, size_t len);
/* The rule's pairer on trace t: 0, -EINVAL (a glob that matches no event,
 * a class without the field: why says which), -ENOMEM. */
int vw_activity_make(struct strata_trace *t, struct vw_activity *a, char *why, size_t len);
/* Its pairer and strings freed, *a zeroed; a zeroed rule is fine. */
void vw_activity_fini(struct vw_activity *a);

/* Rules typed in the page (api/activity): how many a request may give,
 * separated by ';', and how long each may be. */
#define VW_RULES_MAX 4
#define VW_RULE_MAX 256
#define VW_STR_(x) #x
#define VW_STR(x) VW_STR_(x)

/* Where the reader met damage or loss (reader.h's problems that carry a
 * time), for the page to mark; the first VW_MAX_PROBLEMS are kept. */
struct vw_problem {
	uint64_t ts;             /* ticks */
	uint64_t count;          /* events or packets lost, else 0 */
	uint64_t offset;         /* in its file (strata_problem's) */
	uint64_t file;           /* vw_path_hash of its file's path */
	int kind;                /* enum strata_problem_kind */
	uint32_t pad;
};

/* FNV-1a of a path: a problem's file, matched to its stream by the
 * summary (summary.c: the damage's ranges). */
uint64_t vw_path_hash(const char *path);

#define VW_MAX_PROBLEMS 1000

struct vw_problems {
	struct vw_problem v[VW_MAX_PROBLEMS];
	unsigned n;
};

struct vw_model {
	struct strata_trace *t;
	const char *path;
	uint64_t begin, end;     /* ticks */
	/* The bins' grid: bin b covers the ticks whose (ts - begin) *
	 * nbins / gridlen is b, and the intervals' levels are fractions of
	 * ivspan (view.h: vw_ivlevel). A finished trace's are end - begin
	 * + 1 and end - begin; a live one's run ahead of its end and
	 * double as it grows (docs/view.md, "Live"). */
	uint64_t gridlen, ivspan;
	uint64_t nevents;        /* every event, strata's own records aside */
	unsigned nbins;          /* bins over [begin, end] per row */
	uint64_t *prefix;        /* events of bins [0, i): nbins + 1 */
	bool *kernel;            /* per stream */
	bool have_sched;
	struct vw_cpu *cpus;     /* the CPUs of the streams, by number */
	unsigned ncpus;
	struct an_tidmap threads; /* struct vw_thread by tid */
	struct vw_thread *last;  /* the thread of the last lookup */
	struct vw_thread **rows; /* threads with user events, intervals or
				  * states, by pid, tid */
	unsigned nrows;
	struct an_names *names;
	struct iv_pairer *pairer; /* for its kinds' names */
	struct vw_activity *acts; /* the command's rules (the caller's) */
	unsigned nacts;
	unsigned kind_base;      /* kinds before the pairer being fed's */
	unsigned nkinds;         /* the trace's own kinds, then the rules' */
	struct vw_wake *wakes;   /* in time order */
	size_t nwakes, wakecap;
	struct vw_flow *flows;   /* by t once paired (flows.c) */
	size_t nflows, flowcap;
	uint64_t flow_maxlat;    /* ticks: the longest send to receive */
	double build_ms;         /* time the model took to build */
	const struct vw_problems *problems; /* the command's, or NULL */
	uint64_t nproblems;      /* the reader's problems when the cache was
				  * made (a cached open reads no event) */
	void *map;               /* the cache the arrays point into, or NULL */
	size_t map_size;
	struct vw_spill *spill;  /* a built model's big arrays (spill.c), or
				  * NULL: the heap */
	unsigned ntails;         /* levels with a tail (vw_ivlevel) */
	const char *cache;       /* "writing", "built", "used" or "off":
				  * api/summary */
	unsigned ncls;           /* classes the cbins tables are sized for */
	uint64_t kinds;          /* a live model's: its classes' kinds, hashed
				  * (extend.c), when its pairer was made */
	/* A live model (live.c, docs/view.md "Live"): events per bin, not
	 * yet summed into prefix, from bin bin_lo on; wakes from wake_from
	 * still to find their next run. NULL when the model is built whole. */
	uint64_t *binev;
	unsigned bin_lo;
	size_t wake_from;
	bool live;               /* followed: no cache */
	struct vw_flive *flive;  /* a live model's sends not received yet
				  * (flows.c), or NULL */
	/* A live model's states (live.c): the breakdown's machines fed each
	 * window's events as the model reads them (feed_one), once the trace
	 * has a kernel stream; NULL before, and for a model built whole
	 * (states.c). bd_err: the first error of their hook. */
	struct bd_feed *bd;
	int bd_err;
	bool partial;            /* opened while still written, not followed */
	struct vw_progress *progress; /* during vw_model_build, or NULL */
};

/* Message flows (flows.c): a send or receive event of the scan kept;
 * then, at its end, paired by key (0 or -ENOMEM); the longest latency of
 * m's flows (vw_flows_pair does it, a cached open calls it); the arrows
 * of [t0, t1] (ticks) that q and cls keep, into the window's answer e
 * as "flows":[...], "flows_left":N (docs/view.md, "api/window"). */
struct vw_filter;
struct vw_buf;
struct wire;
int vw_flow_feed(struct vw_model *m, const struct strata_event *ev);
/* A live model's send or receive, paired as it comes (docs/view.md,
 * "Live"): 0 or -ENOMEM. Its state freed by vw_flows_live_fini. */
int vw_flow_live(struct vw_model *m, const struct strata_event *ev);
void vw_flows_live_fini(struct vw_model *m);
int vw_flows_pair(struct vw_model *m);
void vw_flows_index(struct vw_model *m);
void vw_put_flows(const struct vw_model *m, uint64_t t0, uint64_t t1, unsigned w, double scale,
		  const struct vw_filter *q, const bool *cls, struct wire *e);

/* Read the whole trace once (merged, in time order) into m: per-row bins,
 * CPU switches, intervals and names; strata's records (names) and the
 * thread states meanwhile on a second handle of path, opened with
 * open_flags (the first's), in a thread of their own (states.c). Returns 0, -ENOMEM, or
 * what iv_pairer_create or bd_compute returns. */
/* The build's progress as another thread sees it (quick.c): the time of
 * the last event the pass read (ticks, relaxed: a gauge, ordering
 * nothing), and a request to stop, which the pass checks every 4096
 * events (then -ECANCELED). */
struct vw_progress {
	atomic_uint_least64_t ts;
	atomic_bool stop;
};

/* With sp, the intervals go in its file, and m owns sp (vw_model_fini
 * closes it, also after an error). */
int vw_model_build(struct vw_model *m, struct strata_trace *t, const char *path,
		   unsigned open_flags, struct vw_activity *acts, unsigned nacts,
		   struct vw_progress *pg, struct vw_spill *sp);
/* Events read from the reader at a time: 32 KiB of them. */
#define VW_READ_BATCH 512

/* fn on each of it's events, read in arrays: the reader's merge then
 * writes each event straight from its packet, about twice as fast as a
 * call of strata_iter_next per event (reader.md, "The merge"), unless
 * the iterator takes strata's records (STRATA_ITER_INTERNAL). Stops at
 * fn's first error; 0, -ENOMEM or fn's error. Inline, so that fn is. */
static inline int vw_iter_each(struct strata_iter *it,
			       int (*fn)(void *arg, const struct strata_event *ev), void *arg)
{
	struct strata_event *evs = malloc(VW_READ_BATCH * sizeof(*evs));
	int err = evs ? 0 : -ENOMEM;
	for (int n = 1; !err && n > 0;) {
		n = strata_iter_read(it, evs, VW_READ_BATCH);
		for (int i = 0; i < n && !err; i++)
			err = fn(arg, &evs[i]);
		if (n < 0)
			err = n;
	}
	free(evs);
	return err;
}

/* p grown to hold n + 1 elements of size bytes (doubling *cap), or NULL
 * when out of memory (p is then still valid). */
void *vw_grow(void *p, size_t *cap, size_t n, size_t size);

/* The model's big arrays in a file while it is built and until its cache
 * is mapped (spill.c, docs/view.md "Memory"): an unlinked file in `dir`
 * (not on tmpfs) mapped whole, regions handed out on disk. vw_spill_grow
 * is vw_grow with arrays of 4 MiB or more in the file (sp NULL: the
 * heap); vw_spill_free frees what is not in the file (its regions go
 * with vw_spill_close); vw_spill_wrote counts bytes written through the
 * mapping and, every 64 MiB, vw_spill_trim unmaps the file's pages (they
 * stay in the page cache, which the kernel writes back and drops under
 * pressure), as vw_spill_release does for [p, p + n) once read. */
struct vw_spill;
int vw_spill_open(struct vw_spill **sp, const char *dir);
void vw_spill_close(struct vw_spill *sp);
bool vw_spill_has(const struct vw_spill *sp, const void *p);
void *vw_spill_grow(struct vw_spill *sp, void *p, size_t *cap, size_t n, size_t size);
void vw_spill_free(struct vw_spill *sp, void *p);
void vw_spill_wrote(struct vw_spill *sp, size_t bytes);
void vw_spill_trim(struct vw_spill *sp);
void vw_spill_release(const struct vw_spill *sp, const void *p, size_t n);
/* n bytes of buf written at byte `off` of the file's array `arr` with
 * pwrite, or read from it with pread, not through the mapping (which
 * would map the pages): 0, or -errno (then the bytes are not all
 * written, or read). */
int vw_spill_put(const struct vw_spill *sp, const void *arr, size_t off, const void *buf,
		 size_t n);
int vw_spill_get(const struct vw_spill *sp, const void *arr, size_t off, void *buf, size_t n);
/* The whole pages of [p, p + n) unmapped: only for a file's shared
 * mapping (a private or anonymous one would lose its contents). */
void vw_pages_release(const void *p, size_t n);
/* The server's RSS (/proc/self/statm), in bytes; 0 when unknown. Past
 * VW_RSS_LIMIT the model's file pages are let go ("Memory"). */
uint64_t vw_rss(void);
#define VW_RSS_LIMIT (160ull << 20)
/* After a window read a level of intervals of m: its pages let go when
 * it is big and in a file (the cache's mapping or the spill file), so
 * that one answer does not map gigabytes ("Memory"). */
void vw_model_let_go(const struct vw_model *m, const struct vw_ivlevel *lv);
/* The same for the intervals [from, to) of lv, whatever the level's size:
 * what a read of it in time order has left behind (a read of every n-th
 * interval maps all of what it crosses: fault-around); every
 * vw_model_let_go_step() intervals read, and at the end. */
void vw_model_let_go_part(const struct vw_model *m, const struct vw_ivlevel *lv, size_t from,
			  size_t to);
size_t vw_model_let_go_step(void);

/* A stretch of thread tid's states (bd_options.on_state's), into m. 0 or
 * -ENOMEM. */
int vw_model_state(struct vw_model *m, uint32_t tid, int state, uint64_t from, uint64_t to);
/* The second pass of vw_model_build (states.c): started on m once its
 * names exist, joined after m's pass, when the names are m's again and
 * the records' names and the states are added to it (the states where m
 * has sched_switch events). Start
 * returns 0 or -ENOMEM (then *out may be NULL, which join accepts);
 * without a second handle or thread the work is done at the join. Join
 * returns 0, -ENOMEM or bd_compute's error. */
struct vw_states;
int vw_states_start(struct vw_model *m, unsigned open_flags, struct vw_states **out);
int vw_states_join(struct vw_states *s, struct vw_model *m);
/* The live model's steps (model.c; live.c drives them): m set up on the
 * follower's trace t for the events from `begin` on, bins over gridlen
 * ticks; the events of [from, to) (ticks) read into it; the arrays the
 * answers need brought up to date (prefix, rows, blockmax, wakeups'
 * runs) at a cost of the bins and rows, not of the events behind.
 * Each returns 0 or -ENOMEM. */
int vw_model_live_init(struct vw_model *m, struct strata_trace *t, const char *path,
		       uint64_t begin, uint64_t gridlen, struct vw_activity *acts,
		       unsigned nacts);
int vw_model_read(struct vw_model *m, uint64_t from, uint64_t to);
int vw_model_settle(struct vw_model *m);
/* The follower's trace grew streams, CPUs or classes: m's tables sized
 * to them. 0 or -ENOMEM. */
int vw_model_adopt(struct vw_model *m, struct strata_trace *t);
/* Twice the grid (extend.c): each pair of bins summed into one, each
 * level of intervals one deeper. 0 or -ENOMEM. */
int vw_model_double(struct vw_model *m);

/*
 * Following a trace while it is written (live.c, docs/view.md "Live").
 */
struct vw_live;
/* Called by the follower's thread, under the lock, once the recording
 * ended: replaces the live model with the finished trace's. 0 or a
 * negative errno (the live model is then kept, marked not live). */
typedef int (*vw_live_done_fn)(void *arg);
/* Follow path, waiting (saying so once on stderr) until it has a
 * readable window, and set m up on it, with the command's activity
 * rules (the caller's: their pairers made on the trace as it grows).
 * Returns 0 (*out follows it), 1 (the trace is finished: open it as any
 * other), or a negative errno of strata_follow_poll. */
int vw_live_open(const char *path, const struct strata_open_options *oo, struct vw_model *m,
		 struct vw_activity *acts, unsigned nacts, struct vw_live **out);
/* The thread that polls every LIVE_POLL_MS and extends m under lock;
 * done when the recording ends. 0 or a negative errno. */
int vw_live_start(struct vw_live *l, pthread_mutex_t *lock, vw_live_done_fn done, void *arg);
/* Windows read so far (the page's cue to ask again); 0 for NULL. */
uint64_t vw_live_seq(const struct vw_live *l);
/* The thread stopped and joined, the follower closed; NULL ok. */
void vw_live_destroy(struct vw_live *l);

/* The name of thread tid (analysis.h's names, or the cache's), or NULL. */
const char *vw_name(const struct vw_model *m, uint32_t tid);
/* The reader's problems: those met now, or when the cache was made. */
uint64_t vw_nproblems(const struct vw_model *m);

/*
 * The model's cache (cache.c, docs/view.md "The cache"): written once,
 * outside the trace, and mmap'ed by the next open.
 */
/* The trace's identity: its streams', indexes' and metadata's sizes and
 * mtimes, the metadata's bytes (its uuid), the rules. */
uint64_t vw_cache_key(struct strata_trace *t, const struct vw_activity *acts, unsigned nacts);
/* The cache file of this trace and rules into out, its folder made.
 * Returns 0, -ENOENT (no $XDG_CACHE_HOME nor $HOME), or mkdir's errno. */
int vw_cache_path(const char *trace, const struct vw_activity *acts, unsigned nacts, char *out,
		  size_t len);
/* Write m (and the reader's problems ps) to path, atomically (a temporary
 * file renamed). Returns 0 or a negative errno. */
int vw_cache_write(const struct vw_model *m, const struct vw_problems *ps, uint64_t key,
		   const char *path);
/* m from the cache at path, its arrays in the mapping, ps filled. Returns
 * 0, -ENOENT (none), -EBADMSG (damaged, foreign, truncated), -ESTALE
 * (another trace, or the trace changed), -ENOMEM. */
int vw_cache_open(struct vw_model *m, struct strata_trace *t, const char *trace,
		  struct vw_activity *acts, unsigned nacts, uint64_t key, const char *path,
		  struct vw_problems *ps);

/* An interval kind's name (the trace's kinds, then the rules'). */
const char *vw_kind_name(const struct vw_model *m, unsigned kind);
void vw_model_fini(struct vw_model *m);
/* Whether a live model has not read tick ts yet (docs/view.md, "Live"):
 * the trace may hold whole packets past the end the follower handed out,
 * whose events earlier ones of other streams may still precede. */
static inline bool vw_past_end(const struct vw_model *m, uint64_t ts)
{
	return m->live && ts > m->end;
}

/* The bin of tick ts (clamped to the trace). */
unsigned vw_bin(const struct vw_model *m, uint64_t ts);
uint64_t vw_ns(const struct vw_model *m, uint64_t ticks);   /* since begin */
/* The first tick (since begin) that vw_ns shows as ns or later: the
 * page's times are the ones strata print shows, floored to the ns. */
uint64_t vw_ticks(const struct vw_model *m, uint64_t ns);

struct vw_filter; /* below */

/*
 * A window whose bins say it holds at most this many events is read from
 * the trace itself (exact times, event classes); a wider one is drawn from
 * the bins. At the reader's tens of millions of events a second this
 * bounds a window's answer to a few milliseconds whatever the trace's size.
 * The statistics (stats.c) read as many at most.
 */
#define VW_EXACT_MAX 200000u

/* The answers of the JSON API (summary.c, window.c, events.c); each
 * writes one JSON document into out, or returns an HTTP status (400)
 * after writing why into out. */
int vw_api_summary(struct vw_model *m, struct vw_buf *out);
/* Rows between t0 and t1 (ns since the trace start) at w pixels: JSON,
 * or with bin the binary form of docs/view.md ("The binary window"; a
 * 400's body is JSON either way); marks_only: every other list empty
 * (the page's marked events, "Marked and counted"). */
int vw_api_window(struct vw_model *m, uint64_t t0, uint64_t t1, unsigned w,
		  const struct vw_filter *q, bool bin, bool marks_only, struct vw_buf *out);
/* Up to `before` events before t and `after` from t on, of those q keeps. */
int vw_api_list(struct vw_model *m, uint64_t t, unsigned before, unsigned after,
		const struct vw_filter *q, struct vw_buf *out);

/* What the page filters by (view.md, "Filters"): every answer that lists
 * or draws events applies it. */
#define VW_ARG_MAX 256 /* the longest text a query argument may hold */

#define VW_FILTER_IDS 64 /* CPUs, threads or processes a filter may list */
#define VW_FILTER_TIDS 4096 /* threads once its processes are named */

struct vw_filter {
	uint32_t cpus[VW_FILTER_IDS]; /* OR-ed, sorted; none: any */
	uint32_t tids[VW_FILTER_TIDS]; /* the same; the processes' threads */
	unsigned ncpus, ntids;
	const char *events;      /* event name globs, comma-separated; NULL: any */
	const char *expr;        /* the reader's field expression; NULL: none */
	bool none;               /* keeps nothing (vw_filter_only) */
};

/* Finish q as parsed: its processes (pids; npids 0: any) become the
 * model's threads of them that q's threads keep (none: nothing kept),
 * and its lists are sorted for vw_filter_keeps. Returns 0, or 400 with
 * why in err (more than VW_FILTER_TIDS threads). */
int vw_filter_procs(const struct vw_model *m, struct vw_filter *q, const uint32_t *pids,
		    unsigned npids, struct vw_buf *err);
/* Narrow q to one CPU (kind 'c') or thread ('t'), a row the page asks
 * about: that one if q keeps it, else nothing. */
void vw_filter_only(struct vw_filter *q, char kind, uint32_t id);
/* Whether q keeps CPU (kind 'c') or thread ('t') id. */
bool vw_filter_keeps(const struct vw_filter *q, char kind, uint32_t id);

/* A reader filter of q into *out (NULL when q filters nothing). Returns 0,
 * 400 with why in err (a bad expression), -ENOMEM. */
int vw_filter_make(struct vw_model *m, const struct vw_filter *q,
		   struct strata_filter **out, struct vw_buf *err);
/* The match of a search after `skip` others: from t on (dir 1), or
 * before t going back (dir -1); events of classes matching the glob
 * `find` (NULL: any) and the expression `where` (NULL: none), among those
 * q keeps. Returns 0, 400 (a bad expression), -ENOMEM. */
int vw_api_search(struct vw_model *m, const struct vw_filter *q, const char *find,
		  const char *where, uint64_t t, int dir, unsigned skip, struct vw_buf *out);

/* The classes whose names match one of the comma-separated globs into
 * *out (calloc'ed, one bool per class), or NULL when globs is NULL (all).
 * Returns 0 or -ENOMEM. */
int vw_class_table(struct vw_model *m, const char *globs, bool **out);

/* Up to n intervals of `kind` that begin in [t0, t1] on the threads q
 * keeps, the longest first (by 0) or in time order (by 1); stats.c.
 * Returns 0 or -ENOMEM. */
int vw_api_intervals(struct vw_model *m, uint64_t t0, uint64_t t1, int kind, int by,
		     unsigned n, const struct vw_filter *q, struct vw_buf *out);
/* The intervals of the page's rules (`rules`, view.md "api/activity")
 * that begin in [t0, t1] on the threads q keeps, paired over the events
 * from t0 on: up to n, longest first (by 0) or in time order (by 1).
 * Returns 0, 400 (a bad rule, why in out), -ENOMEM. */
int vw_api_activity(struct vw_model *m, const char *rules, uint64_t t0, uint64_t t1, int by,
		    unsigned n, const struct vw_filter *q, struct vw_buf *out);
/* The durations (ns, *out malloc'ed, *n of them) of the intervals of the
 * page's rule number `rule` of `rules` that begin in [a, b] (ticks) on
 * the threads q keeps, paired as api/activity pairs them (*complete
 * false past its bounds). Returns 0, 400 (a bad rule, or no rule `rule`:
 * why in out), -ENOMEM. */
int vw_activity_durations(struct vw_model *m, const char *rules, unsigned rule, uint64_t a,
			  uint64_t b, const struct vw_filter *q, uint64_t **out, size_t *n,
			  bool *complete, struct vw_buf *o);
/* Statistics of [t0, t1] (ns) under q (stats.c, view.md "api/stats"):
 * events per name, CPU and thread, and the durations of the intervals of
 * kind `kind` (-1: none) that begin in it; with `rules` (NULL: none), kind
 * numbers the page's rules (vw_activity_durations). Returns 0, 400 (a bad
 * expression or rule, why in out), -ENOMEM. */
int vw_api_stats(struct vw_model *m, uint64_t t0, uint64_t t1, int kind, const char *rules,
		 const struct vw_filter *q, struct vw_buf *out);

/* Where thread tid's time went over [t0, t1) (ns): ns per analysis.h's
 * bd_state, from the breakdown's own stretches (breakdown.c, view.md
 * "api/breakdown"). Returns 0. */
int vw_api_breakdown(struct vw_model *m, uint32_t tid, uint64_t t0, uint64_t t1,
		     struct vw_buf *out);

/* The page's files, embedded at build time (assets.c, from web/). */
struct vw_asset {
	const char *name;        /* "index.html" */
	const unsigned char *data;
	unsigned long size;
};
extern const struct vw_asset vw_assets[];
extern const unsigned vw_nassets;

#endif /* STRATA_VIEW_H */
