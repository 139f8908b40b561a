/* SPDX-License-Identifier: MIT */
/* Per-thread time breakdown from kernel sched/syscall events (user, system calls, runnable, blocked; LTT, K42): the events, read into the machines of breakdown_state.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/breakdown_int.h"
#include "common/kstate.h"

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

static void field_str(const struct strata_event *ev, int idx, char out[17], bool base)
{
	struct strata_value v;
	if (idx < 0 || strata_event_field(ev, (unsigned)idx, &v) < 0 ||
	    v.type != STRATA_VALUE_STRING)
		return;
	size_t n = strnlen(v.str, v.count);
	const char *s = v.str;
	if (base) { /* the file name of a path, as the kernel's comm */
		const char *sl = memrchr(s, '/', n);
		if (sl) {
			n -= (size_t)(sl + 1 - s);
			s = sl + 1;
		}
	}
	if (n > 15)
		n = 15;
	memcpy(out, s, n);
	out[n] = 0;
}

#define PS_DEAD 0x30 /* TASK_REPORT: X (dead) and Z (zombie) */

/* sched_switch prev_state -> state (TASK_REPORT bits; 0x100 = preempted). */
static int prev_state_of(int64_t s)
{
	if (s < 0 || (s & 0x100) || (s & 0xff) == 0)
		return BD_RUNNABLE;
	if (s & PS_DEAD)
		return BD_UNSEEN;
	if (s & 0x02)
		return BD_IO;
	return BD_SLEEP; /* S, T, t, P, I */
}

const char *bd_state_letters(int64_t s, char *buf)
{
	return kstate_letters(s, buf);
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
		} else if (!strcmp(nm, "sched:sched_process_fork")) {
			ci->kind = K_FORK;
			F(0, "child_pid"), F(1, "child_comm");
		} else if (!strcmp(nm, "sched:sched_process_exit")) {
			ci->kind = K_EXIT;
		} else if (!strcmp(nm, "sched:sched_process_exec")) {
			ci->kind = K_EXEC;
			F(0, "filename");
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
		} else if (!strcmp(nm, "exceptions:page_fault_user")) {
			ci->kind = K_FAULT_USER;
		} else if (!strcmp(nm, "exceptions:page_fault_kernel")) {
			ci->kind = K_FAULT_KERNEL;
		} else if (!strcmp(nm, "strata:thread_name")) {
			ci->kind = K_DUMP_THREAD;
			F(0, "tid"), F(1, "pid"), F(2, "name");
		} else if (!strcmp(nm, "strata:thread_times")) {
			ci->kind = K_THREAD_TIMES;
			F(0, "tid"), F(1, "utime_ns"), F(2, "stime_ns"), F(3, "when");
		}
#undef F
	}
}

static void on_switch(struct bd_ctx *c, const struct strata_event *ev,
		      const struct kclass_info *ci, unsigned cpu)
{
	struct bd_result *r = c->r;
	int64_t prev = field_s(ev, ci->f[0]), next = field_s(ev, ci->f[2]);
	uint64_t ts = ev->timestamp;

	r->have_sched = true;
	r->cpus[cpu].depth = 0; /* no handler spans a switch */
	if (prev > 0 && r->cpus[cpu].cur == prev) {
		struct bd_thread *p = bd_thread_find(c, (uint32_t)prev);
		int st = prev_state_of(field_s(ev, ci->f[1]));
		if (st == BD_RUNNABLE)
			p->preempted += ts >= c->wfrom && ts <= c->wto;
		bd_leave_cpu(c, p, st, ts);
	}
	if (next <= 0) {
		bd_cpu_set(c, cpu, 0, ts);
		return;
	}
	struct bd_thread *n = bd_thread_get(c, (uint32_t)next);
	if (!n)
		return;
	field_str(ev, ci->f[3], n->comm, false);
	if (bd_running(n) && n->on >= 0 && (unsigned)n->on != cpu)
		bd_lose_cpu(c, (unsigned)n->on); /* it left that CPU unrecorded */
	if (n->state == BD_SLEEP || n->state == BD_IO)
		bd_forget(n); /* blocked, and its wakeup is missing */
	bd_run_on(c, n, cpu, ts);
}

