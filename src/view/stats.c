// SPDX-License-Identifier: MIT
/* strata view's statistics of a time range: events per name, CPU and thread, a histogram of interval durations, the longest intervals (docs/view.md, api/stats, api/intervals). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "api.h"

/* Log-scale bins of durations: bin k holds [2^k, 2^(k+1)) ns (bin 0 also 0). */
#define ST_HIST 64

struct counts {
	uint64_t *cls;           /* per event class */
	uint64_t *cpu;           /* per CPU */
	uint64_t *row;           /* per thread row (m->rows), user events */
	bool exact, filtered;
};

/* From the trace: every event of [t0, t1] that f keeps, as the window's
 * fill_exact reads them (vw_range). At most VW_EXACT_MAX events, by the
 * caller's estimate. */
static int count_exact(struct vw_model *m, uint64_t t0, uint64_t t1, struct strata_filter *f,
		       struct counts *c)
{
	struct strata_iter *it;
	int err = strata_iter_create(m->t, &(struct strata_iter_options){ .stream = -1,
				     .filter = f }, &it);
	if (err)
		return err;
	struct vw_range r;
	vw_range_init(&r, m, it, t0, t1);
	const struct strata_event *ev;
	while (vw_range_next(&r, &ev)) {
		c->cls[ev->cls->index]++;
		if (ev->cpu < m->ncpus)
			c->cpu[ev->cpu]++;
		/* a thread's row: its events and the kernel's run for it
		 * (model.c: feed) */
		struct vw_thread *th = an_tidmap_find(&m->threads, ev->tid);
		if (th && th->bins)
			c->row[th->row]++;
	}
	strata_iter_destroy(it);
	return 0;
}

/* Bins b0..b1 of a row's own bins (nbins) or of its class bins (cbins). */
static uint64_t sum_bins(const uint32_t *bins, unsigned b0, unsigned b1)
{
	uint64_t n = 0;
	for (unsigned b = b0; bins && b <= b1; b++)
		n += bins[b];
	return n;
}

/* A row's events in the range from its bins: its own, or under a filter
 * on names its class bins of the kept classes (into per-class counts
 * too when cls is given). */
static uint64_t row_bins(const struct vw_model *m, const uint32_t *bins, uint32_t **cbins,
			 bool filter, const bool *keep, unsigned b0, unsigned b1, uint64_t *cls)
{
	if (!filter && !cls)
		return sum_bins(bins, b0, b1);
	uint64_t n = 0;
	for (unsigned k = 0; cbins && k < strata_trace_nclasses(m->t); k++) {
		if (!cbins[k] || (keep && !keep[k]))
			continue;
		uint64_t x = sum_bins(cbins[k], b0 >> VW_CBINS_SHIFT, b1 >> VW_CBINS_SHIFT);
		n += x;
		if (cls)
			cls[k] += x;
	}
	return n;
}

/* From the bins when the range holds too many events to read: the whole
 * bins it touches (so not exact), per CPU and thread, and per class from
 * the CPU rows' class bins (every event is on a CPU row). An expression
 * is in no bins, nor which thread a CPU's event was: then not filtered. */
