/* SPDX-License-Identifier: MIT */
/* Per-thread time breakdown from kernel sched/syscall events: user, system calls, runnable, blocked (LTT, K42). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/* Event kinds the breakdown understands, resolved once per class. */
enum kk {
	K_NONE, K_SWITCH, K_WAKEUP, K_EXIT, K_SYS_ENTER, K_SYS_EXIT,
	K_IRQ_ENTRY, K_IRQ_EXIT, K_SOFTIRQ_ENTRY, K_SOFTIRQ_EXIT, K_EXEC,
};

struct kclass_info {
	uint8_t kind;
	int f[4]; /* field indexes, per kind (below) */
};

struct bd_ctx {
	struct strata_trace *t;
	struct bd_result *r;
	struct kclass_info *ci;
	bool *kernel_stream;
	struct idle_cpu *idle; /* [r->ncpus] */
	uint64_t wfrom, wto;
	/* tid -> thread index, open addressing */
	uint32_t *hkey;
	int32_t *hval;
	size_t hcap, cap;
	int err;
};

static uint64_t clip(const struct bd_ctx *c, uint64_t a, uint64_t b)
{
	if (a < c->wfrom)
		a = c->wfrom;
	if (b > c->wto)
		b = c->wto;
	return b > a ? b - a : 0;
}

static struct bd_thread *thread_get(struct bd_ctx *c, uint32_t tid)
{
	struct bd_result *r = c->r;
	size_t h = (tid * 2654435761u) & (c->hcap - 1);

	for (;; h = (h + 1) & (c->hcap - 1)) {
		if (c->hval[h] < 0)
			break;
		if (c->hkey[h] == tid)
			return &r->threads[c->hval[h]];
	}
	if (r->nthreads * 2 >= c->hcap) { /* grow the table */
		size_t ncap = c->hcap * 2;
		uint32_t *nk = calloc(ncap, sizeof(*nk));
		int32_t *nv = malloc(ncap * sizeof(*nv));
		if (!nk || !nv) {
			free(nk);
			free(nv);
			c->err = -ENOMEM;
			return NULL;
		}
		memset(nv, 0xff, ncap * sizeof(*nv));
		for (size_t i = 0; i < c->hcap; i++)
			if (c->hval[i] >= 0) {
				size_t j = (c->hkey[i] * 2654435761u) & (ncap - 1);
				while (nv[j] >= 0)
					j = (j + 1) & (ncap - 1);
				nk[j] = c->hkey[i];
				nv[j] = c->hval[i];
			}
		free(c->hkey);
		free(c->hval);
		c->hkey = nk;
		c->hval = nv;
		c->hcap = ncap;
		return thread_get(c, tid);
	}
	if (r->nthreads == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct bd_thread *nt = realloc(r->threads, ncap * sizeof(*nt));
		if (!nt) {
			c->err = -ENOMEM;
			return NULL;
		}
		r->threads = nt;
		c->cap = ncap;
	}
	struct bd_thread *th = &r->threads[r->nthreads];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->pid = tid;
	th->state = BD_OTHER;
	th->since = c->wfrom < r->begin ? r->begin : c->wfrom;
	th->since = r->begin;
	th->on = -1;
	if (!(th->cpu = calloc(r->ncpus, sizeof(*th->cpu)))) {
		c->err = -ENOMEM;
		return NULL;
	}
	c->hkey[h] = tid;
	c->hval[h] = (int32_t)r->nthreads++;
	return th;
}

static struct bd_syscall *sys_entry(struct bd_ctx *c, struct bd_thread *th,
				    uint32_t nr);

/* An event of `th` inside its current system call. */
static void sys_inside(struct bd_ctx *c, struct bd_thread *th,
		       const struct strata_event_class *cls)
{
	struct bd_syscall *s = sys_entry(c, th, th->sys_nr);
	if (!s)
		return;
	for (unsigned i = 0; i < BD_INSIDE; i++) {
		if (s->in[i].cls == cls || !s->in[i].cls) {
			s->in[i].cls = cls;
			s->in[i].count++;
			return;
		}
	}
	s->in_other++;
}

