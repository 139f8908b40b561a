/* SPDX-License-Identifier: MIT */
/* What the kernel did to a thread between two of its events: K42's "why was this lock held so long". */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/*
 * A pair opens at a `from` event of a thread and closes at that thread's
 * next `to` event. Inside it, every sched_switch that takes the thread off
 * a CPU is a switch: when it happened, the state it left in (preempted,
 * sleeping, I/O), who ran instead, and how long until the thread ran
 * again. The time off CPU split into runnable (waiting for a CPU) and
 * blocked is what explains a long pair.
 */

struct open_pair {
	uint32_t tid;
	size_t pair;      /* index in out->pairs */
	uint64_t off_at;  /* switched out at, 0 when on a CPU */
	int off_state;    /* 1 runnable, 2 blocked */
	size_t sw;        /* index of the open switch in out->sw */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 256;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* The thread of `op` runs again at `ts`: account its time off CPU. */
static void back_on(struct inside_result *out, struct open_pair *op, uint64_t ts)
{
	struct inside_pair *p = &out->pairs[op->pair];
	uint64_t d = ts - op->off_at;

	if (op->off_state == 1)
		p->runnable += d;
	else
		p->blocked += d;
	out->sw[op->sw].back_at = ts;
	op->off_at = 0;
}

static int64_t field_i(const struct strata_event *ev, int idx)
{
	struct strata_value v;
	if (idx < 0 || strata_event_field(ev, (unsigned)idx, &v))
		return -1;
	return v.type == STRATA_VALUE_SINT ? v.s : (int64_t)v.u;
}

/* One pass's state: the result, what each class is, the pairs open. */
struct inside_ctx {
	struct inside_result *out;
	const struct inside_options *o;
	uint8_t *role;      /* by class: 1 from, 2 to, 4 switch */
	int (*sf)[3];       /* a switch's prev_pid, prev_state, next_pid */
	struct open_pair *open;
	size_t nopen, capopen, cap_pairs, cap_sw;
	struct idle_cpu *idle;
	unsigned ncpus;
};

/* Each class's role, from o->from, o->to and sched_switch: 0, -ENOMEM,
 * -EINVAL (no class matches from or to) or -ENOENT (no switch). */
static int inside_roles(struct inside_ctx *c, struct strata_trace *t)
{
	unsigned nc = strata_trace_nclasses(t);
	bool any_from = false, any_to = false, any_sw = false;

	c->role = calloc(nc ? nc : 1, 1);
	c->sf = calloc(nc ? nc : 1, sizeof(*c->sf));
	if (!c->role || !c->sf)
		return -ENOMEM;
	for (unsigned i = 0; i < nc; i++) {
		const struct strata_event_class *cl = strata_trace_class(t, i);
		if (!fnmatch(c->o->from, cl->name, 0))
			c->role[i] |= 1, any_from = true;
		if (!fnmatch(c->o->to, cl->name, 0))
			c->role[i] |= 2, any_to = true;
		if (!strcmp(cl->name, "sched:sched_switch")) {
			c->role[i] |= 4;
			any_sw = true;
			c->sf[i][0] = strata_event_class_field(cl, "prev_pid");
			c->sf[i][1] = strata_event_class_field(cl, "prev_state");
			c->sf[i][2] = strata_event_class_field(cl, "next_pid");
		}
	}
	if (!any_from || !any_to)
		return -EINVAL;
	return any_sw ? 0 : -ENOENT;
}

/* The CPUs the trace's streams name: the highest + 1. */
static unsigned trace_ncpus(struct strata_trace *t)
{
	unsigned ncpus = 0;

	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		if (strata_trace_stream(t, i, &si) == 0 && si.cpu != UINT32_MAX &&
		    si.cpu + 1 > ncpus)
			ncpus = si.cpu + 1;
	}
	return ncpus;
}

/* A sched_switch: an open pair's thread leaves its CPU (prev, a new
 * switch) or comes back (next). 0 or -ENOMEM. */
static int inside_switch(struct inside_ctx *c, const struct strata_event *ev,
			 const int *f, int64_t prev, int64_t next)
{
	struct inside_result *out = c->out;

	for (size_t i = 0; i < c->nopen; i++) {
		struct open_pair *op = &c->open[i];
		struct inside_pair *p = &out->pairs[op->pair];
		if ((int64_t)op->tid == prev && !op->off_at) {
			if (grow((void **)&out->sw, &c->cap_sw, out->nsw + 1,
				 sizeof(*out->sw)))
				return -ENOMEM;
			int64_t st = field_i(ev, f[1]);
			struct inside_switch *s = &out->sw[out->nsw];
			memset(s, 0, sizeof(*s));
			s->pair = op->pair;
			s->out_at = ev->timestamp;
			s->cpu = ev->cpu;
			s->prev_state = st;
			s->next_tid = (uint32_t)next;
			op->off_at = ev->timestamp;
			/* TASK_REPORT: 0 or 0x100 (preempted) = runnable */
			op->off_state = (st <= 0 || (st & 0x100) || !(st & 0xff)) ? 1 : 2;
			op->sw = out->nsw++;
			p->switches++;
		} else if ((int64_t)op->tid == next && op->off_at) {
			back_on(out, op, ev->timestamp);
		}
	}
	return 0;
}

