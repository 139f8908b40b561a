/* SPDX-License-Identifier: MIT */
/* Function probes: calls per function and the time inside them, paired per thread on a stack (calls.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/calls.h"

/*
 * Each thread's probed calls form a stack: an entry pushes, its exit pops.
 * An exit whose function is not on top was left by frames that never
 * returned (longjmp, an exception thrown through code built without the
 * probes' exits, a thread's probes turned off between the two): those
 * are closed there, as if they had returned then, and counted `unwound`.
 * An exit whose function is on no frame belongs to a call entered before
 * the window or the recording: `stray`, not counted. Frames left at the
 * end are `open`. A recursive function's time is counted once, in its
 * outermost call (gprof's rule for a cycle): `active` counts its frames.
 */

struct frame {
	uint64_t fn, t0, child; /* child: ticks inside its callees */
	struct fn_stat *st;
};

struct thread {
	struct frame *v;
	size_t n, cap;
};

/* A function of a process. */
struct fn_stat {
	uint64_t fn;
	uint32_t pid, active, max_depth;
	uint64_t calls, total, self, max, unwound; /* ticks */
	bool used;
};

struct calls_ctx {
	struct fn_stat *fns; /* open addressing by (pid, fn) */
	size_t cap, n;
	struct an_tidmap threads;
	struct calls_result *r;
	uint64_t freq;
};

static size_t fn_hash(uint32_t pid, uint64_t fn)
{
	return (size_t)(((fn ^ (uint64_t)pid << 47) * 0x9E3779B97F4A7C15ull) >> 20);
}

static struct fn_stat *fn_get(struct calls_ctx *c, uint32_t pid, uint64_t fn)
{
	if (c->n * 2 >= c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		struct fn_stat *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < c->cap; i++) {
			if (!c->fns[i].used)
				continue;
			size_t h = fn_hash(c->fns[i].pid, c->fns[i].fn);
			while (v[h & (cap - 1)].used)
				h++;
			v[h & (cap - 1)] = c->fns[i];
		}
		free(c->fns);
		c->fns = v;
		c->cap = cap;
		/* the frames point into the old table: re-point them */
		for (size_t i = 0; i < c->threads.n; i++) {
			struct thread *th = c->threads.all[i];
			for (size_t k = 0; k < th->n; k++)
				th->v[k].st = NULL;
		}
	}
	for (size_t h = fn_hash(pid, fn);; h++) {
		struct fn_stat *s = &c->fns[h & (c->cap - 1)];
		if (s->used && s->fn == fn && s->pid == pid)
			return s;
		if (!s->used) {
			s->used = true;
			s->fn = fn;
			s->pid = pid;
			c->n++;
			return s;
		}
	}
}

/* The stats of frame f (looked up again after the table grew). */
static struct fn_stat *frame_stat(struct calls_ctx *c, uint32_t pid, struct frame *f)
{
	if (!f->st)
		f->st = fn_get(c, pid, f->fn);
	return f->st;
}

/* Pop the top frame of th at ts: one call of its function. */
static int frame_close(struct calls_ctx *c, struct thread *th, uint32_t pid, uint64_t ts,
		       bool unwound)
{
	struct frame *f = &th->v[--th->n];
	struct fn_stat *s = frame_stat(c, pid, f);
	uint64_t d = ts > f->t0 ? ts - f->t0 : 0;

	if (!s)
		return -1;
	s->calls++;
	s->unwound += unwound;
	c->r->unwound += unwound;
	s->self += d > f->child ? d - f->child : 0;
	if (d > s->max)
		s->max = d;
	if (!--s->active)
		s->total += d;
	if (th->n)
		th->v[th->n - 1].child += d;
	c->r->calls++;
	return 0;
}

static int on_entry(struct calls_ctx *c, struct thread *th, const struct strata_event *ev,
		    uint64_t fn)
{
	if (th->n == th->cap) {
		size_t cap = th->cap ? th->cap * 2 : 64;
		struct frame *v = realloc(th->v, cap * sizeof(*v));
		if (!v)
			return -1;
		th->v = v;
		th->cap = cap;
	}
	struct fn_stat *s = fn_get(c, ev->pid, fn);
	if (!s)
		return -1;
	th->v[th->n++] = (struct frame){ .fn = fn, .t0 = ev->timestamp, .st = s };
	s->active++;
	if (th->n > s->max_depth)
		s->max_depth = (uint32_t)th->n;
	if (th->n > c->r->max_depth)
		c->r->max_depth = (uint32_t)th->n;
	return 0;
}

static int on_exit_ev(struct calls_ctx *c, struct thread *th, const struct strata_event *ev,
		      uint64_t fn)
{
	size_t k = th->n;
	while (k > 0 && th->v[k - 1].fn != fn)
		k--;
	if (!k) {
		c->r->stray++;
		return 0;
	}
	while (th->n > k) /* frames it left behind: closed here */
		if (frame_close(c, th, ev->pid, ev->timestamp, true) < 0)
			return -1;
	return frame_close(c, th, ev->pid, ev->timestamp, false);
}