static void sys_account(struct bd_ctx *c, struct bd_thread *th, uint32_t nr,
			uint64_t time, uint64_t oncpu, bool count)
{
	struct bd_syscall *s = sys_entry(c, th, nr);
	if (!s)
		return;
	s->count += count;
	s->time += time;
	s->oncpu += oncpu;
}

static struct bd_syscall *sys_entry(struct bd_ctx *c, struct bd_thread *th,
				    uint32_t nr)
{
	struct bd_syscall *s = NULL;
	for (unsigned i = 0; i < th->nsc; i++)
		if (th->sc[i].nr == nr)
			s = &th->sc[i];
	if (!s) {
		struct bd_syscall *n = realloc(th->sc, (th->nsc + 1) * sizeof(*n));
		if (!n) {
			c->err = -ENOMEM;
			return NULL;
		}
		th->sc = n;
		s = &th->sc[th->nsc++];
		memset(s, 0, sizeof(*s));
		s->nr = nr;
	}
	return s;
}

/* Leave the current state at `ts`, enter `st`. */
static void set_state(struct bd_ctx *c, struct bd_thread *th, int st, uint64_t ts)
{
	if (ts < th->since)
		ts = th->since;
	uint64_t d = clip(c, th->since, ts);
	th->t[th->state] += d;
	if ((th->state == BD_USER || th->state == BD_SYS || th->state == BD_IRQ) &&
	    th->on >= 0 &&
	    (unsigned)th->on < c->r->ncpus)
		th->cpu[th->on] += d;
	if (th->state == BD_SYS && th->in_sys && th->sys_open)
		sys_account(c, th, th->sys_nr, 0, d, false);
	th->state = st;
	th->since = ts;
}

static int running_state(const struct bd_thread *th)
{
	return th->in_sys ? BD_SYS : BD_USER;
}

static void cpu_switch(struct bd_ctx *c, unsigned cpu, int64_t next, uint64_t ts)
{
	struct bd_cpu *k = &c->r->cpus[cpu];
	uint64_t d = clip(c, k->since, ts);
	if (k->cur < 0)
		k->other += d;
	else if (k->cur == 0)
		k->idle += d;
	else
		k->busy += d;
	k->cur = next;
	k->since = ts;
}

static int64_t field_s(const struct strata_event *ev, int idx)
{
	struct strata_value v;
	if (idx < 0 || strata_event_field(ev, (unsigned)idx, &v) < 0)
		return -1;
	if (v.type == STRATA_VALUE_SINT)
		return v.s;
	if (v.type == STRATA_VALUE_UINT)
		return (int64_t)v.u;
	return -1;
}

static void field_str(const struct strata_event *ev, int idx, char out[17])
{
	struct strata_value v;
	if (idx < 0 || strata_event_field(ev, (unsigned)idx, &v) < 0 ||
	    v.type != STRATA_VALUE_STRING)
		return;
	size_t n = strnlen(v.str, v.count < 16 ? v.count : 16);
	memcpy(out, v.str, n);
	out[n] = 0;
}

/* sched_switch prev_state -> state (TASK_REPORT bits; 0x100 = preempted). */
static int prev_state_of(int64_t s)
{
	if (s < 0 || (s & 0x100) || (s & 0xff) == 0)
		return BD_RUNNABLE;
	if (s & 0x02)
		return BD_IO;
	if (s & 0x30) /* X, Z: exited */
		return BD_OTHER;
	return BD_SLEEP; /* S, T, t, P, I */
}