static void count_bins(struct vw_model *m, uint64_t t0, uint64_t t1, const struct vw_filter *q,
		       const bool *keep, struct counts *c)
{
	unsigned b0 = vw_bin(m, t0), b1 = vw_bin(m, t1);
	bool filter = q->events || q->expr || q->ncpus || q->ntids;
	c->filtered = !q->expr && !q->ntids;
	for (unsigned i = 0; i < m->ncpus; i++)
		if (vw_filter_keeps(q, 'c', i))
			c->cpu[i] = row_bins(m, m->cpus[i].bins, m->cpus[i].cbins, filter, keep,
					     b0, b1, c->cls);
	/* a CPU row's count under a name filter comes from its class bins,
	 * coarser than its own: the per-class counts and it agree */
	for (unsigned i = 0; i < m->nrows; i++)
		if (vw_filter_keeps(q, 't', m->rows[i]->tid))
			c->row[i] = row_bins(m, m->rows[i]->bins, m->rows[i]->cbins, filter, keep,
					     b0, b1, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The first interval of a level that begins after ts. */
static size_t begins_after(const struct vw_ivlevel *lv, uint64_t ts)
{
	size_t lo = 0, hi = lv->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (lv->iv[mid].begin <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Durations d (ns, n of them, each standing for `step`) as the answer's
 * "durations": count, min, median, max and the log-scale histogram. */
static void put_durations(struct vw_buf *o, int kind, uint64_t *d, size_t n, size_t step,
			  bool exact)
{
	qsort(d, n, sizeof(*d), cmp_u64);
	uint64_t hist[ST_HIST] = { 0 };
	for (size_t i = 0; i < n; i++)
		hist[63 - __builtin_clzll(d[i] | 1)] += step;
	vw_printf(o, ",\"durations\":{\"kind\":%d,\"exact\":%s,\"step\":%zu,\"count\":%llu",
		  kind, exact ? "true" : "false", step, (unsigned long long)(n * step));
	if (n)
		vw_printf(o, ",\"min\":%llu,\"median\":%llu,\"max\":%llu",
			  (unsigned long long)d[0], (unsigned long long)d[n / 2],
			  (unsigned long long)d[n - 1]);
	vw_puts(o, ",\"hist\":[");
	for (unsigned k = 0, first = 1; k < ST_HIST; k++) {
		if (!hist[k])
			continue;
		vw_printf(o, "%s%llu,%llu,%llu", first ? "" : ",",
			  k ? (unsigned long long)1 << k : 0ull,
			  k < 63 ? (unsigned long long)2 << k : ~0ull,
			  (unsigned long long)hist[k]);
		first = 0;
	}
	vw_puts(o, "]}");
}

/*
 * The durations of the intervals of `kind` that begin in [t0, t1], on the
 * threads q keeps. Each thread's levels are sorted by begin, so the
 * intervals in the range cost two binary searches a level to count; when
 * they are more than VW_EXACT_MAX, every step-th of each level is read
 * (step = their number / VW_EXACT_MAX, rounded up) and counted step times:
 * the answer is then a sample, and says so.
 */
static int durations(struct vw_model *m, uint64_t t0, uint64_t t1, int kind,
		     const struct vw_filter *q, struct vw_buf *o)
{
	size_t total = 0;
	for (unsigned i = 0; i < m->nrows; i++) {
		const struct vw_thread *th = m->rows[i];
		if (!vw_filter_keeps(q, 't', th->tid))
			continue;
		for (unsigned l = 0; l < VW_IV_LEVELS; l++)
			total += begins_after(&th->lev[l], t1) -
				 begins_after(&th->lev[l], t0 ? t0 - 1 : 0);
	}
	size_t step = total > VW_EXACT_MAX ? (total + VW_EXACT_MAX - 1) / VW_EXACT_MAX : 1;
	uint64_t *d = malloc((total / step + VW_IV_LEVELS * (size_t)m->nrows + 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	size_t n = 0;
	for (unsigned i = 0; i < m->nrows; i++) {
		const struct vw_thread *th = m->rows[i];
		if (!vw_filter_keeps(q, 't', th->tid))
			continue;
		for (unsigned l = 0; l < VW_IV_LEVELS; l++) {
			const struct vw_ivlevel *lv = &th->lev[l];
			size_t j1 = begins_after(lv, t1), chunk = vw_model_let_go_step();
			size_t j = begins_after(lv, t0 ? t0 - 1 : 0), behind = j;
			for (; j < j1; j += step) {
				if ((int)lv->iv[j].kind == kind)
					d[n++] = vw_ns(m, lv->iv[j].end - lv->iv[j].begin);
				/* a file's pages behind the read let go as it
				 * goes: a whole-trace sample of a 3 GB trace
				 * mapped all of it ("Memory") */
				if (j - behind >= chunk) {
					vw_model_let_go_part(m, lv, behind, j);
					behind = j;
				}
			}
			vw_model_let_go_part(m, lv, behind, j < j1 ? j : j1);
		}
	}
	put_durations(o, kind, d, n, step, step == 1);
	free(d);
	return 0;
}

int vw_api_stats(struct vw_model *m, uint64_t t0, uint64_t t1, int kind, const char *rules,
		 const struct vw_filter *q, struct vw_buf *o)
{
	unsigned ncls = strata_trace_nclasses(m->t);
	struct counts c = { .cls = calloc(ncls + 1, sizeof(uint64_t)),
			    .cpu = calloc(m->ncpus + 1, sizeof(uint64_t)),
			    .row = calloc(m->nrows + 1, sizeof(uint64_t)),
			    .exact = true, .filtered = true };
	struct strata_filter *f = NULL;
	bool *keep = NULL;
	uint64_t a = m->begin + vw_ticks(m, t0), b = m->begin + vw_ticks(m, t1 + 1) - 1;
	if (b < a)
		b = a;
	unsigned b0 = vw_bin(m, a), b1 = vw_bin(m, b);
	uint64_t est = m->prefix[b1 + 1] - m->prefix[b0];
	/* a typed rule's durations first: a bad rule is a 400, said
	 * before any of the answer is written */
	uint64_t *typed = NULL;
	size_t ntyped = 0;
	bool typed_complete = true;
	int err = c.cls && c.cpu && c.row ? 0 : -ENOMEM;
	if (!err && rules && kind >= 0 && !q->none)
		err = vw_activity_durations(m, rules, (unsigned)kind, a, b, q, &typed, &ntyped,
					    &typed_complete, o);
	if (!err)
		err = vw_filter_make(m, q, &f, o);
	if (!err)
		err = vw_class_table(m, q->events, &keep);
	if (!err && !q->none && est <= VW_EXACT_MAX) {
		err = count_exact(m, a, b, f, &c);
	} else if (!err && !q->none) {
		c.exact = false;
		count_bins(m, a, b, q, keep, &c);
	}
	if (err)
		goto out;
	uint64_t total = 0;
	for (unsigned k = 0; k < ncls; k++)
		total += c.cls[k];
	vw_printf(o, "{\"t0\":%llu,\"t1\":%llu,\"exact\":%s,\"filtered\":%s,\"events\":%llu,"
		  "\"names\":[", (unsigned long long)t0, (unsigned long long)t1,
		  c.exact ? "true" : "false", c.filtered ? "true" : "false",
		  (unsigned long long)total);
	for (unsigned k = 0, first = 1; k < ncls; k++) {
		const struct strata_event_class *cl = strata_trace_class(m->t, k);
		if (!c.cls[k] || !cl)
			continue;
		vw_printf(o, "%s{\"cls\":%u,\"name\":", first ? "" : ",", k);
		vw_put_str(o, cl->name, strlen(cl->name));
		vw_printf(o, ",\"count\":%llu}", (unsigned long long)c.cls[k]);
		first = 0;
	}
	vw_puts(o, "],\"cpus\":[");
	for (unsigned i = 0, first = 1; i < m->ncpus; i++) {
		if (!c.cpu[i])
			continue;
		vw_printf(o, "%s{\"cpu\":%u,\"count\":%llu}", first ? "" : ",", i,
			  (unsigned long long)c.cpu[i]);
		first = 0;
	}
	vw_puts(o, "],\"threads\":[");
	for (unsigned i = 0, first = 1; i < m->nrows; i++) {
		const struct vw_thread *th = m->rows[i];
		if (!c.row[i])
			continue;
		const char *nm = vw_name(m, th->tid);
		vw_printf(o, "%s{\"tid\":%u,\"pid\":%u,\"count\":%llu,\"name\":", first ? "" : ",",
			  th->tid, th->pid, (unsigned long long)c.row[i]);
		vw_put_str(o, nm ? nm : "", nm ? strlen(nm) : 0);
		vw_puts(o, "}");
		first = 0;
	}
	vw_puts(o, "]");
	if (kind >= 0 && !q->none && rules)
		put_durations(o, kind, typed, ntyped, 1, typed_complete);
	else if (kind >= 0 && !q->none)
		err = durations(m, a, b, kind, q, o);
	vw_puts(o, "}");
out:
	strata_filter_destroy(f);
	free(typed);
	free(keep);
	free(c.cls);
	free(c.cpu);
	free(c.row);
	return err;
}

/* ---- the intervals of a kind, longest first or in time order ---------------- */

struct pick {
	const struct vw_thread *th;
	const struct vw_iv *iv;
};

static int by_length(const void *a, const void *b)
{
	const struct vw_iv *x = ((const struct pick *)a)->iv, *y = ((const struct pick *)b)->iv;
	uint64_t dx = x->end - x->begin, dy = y->end - y->begin;
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int by_begin(const void *a, const void *b)
{
	const struct vw_iv *x = ((const struct pick *)a)->iv, *y = ((const struct pick *)b)->iv;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/*
 * The intervals of a kind that overlap [t0, t1]: begun in it, before it
 * and ending in it, or spanning it (as api/activity's for the page's
 * rules). Longest first: the levels hold ever shorter intervals (view.h), so they
 * are read from the longest down, and once a level leaves n of the kind
 * in hand no shorter one can be among the n longest. In time order: the
 * first n of the kind from each thread's level, merged. Either way at most
 * VW_EXACT_MAX intervals are read (of every kind: the levels mix them);
 * past that the answer says it is not complete.
 */
int vw_api_intervals(struct vw_model *m, uint64_t t0, uint64_t t1, int kind, int by,
		     unsigned n, const struct vw_filter *q, struct vw_buf *o)
{
	uint64_t a = m->begin + vw_ticks(m, t0), b = m->begin + vw_ticks(m, t1 + 1) - 1;
	size_t cap = 1024, got = 0, read = 0;
	struct pick *p = malloc(cap * sizeof(*p));
	bool complete = true, stopped = false;
	if (!p)
		return -ENOMEM;
	for (unsigned l = 0; l < VW_IV_LEVELS && complete && !q->none; l++) {
		if (by == 0 && got >= n) {
			stopped = true; /* the rest are shorter */
			break;
		}
		for (unsigned i = 0; i < m->nrows && complete; i++) {
			const struct vw_thread *th = m->rows[i];
			const struct vw_ivlevel *lv = &th->lev[l];
			if (!lv->n || !vw_filter_keeps(q, 't', th->tid))
				continue;
			/* level l's intervals last span >> l at most: those
			 * that overlap [a, b] begin after a - (span >> l) */
			uint64_t most = l ? m->ivspan >> l : UINT64_MAX; /* 0: any */
			uint64_t from = a > most ? a - most : 0;
			size_t j1 = begins_after(lv, b), mine = 0;
			for (size_t j = begins_after(lv, from ? from - 1 : 0); j < j1; j++) {
				if (read++ == VW_EXACT_MAX) {
					complete = false;
					break;
				}
				if ((int)lv->iv[j].kind != kind || lv->iv[j].end < a)
					continue;
				if (got == cap) {
					struct pick *np = realloc(p, 2 * cap * sizeof(*p));
					if (!np) {
						free(p);
						return -ENOMEM;
					}
					p = np;
					cap *= 2;
				}
				p[got++] = (struct pick){ th, &lv->iv[j] };
				if (by == 1 && ++mine == n)
					break; /* the later ones of this level come after */
			}
		}
	}
	qsort(p, got, sizeof(*p), by ? by_begin : by_length);
	vw_printf(o, "{\"t0\":%llu,\"t1\":%llu,\"kind\":%d,\"by\":%d,\"complete\":%s,"
		  "\"more\":%s,\"intervals\":[", (unsigned long long)t0, (unsigned long long)t1,
		  kind, by, complete ? "true" : "false", got > n || stopped ? "true" : "false");
	for (size_t i = 0; i < got && i < n; i++) {
		const struct vw_iv *iv = p[i].iv;
		vw_printf(o, "%s{\"tid\":%u,\"pid\":%u,\"begin\":%llu,\"end\":%llu,"
			  "\"dur\":%llu,\"depth\":%u}", i ? "," : "", p[i].th->tid, p[i].th->pid,
			  (unsigned long long)vw_ns(m, iv->begin - m->begin),
			  (unsigned long long)vw_ns(m, iv->end - m->begin),
			  (unsigned long long)vw_ns(m, iv->end - iv->begin), iv->depth);
	}
	vw_puts(o, "]}");
	free(p);
	return 0;
}
