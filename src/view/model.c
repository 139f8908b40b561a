// SPDX-License-Identifier: MIT
/* strata view's model: one pass over the trace into per-row bins, CPU switches and intervals (docs/view.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "view.h"

/*
 * Bins: every row (CPU, thread) counts its events in nbins equal slices of
 * the trace. A window wider than a few hundred thousand events is drawn
 * from them, so its cost is bounded by the bins it covers and not by the
 * events (view.md, "Level of detail"). 2^15 bins of 4 bytes: 128 KiB a
 * row.
 */
#define VW_NBINS (1u << 15)

/* Wakeups of a live model still looking for their wakee's next run. */
#define VW_WAKE_PENDING 4096

unsigned vw_bin(const struct vw_model *m, uint64_t ts)
{
	if (ts <= m->begin)
		return 0;
	uint64_t d = ts - m->begin;
	if (d >= m->gridlen - 1)
		return m->nbins - 1;
	/* the same quotient in 64 bits when the product fits (a trace of
	 * less than 2^49 ticks, days long): a 128-bit division is a call
	 * of its own, paid for every event of the build and twice per
	 * pixel and level of a wide window */
	if (d <= UINT64_MAX / m->nbins)
		return (unsigned)(d * m->nbins / m->gridlen);
	unsigned __int128 x = (unsigned __int128)d * m->nbins;
	return (unsigned)(x / m->gridlen);
}

uint64_t vw_ns(const struct vw_model *m, uint64_t ticks)
{
	return strata_trace_ticks_to_ns(m->t, ticks);
}

uint64_t vw_ticks(const struct vw_model *m, uint64_t ns)
{
	/* ns_to_ticks rounds down, so one tick more is enough */
	uint64_t t = strata_trace_ns_to_ticks(m->t, ns);
	return strata_trace_ticks_to_ns(m->t, t) < ns ? t + 1 : t;
}

static struct vw_thread *thread_of(struct vw_model *m, uint32_t tid)
{
	if (m->last && m->last->tid == tid)
		return m->last; /* events come in runs of one thread */
	bool made;
	struct vw_thread *th = an_tidmap_get(&m->threads, tid, sizeof(*th), &made);
	if (th && made)
		th->tid = tid;
	return m->last = th;
}

void *vw_grow(void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	size_t c = *cap ? *cap * 2 : 64;
	void *q = realloc(p, c * size);
	if (q)
		*cap = c;
	return q;
}

