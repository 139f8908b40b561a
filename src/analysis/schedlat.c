/* SPDX-License-Identifier: MIT */
/* Scheduling latency per task: how long each waited for a CPU after a wakeup or a preemption (perf sched latency). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/*
 * perf sched latency's algorithm (tools/perf/builtin-sched.c): a task
 * switched out runnable waits for a CPU from then; a sleeping (or not yet
 * seen) task woken waits from its wakeup; the wait ends at its next switch
 * in. The wakeup is sched_wakeup (or sched_wakeup_new): the task is
 * runnable from then, as the breakdown counts it. (perf records
 * sched_waking instead when the kernel has it, and perf 6.1's latency then
 * counts no wait after a wakeup, only those after a preemption: compare
 * with a perf recording of sched_switch and sched_wakeup.)
 * Unlike perf, the trace may lack switches (analysis.h, the breakdown): a
 * task whose event shows it on a CPU while it waited was switched in
 * unrecorded; the switch out of idle this kernel never records is inferred
 * as the breakdown does, any other such wait is counted as unknown.
 */

enum { SL_UNSEEN, SL_SLEEP, SL_WAIT, SL_RUN, SL_LOST };
enum { K_NONE, K_SWITCH, K_WAKE, K_FORK };

struct sl_cpu {
	int64_t cur;   /* -1 unknown, 0 idle, tid */
	uint64_t last; /* the idle task's last event there */
};

struct sl_ctx {
	struct strata_trace *t;
	struct an_tidmap tasks;
	struct sl_cpu *cpus;
	unsigned ncpus;
	uint64_t wfrom, wto;
	struct an_scope scope; /* a scoped trace's threads (an_scope_read) */
	int err;
};

static struct sl_task *task_get(struct sl_ctx *c, uint32_t tid)
{
	bool made;
	struct sl_task *k = an_tidmap_get(&c->tasks, tid, sizeof(*k), &made);
	if (!k) {
		c->err = -ENOMEM;
		return NULL;
	}
	if (made) {
		k->tid = k->pid = tid;
		k->on = -1;
		k->in_scope = an_scope_has(&c->scope, tid);
	}
	return k;
}

static uint64_t clip(const struct sl_ctx *c, uint64_t a, uint64_t b)
{
	return an_clip(c->wfrom, c->wto, a, b);
}

static bool in_window(const struct sl_ctx *c, uint64_t ts)
{
	return ts >= c->wfrom && ts <= c->wto;
}

/* Task k's wait ends at `at` (inferred: a switch the trace lacks): it runs
 * on CPU cpu from then. */
static void wait_ends(struct sl_ctx *c, struct sl_task *k, unsigned cpu, uint64_t at,
		      bool inferred)
{
	if (k->state == SL_WAIT && in_window(c, at)) {
		uint64_t d = at > k->since ? at - k->since : 0;
		k->delays++;
		k->total += d;
		if (k->cause == SL_CAUSE_KPREEMPTED) {
			k->kpreempted++;
			k->kpreempted_total += d;
		}
		if (inferred) {
			k->inferred++;
			k->inferred_total += d;
		}
		if (d > k->max || k->delays == 1) {
			k->max = d;
			k->max_at = k->since;
			k->max_cause = k->cause;
			k->max_inferred = inferred;
		}
	}
	k->state = SL_RUN;
	k->since = at;
	k->on = (int)cpu;
	c->cpus[cpu].cur = k->tid;
}

/* The task a CPU was running stops being known to run there. */
static void cpu_lost(struct sl_ctx *c, unsigned cpu)
{
	struct sl_cpu *p = &c->cpus[cpu];
	if (p->cur > 0) {
		struct sl_task *k = task_get(c, (uint32_t)p->cur);
		if (k && k->state == SL_RUN && k->on == (int)cpu) {
			k->state = SL_LOST;
			k->on = -1;
		}
	}
	p->cur = -1;
}

/* An event of tid x on CPU cpu at ts: x runs there now. */
static void on_cpu(struct sl_ctx *c, unsigned cpu, uint32_t x, uint64_t ts)
{
	struct sl_cpu *p = &c->cpus[cpu];
	if (p->cur == (int64_t)x) {
		if (!x)
			p->last = ts;
		return;
	}
	if (!x) {
		cpu_lost(c, cpu);
		p->cur = 0;
		p->last = ts;
		return;
	}
	struct sl_task *k = task_get(c, x);
	if (!k)
		return;
	if (k->state == SL_RUN && k->on >= 0 && (unsigned)k->on != cpu)
		cpu_lost(c, (unsigned)k->on);
	if (p->cur == 0 && k->state == SL_WAIT) {
		/* the switch out of idle the kernel did not record */
		uint64_t at = p->last > k->since ? p->last : k->since;
		wait_ends(c, k, cpu, at < ts ? at : ts, true);
		return;
	}
	cpu_lost(c, cpu);
	if (k->state == SL_WAIT && in_window(c, ts))
		k->unknown++;
	k->state = SL_LOST; /* no delay counted: its switch in is missing */
	wait_ends(c, k, cpu, ts, false);
}

