// SPDX-License-Identifier: MIT
/* strata view's api/window: the rows between two times at a width in pixels, per-pixel summaries where the events are denser than the pixels (docs/view.md, "Level of detail"). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "api.h"
#include "wire.h"

struct win {
	struct vw_model *m;
	uint64_t t0, t1;         /* ticks */
	unsigned w;
	double scale;            /* pixels per tick */
	struct vw_buf *o;        /* a 400's body */
	struct wire *e;          /* the answer */
	const struct vw_filter *q;
	struct strata_filter *f; /* q for the reader, or NULL */
	bool *cls;               /* classes q's globs keep, or NULL: all */
};

static double xof(const struct win *v, uint64_t ts)
{
	if (ts <= v->t0)
		return 0;
	double x = (double)(ts - v->t0) * v->scale;
	return x > v->w ? v->w : x;
}

/* Per (row, pixel): events, the first one's time and class (-1: from
 * bins), and the pixels a bin wider than one covers. */
struct px {
	uint32_t n;
	int32_t cls;
	uint64_t ts;
	uint32_t span;
};

static void put_marks(const struct win *v, const struct px *p)
{
	wire_list(v->e, WT_MARKS, "marks");
	for (unsigned x = 0; x < v->w; x++)
		if (p[x].n)
			wire_mark(v->e, x, p[x].span ? p[x].span : 1, p[x].n,
				  vw_ns(v->m, p[x].ts - v->m->begin), p[x].cls);
	wire_list_end(v->e);
}

static void count(struct px *p, uint64_t n, uint64_t ts, int32_t cls)
{
	if (!p->n) {
		p->ts = ts;
		p->cls = cls;
	}
	p->n = p->n + n > UINT32_MAX ? UINT32_MAX : (uint32_t)(p->n + n);
}

void vw_range_init(struct vw_range *r, const struct vw_model *m, struct strata_iter *it,
		   uint64_t t0, uint64_t t1)
{
	*r = (struct vw_range){ .it = it, .t0 = t0, .t1 = t1,
		.patience = strata_trace_nproblems(m->t) ? 1u << 16 : 64 };
	strata_iter_seek(it, t0);
}

bool vw_range_next(struct vw_range *r, const struct strata_event **ev)
{
	while (r->past < r->patience && strata_iter_next(r->it, ev) == 1) {
		uint64_t ts = (*ev)->timestamp;
		if (ts >= r->t0 && ts <= r->t1) {
			r->past = 0;
			return true;
		}
		r->past += ts > r->t1;
	}
	return false;
}

/* From the trace: every event of the window into its rows' pixels. Rows:
 * the CPUs, then the threads (view.h: m->rows): a kernel event on its
 * thread's too, the task it ran for (model.c: feed; the idle task has no
 * bins, so no row). */
static int fill_exact(const struct win *v, struct px *px)
{
	struct vw_model *m = v->m;
	struct strata_iter *it;
	int err = strata_iter_create(m->t, &(struct strata_iter_options){ .stream = -1,
				     .filter = v->f }, &it);
	if (err)
		return err;
	struct vw_range r;
	vw_range_init(&r, m, it, v->t0, v->t1);
	const struct strata_event *ev;
	while (vw_range_next(&r, &ev)) {
		unsigned x = (unsigned)xof(v, ev->timestamp);
		if (x >= v->w)
			x = v->w - 1;
		int32_t cls = (int32_t)ev->cls->index;
		if (ev->cpu < m->ncpus)
			count(&px[(size_t)ev->cpu * v->w + x], 1, ev->timestamp, cls);
		struct vw_thread *th = an_tidmap_find(&m->threads, ev->tid);
		if (th && th->bins)
			count(&px[(size_t)(m->ncpus + th->row) * v->w + x], 1,
			      ev->timestamp, cls);
	}
	strata_iter_destroy(it);
	return 0;
}

static uint64_t bin_start(const struct vw_model *m, unsigned b)
{
	unsigned __int128 x = (unsigned __int128)b * m->gridlen;
	return m->begin + (uint64_t)((x + m->nbins - 1) / m->nbins);
}

