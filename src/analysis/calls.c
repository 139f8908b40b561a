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
 * returned (longjmp, a C++ exception through a C frame built without
 * -fexceptions, whose exit hook no cleanup runs: docs/profile.md,
 * "Exceptions"; a thread's probes turned off between the two): those
 * are closed there, as if they had returned then, and counted `unwound`.
 * An exit whose function is on no frame belongs to a call entered before
 * the window or the recording: `stray`, not counted. Frames left at the
 * end are `open`. A recursive function's time is counted once, in its
 * outermost call (gprof's rule for a cycle): `active` counts its frames.
 */

struct frame {
	uint64_t fn, t0, child; /* child: ticks inside its callees */
	struct fn_stat *st;
	struct ct_node *node; /* its path in the thread's call tree */
};

struct thread {
	struct frame *v;
	size_t n, cap;
	uint32_t pid, tid;
	uint64_t first, last; /* its first and last probe event */
	struct ct_node root;  /* its call tree (calltree.c) */
};

/* A function of a process. */
struct fn_stat {
	uint64_t fn;
	uint32_t pid, active, max_depth;
	uint64_t calls, total, self, max, unwound; /* ticks */
	bool used;
	char *name; /* symbolized, for the trees (fn_name()) */
};

struct calls_ctx {
	struct fn_stat *fns; /* open addressing by (pid, fn) */
	size_t cap, n;
	struct an_tidmap threads;
	struct calls_result *r;
	uint64_t freq;
	uint64_t end; /* the last event's time: open calls close there */
	struct strata_symbolizer *sy;
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

/* Pop the top frame of th at ts into its node of the tree only; its
 * duration. */
static uint64_t tree_close(struct thread *th, uint64_t ts, bool partial)
{
	struct frame *f = &th->v[--th->n];
	uint64_t d = ts > f->t0 ? ts - f->t0 : 0;

	f->node->calls++;
	f->node->incl += d;
	f->node->self += d > f->child ? d - f->child : 0;
	f->node->partial |= partial;
	if (th->n)
		th->v[th->n - 1].child += d;
	return d;
}

/* Pop the top frame of th at ts: one call of its function. */
static int frame_close(struct calls_ctx *c, struct thread *th, uint32_t pid, uint64_t ts,
		       bool unwound)
{
	struct frame *f = &th->v[th->n - 1];
	struct fn_stat *s = frame_stat(c, pid, f);
	uint64_t child = f->child;

	if (!s)
		return -1;
	/* a call left by a longjmp was not seen whole: its node says so */
	uint64_t d = tree_close(th, ts, unwound);
	s->calls++;
	s->unwound += unwound;
	c->r->unwound += unwound;
	c->r->partial += unwound;
	s->self += d > child ? d - child : 0;
	if (d > s->max)
		s->max = d;
	if (!--s->active)
		s->total += d;
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
	struct ct_node *node = ct_child(th->n ? th->v[th->n - 1].node : &th->root, fn);
	if (!s || !node)
		return -1;
	th->v[th->n++] = (struct frame){ .fn = fn, .t0 = ev->timestamp, .st = s, .node = node };
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
		/* entered before the thread's first event: it called all that
		 * was seen; frames still open were left by a longjmp past it */
		c->r->stray++;
		while (th->n)
			if (frame_close(c, th, ev->pid, ev->timestamp, true) < 0)
				return -1;
		c->r->partial++;
		return ct_adopt(&th->root, fn, th->first, ev->timestamp);
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

static uint64_t tree_ns(void *ctx, uint64_t t)
{
	return ticks_ns(ctx, t);
}

/* fn of pid by its symbol, an address plus offset, or its file. */
static void sym_name(struct strata_symbolizer *sy, uint32_t pid, uint64_t fn, char *name,
		     size_t len, char **module)
{
	struct strata_symbol sym;

	memset(&sym, 0, sizeof(sym));
	sym.status = STRATA_SYM_UNKNOWN;
	if (sy)
		strata_symbolize(sy, pid, fn, &sym);
	if (sym.status == STRATA_SYM_FUNCTION && !sym.offset)
		snprintf(name, len, "%s", sym.function);
	else
		strata_symbol_format(&sym, fn, name, len);
	if (module)
		*module = (char *)(sym.module ? sym.module : "");
}

/* The tree's name of fn in pid: symbolized once per function. */
static const char *fn_name(void *ctx, uint32_t pid, uint64_t fn)
{
	struct calls_ctx *c = ctx;
	struct fn_stat *s = fn_get(c, pid, fn);
	char name[600];

	if (!s)
		return NULL;
	if (!s->name) {
		sym_name(c->sy, pid, fn, name, sizeof(name), NULL);
		s->name = strdup(name);
	}
	return s->name;
}

/* Each thread's tree, its open calls closed at the end, named; then
 * all merged. */
static int trees(struct calls_ctx *c)
{
	struct calls_result *r = c->r;

	r->thread = calloc(c->threads.n ? c->threads.n : 1, sizeof(*r->thread));
	if (!r->thread)
		return -1;
	for (size_t i = 0; i < c->threads.n; i++) {
		struct thread *th = c->threads.all[i];
		struct calls_thread *out = &r->thread[r->nthread++];
		uint64_t last = th->n ? c->end : th->last;
		while (th->n) {
			tree_close(th, c->end, true);
			r->partial++;
		}
		out->pid = th->pid;
		out->tid = th->tid;
		out->span_ns = ticks_ns(c, last > th->first ? last - th->first : 0);
		if (ct_add(&out->root, &th->root, th->pid, fn_name, c, tree_ns) < 0)
			return -1;
		for (size_t k = 0; k < out->root.nchild; k++)
			out->root.total_ns += out->root.child[k].total_ns;
		out->covered_ns = out->root.total_ns;
		ct_sort(&out->root);
		if (ct_merge(&r->tree, &out->root) < 0)
			return -1;
	}
	ct_sort(&r->tree);
	return 0;
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
		char name[600], *mod;
		sym_name(sy, s->pid, s->fn, name, sizeof(name), &mod);
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
		if (ev->timestamp > c.end)
			c.end = ev->timestamp;
		if (!k || f[ev->cls->index][k == 3] < 0 ||
		    strata_event_field(ev, (unsigned)f[ev->cls->index][k == 3], &v) < 0)
			continue;
		if (k == 3) {
			c.r->skipped += v.u;
			continue;
		}
		bool made;
		struct thread *th = an_tidmap_get(&c.threads, ev->tid, sizeof(*th), &made);
		if (th && made) {
			th->pid = ev->pid;
			th->tid = ev->tid;
			th->first = ev->timestamp;
		}
		if (th)
			th->last = ev->timestamp;
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
	c.sy = sy;
	if (collect(&c, sy) < 0 || trees(&c) < 0)
		goto out;
	*out = c.r;
	c.r = NULL;
	ret = 0;
out:
	calls_free(c.r);
	for (size_t i = 0; i < c.threads.n; i++) {
		struct thread *th = c.threads.all[i];
		free(th->v);
		ct_free(&th->root);
	}
	an_tidmap_fini(&c.threads);
	for (size_t i = 0; i < c.cap; i++)
		free(c.fns[i].name);
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
	for (size_t i = 0; i < r->nthread; i++)
		ct_node_fini(&r->thread[i].root);
	free(r->thread);
	ct_node_fini(&r->tree);
	free(r);
}