/* sched_wakeup(_new) of a thread: runnable from now, if it was not. */
static void on_wakeup(struct bd_ctx *c, const struct strata_event *ev,
		      const struct kclass_info *ci, bool in_window)
{
	int64_t pid = field_s(ev, ci->f[0]);
	if (pid <= 0)
		return;
	struct bd_thread *w = bd_thread_get(c, (uint32_t)pid);
	if (!w || w->exited)
		return;
	if (!w->comm[0])
		field_str(ev, ci->f[1], w->comm, false);
	w->wakeups += in_window;
	if (w->state == BD_SLEEP || w->state == BD_IO || w->state == BD_UNSEEN ||
	    w->state == BD_UNKNOWN)
		bd_set_state(c, w, BD_RUNNABLE, ev->timestamp);
}

/* raw_syscalls sys_enter / sys_exit of the current thread. */
static void on_syscall(struct bd_ctx *c, struct bd_thread *cur, const struct strata_event *ev,
		       const struct kclass_info *ci)
{
	uint64_t ts = ev->timestamp;

	if (ci->kind == K_SYS_ENTER) {
		cur->in_sys = cur->sys_open = cur->sys_seen = true;
		cur->sys_nr = (uint32_t)field_s(ev, ci->f[0]);
		cur->sys_enter = ts;
		bd_set_state(c, cur, BD_SYS, ts);
		return;
	}
	/* A thread first seen leaving a system call was in it since it was
	 * first seen running. */
	if (!cur->sys_seen && cur->state == BD_USER)
		cur->state = BD_SYS;
	cur->sys_seen = true;
	bd_set_state(c, cur, BD_SYS, ts); /* account the on-CPU part */
	if (cur->sys_open)
		bd_sys_account(c, cur, cur->sys_nr, bd_clip(c, cur->sys_enter, ts), 0,
			    cur->sys_enter >= c->wfrom && ts <= c->wto);
	cur->in_sys = cur->sys_open = false;
	bd_set_state(c, cur, BD_USER, ts);
}

/* Interrupt and softirq entry and exit on CPU k: the CPU's handler time,
 * and the interrupted thread's (bd_handler()). */
static void on_handler(struct bd_ctx *c, struct bd_cpu *k, struct bd_thread *cur, int kind,
		       uint64_t ts)
{
	switch (kind) {
	case K_IRQ_ENTRY:
		c->r->have_irq = true;
		k->in_irq = true;
		k->irq_at = ts;
		break;
	case K_IRQ_EXIT:
		if (k->in_irq)
			k->irq += bd_clip(c, k->irq_at, ts);
		k->in_irq = false;
		break;
	case K_SOFTIRQ_ENTRY:
		k->in_softirq = true;
		k->softirq_at = ts;
		break;
	case K_SOFTIRQ_EXIT:
		if (k->in_softirq)
			k->softirq += bd_clip(c, k->softirq_at, ts);
		k->in_softirq = false;
		break;
	}
	bd_handler(c, k, cur, kind == K_IRQ_ENTRY || kind == K_SOFTIRQ_ENTRY, ts);
}

/* A strata:thread_times record (format.md §4): the kernel's utime and
 * stime of a thread at the start, or its final values. */
static void on_times(struct bd_ctx *c, const struct strata_event *ev,
		     const struct kclass_info *ci)
{
	int64_t tid = field_s(ev, ci->f[0]), when = field_s(ev, ci->f[3]);
	struct bd_thread *th = tid > 0 ? bd_thread_get(c, (uint32_t)tid) : NULL;
	uint64_t u = (uint64_t)field_s(ev, ci->f[1]), st = (uint64_t)field_s(ev, ci->f[2]);

	if (!th)
		return;
	if (when == 0) {
		th->kt_base[0] = u;
		th->kt_base[1] = st;
		th->kt_have |= BD_KT_BASE;
	} else {
		/* two final values: a tid reused in the recording */
		th->kt_have |= th->kt_have & BD_KT_END ? BD_KT_TWICE : BD_KT_END;
		th->kt_end[0] = u;
		th->kt_end[1] = st;
	}
}

