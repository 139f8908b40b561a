// SPDX-License-Identifier: MIT
/* strata view's message flows: sends paired with receives by key over the whole trace, and the window's flow arrows (docs/view.md, "api/window"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "wire.h"

/* A send or a receive, as the model's scan meets it (one end set). */
static int add_end(struct vw_model *m, const struct vw_flow *f)
{
	struct vw_flow *n = vw_grow(m->flows, &m->flowcap, m->nflows, sizeof(*n));
	if (!n)
		return -ENOMEM;
	m->flows = n;
	m->flows[m->nflows++] = *f;
	return 0;
}

/* ev as one end of a flow into *f: false when it is none (or its key
 * field is damaged: the reader reported it). */
static bool flow_end(const struct strata_event *ev, struct vw_flow *f)
{
	int key;
	enum strata_flow_role role = strata_event_class_flow(ev->cls, &key);
	struct strata_value v;
	if (role == STRATA_FLOW_NONE || strata_event_field(ev, (unsigned)key, &v) < 0)
		return false;
	*f = (struct vw_flow){ .key = an_value_key(&v), .stid = -1, .rtid = -1,
			       .scls = UINT32_MAX, .rcls = UINT32_MAX };
	if (role == STRATA_FLOW_SEND) {
		f->ts = f->t = ev->timestamp;
		f->stid = (int32_t)ev->tid;
		f->scpu = ev->cpu;
		f->scls = ev->cls->index;
	} else {
		f->tr = f->t = ev->timestamp;
		f->rtid = (int32_t)ev->tid;
		f->rcpu = ev->cpu;
		f->rcls = ev->cls->index;
	}
	return true;
}

/* Receive r takes send s's end. */
static void take_send(struct vw_flow *r, const struct vw_flow *s)
{
	r->ts = s->ts;
	r->stid = s->stid;
	r->scpu = s->scpu;
	r->scls = s->scls;
}

int vw_flow_feed(struct vw_model *m, const struct strata_event *ev)
{
	struct vw_flow f;
	return flow_end(ev, &f) ? add_end(m, &f) : 0;
}

/*
 * A live model's flows (docs/view.md, "Live"). Its events come in time
 * order, a window after another, so a receive is paired at once with the
 * earliest send of its key still waiting, as vw_flows_pair pairs them
 * over the whole trace (pair_key, a queue's order): received flows,
 * paired or alone, are appended to m->flows, which stays in order of t.
 * Sends not received yet wait in `p`, in time order; each key's waiting
 * sends are a list through it, found by the key in `q` (open
 * addressing). A send received leaves a hole in `p`, squeezed out once
 * holes are half of it, so a window costs its own ends, whatever the
 * trace behind. The window's arrows merge m->flows' and the waiting
 * sends' by time (vw_put_flows), as the finished trace's lone sends lie
 * among its flows.
 */
#define NONE SIZE_MAX

struct pend {
	struct vw_flow f;
	size_t next;             /* the key's next waiting send, or NONE */
	bool taken;
};

struct kq {
	uint64_t key;
	size_t head, tail;       /* the key's waiting sends, or NONE */
	bool used;
};

struct vw_flive {
	struct pend *p;
	size_t n, cap, holes;
	struct kq *q;
	size_t qcap, qn;         /* slots (a power of two, or 0), used */
};

static struct kq *kq_slot(const struct vw_flive *l, uint64_t key)
{
	size_t mask = l->qcap - 1, i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & mask;
	while (l->q[i].used && l->q[i].key != key)
		i = (i + 1) & mask;
	return &l->q[i];
}

/* q made again with room for `need` keys, the keys with waiting sends
 * only. */
static int kq_rebuild(struct vw_flive *l, size_t need)
{
	size_t cap = 64;
	while (cap < 2 * need)
		cap *= 2;
	struct kq *old = l->q, *q = calloc(cap, sizeof(*q));
	size_t oldcap = l->qcap;
	if (!q)
		return -ENOMEM;
	l->q = q;
	l->qcap = cap;
	l->qn = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].used && old[i].head != NONE) {
			*kq_slot(l, old[i].key) = old[i];
			l->qn++;
		}
	free(old);
	return 0;
}