/* From the bins (of 2^shift of the row's bins each): each bin of the
 * window into the pixel where it starts, spread over the pixels it covers.
 * A thread row with kernel events only (its states) has no bins. */
static void fill_bins(const struct win *v, struct px *p, const uint32_t *bins,
		      unsigned shift)
{
	if (!bins)
		return;
	unsigned b0 = vw_bin(v->m, v->t0) >> shift, b1 = vw_bin(v->m, v->t1) >> shift;
	for (unsigned b = b0; b <= b1; b++) {
		if (!bins[b])
			continue;
		uint64_t s = bin_start(v->m, b << shift), e = bin_start(v->m, (b + 1) << shift);
		unsigned x0 = (unsigned)xof(v, s), x1 = (unsigned)xof(v, e);
		if (x0 >= v->w)
			x0 = v->w - 1;
		count(&p[x0], bins[b], s > v->t0 ? s : v->t0, -1);
		if (x1 > x0 + p[x0].span)
			p[x0].span = x1 - x0;
	}
}

/* The first of n sorted items of `size` bytes whose leading uint64_t time
 * (vw_switch.t, vw_iv.begin) is after ts. */
_Static_assert(offsetof(struct vw_switch, t) == 0, "after(): time first");
_Static_assert(offsetof(struct vw_iv, begin) == 0, "after(): time first");