static void on_event(struct bd_ctx *c, const struct strata_event *ev)
{
	struct bd_result *r = c->r;
	uint64_t ts = ev->timestamp;
	const struct kclass_info *ci = &c->ci[ev->cls->index];
	bool kernel = c->kernel_stream[ev->stream];
	bool in_window = ts >= c->wfrom && ts <= c->wto;

	if (ci->kind == K_DUMP_THREAD) { /* the state dump: tid -> pid, name */
		int64_t tid = field_s(ev, ci->f[0]), pid = field_s(ev, ci->f[1]);
		struct bd_thread *th = tid > 0 ? bd_thread_get(c, (uint32_t)tid) : NULL;
		if (th && pid > 0)
			th->pid = (uint32_t)pid;
		if (th && !th->comm[0])
			field_str(ev, ci->f[2], th->comm, false);
		return;
	}
	if (ci->kind == K_THREAD_TIMES) {
		on_times(c, ev, ci);
		return;
	}
	if (!(ev->id >> 16))
		return; /* strata's own records */
	if (!kernel) {
		struct bd_thread *th = bd_thread_get(c, ev->tid);
		if (!th)
			return;
		th->pid = ev->pid;
		if (ev->cpu < r->ncpus)
			bd_on_cpu(c, ev->cpu, ev->tid, ts, true);
		if (in_window) {
			th->user_events++;
			if (th->in_sys) /* e.g. a signal handler's event */
				bd_sys_inside(c, th, ev->cls);
		}
		r->user_events++;
		return;
	}
	r->kernel_events++;
	if (ev->cpu >= r->ncpus)
		return;
	unsigned cpu = ev->cpu;
	struct bd_cpu *k = &r->cpus[cpu];
	struct bd_thread *cur = NULL;

	/* The thread an event is attributed to runs on that CPU now. */
	bd_on_cpu(c, cpu, ev->tid, ts, false);
	if (ev->tid) {
		if (!(cur = bd_thread_get(c, ev->tid)))
			return;
		cur->pid = ev->pid;
	}
	if (cur && cur->in_sys && ci->kind != K_SYS_ENTER && ci->kind != K_SYS_EXIT &&
	    in_window)
		bd_sys_inside(c, cur, ev->cls);

	switch (ci->kind) {
	case K_SWITCH:
		on_switch(c, ev, ci, cpu);
		break;
	case K_WAKEUP:
		on_wakeup(c, ev, ci, in_window);
		break;
	case K_FORK: {
		int64_t pid = field_s(ev, ci->f[0]);
		struct bd_thread *ch = pid > 0 ? bd_thread_get(c, (uint32_t)pid) : NULL;
		if (ch) {
			ch->created = true;
			ch->in_scope |= cur && cur->in_scope; /* event-fork */
			field_str(ev, ci->f[1], ch->comm, false);
		}
		break;
	}
	case K_EXIT:
		if (cur)
			cur->exiting = true;
		break;
	case K_SYS_ENTER:
	case K_SYS_EXIT:
		r->have_syscalls = true;
		if (cur)
			on_syscall(c, cur, ev, ci);
		break;
	case K_IRQ_ENTRY:
	case K_IRQ_EXIT:
	case K_SOFTIRQ_ENTRY:
	case K_SOFTIRQ_EXIT:
		on_handler(c, k, cur, ci->kind, ts);
		break;
	case K_EXEC:
		if (cur)
			field_str(ev, ci->f[0], cur->comm, true);
		break;
	case K_FAULT_USER:
		r->have_faults = true;
		if (cur && in_window)
			cur->faults_user++;
		break;
	case K_FAULT_KERNEL:
		r->have_faults = true;
		if (cur && in_window)
			cur->faults_kernel++;
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
		const char *v = an_is_kernel(t, i) ? strata_trace_env(t, i, key) : NULL;
		if (v)
			return v;
	}
	return NULL;
}

/* The state dump of `strata record` (TRACE/state, format.md §4) names the
 * threads alive when it started and gives their process ids. */