static void resolve_classes(struct bd_ctx *c)
{
	struct strata_trace *t = c->t;
	unsigned n = strata_trace_nclasses(t);
	for (unsigned i = 0; i < n; i++) {
		const struct strata_event_class *cl = strata_trace_class(t, i);
		struct kclass_info *ci = &c->ci[i];
		const char *nm = cl->name;
#define F(k, name) (ci->f[k] = strata_event_class_field(cl, name))
		if (!strcmp(nm, "sched:sched_switch")) {
			ci->kind = K_SWITCH;
			F(0, "prev_pid"), F(1, "prev_state"), F(2, "next_pid"), F(3, "next_comm");
		} else if (!strcmp(nm, "sched:sched_wakeup") ||
			   !strcmp(nm, "sched:sched_wakeup_new")) {
			ci->kind = K_WAKEUP;
			F(0, "pid"), F(1, "comm");
		} else if (!strcmp(nm, "sched:sched_process_exit")) {
			ci->kind = K_EXIT;
		} else if (!strcmp(nm, "sched:sched_process_exec")) {
			ci->kind = K_EXEC;
		} else if (!strcmp(nm, "raw_syscalls:sys_enter")) {
			ci->kind = K_SYS_ENTER;
			F(0, "id");
		} else if (!strcmp(nm, "raw_syscalls:sys_exit")) {
			ci->kind = K_SYS_EXIT;
			F(0, "id");
		} else if (!strncmp(nm, "irq_vectors:", 12) && strstr(nm, "_entry")) {
			ci->kind = K_IRQ_ENTRY;
		} else if (!strncmp(nm, "irq_vectors:", 12) && strstr(nm, "_exit")) {
			ci->kind = K_IRQ_EXIT;
		} else if (!strcmp(nm, "irq:irq_handler_entry")) {
			ci->kind = K_IRQ_ENTRY;
		} else if (!strcmp(nm, "irq:irq_handler_exit")) {
			ci->kind = K_IRQ_EXIT;
		} else if (!strcmp(nm, "irq:softirq_entry")) {
			ci->kind = K_SOFTIRQ_ENTRY;
		} else if (!strcmp(nm, "irq:softirq_exit")) {
			ci->kind = K_SOFTIRQ_EXIT;
		}
#undef F
	}
}

/* Interrupt handlers steal from the thread they interrupt: its running
 * time excludes them, as the kernel's own accounting does. */
static void handler(struct bd_ctx *c, struct bd_cpu *k, struct bd_thread *cur,
		    bool enter, uint64_t ts)
{
	if (enter) {
		if (k->depth++ == 0 && cur && (cur->state == BD_USER || cur->state == BD_SYS))
			set_state(c, cur, BD_IRQ, ts);
	} else if (k->depth > 0 && --k->depth == 0 && cur && cur->state == BD_IRQ) {
		set_state(c, cur, running_state(cur), ts);
	}
}