static uint64_t ticks_ns(const struct calls_ctx *c, uint64_t t)
{
	return c->freq ? (uint64_t)((unsigned __int128)t * 1000000000u / c->freq) : t;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct calls_entry *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Each (process, function) as a row named by its symbol; rows of one
 * name and file (the same function in several processes) summed. */
static int collect(struct calls_ctx *c, struct strata_symbolizer *sy)
{
	struct calls_result *r = c->r;

	r->entries = calloc(c->n ? c->n : 1, sizeof(*r->entries));
	if (!r->entries)
		return -1;
	for (size_t i = 0; i < c->cap; i++) {
		const struct fn_stat *s = &c->fns[i];
		if (!s->used || !s->calls)
			continue;
		struct strata_symbol sym;
		char name[600];
		memset(&sym, 0, sizeof(sym));
		sym.status = STRATA_SYM_UNKNOWN;
		if (sy)
			strata_symbolize(sy, s->pid, s->fn, &sym);
		if (sym.status == STRATA_SYM_FUNCTION && !sym.offset)
			snprintf(name, sizeof(name), "%s", sym.function);
		else
			strata_symbol_format(&sym, s->fn, name, sizeof(name));
		const char *mod = sym.module ? sym.module : "";
		struct calls_entry *e = NULL;
		for (size_t k = 0; k < r->nentries && !e; k++)
			if (!strcmp(r->entries[k].name, name) && !strcmp(r->entries[k].module, mod))
				e = &r->entries[k];
		if (!e) {
			e = &r->entries[r->nentries];
			if (!(e->name = strdup(name)) || !(e->module = strdup(mod)))
				return -1;
			r->nentries++;
		}
		e->calls += s->calls;
		e->unwound += s->unwound;
		e->total_ns += ticks_ns(c, s->total);
		e->self_ns += ticks_ns(c, s->self);
		if (ticks_ns(c, s->max) > e->max_ns)
			e->max_ns = ticks_ns(c, s->max);
		if (s->max_depth > e->max_depth)
			e->max_depth = s->max_depth;
	}
	qsort(r->entries, r->nentries, sizeof(*r->entries), cmp_entry);
	return 0;
}

/* Field indexes, per class index: [0] fn, [1] calls; kind[]: 1 entry,
 * 2 exit, 3 skipped, 0 other. */
static bool classify(struct strata_trace *t, uint8_t *kind, int (*f)[2])
{
	bool any = false;
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++) {
		const struct strata_event_class *cl = strata_trace_class(t, i);
		kind[i] = !strcmp(cl->name, "func:call_entry")  ? 1
			  : !strcmp(cl->name, "func:call_exit") ? 2
			  : !strcmp(cl->name, "func:skipped")   ? 3
								: 0;
		f[i][0] = strata_event_class_field(cl, "fn");
		f[i][1] = strata_event_class_field(cl, "calls");
		any |= kind[i] == 1;
	}
	return any;
}

int calls_compute(struct strata_trace *t, struct strata_iter *it,
		  struct strata_symbolizer *sy, struct calls_result **out)
{
	unsigned nc = strata_trace_nclasses(t);
	struct calls_ctx c = { 0 };
	uint8_t *kind = calloc(nc ? nc : 1, 1);
	int (*f)[2] = calloc(nc ? nc : 1, sizeof(*f));
	struct strata_clock_info ci;
	const struct strata_event *ev;
	int ret = -ENOMEM;

	*out = NULL;
	c.r = calloc(1, sizeof(*c.r));
	if (!kind || !f || !c.r)
		goto out;
	if (!classify(t, kind, f)) {
		ret = -ENOENT;
		goto out;
	}
	strata_trace_clock(t, &ci);
	c.freq = ci.freq;
	while (strata_iter_next(it, &ev) > 0) {
		uint8_t k = kind[ev->cls->index];
		struct strata_value v;
		if (!k || f[ev->cls->index][k == 3] < 0 ||
		    strata_event_field(ev, (unsigned)f[ev->cls->index][k == 3], &v) < 0)
			continue;
		if (k == 3) {
			c.r->skipped += v.u;
			continue;
		}
		bool made;
		struct thread *th = an_tidmap_get(&c.threads, ev->tid, sizeof(*th), &made);
		if (!th || (k == 1 ? on_entry(&c, th, ev, v.u) : on_exit_ev(&c, th, ev, v.u)) < 0)
			goto out;
	}
	c.r->threads = (unsigned)c.threads.n;
	for (size_t i = 0; i < c.threads.n; i++)
		c.r->open += ((struct thread *)c.threads.all[i])->n;
	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		if (strata_trace_stream(t, i, &si) == 0 && !an_is_kernel(t, si.subtrace))
			c.r->lost += si.discarded;
	}
	if (collect(&c, sy) < 0)
		goto out;
	*out = c.r;
	c.r = NULL;
	ret = 0;
out:
	calls_free(c.r);
	for (size_t i = 0; i < c.threads.n; i++)
		free(((struct thread *)c.threads.all[i])->v);
	an_tidmap_fini(&c.threads);
	free(c.fns);
	free(kind);
	free(f);
	return ret;
}

void calls_free(struct calls_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nentries; i++) {
		free(r->entries[i].name);
		free(r->entries[i].module);
	}
	free(r->entries);
	free(r);
}