static int read_state_dump(struct bd_ctx *c)
{
	struct strata_trace *t = c->t;
	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		if (strata_trace_stream(t, i, &si) < 0 || c->kernel_stream[i])
			continue;
		const char *base = strrchr(si.trace_dir, '/');
		if (strcmp(base ? base + 1 : si.trace_dir, "state"))
			continue;
		struct strata_iter_options io = { .stream = (int)i,
						  .flags = STRATA_ITER_INTERNAL };
		struct strata_iter *it;
		const struct strata_event *ev;
		int ret = strata_iter_create(t, &io, &it);
		if (ret < 0)
			return ret;
		while (!c->err && strata_iter_next(it, &ev) > 0)
			if (c->ci[ev->cls->index].kind == K_DUMP_THREAD)
				on_event(c, ev);
		strata_iter_destroy(it);
	}
	return c->err;
}

/* The CPUs' machines, kernel_stream and ci sized to t's streams and
 * classes now, and the classes resolved: at the start, and each time a
 * trace followed while written has grown (bd_feed_adopt). */
static int ctx_adopt(struct bd_ctx *c, struct strata_trace *t)
{
	struct bd_result *r = c->r;
	unsigned ns = strata_trace_nstreams(t), ncls = strata_trace_nclasses(t);
	c->t = t;
	if (ns > c->nstreams) {
		bool *k = realloc(c->kernel_stream, ns * sizeof(*k));
		if (!k)
			return -ENOMEM;
		c->kernel_stream = k;
		c->nstreams = ns;
	}
	if (ncls + 1 > c->ncls) {
		struct kclass_info *ci = realloc(c->ci, (ncls + 1) * sizeof(*ci));
		if (!ci)
			return -ENOMEM;
		memset(ci + c->ncls, 0, (ncls + 1 - c->ncls) * sizeof(*ci));
		c->ci = ci;
		c->ncls = ncls + 1;
	}
	unsigned ncpus = an_kernel_streams(t, c->kernel_stream);
	if (ncpus > r->ncpus) {
		struct bd_cpu *k = realloc(r->cpus, ncpus * sizeof(*k));
		if (!k)
			return -ENOMEM;
		r->cpus = k;
		for (unsigned i = r->ncpus; i < ncpus; i++)
			k[i] = (struct bd_cpu){ .cur = -1, .since = r->begin, .last = r->begin };
		for (size_t i = 0; i < c->threads.n; i++) {
			struct bd_thread *th = c->threads.all[i];
			uint64_t *cpu = realloc(th->cpu, ncpus * sizeof(*cpu));
			if (!cpu)
				return -ENOMEM;
			memset(cpu + r->ncpus, 0, (ncpus - r->ncpus) * sizeof(*cpu));
			th->cpu = cpu;
		}
		r->ncpus = ncpus;
	}
	resolve_classes(c);
	return 0;
}

/* c set up on t, up to the events: -ENOENT when t has no kernel stream. */
static int ctx_init(struct bd_ctx *c, struct strata_trace *t, const struct bd_options *o)
{
	*c = (struct bd_ctx){ .t = t };
	struct bd_result *r = calloc(1, sizeof(*r));
	if (!(c->r = r))
		return -ENOMEM;
	r->begin = strata_trace_begin(t);
	r->end = strata_trace_end(t);
	if (o) {
		c->on_state = o->on_state;
		c->on_record = o->on_record;
		c->arg = o->arg;
	}
	c->wfrom = o && o->from > r->begin ? o->from : r->begin;
	c->wto = o ? o->to : UINT64_MAX;
	int ret = ctx_adopt(c, t);
	if (ret)
		return ret;
	if (!r->ncpus)
		return -ENOENT;
	if ((ret = an_scope_read(t, c->kernel_stream, &c->scope)) < 0 ||
	    (ret = read_state_dump(c)) < 0)
		return ret;
	r->scoped = c->scope.scoped;
	return 0;
}

/* What c holds, freed; its result too, unless taken (c->r = NULL). */
static void ctx_fini(struct bd_ctx *c)
{
	for (size_t i = 0; i < c->threads.n; i++) {
		struct bd_thread *th = c->threads.all[i];
		free(th->cpu);
		free(th->sc);
	}
	an_tidmap_fini(&c->threads);
	free(c->kernel_stream);
	free(c->ci);
	free(c->scope.tids);
	bd_free(c->r);
}

/* The threads' and CPUs' machines closed at the window's end, and the
 * result made of them: one array of threads, as analysis.h shows it. */