static void on_event(struct bd_ctx *c, const struct strata_event *ev)
{
	struct bd_result *r = c->r;
	uint64_t ts = ev->timestamp;
	const struct kclass_info *ci = &c->ci[ev->cls->index];
	bool kernel = c->kernel_stream[ev->stream];
	int64_t prev = -1, next = -1;
	uint64_t at;

	if (kernel && ci->kind == K_SWITCH) {
		prev = field_s(ev, ci->f[0]);
		next = field_s(ev, ci->f[2]);
	}
	if (idle_infer(c->idle, r->ncpus, ev, kernel && ci->kind == K_SWITCH, prev, next, &at)) {
		/* the CPU left idle for this thread at `at`, unrecorded */
		struct bd_thread *th = thread_get(c, ev->tid);
		if (!th)
			return;
		if (th->state != BD_USER && th->state != BD_SYS && th->state != BD_IRQ) {
			th->on = (int)ev->cpu;
			th->switches_in++;
			set_state(c, th, running_state(th), at);
		}
		r->cpus[ev->cpu].depth = 0;
		cpu_switch(c, ev->cpu, ev->tid, at);
	}

	if (!kernel) {
		struct bd_thread *th = thread_get(c, ev->tid);
		if (th) {
			th->pid = ev->pid;
			if (ts >= c->wfrom && ts <= c->wto) {
				th->user_events++;
				if (th->in_sys) /* e.g. a signal handler's event */
					sys_inside(c, th, ev->cls);
			}
		}
		r->user_events++;
		return;
	}
	r->kernel_events++;
	unsigned cpu = ev->cpu < r->ncpus ? ev->cpu : 0;
	struct bd_cpu *k = &r->cpus[cpu];
	struct bd_thread *cur = NULL;

	/* The thread an event is attributed to runs on that CPU now. */
	if (k->cur < 0)
		cpu_switch(c, cpu, ev->tid, ts);
	if (ev->tid) {
		if (!(cur = thread_get(c, ev->tid)))
			return;
		cur->pid = ev->pid;
		if (cur->state != BD_USER && cur->state != BD_SYS &&
		    cur->state != BD_IRQ && ci->kind != K_WAKEUP) {
			cur->on = (int)cpu;
			set_state(c, cur, running_state(cur), ts);
		}
	}

	if (cur && cur->in_sys && ci->kind != K_SYS_ENTER && ci->kind != K_SYS_EXIT &&
	    ts >= c->wfrom && ts <= c->wto)
		sys_inside(c, cur, ev->cls);

	switch (ci->kind) {
	case K_SWITCH: {
		int64_t pst = field_s(ev, ci->f[1]);
		r->have_sched = true;
		k->depth = 0; /* no handler spans a switch */
		if (prev > 0) {
			struct bd_thread *p = thread_get(c, (uint32_t)prev);
			if (!p)
				return;
			int st = prev_state_of(pst);
			if (st == BD_RUNNABLE)
				p->preempted++;
			set_state(c, p, st, ts);
			p->on = -1;
		}
		if (next > 0) {
			struct bd_thread *n = thread_get(c, (uint32_t)next);
			if (!n)
				return;
			field_str(ev, ci->f[3], n->comm);
			n->on = (int)cpu;
			n->switches_in++;
			set_state(c, n, running_state(n), ts);
		}
		cpu_switch(c, cpu, next < 0 ? -1 : next, ts);
		break;
	}
	case K_WAKEUP: {
		int64_t pid = field_s(ev, ci->f[0]);
		if (pid <= 0)
			break;
		struct bd_thread *w = thread_get(c, (uint32_t)pid);
		if (!w)
			return;
		if (!w->comm[0])
			field_str(ev, ci->f[1], w->comm);
		w->wakeups++;
		if (w->state == BD_SLEEP || w->state == BD_IO || w->state == BD_OTHER)
			set_state(c, w, BD_RUNNABLE, ts);
		break;
	}
	case K_SYS_ENTER:
		r->have_syscalls = true;
		if (cur) {
			cur->in_sys = cur->sys_open = true;
			cur->sys_nr = (uint32_t)field_s(ev, ci->f[0]);
			cur->sys_enter = ts;
			set_state(c, cur, BD_SYS, ts);
		}
		break;
	case K_SYS_EXIT:
		r->have_syscalls = true;
		if (cur) {
			set_state(c, cur, BD_SYS, ts); /* account the on-CPU part */
			if (cur->sys_open)
				sys_account(c, cur, cur->sys_nr, clip(c, cur->sys_enter, ts), 0,
					    cur->sys_enter >= c->wfrom && ts <= c->wto);
			cur->in_sys = cur->sys_open = false;
			set_state(c, cur, BD_USER, ts);
		}
		break;
	case K_IRQ_ENTRY:
		k->in_irq = true;
		k->irq_at = ts;
		handler(c, k, cur, true, ts);
		break;
	case K_IRQ_EXIT:
		if (k->in_irq)
			k->irq += clip(c, k->irq_at, ts);
		k->in_irq = false;
		handler(c, k, cur, false, ts);
		break;
	case K_SOFTIRQ_ENTRY:
		k->in_softirq = true;
		k->softirq_at = ts;
		handler(c, k, cur, true, ts);
		break;
	case K_SOFTIRQ_EXIT:
		if (k->in_softirq)
			k->softirq += clip(c, k->softirq_at, ts);
		k->in_softirq = false;
		handler(c, k, cur, false, ts);
		break;
	case K_EXEC:
		if (cur)
			cur->comm[0] = 0; /* the next switch names it again */
		break;
	default:
		break;
	}
}