/* A `to` event closes its thread's open pair, if any. */
static void inside_close(struct inside_ctx *c, const struct strata_event *ev)
{
	for (size_t i = 0; i < c->nopen; i++) {
		if (c->open[i].tid != ev->tid)
			continue;
		struct inside_pair *p = &c->out->pairs[c->open[i].pair];
		p->end = ev->timestamp;
		p->closed = true;
		c->open[i] = c->open[--c->nopen];
		break;
	}
}

/* A `from` event in the window opens a pair, unless its thread has one
 * open already. 0 or -ENOMEM. */
static int inside_open(struct inside_ctx *c, const struct strata_event *ev)
{
	struct inside_result *out = c->out;
	size_t i;

	for (i = 0; i < c->nopen && c->open[i].tid != ev->tid; i++)
		;
	if (i < c->nopen) /* a second `from` before its `to` */
		return 0;
	if (grow((void **)&c->open, &c->capopen, c->nopen + 1, sizeof(*c->open)) ||
	    grow((void **)&out->pairs, &c->cap_pairs, out->npairs + 1,
		 sizeof(*out->pairs)))
		return -ENOMEM;
	struct inside_pair *p = &out->pairs[out->npairs];
	memset(p, 0, sizeof(*p));
	p->begin = ev->timestamp;
	p->pid = ev->pid;
	p->tid = ev->tid;
	c->open[c->nopen++] = (struct open_pair){.tid = ev->tid,
						 .pair = out->npairs++};
	return 0;
}

/* One event of the program or the kernel (not strata's own): 0 or
 * -ENOMEM. */
static int inside_event(struct inside_ctx *c, const struct strata_event *ev)
{
	const struct inside_options *o = c->o;
	uint8_t rl = c->role[ev->cls->index];
	const int *f = c->sf[ev->cls->index];
	int64_t prev = -1, next = -1;
	uint64_t at = ev->timestamp;

	if (rl & 4) {
		prev = field_i(ev, f[0]);
		next = field_i(ev, f[2]);
	}
	/* A thread that logs an event runs on a CPU: if its switch-in
	 * was not recorded (a CPU leaving idle, analysis.h), it came
	 * back when the idle task's last event says, or here at the
	 * latest. */
	idle_infer(c->idle, c->ncpus, ev, rl & 4, prev, next, &at);
	if (ev->tid)
		for (size_t i = 0; i < c->nopen; i++)
			if (c->open[i].tid == ev->tid && c->open[i].off_at)
				back_on(c->out, &c->open[i],
					at > c->open[i].off_at ? at : ev->timestamp);
	if ((rl & 4) && inside_switch(c, ev, f, prev, next) < 0)
		return -ENOMEM;
	if (rl & 2)
		inside_close(c, ev);
	if ((rl & 1) && ev->timestamp >= o->wfrom &&
	    (!o->wto || ev->timestamp <= o->wto))
		return inside_open(c, ev);
	return 0;
}

int inside_compute(struct strata_trace *t, const struct inside_options *o,
	       struct inside_result *out)
{
	struct inside_ctx c = {.out = out, .o = o};
	struct strata_iter *it = NULL;
	bool any_switch = false;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = inside_roles(&c, t)))
		goto out;
	c.ncpus = trace_ncpus(t);
	ret = -ENOMEM;
	if (!(c.idle = calloc(c.ncpus ? c.ncpus : 1, sizeof(*c.idle))) ||
	    an_names_create(t, &out->names) < 0)
		goto out;
	/* strata's own records too: the state dump names threads */
	struct strata_iter_options io = {.stream = -1, .flags = STRATA_ITER_INTERNAL};
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto out;
	ret = -ENOMEM;
	const struct strata_event *ev;
	while (strata_iter_next(it, &ev) > 0) {
		if (o->wto && ev->timestamp > o->wto && !c.nopen)
			break;
		if (an_names_feed(out->names, ev) < 0)
			goto out;
		if (!(ev->id >> 16))
			continue; /* strata's own records: names only */
		any_switch |= c.role[ev->cls->index] & 4;
		if (inside_event(&c, ev) < 0)
			goto out;
	}
	ret = any_switch ? 0 : -ENOENT;
out:
	strata_iter_destroy(it);
	free(c.open);
	free(c.idle);
	free(c.role);
	free(c.sf);
	if (ret)
		inside_fini(out);
	return ret;
}

void inside_fini(struct inside_result *r)
{
	free(r->pairs);
	free(r->sw);
	an_names_destroy(r->names);
	memset(r, 0, sizeof(*r));
}