static size_t after(const void *base, size_t n, size_t size, uint64_t ts)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t t;
		memcpy(&t, (const char *)base + mid * size, sizeof(t));
		if (t <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct track {
	const struct vw_switch *sw;
	size_t n;
};

static size_t first_after(const struct track *c, uint64_t ts)
{
	return after(c->sw, c->n, sizeof(*c->sw), ts); /* sw[k - 1] runs at ts */
}

/* A track of switches (a CPU's running threads, a thread's CPUs): exact
 * slices when the window holds few switches, else per pixel what runs at
 * its middle (and whether others ran in it too). Flat [x0, x1, id, mixed]
 * runs under `key`; id 0 (idle, not running) is not drawn. */
static void put_slices(const struct win *v, const char *key, const struct vw_switch *sw,
		       size_t n)
{
	const struct track tr = { sw, n }, *c = &tr;
	wire_list(v->e, WT_SLICES, key);
	size_t i0 = first_after(c, v->t0), i1 = first_after(c, v->t1);
	if (i1 - i0 <= 2 * (size_t)v->w) {
		for (size_t i = i0 ? i0 - 1 : 0; i < i1; i++) {
			uint64_t e = i + 1 < c->n ? c->sw[i + 1].t : v->t1;
			if (!c->sw[i].tid || e < v->t0)
				continue; /* idle: nothing drawn */
			wire_slice(v->e, xof(v, c->sw[i].t), xof(v, e), c->sw[i].tid, 0, false);
		}
		wire_list_end(v->e);
		return;
	}
	int32_t run_tid = 0;
	int run_mixed = 0;
	unsigned run_x = 0;
	double tpp = (double)(v->t1 - v->t0) / v->w;
	for (unsigned x = 0; x <= v->w; x++) {
		int32_t tid = 0;
		int mixed = 0;
		if (x < v->w) {
			uint64_t a = v->t0 + (uint64_t)(x * tpp);
			uint64_t b = v->t0 + (uint64_t)((x + 1) * tpp);
			size_t k = first_after(c, a + (b - a) / 2);
			tid = k ? c->sw[k - 1].tid : 0;
			mixed = first_after(c, b) - first_after(c, a) > 1;
		}
		if (x < v->w && tid == run_tid && mixed == run_mixed)
			continue;
		if (run_tid && x > run_x)
			wire_slice(v->e, run_x, x, run_tid, run_mixed, true);
		run_tid = tid;
		run_mixed = mixed;
		run_x = x;
	}
	wire_list_end(v->e);
}

/* ---- a thread's states ----------------------------------------------------- */

void vw_state_upto(const struct vw_thread *th, uint64_t x, uint64_t acc[BD_NSTATES])
{
	size_t k = after(th->st, th->nst, sizeof(*th->st), x); /* st[k - 1] holds x */
	memset(acc, 0, BD_NSTATES * sizeof(*acc));
	if (!k--)
		return;
	size_t b = k / VW_ST_BLOCK;
	memcpy(acc, th->stcum[b], BD_NSTATES * sizeof(*acc));
	for (size_t j = b * VW_ST_BLOCK; j < k; j++)
		acc[th->st[j].tid] += th->st[j + 1].t - th->st[j].t;
	uint64_t e = x < th->st_end ? x : th->st_end;
	if (e > th->st[k].t)
		acc[th->st[k].tid] += e - th->st[k].t;
}

static void put_state(const struct win *v, double x0, double x1, int state, int mixed,
		      uint64_t a, uint64_t b)
{
	const struct vw_model *m = v->m;
	wire_state(v->e, x0, x1, state, mixed, vw_ns(m, a - m->begin), vw_ns(m, b - m->begin));
}

/* A thread's states, flat [x0, x1, state, mixed, from, to] (from, to in
 * ns: the stretch's own ends, or the run's pixels'). When the window holds
 * at most a stretch per pixel, each one; else per pixel the state it spent
 * most of its time in (mixed: it had others too), merged into runs. Not
 * seen (before its first event, after its exit) is not drawn. */
static void put_states(const struct win *v, const struct vw_thread *th)
{
	const struct vw_switch *st = th->st;
	size_t n = th->seen ? th->nst : 0;
	wire_list(v->e, WT_STATES, "states");
	size_t i0 = after(st, n, sizeof(*st), v->t0), i1 = after(st, n, sizeof(*st), v->t1);
	if (i1 - i0 <= v->w) {
		for (size_t i = i0 ? i0 - 1 : 0; i < i1; i++) {
			uint64_t e = i + 1 < n ? st[i + 1].t : th->st_end;
			if (st[i].tid == BD_UNSEEN || e <= v->t0)
				continue;
			put_state(v, xof(v, st[i].t), xof(v, e), st[i].tid, 0, st[i].t, e);
		}
		wire_list_end(v->e);
		return;
	}
	uint64_t prev[BD_NSTATES], cur[BD_NSTATES], run_a = v->t0, a = v->t0;
	int run_state = -1, run_mixed = 0;
	unsigned run_x = 0;
	double tpp = (double)(v->t1 - v->t0) / v->w;
	vw_state_upto(th, v->t0, prev);
	for (unsigned x = 0; x <= v->w; x++) {
		int state = -1, mixed = 0;
		uint64_t b = x < v->w ? v->t0 + (uint64_t)((x + 1) * tpp) : v->t1;
		if (x < v->w) {
			vw_state_upto(th, b, cur);
			uint64_t most = 0;
			for (int s = 0; s < BD_NSTATES; s++) {
				uint64_t d = cur[s] - prev[s];
				mixed += d > 0;
				if (d > most) {
					most = d;
					state = s;
				}
			}
			mixed = mixed > 1;
			if (state == BD_UNSEEN)
				state = -1;
			memcpy(prev, cur, sizeof(prev));
		}
		if (x < v->w && state == run_state && mixed == run_mixed) {
			a = b;
			continue;
		}
		if (run_state >= 0 && x > run_x)
			put_state(v, run_x, x, run_state, run_mixed, run_a, a);
		run_state = state;
		run_mixed = mixed;
		run_x = x;
		run_a = a;
		a = b;
	}
	wire_list_end(v->e);
}

/* The first interval of lv that begins after ts. */
static size_t iv_after(const struct vw_ivlevel *lv, uint64_t ts)
{
	return after(lv->iv, lv->n, sizeof(*lv->iv), ts);
}

/* One interval (exact) or a run of pixels where short ones begin (not
 * exact: a, b are the run's ends, depth and kind its first one's). */
static void put_iv(const struct win *v, double x0, double x1, const struct vw_iv *iv,
		   uint64_t a, uint64_t b, bool exact)
{
	const struct vw_model *m = v->m;
	wire_iv(v->e, x0, x1, iv->depth, iv->kind, vw_ns(m, a - m->begin),
		vw_ns(m, b - m->begin), exact);
}

/* A level whose intervals are all a pixel or more: each one in the
 * window. Those that began before it and are still open are found by
 * the blocks' latest ends, without reading the others. */
static void put_level(const struct win *v, const struct vw_ivlevel *lv)
{
	size_t end = iv_after(lv, v->t1);
	for (size_t blk = 0; blk * VW_IV_BLOCK < end; blk++) {
		if (lv->blockmax[blk] < v->t0)
			continue;
		size_t j1 = (blk + 1) * VW_IV_BLOCK;
		for (size_t j = blk * VW_IV_BLOCK; j < j1 && j < end; j++)
			if (lv->iv[j].end >= v->t0)
				put_iv(v, xof(v, lv->iv[j].begin), xof(v, lv->iv[j].end),
				       &lv->iv[j], lv->iv[j].begin, lv->iv[j].end, true);
	}
}

/* cnt[k] of a level, bounded by its intervals (a damaged cache may say
 * more). */
static size_t cnt_at(const struct vw_ivlevel *lv, unsigned k)
{
	return lv->cnt[k] < lv->n ? lv->cnt[k] : lv->n;
}

/* The first interval of lv that begins at ts (>= 1) or later. With the
 * level's counts per bin, a search inside ts's bin only, and no read at
 * all when that bin is empty. */
static size_t iv_from(const struct win *v, const struct vw_ivlevel *lv, uint64_t ts)
{
	if (!lv->cnt)
		return iv_after(lv, ts - 1);
	unsigned k = vw_bin(v->m, ts);
	size_t lo = cnt_at(lv, k), hi = cnt_at(lv, k + 1);
	hi = hi > lo ? hi : lo;
	return lo + after(lv->iv + lo, hi - lo, sizeof(*lv->iv), ts - 1);
}

/* Whether a bin wholly inside [a, b) has an interval of lv beginning
 * in it: then one begins in [a, b), known without reading the
 * intervals. */
static bool bins_say_busy(const struct win *v, const struct vw_ivlevel *lv, uint64_t a,
			  uint64_t b)
{
	if (!lv->cnt || b <= a)
		return false;
	unsigned k0 = vw_bin(v->m, a), k1 = vw_bin(v->m, b - 1);
	return k1 > k0 + 1 && cnt_at(lv, k1) > cnt_at(lv, k0 + 1);
}

/* A level of intervals shorter than two pixels: per pixel, whether one
 * begins there, as runs of busy pixels (the depth and kind of the first
 * of each run). Its cost is the pixels, not the intervals; where a pixel
 * holds several bins, mostly not even the pixels' intervals (cnt), so
 * that a wide window of a cached model touches little of the cache. */
static void probe_level(const struct win *v, const struct vw_ivlevel *lv)
{
	double tpp = (double)(v->t1 - v->t0) / v->w;
	uint64_t a = v->t0 ? v->t0 : 1;
	const struct vw_iv *run = NULL;
	unsigned run_x = 0;
	/* iv_from at a, when known: a pixel's right edge is the next one's
	 * left, so each edge is searched once (it was most of a wide
	 * window's time: docs/view.md, "Speed") */
	size_t ia = SIZE_MAX;
	for (unsigned x = 0; x <= v->w; x++) {
		bool busy = false;
		if (x < v->w) {
			uint64_t b = v->t0 + (uint64_t)((x + 1) * tpp);
			size_t ib = SIZE_MAX;
			busy = bins_say_busy(v, lv, a, b);
			if (!busy) {
				ia = ia == SIZE_MAX ? iv_from(v, lv, a) : ia;
				ib = iv_from(v, lv, b);
				busy = ib > ia;
			}
			if (busy && !run) {
				ia = ia == SIZE_MAX ? iv_from(v, lv, a) : ia;
				run = &lv->iv[ia];
				run_x = x;
			}
			a = b;
			ia = ib;
		}
		if (!busy && run) {
			put_iv(v, run_x, x, run, v->t0 + (uint64_t)(run_x * tpp),
			       v->t0 + (uint64_t)(x * tpp), false);
			run = NULL;
		}
	}
}

/* A thread's intervals in the window, flat [x0, x1, depth, kind, from,
 * to, exact] (put_iv). */
static void put_intervals(const struct win *v, const struct vw_thread *th)
{
	wire_list(v->e, WT_IVS, "intervals");
	uint64_t span = v->m->ivspan;
	double tpp = (double)(v->t1 - v->t0) / v->w;
	for (unsigned l = 0; l < VW_IV_LEVELS; l++) {
		if (!th->lev[l].n)
			continue;
		/* level l's intervals last more than span >> (l + 1) */
		if ((double)(span >> (l + 1)) >= tpp)
			put_level(v, &th->lev[l]);
		else
			probe_level(v, &th->lev[l]);
		vw_model_let_go(v->m, &th->lev[l]);
	}
	wire_list_end(v->e);
}

/* A row's marks from the bins when the window is too wide to read: its
 * own bins, or under a filter on names those of the classes it keeps
 * (coarser). Returns whether they are what the filter keeps: an
 * expression, or threads on a CPU row, are not in any bins. */
static bool fill_row_bins(const struct win *v, struct px *p, const uint32_t *bins,
			  uint32_t **cbins, bool cpu_row)
{
	const struct vw_filter *q = v->q;
	if (!v->f) {
		fill_bins(v, p, bins, 0);
		return true;
	}
	if (cpu_row && q->ntids)
		return false; /* which thread each binned event was is not kept */
	for (unsigned c = 0; cbins && c < strata_trace_nclasses(v->m->t); c++)
		if (cbins[c] && (!v->cls || v->cls[c]))
			fill_bins(v, p, cbins[c], VW_CBINS_SHIFT);
	return !q->expr;
}

/* Whether q keeps a wakeup: its CPU, its waker or wakee among the
 * threads, its class among the globs' (cls; NULL: all). An expression
 * does not apply: a wakeup is drawn, not listed. */
static bool keeps_wake(const struct vw_filter *q, const bool *cls, const struct vw_wake *k)
{
	return vw_filter_keeps(q, 'c', k->cpu) && (!cls || cls[k->cls]) &&
	       (vw_filter_keeps(q, 't', (uint32_t)k->waker) ||
		vw_filter_keeps(q, 't', (uint32_t)k->wakee));
}

/* The wakeups of the window that q keeps, as arrows: flat [x0, x1, waker,
 * cpu, wakee, t, run] (x1 at the wakee's next run, or at the wakeup when
 * it has none; t, run in ns, run -1: none), the first VW_ARROWS_MAX of
 * them, and how many more were left out. The window's wakeups are found
 * by a binary search; the count of those left out reads the rest of
 * them, which a filter only narrows: without one it is a subtraction. */
static void put_arrows(const struct win *v)
{
	const struct vw_model *m = v->m;
	_Static_assert(offsetof(struct vw_wake, t) == 0, "after(): time first");
	size_t i0 = after(m->wakes, m->nwakes, sizeof(*m->wakes), v->t0 ? v->t0 - 1 : 0);
	size_t i1 = after(m->wakes, m->nwakes, sizeof(*m->wakes), v->t1);
	bool all = !v->q->ncpus && !v->q->ntids && !v->cls && !v->q->none;
	size_t n = 0, left = 0;
	wire_list(v->e, WT_ARROWS, "arrows");
	for (size_t i = i0; i < i1; i++) {
		const struct vw_wake *k = &m->wakes[i];
		if (n == VW_ARROWS_MAX && all) {
			left = i1 - i;
			break;
		}
		if (!keeps_wake(v->q, v->cls, k))
			continue;
		if (n == VW_ARROWS_MAX) {
			left++;
			continue;
		}
		uint64_t to = k->run ? k->run : k->t;
		wire_arrow(v->e, xof(v, k->t), (double)((int64_t)(to - v->t0)) * v->scale,
			   k->waker, k->cpu, k->wakee, vw_ns(m, k->t - m->begin),
			   k->run ? (int64_t)vw_ns(m, k->run - m->begin) : -1);
		n++;
	}
	wire_list_end(v->e);
	wire_left(v->e, "arrows_left", left);
}

/* A list of the answer's shape, empty (marks_only). */
static void put_none(struct wire *e, enum wire_table tab, const char *key)
{
	wire_list(e, tab, key);
	wire_list_end(e);
}

int vw_api_window(struct vw_model *m, uint64_t t0, uint64_t t1, unsigned w,
		  const struct vw_filter *q, bool bin, bool marks_only, struct vw_buf *o)
{
	struct wire e;
	struct win v = { .m = m, .w = w, .o = o, .e = &e, .q = q };
	v.t0 = m->begin + vw_ticks(m, t0);
	v.t1 = m->begin + vw_ticks(m, t1 + 1) - 1; /* t1's ns included */
	if (v.t1 <= v.t0)
		v.t1 = v.t0 + 1;
	v.scale = (double)w / (double)(v.t1 - v.t0);
	unsigned b0 = vw_bin(m, v.t0), b1 = vw_bin(m, v.t1);
	uint64_t est = m->prefix[b1 + 1] - m->prefix[b0];
	bool exact = est <= VW_EXACT_MAX;
	size_t nrows = m->ncpus + m->nrows;
	bool filtered = true;
	struct px *px = calloc(nrows * w + 1, sizeof(*px));
	int err = px ? vw_filter_make(m, q, &v.f, o) : -ENOMEM;
	if (!err)
		err = vw_class_table(m, q->events, &v.cls);
	if (!err && exact && !q->none) {
		err = fill_exact(&v, px);
	} else if (!err && !q->none) {
		for (unsigned i = 0; i < m->ncpus; i++)
			if (vw_filter_keeps(q, 'c', i))
				filtered &= fill_row_bins(&v, px + (size_t)i * w, m->cpus[i].bins,
							  m->cpus[i].cbins, true);
		for (unsigned i = 0; i < m->nrows; i++)
			if (vw_filter_keeps(q, 't', m->rows[i]->tid))
				filtered &= fill_row_bins(&v, px + (size_t)(m->ncpus + i) * w,
							  m->rows[i]->bins, m->rows[i]->cbins,
							  false);
	}
	strata_filter_destroy(v.f);
	if (err) {
		free(v.cls);
		free(px);
		return err;
	}
	/* filtered: false when the marks came from bins that the filter's
	 * expression (or its threads, on a CPU row) could not narrow */
	wire_init(&e, o, bin);
	wire_head(&e, t0, t1, w, exact, filtered, est);
	for (unsigned i = 0; i < m->ncpus; i++) {
		wire_cpu(&e, i);
		if (marks_only)
			put_none(&e, WT_SLICES, "slices");
		else
			put_slices(&v, "slices", m->cpus[i].sw, m->cpus[i].nsw);
		put_marks(&v, px + (size_t)i * w);
		wire_obj_end(&e);
	}
	wire_threads(&e);
	for (unsigned i = 0; i < m->nrows; i++) {
		wire_thread(&e, m->rows[i]->tid);
		if (marks_only) {
			put_none(&e, WT_SLICES, "running");
			put_none(&e, WT_STATES, "states");
			put_none(&e, WT_IVS, "intervals");
		} else {
			put_slices(&v, "running", m->rows[i]->run, m->rows[i]->nrun);
			put_states(&v, m->rows[i]);
			put_intervals(&v, m->rows[i]);
		}
		put_marks(&v, px + (size_t)(m->ncpus + i) * w);
		wire_obj_end(&e);
	}
	wire_rows_end(&e);
	if (marks_only) {
		put_none(&e, WT_ARROWS, "arrows");
		wire_left(&e, "arrows_left", 0);
		put_none(&e, WT_FLOWS, "flows");
		wire_left(&e, "flows_left", 0);
	} else {
		put_arrows(&v);
		vw_put_flows(m, v.t0, v.t1, w, v.scale, q, v.cls, &e);
	}
	wire_end(&e);
	wire_fini(&e);
	free(v.cls);
	free(px);
	return 0;
}