/* The first of n intervals sorted by begin that begins after ts. */
static size_t iv_after(const struct vw_iv *iv, size_t n, uint64_t ts)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (iv[mid].begin <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Intervals a level in the spill file keeps in its buffer (its tail):
 * 48 KiB, twelve pages; and the tails a build has at most, 12 MiB (the
 * levels past them write through the mapping). 512 made the build of
 * docs/view.md's 1 GB trace 0.8 s slower, 8192 0.2 s faster. */
#define IV_TAIL 2048
#define IV_TAILS 256
/* The newest intervals a tail keeps once written, so that on_interval's
 * steps back (16 at most, and the one before) never read the file's
 * mapping, which would map its pages again and again. */
#define IV_KEEP 32

/* Interval i of a level being built: in its tail or in its array. */
static struct vw_iv *iv_at(struct vw_ivlevel *lv, size_t i)
{
	return lv->tail && i >= lv->flushed ? &lv->tail[i - lv->flushed] : &lv->iv[i];
}

/* A level's tail written to its array in the file but for its newest
 * `keep`: by pwrite, not through the mapping, whose stores fault each
 * page in, and on ext4 read and zero the unwritten blocks around it
 * first (docs/view.md, "Memory"); through the mapping only when the
 * write fails. */
static void iv_flush(const struct vw_model *m, struct vw_ivlevel *lv, size_t keep)
{
	if (!lv->tail || lv->n - lv->flushed <= keep)
		return;
	size_t k = lv->n - lv->flushed - keep;
	if (vw_spill_put(m->spill, lv->iv, lv->flushed * sizeof(*lv->iv), lv->tail,
			 k * sizeof(*lv->iv))) {
		memcpy(lv->iv + lv->flushed, lv->tail, k * sizeof(*lv->iv));
		vw_spill_wrote(m->spill, k * sizeof(*lv->iv));
	}
	memmove(lv->tail, lv->tail + k, keep * sizeof(*lv->tail));
	lv->flushed += k;
}

/* A tail that holds nothing (new, or written whole before its array
 * moved) takes the array's newest IV_KEEP intervals back from the file. */
static void iv_reload(const struct vw_model *m, struct vw_ivlevel *lv)
{
	size_t k = lv->n < IV_KEEP ? lv->n : IV_KEEP;
	lv->flushed = lv->n - k;
	if (vw_spill_get(m->spill, lv->iv, lv->flushed * sizeof(*lv->iv), lv->tail,
			 k * sizeof(*lv->iv)))
		memcpy(lv->tail, lv->iv + lv->flushed, k * sizeof(*lv->iv));
}

/* The tail dropped, once written: the build's end, or a level that left
 * the file (a full disk: vw_spill_grow moved it to the heap). */
static void iv_untail(struct vw_model *m, struct vw_ivlevel *lv)
{
	if (!lv->tail)
		return;
	iv_flush(m, lv, 0);
	free(lv->tail);
	lv->tail = NULL;
	m->ntails--;
}

/* The pairer closed an interval: keep it on its thread. */
static void on_interval(const struct iv_interval *iv, void *arg)
{
	struct vw_model *m = arg;
	struct vw_thread *th = thread_of(m, iv->tid);
	if (!th)
		return;
	uint64_t dur = iv->end > iv->begin ? iv->end - iv->begin : 1;
	uint64_t span = m->ivspan;
	/* the level from the bit lengths, then the last step exactly */
	int l = __builtin_clzll(dur) - __builtin_clzll(span) - 1;
	if (l < 0)
		l = 0;
	while (l + 1 < VW_IV_LEVELS && dur <= span >> (l + 1))
		l++;
	while (l > 0 && dur > span >> l)
		l--;
	struct vw_ivlevel *lv = &th->lev[l];
	if (lv->n == lv->cap)
		iv_flush(m, lv, 0); /* the array may move: all of it there first */
	struct vw_iv *v = vw_spill_grow(m->spill, lv->iv, &lv->cap, lv->n, sizeof(*v));
	if (!v)
		return; /* the interval is not drawn; its events still are */
	lv->iv = v;
	if (vw_spill_has(m->spill, v)) {
		if (!lv->tail && m->ntails < IV_TAILS &&
		    (lv->tail = malloc(IV_TAIL * sizeof(*lv->tail)))) {
			lv->flushed = lv->n;
			m->ntails++;
		}
		if (lv->tail && lv->flushed == lv->n)
			iv_reload(m, lv);
		if (!lv->tail)
			vw_spill_wrote(m->spill, sizeof(*v));
	} else if (lv->tail) {
		iv_untail(m, lv);
	}
	/* they close in end order, so nearly in begin order: a few steps
	 * back keep the level sorted; a level that needs more is sorted
	 * once at the end */
	size_t j = lv->n++;
	for (int k = 0; j && iv_at(lv, j - 1)->begin > iv->begin && k < 16; k++, j--)
		*iv_at(lv, j) = *iv_at(lv, j - 1);
	if (j && iv_at(lv, j - 1)->begin > iv->begin && m->live) {
		/* a live level is never sorted at an end: its place now (a
		 * live model has no file, so no tail) */
		size_t at = iv_after(lv->iv, j, iv->begin);
		memmove(lv->iv + at + 1, lv->iv + at, (j - at) * sizeof(*lv->iv));
		j = at;
	}
	*iv_at(lv, j) = (struct vw_iv){ iv->begin, iv->end, m->kind_base + iv->kind, iv->depth };
	if (j && iv_at(lv, j - 1)->begin > iv->begin)
		lv->unsorted = true;
	if (j < lv->clean)
		lv->clean = j;
	if (lv->tail && lv->n - lv->flushed == IV_TAIL)
		iv_flush(m, lv, IV_KEEP);
	th->niv++;
	if (!th->pid)
		th->pid = iv->pid;
}

/* The breakdown's machine (analysis.h, bd_options.on_state, replayed by
 * states.c, or fed by live.c): thread tid was in `state` from `from` to
 * `to`. Stretches come in time order per thread; a gap between two (none
 * is expected) is kept as BD_UNSEEN. A live model's last stretch may be
 * one still open (bd_feed_open): reported again from the same start, it
 * is extended, or given the state the machine learnt since. */
int vw_model_state(struct vw_model *m, uint32_t tid, int state, uint64_t from, uint64_t to)
{
	if (!tid)
		return 0; /* the idle task has no row */
	struct vw_thread *th = thread_of(m, tid);
	if (!th)
		return -ENOMEM;
	size_t n = th->nst;
	if (n && th->st[n - 1].t >= from && th->st[n - 1].tid != state) {
		/* the open stretch, relabelled: merged into the one before it
		 * when that was in the same state */
		if (n > 1 && th->st[n - 2].tid == state)
			th->nst = --n;
		else
			th->st[n - 1].tid = state;
		if (th->st_dirty > n - 1)
			th->st_dirty = n - 1;
	}
	if (n && from > th->st_end && th->st[n - 1].tid != BD_UNSEEN) {
		int err = vw_model_state(m, tid, BD_UNSEEN, th->st_end, from);
		if (err)
			return err;
		n = th->nst;
	}
	if (!n || th->st[n - 1].tid != state) {
		struct vw_switch *s = vw_grow(th->st, &th->stcap, n, sizeof(*s));
		if (!s)
			return -ENOMEM;
		th->st = s;
		th->st[th->nst++] = (struct vw_switch){ from, state };
		if (th->st_dirty > n)
			th->st_dirty = n;
	}
	th->st_end = to;
	th->seen |= state != BD_UNSEEN;
	return 0;
}

/* stcum of a thread (view.h), from the block of the state before the
 * first that changed (its end moved) on: all of it for a model built
 * whole, the newest blocks for a live one. */
static int sum_states(struct vw_thread *th)
{
	size_t nb = (th->nst + VW_ST_BLOCK - 1) / VW_ST_BLOCK;
	size_t from = th->st_dirty ? th->st_dirty - 1 : 0;
	if (!nb || from >= th->nst)
		return 0;
	uint64_t (*cum)[BD_NSTATES] = realloc(th->stcum, nb * sizeof(*cum));
	if (!cum)
		return -ENOMEM;
	th->stcum = cum;
	size_t b0 = from / VW_ST_BLOCK;
	uint64_t acc[BD_NSTATES] = { 0 };
	if (b0)
		memcpy(acc, cum[b0], sizeof(acc));
	for (size_t i = b0 * VW_ST_BLOCK; i < th->nst; i++) {
		if (i % VW_ST_BLOCK == 0)
			memcpy(cum[i / VW_ST_BLOCK], acc, sizeof(acc));
		uint64_t e = i + 1 < th->nst ? th->st[i + 1].t : th->st_end;
		acc[th->st[i].tid] += e - th->st[i].t;
	}
	th->st_dirty = th->nst;
	return 0;
}

/* Thread tid goes on CPU `on` - 1 (or off, 0) at ts: its row's running
 * track. The idle task (0) has none. */
static int add_run(struct vw_model *m, int32_t tid, uint64_t ts, int32_t on)
{
	if (tid <= 0)
		return 0;
	struct vw_thread *th = thread_of(m, (uint32_t)tid);
	struct vw_switch *r = th ? vw_grow(th->run, &th->runcap, th->nrun, sizeof(*r)) : NULL;
	if (!r)
		return -ENOMEM;
	th->run = r;
	th->run[th->nrun++] = (struct vw_switch){ ts, on };
	return 0;
}

static int add_switch(struct vw_model *m, const struct strata_event *ev, int next)
{
	if (ev->cpu >= m->ncpus)
		return 0;
	struct strata_value v;
	if (strata_event_field(ev, (unsigned)next, &v) < 0)
		return 0; /* damaged: the reader reported it */
	struct vw_cpu *c = &m->cpus[ev->cpu];
	int32_t prev = c->nsw ? c->sw[c->nsw - 1].tid : 0, to = (int32_t)v.s;
	int err = add_run(m, prev, ev->timestamp, 0);
	if (!err)
		err = add_run(m, to, ev->timestamp, (int32_t)ev->cpu + 1);
	struct vw_switch *sw = vw_grow(c->sw, &c->swcap, c->nsw, sizeof(*sw));
	if (!sw || err)
		return -ENOMEM;
	c->sw = sw;
	c->sw[c->nsw++] = (struct vw_switch){ ev->timestamp, to };
	m->have_sched = true;
	return 0;
}

/* A wakeup event: keep it for the window's arrows (view.h: vw_wake). */
static int add_wake(struct vw_model *m, const struct strata_event *ev, int pid)
{
	struct strata_value v;
	if (strata_event_field(ev, (unsigned)pid, &v) < 0 || v.s <= 0)
		return 0; /* damaged: the reader reported it */
	struct vw_wake *w = vw_grow(m->wakes, &m->wakecap, m->nwakes, sizeof(*w));
	if (!w)
		return -ENOMEM;
	m->wakes = w;
	m->wakes[m->nwakes++] = (struct vw_wake){ .t = ev->timestamp, .waker = (int32_t)ev->tid,
		.wakee = (int32_t)v.s, .cpu = ev->cpu, .cls = ev->cls->index };
	return 0;
}

/* The index of next_pid in each sched:sched_switch class, else -1; then,
 * at [n + i], that of pid in each sched_wakeup(_new) class, else -1. */
static int *switch_fields(struct strata_trace *t)
{
	unsigned n = strata_trace_nclasses(t);
	int *next = malloc((2 * n + 1) * sizeof(*next));
	if (!next)
		return NULL;
	for (unsigned i = 0; i < n; i++) {
		const struct strata_event_class *c = strata_trace_class(t, i);
		next[i] = c && !strcmp(c->name, "sched:sched_switch") ?
			  strata_event_class_field(c, "next_pid") : -1;
		next[n + i] = c && (!strcmp(c->name, "sched:sched_wakeup") ||
				    !strcmp(c->name, "sched:sched_wakeup_new")) ?
			      strata_event_class_field(c, "pid") : -1;
	}
	return next;
}

/* One event into its row's bins of its class (view.h: cbins). */
static int count_class(struct vw_model *m, uint32_t ***cbins, const struct strata_event *ev,
		       unsigned b)
{
	unsigned n = m->ncls, c = ev->cls->index;
	if (c >= n)
		return 0; /* a class newer than the tables: vw_model_adopt's */
	if (!*cbins && !(*cbins = calloc(n ? n : 1, sizeof(**cbins))))
		return -ENOMEM;
	uint32_t **p = &(*cbins)[c];
	if (!*p && !(*p = calloc(VW_CBINS, sizeof(**p))))
		return -ENOMEM;
	(*p)[b >> VW_CBINS_SHIFT]++;
	return 0;
}

static int feed(struct vw_model *m, const struct strata_event *ev, const int *next)
{
	int err = an_names_feed(m->names, ev);
	if (err)
		return err;
	if (!(ev->id >> 16))
		return 0; /* strata's own records: names only */
	m->nevents++;
	unsigned b = vw_bin(m, ev->timestamp);
	if (m->binev) {
		m->binev[b]++;
		m->bin_lo = b < m->bin_lo ? b : m->bin_lo;
	} else {
		m->prefix[b + 1]++;
	}
	if (ev->cpu < m->ncpus) {
		m->cpus[ev->cpu].bins[b]++;
		if (count_class(m, &m->cpus[ev->cpu].cbins, ev, b))
			return -ENOMEM;
	}
	bool kernel = m->kernel[ev->stream];
	/* a kernel event is on the row of the thread it ran for too (its
	 * tid: the task current on the CPU), beside the user events: the
	 * kernel's work in the thread's own row, FKT's super-trace; the
	 * idle task (0) has no row */
	if (ev->tid || !kernel) {
		struct vw_thread *th = thread_of(m, ev->tid);
		if (!th || (!th->bins && !(th->bins = calloc(m->nbins, sizeof(*th->bins)))))
			return -ENOMEM;
		if (!kernel)
			th->pid = ev->pid;
		th->bins[b]++;
		th->events++;
		if (count_class(m, &th->cbins, ev, b))
			return -ENOMEM;
	}
	if (kernel) {
		unsigned n = strata_trace_nclasses(m->t), c = ev->cls->index;
		if (next[c] >= 0)
			return add_switch(m, ev, next[c]);
		if (next[n + c] >= 0)
			return add_wake(m, ev, next[n + c]);
		return 0;
	}
	/* a built model pairs its messages at the end, a live one as they come */
	if (m->live ? vw_flow_live(m, ev) : vw_flow_feed(m, ev))
		return -ENOMEM;
	if (m->pairer)
		return iv_pairer_feed(m->pairer, ev, on_interval, m);
	return 0;
}

/* The activity rules' pairers see every event, kernel ones too; their
 * intervals' kinds follow the trace's own. */
static int feed_activities(struct vw_model *m, const struct strata_event *ev)
{
	int err = 0;
	for (unsigned r = 0; r < m->nacts && !err; r++) {
		m->kind_base = m->nkinds - m->nacts + r;
		/* a live trace's rule may match no class yet (live.c) */
		if (m->acts[r].pairer)
			err = iv_pairer_feed(m->acts[r].pairer, ev, on_interval, m);
	}
	m->kind_base = 0;
	return err;
}

const char *vw_kind_name(const struct vw_model *m, unsigned kind)
{
	unsigned nk = m->pairer ? iv_pairer_nkinds(m->pairer) : 0;
	if (kind < nk)
		return iv_pairer_kind(m->pairer, kind);
	return kind - nk < m->nacts ? m->acts[kind - nk].name : "";
}

const char *vw_name(const struct vw_model *m, uint32_t tid)
{
	if (m->names)
		return an_names_get(m->names, tid);
	const struct vw_thread *th = an_tidmap_find(&m->threads, tid);
	return th ? th->name : NULL;
}

uint64_t vw_nproblems(const struct vw_model *m)
{
	uint64_t n = strata_trace_nproblems(m->t);
	return n > m->nproblems ? n : m->nproblems;
}

static int cmp_iv(const void *a, const void *b)
{
	const struct vw_iv *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static int cmp_row(const void *a, const void *b)
{
	const struct vw_thread *x = *(struct vw_thread *const *)a;
	const struct vw_thread *y = *(struct vw_thread *const *)b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* When each woken thread next ran: the first time its running track puts
 * it on a CPU at or after the wakeup (a binary search, then the few
 * entries that take it off). */
static void wake_runs(struct vw_model *m, size_t from)
{
	for (size_t i = from; i < m->nwakes; i++) {
		struct vw_wake *w = &m->wakes[i];
		const struct vw_thread *th = an_tidmap_find(&m->threads, (uint32_t)w->wakee);
		if (!th)
			continue;
		size_t lo = 0, hi = th->nrun;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (th->run[mid].t < w->t)
				lo = mid + 1;
			else
				hi = mid;
		}
		while (lo < th->nrun && th->run[lo].tid <= 0)
			lo++;
		w->run = lo < th->nrun ? th->run[lo].t : 0;
	}
}

/* Intervals read at a time by index_level: a multiple of VW_IV_BLOCK. */
#define IV_PIECE (1u << 20)

/* A level's blockmax and cnt (view.h) from its intervals sorted by begin,
 * read a piece at a time: the pieces of a level in the spill file are let
 * go as they are read, so that the build never maps a level whole (but to
 * sort it). */
static int index_level(const struct vw_model *m, struct vw_ivlevel *lv)
{
	size_t nb = (lv->n + VW_IV_BLOCK - 1) / VW_IV_BLOCK;
	if (nb && !(lv->blockmax = calloc(nb, sizeof(*lv->blockmax))))
		return -ENOMEM;
	if (vw_iv_has_cnt(lv->n) && !(lv->cnt = calloc(m->nbins + 1, sizeof(*lv->cnt))))
		return -ENOMEM;
	for (size_t j0 = 0; j0 < lv->n; j0 += IV_PIECE) {
		size_t j1 = lv->n - j0 < IV_PIECE ? lv->n : j0 + IV_PIECE;
		for (size_t j = j0; j < j1; j++) {
			if (lv->iv[j].end > lv->blockmax[j / VW_IV_BLOCK])
				lv->blockmax[j / VW_IV_BLOCK] = lv->iv[j].end;
			if (lv->cnt)
				lv->cnt[vw_bin(m, lv->iv[j].begin) + 1]++;
		}
		vw_spill_release(m->spill, lv->iv + j0, (j1 - j0) * sizeof(*lv->iv));
	}
	for (unsigned k = 0; lv->cnt && k < m->nbins; k++)
		lv->cnt[k + 1] += lv->cnt[k];
	return 0;
}

/* Sort the intervals and list the rows: what the queries need. */
static int finish(struct vw_model *m)
{
	for (unsigned i = 0; i < m->nbins; i++)
		m->prefix[i + 1] += m->prefix[i];
	m->rows = calloc(m->threads.n ? m->threads.n : 1, sizeof(*m->rows));
	if (!m->rows)
		return -ENOMEM;
	for (size_t i = 0; i < m->threads.n; i++) {
		struct vw_thread *th = m->threads.all[i];
		for (unsigned l = 0; l < VW_IV_LEVELS; l++) {
			struct vw_ivlevel *lv = &th->lev[l];
			iv_untail(m, lv);
			if (lv->unsorted) {
				qsort(lv->iv, lv->n, sizeof(*lv->iv), cmp_iv);
				vw_spill_release(m->spill, lv->iv, lv->n * sizeof(*lv->iv));
			}
			if (index_level(m, lv))
				return -ENOMEM;
		}
		if (sum_states(th))
			return -ENOMEM;
		if (th->events || th->niv || th->seen)
			m->rows[m->nrows++] = th;
	}
	qsort(m->rows, m->nrows, sizeof(*m->rows), cmp_row);
	wake_runs(m, 0);
	if (vw_flows_pair(m))
		return -ENOMEM;
	for (unsigned i = 0; i < m->nrows; i++)
		m->rows[i]->row = i;
	return 0;
}

static int alloc_rows(struct vw_model *m)
{
	unsigned n = strata_trace_nstreams(m->t);
	m->kernel = calloc(n ? n : 1, sizeof(*m->kernel));
	if (!m->kernel)
		return -ENOMEM;
	an_kernel_streams(m->t, m->kernel);
	for (unsigned i = 0; i < n; i++) {
		struct strata_stream_info si;
		if (!strata_trace_stream(m->t, i, &si) && si.cpu < 4096 &&
		    si.cpu + 1 > m->ncpus)
			m->ncpus = si.cpu + 1;
	}
	m->cpus = calloc(m->ncpus ? m->ncpus : 1, sizeof(*m->cpus));
	m->prefix = calloc(m->nbins + 1, sizeof(*m->prefix));
	if (!m->cpus || !m->prefix)
		return -ENOMEM;
	for (unsigned i = 0; i < m->ncpus; i++) {
		m->cpus[i].cpu = i;
		if (!(m->cpus[i].bins = calloc(m->nbins, sizeof(uint32_t))))
			return -ENOMEM;
	}
	return 0;
}

/* What a model is made of before its first event: rows of the streams'
 * CPUs, the names, the trace's own interval kinds. */
static int model_init(struct vw_model *m, struct strata_trace *t, const char *path,
		      struct vw_activity *acts, unsigned nacts)
{
	*m = (struct vw_model){ .t = t, .path = path, .nbins = VW_NBINS, .acts = acts,
				.nacts = nacts, .ncls = strata_trace_nclasses(t) };
	int err = alloc_rows(m);
	if (!err)
		err = an_names_create(t, &m->names);
	if (err)
		return err;
	/* a trace without begin/end kinds has no intervals, not an error */
	if (iv_pairer_create(t, &(struct iv_options){ 0 }, &m->pairer) < 0)
		m->pairer = NULL;
	m->nkinds = (m->pairer ? iv_pairer_nkinds(m->pairer) : 0) + nacts;
	return 0;
}

/* One pass's reading: the model and the trace's switch fields. */
struct pass {
	struct vw_model *m;
	const int *next;
};

static int feed_one(void *arg, const struct strata_event *ev)
{
	struct pass *p = arg;
	struct vw_progress *pg = p->m->progress;
	if (pg && !(p->m->nevents & 4095)) {
		atomic_store_explicit(&pg->ts, ev->timestamp, memory_order_relaxed);
		if (atomic_load_explicit(&pg->stop, memory_order_relaxed))
			return -ECANCELED;
	}
	int err = feed(p->m, ev, p->next);
	if (!err && p->m->nacts && ev->id >> 16)
		err = feed_activities(p->m, ev);
	if (!err && p->m->bd) /* a live model's states (live.c) */
		err = bd_feed_event(p->m->bd, ev);
	return err ? err : p->m->bd_err;
}

/* The events of [from, to) into m; strata's own records too unless
 * `records` is false (the build's pass: states.c reads them, and without
 * them the reader takes its batch path). */
static int model_read(struct vw_model *m, uint64_t from, uint64_t to, bool records)
{
	if (to <= from)
		return 0;
	int *next = switch_fields(m->t);
	struct strata_filter *f = NULL;
	struct strata_iter *it = NULL;
	int err = next ? 0 : -ENOMEM;
	/* the whole trace in one pass, or a range through a filter on
	 * time, which seeks to it (reader.md, "Following a live trace") */
	if (!err && (from || to != UINT64_MAX)) {
		err = strata_filter_create(m->t, &f);
		if (!err)
			err = strata_filter_time(f, from, to - 1);
	}
	if (!err)
		err = strata_iter_create(m->t, &(struct strata_iter_options){ .stream = -1,
					 .filter = f, .flags = records ? STRATA_ITER_INTERNAL : 0 },
					 &it);
	if (!err)
		err = vw_iter_each(it, feed_one, &(struct pass){ m, next });
	strata_iter_destroy(it);
	strata_filter_destroy(f);
	free(next);
	return err;
}

int vw_model_read(struct vw_model *m, uint64_t from, uint64_t to)
{
	return model_read(m, from, to, true);
}

int vw_model_build(struct vw_model *m, struct strata_trace *t, const char *path,
		   unsigned open_flags, struct vw_activity *acts, unsigned nacts,
		   struct vw_progress *pg, struct vw_spill *sp)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int err = model_init(m, t, path, acts, nacts);
	m->spill = sp;
	m->progress = pg;
	m->begin = strata_trace_begin(t);
	m->end = strata_trace_end(t);
	if (m->end <= m->begin)
		m->end = m->begin + 1;
	m->gridlen = m->end - m->begin + 1;
	m->ivspan = m->end - m->begin;
	/* strata's records (names only) and the states are read meanwhile,
	 * by states.c; without the records this pass takes the reader's
	 * batch path (docs/view.md, "Speed") */
	struct vw_states *st = NULL;
	if (!err)
		err = vw_states_start(m, open_flags, &st);
	if (!err)
		err = model_read(m, 0, UINT64_MAX, false);
	int serr = vw_states_join(st, m);
	if (!err)
		err = serr;
	if (!err)
		err = finish(m);
	m->nproblems = strata_trace_nproblems(t);
	m->progress = NULL;
	clock_gettime(CLOCK_MONOTONIC, &b);
	m->build_ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	return err;
}

int vw_model_live_init(struct vw_model *m, struct strata_trace *t, const char *path,
		       uint64_t begin, uint64_t gridlen, struct vw_activity *acts,
		       unsigned nacts)
{
	int err = model_init(m, t, path, acts, nacts);
	m->live = true;
	m->begin = m->end = begin;
	m->gridlen = m->ivspan = gridlen;
	m->bin_lo = m->nbins;
	if (!err && !(m->binev = calloc(m->nbins, sizeof(*m->binev))))
		err = -ENOMEM;
	if (!err && !(m->rows = calloc(1, sizeof(*m->rows))))
		err = -ENOMEM;
	return err;
}

/* blockmax of a live level from its first block not up to date. */
static int live_blockmax(struct vw_ivlevel *lv)
{
	size_t nb = (lv->n + VW_IV_BLOCK - 1) / VW_IV_BLOCK, b0 = lv->clean / VW_IV_BLOCK;
	if (lv->clean >= lv->n)
		return 0;
	uint64_t *p = realloc(lv->blockmax, (nb ? nb : 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	lv->blockmax = p;
	for (size_t b = b0; b < nb; b++)
		p[b] = 0;
	for (size_t j = b0 * VW_IV_BLOCK; j < lv->n; j++)
		if (lv->iv[j].end > p[j / VW_IV_BLOCK])
			p[j / VW_IV_BLOCK] = lv->iv[j].end;
	lv->clean = lv->n;
	return 0;
}

/* The rows listed again, by pid and tid: a thread may have become one.
 * Its cost is the threads', whatever the events behind them. */
static int live_rows(struct vw_model *m)
{
	struct vw_thread **r = realloc(m->rows, (m->threads.n ? m->threads.n : 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	m->rows = r;
	m->nrows = 0;
	for (size_t i = 0; i < m->threads.n; i++) {
		struct vw_thread *th = m->threads.all[i];
		for (unsigned l = 0; l < VW_IV_LEVELS; l++)
			if (live_blockmax(&th->lev[l]))
				return -ENOMEM;
		if (th->st_dirty < th->nst && sum_states(th))
			return -ENOMEM;
		if (th->events || th->niv || th->seen)
			m->rows[m->nrows++] = th;
	}
	qsort(m->rows, m->nrows, sizeof(*m->rows), cmp_row);
	for (unsigned i = 0; i < m->nrows; i++)
		m->rows[i]->row = i;
	return 0;
}

int vw_model_settle(struct vw_model *m)
{
	for (unsigned b = m->bin_lo; b < m->nbins; b++)
		m->prefix[b + 1] = m->prefix[b] + m->binev[b];
	m->bin_lo = m->nbins;
	/* a wakee not seen running again is looked for on the next
	 * settles, the last VW_WAKE_PENDING wakeups at most */
	size_t from = m->wake_from;
	if (m->nwakes > VW_WAKE_PENDING && from < m->nwakes - VW_WAKE_PENDING)
		from = m->nwakes - VW_WAKE_PENDING;
	wake_runs(m, from);
	while (from < m->nwakes && m->wakes[from].run)
		from++;
	m->wake_from = from;
	return live_rows(m);
}

/* Levels smaller than this keep their pages, and all do while the RSS is
 * below VW_RSS_LIMIT: the next answers find them mapped (the trims after
 * answers bound them all). STRATA_VIEW_SPILL_MIN (spill.c) lowers the
 * size and lifts the RSS condition, for the tests. */
#define LET_GO_MIN (32u << 20)

static size_t let_go_min(bool *always)
{
	static size_t min;
	static bool knob;
	if (!min) {
		const char *v = getenv("STRATA_VIEW_SPILL_MIN");
		unsigned long long b = v ? strtoull(v, NULL, 10) : 0;
		knob = b >= 4096 && b < LET_GO_MIN;
		min = knob ? (size_t)b : LET_GO_MIN;
	}
	*always = knob;
	return min;
}

/* Pages of lv's intervals [from, to) let go, past the RSS limit. */
static void let_go_part(const struct vw_model *m, const struct vw_ivlevel *lv, size_t from,
			size_t to, bool always)
{
	if (to <= from || to > lv->n || (!always && vw_rss() < VW_RSS_LIMIT))
		return;
	const char *p = (const char *)(lv->iv + from), *map = m->map;
	size_t n = (to - from) * sizeof(*lv->iv);
	if (map && p >= map && p < map + m->map_size)
		vw_pages_release(p, n);
	else
		vw_spill_release(m->spill, p, n);
}

void vw_model_let_go_part(const struct vw_model *m, const struct vw_ivlevel *lv, size_t from,
			  size_t to)
{
	bool always;
	let_go_min(&always);
	let_go_part(m, lv, from, to, always);
}

void vw_model_let_go(const struct vw_model *m, const struct vw_ivlevel *lv)
{
	bool always;
	if (lv->n * sizeof(*lv->iv) >= let_go_min(&always))
		let_go_part(m, lv, 0, lv->n, always);
}

size_t vw_model_let_go_step(void)
{
	bool always;
	return let_go_min(&always) / sizeof(struct vw_iv);
}

static void free_cbins(const struct vw_model *m, uint32_t **cbins)
{
	for (unsigned c = 0; cbins && c < m->ncls; c++)
		free(cbins[c]);
	free(cbins);
}

/* A model from the cache: its arrays are the mapping's, only the
 * tables of pointers into it were allocated. */
static void fini_mapped(struct vw_model *m)
{
	for (size_t i = 0; i < m->threads.n; i++)
		free(((struct vw_thread *)m->threads.all[i])->cbins);
	for (unsigned i = 0; m->cpus && i < m->ncpus; i++)
		free(m->cpus[i].cbins);
	an_tidmap_fini(&m->threads);
	free(m->cpus);
	free(m->rows);
	iv_pairer_destroy(m->pairer);
	munmap(m->map, m->map_size);
	*m = (struct vw_model){ 0 };
}

void vw_model_fini(struct vw_model *m)
{
	if (m->map)
		return fini_mapped(m);
	bd_feed_destroy(m->bd);
	for (size_t i = 0; i < m->threads.n; i++) {
		struct vw_thread *th = m->threads.all[i];
		free(th->bins);
		free_cbins(m, th->cbins);
		free(th->run);
		free(th->st);
		free(th->stcum);
		for (unsigned l = 0; l < VW_IV_LEVELS; l++) {
			vw_spill_free(m->spill, th->lev[l].iv);
			free(th->lev[l].tail);
			free(th->lev[l].blockmax);
			free(th->lev[l].cnt);
		}
	}
	an_tidmap_fini(&m->threads);
	for (unsigned i = 0; m->cpus && i < m->ncpus; i++) {
		free(m->cpus[i].sw);
		free(m->cpus[i].bins);
		free_cbins(m, m->cpus[i].cbins);
	}
	free(m->cpus);
	free(m->rows);
	free(m->prefix);
	free(m->kernel);
	free(m->wakes);
	free(m->flows);
	vw_flows_live_fini(m);
	free(m->binev);
	an_names_destroy(m->names);
	iv_pairer_destroy(m->pairer);
	vw_spill_close(m->spill);
	*m = (struct vw_model){ 0 };
}