static int ctx_result(struct bd_ctx *c)
{
	struct bd_result *r = c->r;
	struct strata_trace *t = c->t;
	bool whole = c->wfrom == strata_trace_begin(t) && c->wto == strata_trace_end(t);
	struct bd_thread **all = (struct bd_thread **)c->threads.all;
	size_t nall = c->threads.n;
	for (size_t i = 0; i < nall; i++) {
		struct bd_thread *th = all[i];
		if (th->in_sys && th->sys_open)
			bd_sys_account(c, th, th->sys_nr, bd_clip(c, th->sys_enter, c->wto), 0, false);
		bd_set_state(c, th, th->state, c->wto);
		th->outside = r->scoped && !th->in_scope;
		th->partial = th->t[BD_UNKNOWN] > 0 || th->outside;
		bd_kernel_split(th, whole);
		r->have_split |= th->split;
	}
	for (unsigned i = 0; i < r->ncpus; i++)
		bd_cpu_set(c, i, r->cpus[i].cur, c->wto);
	r->begin = c->wfrom;
	r->end = c->wto;
	if (!(r->threads = malloc((nall ? nall : 1) * sizeof(*r->threads))))
		return -ENOMEM;
	for (size_t i = 0; i < nall; i++) {
		r->threads[i] = *all[i];
		all[i]->cpu = NULL;
		all[i]->sc = NULL;
	}
	r->nthreads = (unsigned)nall;
	qsort(r->threads, r->nthreads, sizeof(*r->threads), cmp_thread);
	return 0;
}

int bd_compute(struct strata_trace *t, const struct bd_options *o,
	       struct bd_result **out)
{
	struct bd_ctx c;
	struct strata_iter *it = NULL;
	*out = NULL;
	int ret = ctx_init(&c, t, o);
	if (ret)
		goto out;
	if (c.wto > c.r->end)
		c.wto = c.r->end;
	if (c.wto < c.wfrom)
		c.wto = c.wfrom;

	/* strata:thread_times among strata's own records (on_times()) */
	struct strata_iter_options io = { .stream = -1, .flags = STRATA_ITER_INTERNAL };
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto out;
	const struct strata_event *ev;
	for (unsigned n = 0; !c.err && strata_iter_next(it, &ev) > 0;) {
		if (ev->timestamp > c.wto)
			break;
		if (c.on_record && (!(ev->id >> 16) || !(++n & 4095)) &&
		    (c.err = c.on_record(c.arg, ev->id >> 16 ? NULL : ev)))
			break;
		on_event(&c, ev);
	}
	if ((ret = c.err))
		goto out;
	if (!c.r->have_sched) {
		ret = -ENOENT;
		goto out;
	}
	if (!(ret = ctx_result(&c))) {
		*out = c.r;
		c.r = NULL;
	}
out:
	strata_iter_destroy(it);
	ctx_fini(&c);
	return ret;
}

/* ---- fed one event at a time (bd_feed: analysis.h) ---- */

struct bd_feed {
	struct bd_ctx c;
};

int bd_feed_create(struct strata_trace *t, const struct bd_options *o, struct bd_feed **out)
{
	struct bd_feed *f = calloc(1, sizeof(*f));
	*out = NULL;
	if (!f)
		return -ENOMEM;
	int ret = ctx_init(&f->c, t, o);
	if (ret) {
		ctx_fini(&f->c);
		free(f);
		return ret;
	}
	*out = f;
	return 0;
}

int bd_feed_adopt(struct bd_feed *f, struct strata_trace *t)
{
	return ctx_adopt(&f->c, t);
}

int bd_feed_event(struct bd_feed *f, const struct strata_event *ev)
{
	if (!f->c.err)
		on_event(&f->c, ev);
	return f->c.err;
}

void bd_feed_open(const struct bd_feed *f, uint64_t to)
{
	const struct bd_ctx *c = &f->c;
	for (size_t i = 0; c->on_state && i < c->threads.n; i++) {
		const struct bd_thread *th = c->threads.all[i];
		if (th->state != BD_UNSEEN && to > th->since)
			c->on_state(th, th->state, th->since, to, c->arg);
	}
}

void bd_feed_destroy(struct bd_feed *f)
{
	if (!f)
		return;
	ctx_fini(&f->c);
	free(f);
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