static int64_t field_i(const struct strata_event *ev, int idx)
{
	struct strata_value v;
	if (idx < 0 || strata_event_field(ev, (unsigned)idx, &v) < 0)
		return -1;
	return v.type == STRATA_VALUE_SINT ? v.s : (int64_t)v.u;
}

static void field_comm(const struct strata_event *ev, int idx, char out[17])
{
	struct strata_value v;
	if (idx < 0 || strata_event_field(ev, (unsigned)idx, &v) < 0 ||
	    v.type != STRATA_VALUE_STRING)
		return;
	size_t n = strnlen(v.str, v.count < 16 ? v.count : 16);
	memcpy(out, v.str, n);
	out[n] = 0;
}

static int cmp_task(const void *a, const void *b)
{
	const struct sl_task *x = a, *y = b;
	if (x->max != y->max)
		return x->max < y->max ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Each class's kind (K_SWITCH, K_WAKE) and the indexes of the fields
 * read from it: pid, prev_state, next_pid, comm (switch: prev_pid, ...,
 * next_comm). */
static void sl_classify(struct strata_trace *t, uint8_t *kind, int (*f)[4])
{
	unsigned nc = strata_trace_nclasses(t);

	for (unsigned i = 0; i < nc; i++) {
		const struct strata_event_class *cl = strata_trace_class(t, i);
		if (!strcmp(cl->name, "sched:sched_switch")) {
			kind[i] = K_SWITCH;
			f[i][0] = strata_event_class_field(cl, "prev_pid");
			f[i][1] = strata_event_class_field(cl, "prev_state");
			f[i][2] = strata_event_class_field(cl, "next_pid");
			f[i][3] = strata_event_class_field(cl, "next_comm");
		} else if (!strcmp(cl->name, "sched:sched_process_fork")) {
			kind[i] = K_FORK;
			f[i][0] = strata_event_class_field(cl, "child_pid");
		} else if (!strcmp(cl->name, "sched:sched_wakeup") ||
			   !strcmp(cl->name, "sched:sched_wakeup_new")) {
			kind[i] = K_WAKE;
			f[i][0] = strata_event_class_field(cl, "pid");
			f[i][3] = strata_event_class_field(cl, "comm");
		}
	}
}

/* A sched_switch on ev's CPU: `cur` (ev's thread, or NULL) leaves it,
 * waiting if it was runnable; next_pid's wait ends. */
static void sl_switch(struct sl_ctx *c, const struct strata_event *ev,
		      const int *fi, struct sl_task *cur)
{
	unsigned cpu = ev->cpu;
	uint64_t ts = ev->timestamp;
	int64_t prev = field_i(ev, fi[0]), pst = field_i(ev, fi[1]);
	int64_t next = field_i(ev, fi[2]);

	if (prev > 0 && c->cpus[cpu].cur == prev && cur) {
		if (cur->state == SL_RUN && cur->on == (int)cpu)
			cur->runtime += clip(c, cur->since, ts);
		cur->on = -1;
		cur->since = ts;
		/* TASK_REPORT 0 or 0x100 (preempted): runnable */
		if (pst >= 0 && ((pst & 0x100) || !(pst & 0xff))) {
			cur->state = SL_WAIT;
			cur->cause = (pst & 0x100) ? SL_CAUSE_KPREEMPTED
						   : SL_CAUSE_PREEMPTED;
			cur->preemptions += in_window(c, ts);
		} else {
			cur->state = (pst & 0x30) ? SL_UNSEEN : SL_SLEEP;
		}
	}
	if (next <= 0) {
		c->cpus[cpu].cur = 0;
		c->cpus[cpu].last = ts;
		return;
	}
	struct sl_task *n = task_get(c, (uint32_t)next);
	if (!n)
		return; /* c->err is set */
	field_comm(ev, fi[3], n->comm);
	if (n->state == SL_RUN && n->on >= 0 && (unsigned)n->on != cpu)
		cpu_lost(c, (unsigned)n->on);
	wait_ends(c, n, cpu, ts, false);
}

/* A sched_wakeup: a task asleep (or unseen) waits for a CPU from now. */
static void sl_wake(struct sl_ctx *c, const struct strata_event *ev,
		    const int *fi)
{
	int64_t pid = field_i(ev, fi[0]);
	struct sl_task *w = pid > 0 ? task_get(c, (uint32_t)pid) : NULL;

	if (!w)
		return;
	if (!w->comm[0])
		field_comm(ev, fi[3], w->comm);
	if (w->state == SL_SLEEP || w->state == SL_UNSEEN || w->state == SL_LOST) {
		w->state = SL_WAIT;
		w->cause = SL_CAUSE_WAKEUP;
		w->since = ev->timestamp;
		w->wakeups += in_window(c, ev->timestamp);
	}
}

/* The tasks with something in the window, as one array sorted by their
 * longest wait; `last` is the last event read. 0 or -ENOMEM. */
static int sl_collect(struct sl_ctx *c, uint64_t last, struct sl_result *out)
{
	out->tasks = calloc(c->tasks.n ? c->tasks.n : 1, sizeof(*out->tasks));
	if (!out->tasks)
		return -ENOMEM;
	for (size_t i = 0; i < c->tasks.n; i++) {
		struct sl_task *k = c->tasks.all[i];
		if (k->state == SL_RUN && k->on >= 0) /* still running at the end */
			k->runtime += clip(c, k->since, last);
		k->outside = c->scope.scoped && !k->in_scope;
		if (k->delays || k->runtime || k->unknown)
			out->tasks[out->ntasks++] = *k;
	}
	qsort(out->tasks, out->ntasks, sizeof(*out->tasks), cmp_task);
	return 0;
}

int sl_compute(struct strata_trace *t, uint64_t wfrom, uint64_t wto, struct sl_result *out)
{
	struct sl_ctx c = { .t = t, .wfrom = wfrom, .wto = wto ? wto : UINT64_MAX };
	unsigned nc = strata_trace_nclasses(t), ns = strata_trace_nstreams(t);
	uint8_t *kind = calloc(nc ? nc : 1, 1);
	int (*f)[4] = calloc(nc ? nc : 1, sizeof(*f));
	bool *kernel = calloc(ns ? ns : 1, sizeof(bool));
	struct strata_iter *it = NULL;
	bool have_switch = false;
	uint64_t last = 0; /* the last event read */
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!kind || !f || !kernel)
		goto out;
	sl_classify(t, kind, f);
	c.ncpus = an_kernel_streams(t, kernel);
	if ((ret = an_scope_read(t, kernel, &c.scope)) < 0)
		goto out;
	ret = -ENOMEM;
	if (!(c.cpus = calloc(c.ncpus ? c.ncpus : 1, sizeof(*c.cpus))))
		goto out;
	for (unsigned i = 0; i < c.ncpus; i++)
		c.cpus[i].cur = -1;
	struct strata_iter_options io = { .stream = -1 };
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto out;
	const struct strata_event *ev;
	while (!c.err && strata_iter_next(it, &ev) > 0) {
		if (ev->timestamp > c.wto)
			break;
		last = ev->timestamp;
		if (!kernel[ev->stream] || ev->cpu >= c.ncpus)
			continue;
		const int *fi = f[ev->cls->index];
		on_cpu(&c, ev->cpu, ev->tid, ev->timestamp);
		struct sl_task *cur = ev->tid ? task_get(&c, ev->tid) : NULL;
		if (cur)
			cur->pid = ev->pid;
		if (kind[ev->cls->index] == K_SWITCH) {
			have_switch = true;
			sl_switch(&c, ev, fi, cur);
		} else if (kind[ev->cls->index] == K_WAKE) {
			sl_wake(&c, ev, fi);
		} else if (kind[ev->cls->index] == K_FORK && cur && cur->in_scope) {
			int64_t child = field_i(ev, fi[0]); /* event-fork: in scope */
			struct sl_task *ch = child > 0 ? task_get(&c, (uint32_t)child) : NULL;
			if (ch)
				ch->in_scope = true;
		}
	}
	if ((ret = c.err))
		goto out;
	if (!have_switch) {
		ret = -ENOENT;
		goto out;
	}
	ret = sl_collect(&c, last, out);
out:
	strata_iter_destroy(it);
	an_tidmap_fini(&c.tasks);
	free(c.scope.tids);
	free(c.cpus);
	free(kind);
	free(f);
	free(kernel);
	if (ret)
		sl_fini(out);
	return ret;
}

void sl_fini(struct sl_result *r)
{
	free(r->tasks);
	memset(r, 0, sizeof(*r));
}
