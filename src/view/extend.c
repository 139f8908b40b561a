// SPDX-License-Identifier: MIT
/* strata view: a live model's tables grown with its trace, and its bin grid doubled (docs/view.md, "Live"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"

/* The CPUs' rows for the streams the trace has now, a new CPU's bins
 * empty. */
static int adopt_cpus(struct vw_model *m)
{
	unsigned ns = strata_trace_nstreams(m->t), ncpus = m->ncpus;
	bool *k = realloc(m->kernel, (ns ? ns : 1) * sizeof(*k));
	if (!k)
		return -ENOMEM;
	m->kernel = k;
	memset(k, 0, (ns ? ns : 1) * sizeof(*k));
	an_kernel_streams(m->t, k);
	for (unsigned i = 0; i < ns; i++) {
		struct strata_stream_info si;
		if (!strata_trace_stream(m->t, i, &si) && si.cpu < 4096 && si.cpu + 1 > ncpus)
			ncpus = si.cpu + 1;
	}
	if (ncpus == m->ncpus)
		return 0;
	struct vw_cpu *c = realloc(m->cpus, ncpus * sizeof(*c));
	if (!c)
		return -ENOMEM;
	m->cpus = c;
	for (unsigned i = m->ncpus; i < ncpus; i++) {
		c[i] = (struct vw_cpu){ .cpu = i, .bins = calloc(m->nbins, sizeof(uint32_t)) };
		if (!c[i].bins)
			return -ENOMEM; /* the CPUs so far stay counted */
		m->ncpus = i + 1;
	}
	return 0;
}

/* A row's per-class bins table (view.h: cbins) sized for n classes. */
static int grow_cbins(uint32_t ***cbins, unsigned old, unsigned n)
{
	if (!*cbins)
		return 0; /* made at the row's first event, with m->ncls */
	uint32_t **p = realloc(*cbins, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + old, 0, (n - old) * sizeof(*p));
	*cbins = p;
	return 0;
}

/* The classes' kinds (begin, end...), hashed: a writer's metadata
 * declares a class's kind apart from the class (in its env), so a class
 * can be known before its kind is (format.md §6). */
static uint64_t kinds_of(struct strata_trace *t)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++) {
		const struct strata_event_class *c = strata_trace_class(t, i);
		h = (h ^ (uint64_t)(c ? c->kind + 1 : 0)) * 0x100000001b3ull;
	}
	return h;
}

int vw_model_adopt(struct vw_model *m, struct strata_trace *t)
{
	m->t = t;
	int err = adopt_cpus(m);
	unsigned n = strata_trace_nclasses(t);
	uint64_t kinds = kinds_of(t);
	if (err || (n <= m->ncls && kinds == m->kinds))
		return err;
	/* the writer appended classes (reader.md, "Following a live
	 * trace"): every table of them grows, or none does. None shrinks:
	 * a trace whose class table got shorter (a writer's rewrite
	 * declaring fewer raw classes) keeps m->ncls, which the rows'
	 * tables, their counts and vw_model_fini() go by; live.c reads the
	 * model again if a class gone had events. Shrinking them here ran a
	 * memset of (n - m->ncls) entries, negative, over the heap. */
	for (unsigned i = 0; i < m->ncpus && !err && n > m->ncls; i++)
		err = grow_cbins(&m->cpus[i].cbins, m->ncls, n);
	for (size_t i = 0; i < m->threads.n && !err && n > m->ncls; i++)
		err = grow_cbins(&((struct vw_thread *)m->threads.all[i])->cbins, m->ncls, n);
	if (err)
		return err;
	m->ncls = n > m->ncls ? n : m->ncls;
	m->kinds = kinds;
	/* The pairer's tables are of the classes and kinds it was made
	 * with, and a new class or kind may begin or end intervals: made
	 * again on them all.
	 * The intervals open now are lost (a program registers its classes
	 * before it logs, so there are few); those closed stay, their kinds
	 * too (kinds are numbered in class order, and classes are
	 * appended). */
	struct iv_pairer *p;
	if (iv_pairer_create(t, &(struct iv_options){ 0 }, &p) < 0)
		p = NULL; /* no begin/end kinds yet */
	iv_pairer_destroy(m->pairer);
	m->pairer = p;
	m->nkinds = (p ? iv_pairer_nkinds(p) : 0) + m->nacts;
	return 0;
}

/* Bins 2i and 2i + 1 into bin i, the upper half emptied. */
static void halve32(uint32_t *b, unsigned n)
{
	if (!b)
		return;
	for (unsigned i = 0; i < n / 2; i++) {
		uint64_t s = (uint64_t)b[2 * i] + b[2 * i + 1];
		b[i] = s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
	}
	memset(b + n / 2, 0, (n - n / 2) * sizeof(*b));
}

static void halve_cbins(const struct vw_model *m, uint32_t **cbins)
{
	for (unsigned c = 0; cbins && c < m->ncls; c++)
		halve32(cbins[c], VW_CBINS);
}

static int cmp_begin(const void *a, const void *b)
{
	const struct vw_iv *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Each level one deeper: with twice the span, level l's durations
 * (span / 2^(l+1), span / 2^l] are level l + 1's exactly; the last level
 * takes the one before it too. */
static int deepen_levels(struct vw_thread *th)
{
	struct vw_ivlevel *last = &th->lev[VW_IV_LEVELS - 1], *prev = last - 1;
	if (prev->n && last->n) {
		struct vw_iv *v = realloc(last->iv, (last->n + prev->n) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memcpy(v + last->n, prev->iv, prev->n * sizeof(*v));
		last->iv = v;
		last->n += prev->n;
		last->cap = last->n;
		qsort(last->iv, last->n, sizeof(*last->iv), cmp_begin);
		last->clean = 0;
		free(prev->iv);
		free(prev->blockmax);
	} else if (prev->n) {
		free(last->iv);
		free(last->blockmax);
		*last = *prev;
	}
	memmove(&th->lev[1], &th->lev[0], (VW_IV_LEVELS - 2) * sizeof(th->lev[0]));
	th->lev[0] = (struct vw_ivlevel){ 0 };
	return 0;
}

int vw_model_double(struct vw_model *m)
{
	if (m->gridlen > UINT64_MAX / 2)
		return -ERANGE;
	for (unsigned i = 0; i < m->ncpus; i++) {
		halve32(m->cpus[i].bins, m->nbins);
		halve_cbins(m, m->cpus[i].cbins);
	}
	for (size_t i = 0; i < m->threads.n; i++) {
		struct vw_thread *th = m->threads.all[i];
		halve32(th->bins, m->nbins);
		halve_cbins(m, th->cbins);
		if (th->niv && deepen_levels(th))
			return -ENOMEM;
	}
	for (unsigned i = 0; i < m->nbins / 2; i++)
		m->binev[i] = m->binev[2 * i] + m->binev[2 * i + 1];
	memset(m->binev + m->nbins / 2, 0, (m->nbins - m->nbins / 2) * sizeof(*m->binev));
	m->bin_lo = 0; /* every prefix sum anew */
	m->gridlen *= 2;
	m->ivspan *= 2;
	return 0;
}
