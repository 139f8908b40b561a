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

int inside_compute(struct strata_trace *t, const struct inside_options *o,
	       struct inside_result *out)
{
	unsigned nc = strata_trace_nclasses(t);
	uint8_t *role = calloc(nc ? nc : 1, 1); /* 1 from, 2 to, 4 switch */
	int (*sf)[3] = calloc(nc ? nc : 1, sizeof(*sf));
	struct open_pair *open = NULL;
	size_t nopen = 0, capopen = 0, cap_pairs = 0, cap_sw = 0;
	struct strata_iter *it = NULL;
	struct idle_cpu *idle = NULL;
	unsigned ncpus = 0;
	bool any_from = false, any_to = false, any_sw = false;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!role || !sf)
		goto out;
	for (unsigned i = 0; i < nc; i++) {
		const struct strata_event_class *cl = strata_trace_class(t, i);
		if (!fnmatch(o->from, cl->name, 0))
			role[i] |= 1, any_from = true;
		if (!fnmatch(o->to, cl->name, 0))
			role[i] |= 2, any_to = true;
		if (!strcmp(cl->name, "sched:sched_switch")) {
			role[i] |= 4;
			any_sw = true;
			sf[i][0] = strata_event_class_field(cl, "prev_pid");
			sf[i][1] = strata_event_class_field(cl, "prev_state");
			sf[i][2] = strata_event_class_field(cl, "next_pid");
		}
	}
	if (!any_from || !any_to) {
		ret = -EINVAL;
		goto out;
	}
	if (!any_sw) {
		ret = -ENOENT;
		goto out;
	}
	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		if (strata_trace_stream(t, i, &si) == 0 && si.cpu != UINT32_MAX &&
		    si.cpu + 1 > ncpus)
			ncpus = si.cpu + 1;
	}
	if (!(idle = calloc(ncpus ? ncpus : 1, sizeof(*idle))) ||
	    an_names_create(t, &out->names) < 0)
		goto out;
	/* strata's own records too: the state dump names threads */
	struct strata_iter_options io = {.stream = -1, .flags = STRATA_ITER_INTERNAL};
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto out;
	ret = -ENOMEM;
	const struct strata_event *ev;
	bool any_switch = false;
	while (strata_iter_next(it, &ev) > 0) {
		if (o->wto && ev->timestamp > o->wto && !nopen)
			break;
		if (an_names_feed(out->names, ev) < 0)
			goto out;
		if (!(ev->id >> 16))
			continue; /* strata's own records: names only */
		uint8_t rl = role[ev->cls->index];
		any_switch |= rl & 4;
		const int *f = sf[ev->cls->index];
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
		idle_infer(idle, ncpus, ev, rl & 4, prev, next, &at);
		if (ev->tid)
			for (size_t i = 0; i < nopen; i++)
				if (open[i].tid == ev->tid && open[i].off_at)
					back_on(out, &open[i], at > open[i].off_at ? at : ev->timestamp);
		if (rl & 4) {
			for (size_t i = 0; i < nopen; i++) {
				struct open_pair *op = &open[i];
				struct inside_pair *p = &out->pairs[op->pair];
				if ((int64_t)op->tid == prev && !op->off_at) {
					if (grow((void **)&out->sw, &cap_sw, out->nsw + 1,
						 sizeof(*out->sw)))
						goto out;
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
		}
		if (rl & 2) {
			for (size_t i = 0; i < nopen; i++) {
				if (open[i].tid != ev->tid)
					continue;
				struct inside_pair *p = &out->pairs[open[i].pair];
				p->end = ev->timestamp;
				p->closed = true;
				open[i] = open[--nopen];
				break;
			}
		}
		if ((rl & 1) && ev->timestamp >= o->wfrom && (!o->wto || ev->timestamp <= o->wto)) {
			size_t i;
			for (i = 0; i < nopen && open[i].tid != ev->tid; i++)
				;
			if (i < nopen) /* a second `from` before its `to` */
				continue;
			if (grow((void **)&open, &capopen, nopen + 1, sizeof(*open)) ||
			    grow((void **)&out->pairs, &cap_pairs, out->npairs + 1,
				 sizeof(*out->pairs)))
				goto out;
			struct inside_pair *p = &out->pairs[out->npairs];
			memset(p, 0, sizeof(*p));
			p->begin = ev->timestamp;
			p->pid = ev->pid;
			p->tid = ev->tid;
			open[nopen++] = (struct open_pair){.tid = ev->tid,
							   .pair = out->npairs++};
		}
	}
	ret = any_switch ? 0 : -ENOENT;
out:
	strata_iter_destroy(it);
	free(open);
	free(idle);
	free(role);
	free(sf);
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