static int cmp_thread(const void *a, const void *b)
{
	const struct bd_thread *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

const char *bd_syscall_name(struct strata_trace *t, uint32_t nr)
{
	char key[32];
	snprintf(key, sizeof(key), "syscall_%u", nr);
	for (unsigned i = 0; i < strata_trace_nsubtraces(t); i++) {
		const char *d = strata_trace_env(t, i, "domain");
		if (d && !strcmp(d, "kernel")) {
			const char *v = strata_trace_env(t, i, key);
			if (v)
				return v;
		}
	}
	return NULL;
}

int bd_compute(struct strata_trace *t, const struct bd_options *o,
	       struct bd_result **out)
{
	struct bd_ctx c = { .t = t };
	struct bd_result *r = calloc(1, sizeof(*r));
	struct strata_iter *it = NULL;
	int ret = -ENOMEM;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	c.r = r;
	r->begin = strata_trace_begin(t);
	r->end = strata_trace_end(t);
	c.wfrom = o && o->from > r->begin ? o->from : r->begin;
	c.wto = o && o->to < r->end ? o->to : r->end;
	if (c.wto < c.wfrom)
		c.wto = c.wfrom;

	unsigned ns = strata_trace_nstreams(t);
	bool any_kernel = false;
	c.kernel_stream = calloc(ns ? ns : 1, sizeof(bool));
	c.ci = calloc(strata_trace_nclasses(t) + 1, sizeof(*c.ci));
	c.hcap = 1024;
	c.hkey = calloc(c.hcap, sizeof(*c.hkey));
	c.hval = malloc(c.hcap * sizeof(*c.hval));
	if (!c.kernel_stream || !c.ci || !c.hkey || !c.hval)
		goto out;
	memset(c.hval, 0xff, c.hcap * sizeof(*c.hval));
	for (unsigned i = 0; i < ns; i++) {
		struct strata_stream_info si;
		if (strata_trace_stream(t, i, &si) < 0)
			continue;
		const char *d = strata_trace_env(t, si.subtrace, "domain");
		c.kernel_stream[i] = d && !strcmp(d, "kernel");
		if (c.kernel_stream[i]) {
			any_kernel = true;
			if (si.cpu != UINT32_MAX && si.cpu + 1 > r->ncpus)
				r->ncpus = si.cpu + 1;
		}
	}
	if (!any_kernel) {
		ret = -ENOENT;
		goto out;
	}
	if (!(r->cpus = calloc(r->ncpus, sizeof(*r->cpus))) ||
	    !(c.idle = calloc(r->ncpus, sizeof(*c.idle))))
		goto out;
	for (unsigned i = 0; i < r->ncpus; i++) {
		r->cpus[i].cur = -1;
		r->cpus[i].since = r->begin;
	}
	resolve_classes(&c);

	struct strata_iter_options io = { .stream = -1 };
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto out;
	const struct strata_event *ev;
	while (!c.err && strata_iter_next(it, &ev) > 0) {
		if (ev->timestamp > c.wto)
			break;
		on_event(&c, ev);
	}
	if ((ret = c.err))
		goto out;
	/* close every state at the end of the window */
	for (unsigned i = 0; i < r->nthreads; i++) {
		struct bd_thread *th = &r->threads[i];
		if (th->in_sys && th->sys_open)
			sys_account(&c, th, th->sys_nr, clip(&c, th->sys_enter, c.wto), 0, false);
		set_state(&c, th, th->state, c.wto);
	}
	for (unsigned i = 0; i < r->ncpus; i++)
		cpu_switch(&c, i, r->cpus[i].cur, c.wto);
	if (!r->have_sched) {
		ret = -ENOENT;
		goto out;
	}
	r->begin = c.wfrom;
	r->end = c.wto;
	qsort(r->threads, r->nthreads, sizeof(*r->threads), cmp_thread);
	ret = 0;
out:
	strata_iter_destroy(it);
	free(c.kernel_stream);
	free(c.idle);
	free(c.ci);
	free(c.hkey);
	free(c.hval);
	if (ret) {
		bd_free(r);
		return ret;
	}
	*out = r;
	return 0;
}

void bd_free(struct bd_result *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < r->nthreads; i++) {
		free(r->threads[i].cpu);
		free(r->threads[i].sc);
	}
	free(r->threads);
	free(r->cpus);
	free(r);
}