/* The sends received squeezed out of p, the lists' indexes moved. */
static void squeeze(struct vw_flive *l)
{
	size_t *to = malloc(l->n * sizeof(*to)), k = 0;
	if (!to)
		return; /* holes stay: only memory */
	for (size_t i = 0; i < l->n; i++) {
		to[i] = l->p[i].taken ? NONE : k;
		if (!l->p[i].taken)
			l->p[k++] = l->p[i];
	}
	for (size_t i = 0; i < k; i++)
		if (l->p[i].next != NONE)
			l->p[i].next = to[l->p[i].next];
	for (size_t i = 0; i < l->qcap; i++)
		if (l->q[i].used && l->q[i].head != NONE) {
			l->q[i].head = to[l->q[i].head];
			l->q[i].tail = to[l->q[i].tail];
		}
	free(to);
	l->n = k;
	l->holes = 0;
}

int vw_flow_live(struct vw_model *m, const struct strata_event *ev)
{
	struct vw_flow f;
	if (!flow_end(ev, &f))
		return 0;
	struct vw_flive *l = m->flive;
	if (!l && !(l = m->flive = calloc(1, sizeof(*l))))
		return -ENOMEM;
	if (l->qn + 1 > l->qcap / 2 && kq_rebuild(l, l->qn + 1))
		return -ENOMEM;
	struct kq *k = kq_slot(l, f.key);
	if (f.scls != UINT32_MAX) { /* a send: it waits */
		struct pend *p = vw_grow(l->p, &l->cap, l->n, sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->p = p;
		l->p[l->n] = (struct pend){ f, NONE, false };
		if (!k->used)
			*k = (struct kq){ .key = f.key, .head = NONE, .tail = NONE, .used = true },
			l->qn++;
		if (k->head == NONE)
			k->head = l->n;
		else
			l->p[k->tail].next = l->n;
		k->tail = l->n++;
		return 0;
	}
	if (k->used && k->head != NONE) { /* received: the earliest waiting */
		struct pend *s = &l->p[k->head];
		take_send(&f, &s->f);
		s->taken = true;
		k->head = s->next;
		if (k->head == NONE)
			k->tail = NONE;
		if (f.tr > f.ts + m->flow_maxlat)
			m->flow_maxlat = f.tr - f.ts;
		if (++l->holes > 1024 && 2 * l->holes > l->n)
			squeeze(l);
	}
	return add_end(m, &f);
}

void vw_flows_live_fini(struct vw_model *m)
{
	if (!m->flive)
		return;
	free(m->flive->p);
	free(m->flive->q);
	free(m->flive);
	m->flive = NULL;
}

static const struct vw_flow *sorting;

/* By key, then in the order met: the scan's, which is time order. */
static int by_key(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct vw_flow *x = &sorting[i], *y = &sorting[j];
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int by_time(const void *a, const void *b)
{
	const struct vw_flow *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* One key's ends, in time order, into out: each receive takes the
 * earliest send of the key not yet received (a queue's order); a
 * receive with none, and a send never received, stay alone. */
static void pair_key(const struct vw_flow *in, const size_t *idx, size_t n, size_t *queue,
		     struct vw_flow *out, size_t *nout)
{
	size_t head = 0, tail = 0;
	for (size_t k = 0; k < n; k++) {
		const struct vw_flow *e = &in[idx[k]];
		if (e->scls != UINT32_MAX) {
			queue[tail++] = idx[k];
			continue;
		}
		struct vw_flow f = *e;
		if (head < tail)
			take_send(&f, &in[queue[head++]]);
		out[(*nout)++] = f;
	}
	while (head < tail)
		out[(*nout)++] = in[queue[head++]];
}

int vw_flows_pair(struct vw_model *m)
{
	size_t n = m->nflows, *idx = malloc((n + 1) * sizeof(*idx));
	size_t *queue = malloc((n + 1) * sizeof(*queue));
	struct vw_flow *out = malloc((n + 1) * sizeof(*out));
	if (!idx || !queue || !out) {
		free(idx);
		free(queue);
		free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	sorting = m->flows; /* the model is built by one thread */
	qsort(idx, n, sizeof(*idx), by_key);
	size_t nout = 0;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && m->flows[idx[j]].key == m->flows[idx[i]].key; j++)
			;
		pair_key(m->flows, idx + i, j - i, queue, out, &nout);
	}
	qsort(out, nout, sizeof(*out), by_time);
	free(idx);
	free(queue);
	free(m->flows);
	m->flows = out;
	m->nflows = m->flowcap = nout;
	vw_flows_index(m);
	return 0;
}

void vw_flows_index(struct vw_model *m)
{
	m->flow_maxlat = 0;
	for (size_t i = 0; i < m->nflows; i++)
		if (m->flows[i].scls != UINT32_MAX && m->flows[i].rcls != UINT32_MAX &&
		    m->flows[i].tr > m->flows[i].ts + m->flow_maxlat)
			m->flow_maxlat = m->flows[i].tr - m->flows[i].ts;
}

/* Whether q keeps a flow: either end's CPU, thread and class. */
static bool keeps_flow(const struct vw_filter *q, const bool *cls, const struct vw_flow *f)
{
	bool s = f->scls != UINT32_MAX, r = f->rcls != UINT32_MAX;
	return ((s && vw_filter_keeps(q, 'c', f->scpu)) || (r && vw_filter_keeps(q, 'c', f->rcpu))) &&
	       ((s && vw_filter_keeps(q, 't', (uint32_t)f->stid)) ||
		(r && vw_filter_keeps(q, 't', (uint32_t)f->rtid))) &&
	       (!cls || (s && cls[f->scls]) || (r && cls[f->rcls]));
}

/* The key as its field shows it, in decimal: signed when the send's
 * (else the receive's) key field is. */
static void key_text(const struct vw_model *m, const struct vw_flow *f, char out[24])
{
	const struct strata_event_class *c =
		strata_trace_class(m->t, f->scls != UINT32_MAX ? f->scls : f->rcls);
	int k;
	if (c && strata_event_class_flow(c, &k) && c->fields[k].is_signed)
		snprintf(out, 24, "%lld", (long long)f->key);
	else
		snprintf(out, 24, "%llu", (unsigned long long)f->key);
}

static int64_t ns_of(const struct vw_model *m, uint64_t t)
{
	return (int64_t)vw_ns(m, t - m->begin);
}

/* The first of n flows, `stride` bytes apart, whose t is t0 or later. */
static size_t first_at(const void *base, size_t n, size_t stride, uint64_t t0)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (((const struct vw_flow *)((const char *)base + mid * stride))->t < t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void vw_put_flows(const struct vw_model *m, uint64_t t0, uint64_t t1, unsigned w, double scale,
		  const struct vw_filter *q, const bool *cls, struct wire *e)
{
	/* a flow is ordered by its receive (else its send): those drawn
	 * over [t0, t1] are received from t0 to t1 plus the longest
	 * latency, and sent by t1; a live model's waiting sends (t: sent)
	 * are merged in by time */
	const struct vw_flive *l = m->flive;
	size_t i = first_at(m->flows, m->nflows, sizeof(*m->flows), t0), n = 0, left = 0;
	size_t j = l ? first_at(l->p, l->n, sizeof(*l->p), t0) : 0, nj = l ? l->n : 0;
	uint64_t last = t1 + m->flow_maxlat < t1 ? UINT64_MAX : t1 + m->flow_maxlat;
	wire_list(e, WT_FLOWS, "flows");
	for (;;) {
		while (j < nj && l->p[j].taken)
			j++;
		bool mine = i < m->nflows && m->flows[i].t <= last;
		bool waits = j < nj && l->p[j].f.t <= last;
		if (!mine && !waits)
			break;
		const struct vw_flow *f = mine && (!waits || m->flows[i].t <= l->p[j].f.t) ?
						  &m->flows[i++] : &l->p[j++].f;
		bool s = f->scls != UINT32_MAX, r = f->rcls != UINT32_MAX;
		uint64_t from = s ? f->ts : f->tr;
		if (from > t1 || !keeps_flow(q, cls, f))
			continue;
		if (n == VW_ARROWS_MAX) {
			left++;
			continue;
		}
		/* an end not in the trace is drawn at the window's edge */
		double x0 = s ? (double)((int64_t)(f->ts - t0)) * scale : 0;
		double x1 = r ? (double)((int64_t)(f->tr - t0)) * scale : w;
		char key[24];
		key_text(m, f, key);
		wire_flow(e, x0, x1, s ? f->stid : -1, s ? f->scpu : 0, r ? f->rtid : -1,
			  r ? f->rcpu : 0, s ? ns_of(m, f->ts) : -1, r ? ns_of(m, f->tr) : -1, key);
		n++;
	}
	wire_list_end(e);
	wire_left(e, "flows_left", left);
}
