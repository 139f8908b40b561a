/* SPDX-License-Identifier: MIT */
/* The breakdown's two machines, per thread and per CPU, and the transitions that move both at one tick. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/breakdown_int.h"

/*
 * Two machines run side by side: one per thread (its state since when) and
 * one per CPU (which thread it runs since when). Every transition that puts
 * a thread on a CPU or takes it off goes through both at the same tick, so
 * the per-CPU sums of the threads' on-CPU time are that CPU's busy time,
 * exactly.
 *
 * The trace may lack switches: `strata record -k` filters with
 * set_event_pid, which keeps a sched_switch only when its prev or its next
 * is in scope, and buffers can lose events. Any kernel event says which
 * thread is current on its CPU (common_pid). When that is not the thread
 * the CPU was running, the switch(es) between were not recorded: the
 * thread the CPU was running stops at the last event that showed it there,
 * the CPU's time from then is unknown, and so is the new thread's time
 * since its last known state. Nothing is guessed but the one documented
 * exception, the switch out of idle this kernel never records (below).
 */

struct bd_thread *bd_thread_find(const struct bd_ctx *c, uint32_t tid)
{
	return an_tidmap_find(&c->threads, tid);
}

struct bd_thread *bd_thread_get(struct bd_ctx *c, uint32_t tid)
{
	bool made;
	struct bd_thread *th = an_tidmap_get(&c->threads, tid, sizeof(*th), &made);
	if (th && made) {
		th->tid = tid;
		th->pid = tid;
		th->state = BD_UNSEEN;
		th->since = c->r->begin;
		th->on = -1;
		th->in_scope = an_scope_has(&c->scope, tid);
		if (!(th->cpu = calloc(c->r->ncpus, sizeof(*th->cpu))))
			th = NULL;
	}
	if (!th)
		c->err = -ENOMEM;
	return th;
}

static struct bd_syscall *sys_entry(struct bd_ctx *c, struct bd_thread *th,
				    uint32_t nr)
{
	for (unsigned i = 0; i < th->nsc; i++)
		if (th->sc[i].nr == nr)
			return &th->sc[i];
	struct bd_syscall *n = realloc(th->sc, (th->nsc + 1) * sizeof(*n));
	if (!n) {
		c->err = -ENOMEM;
		return NULL;
	}
	th->sc = n;
	struct bd_syscall *s = &th->sc[th->nsc++];
	memset(s, 0, sizeof(*s));
	s->nr = nr;
	return s;
}

/* An event of `th` inside its current system call. */
void bd_sys_inside(struct bd_ctx *c, struct bd_thread *th,
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

void bd_sys_account(struct bd_ctx *c, struct bd_thread *th, uint32_t nr,
		    uint64_t time, uint64_t oncpu, bool count)
{
	struct bd_syscall *s = sys_entry(c, th, nr);
	if (!s)
		return;
	s->count += count;
	s->time += time;
	s->oncpu += oncpu;
}

/* The stretch th leaves at ts, to bd_options' hook (analysis.h). */
static void report_state(const struct bd_ctx *c, const struct bd_thread *th, uint64_t ts)
{
	if (c->on_state && ts > th->since)
		c->on_state(th, th->state, th->since, ts, c->arg);
}

/* Leave the current state at `ts`, enter `st`. */
void bd_set_state(struct bd_ctx *c, struct bd_thread *th, int st, uint64_t ts)
{
	if (ts < th->since)
		ts = th->since;
	report_state(c, th, ts);
	uint64_t d = bd_clip(c, th->since, ts);
	th->t[th->state] += d;
	if (bd_running(th) && th->on >= 0 && (unsigned)th->on < c->r->ncpus)
		th->cpu[th->on] += d;
	if (th->state == BD_SYS && th->in_sys && th->sys_open)
		bd_sys_account(c, th, th->sys_nr, 0, d, false);
	th->state = st;
	th->since = ts;
}

/* CPU k runs `who` (tid, 0 idle, -1 unknown) from `ts`. */
void bd_cpu_set(struct bd_ctx *c, unsigned k, int64_t who, uint64_t ts)
{
	struct bd_cpu *p = &c->r->cpus[k];
	if (ts < p->since)
		ts = p->since;
	uint64_t d = bd_clip(c, p->since, ts);
	if (p->cur < 0)
		p->unknown += d;
	else if (p->cur == 0)
		p->idle += d;
	else
		p->busy += d;
	p->cur = who;
	p->since = p->last = ts;
}

/* The thread's system call ends with the thread (exit, exit_group). */
static void sys_close(struct bd_ctx *c, struct bd_thread *th, uint64_t ts)
{
	if (!th->in_sys)
		return;
	bd_set_state(c, th, th->state, ts); /* account the on-CPU part */
	if (th->sys_open)
		bd_sys_account(c, th, th->sys_nr, bd_clip(c, th->sys_enter, ts), 0,
			    th->sys_enter >= c->wfrom && ts <= c->wto);
	th->in_sys = th->sys_open = false;
}

/* Thread `th`, on CPU k, leaves it at ts for state st (BD_UNSEEN: it exited). */
void bd_leave_cpu(struct bd_ctx *c, struct bd_thread *th, int st, uint64_t ts)
{
	if (st == BD_UNSEEN) {
		sys_close(c, th, ts);
		th->exited = true;
	}
	bd_set_state(c, th, st, ts);
	th->on = -1;
}

/* Thread `th` runs on CPU k from ts (the same tick for both machines). */
void bd_run_on(struct bd_ctx *c, struct bd_thread *th, unsigned k, uint64_t ts)
{
	struct bd_cpu *p = &c->r->cpus[k];
	if (ts < th->since)
		ts = th->since;
	if (ts < p->since)
		ts = p->since;
	bd_cpu_set(c, k, th->tid, ts);
	th->on = (int)k;
	th->switches_in += ts >= c->wfrom && ts <= c->wto;
	bd_set_state(c, th, th->in_sys ? BD_SYS : BD_USER, ts);
}

/* The trace lost track of what CPU k ran after its last event there: the
 * thread stops at that event, the CPU's time from then is unknown. */
void bd_lose_cpu(struct bd_ctx *c, unsigned k)
{
	struct bd_cpu *p = &c->r->cpus[k];
	uint64_t at = p->last;

	if (p->cur < 0)
		return;
	if (p->cur > 0) {
		struct bd_thread *th = bd_thread_find(c, (uint32_t)p->cur);
		if (th && th->on == (int)k && bd_running(th)) {
			if (at < th->since)
				at = th->since;
			if (th->exiting) { /* it exited: its last switch is missing */
				bd_leave_cpu(c, th, BD_UNSEEN, at);
			} else {
				bd_leave_cpu(c, th, BD_UNKNOWN, at);
				th->lost++;
			}
		}
		p->lost++;
	}
	bd_cpu_set(c, k, -1, at);
}

/* What `th` did since its last known state is not known: a switch-in or a
 * wakeup of it is missing. A thread not seen before stays unseen. */
void bd_forget(struct bd_thread *th)
{
	if (th->state == BD_UNSEEN && !th->exited)
		return;
	if (th->state != BD_UNKNOWN)
		th->lost++;
	th->state = BD_UNKNOWN; /* from th->since: nothing was accounted yet */
}

/*
 * An event of thread `x` (0: the idle task) on CPU k at ts: x runs there
 * now. `user` marks a user-space event, trusted only to end idle (below).
 */
void bd_on_cpu(struct bd_ctx *c, unsigned k, uint32_t x, uint64_t ts, bool user)
{
	struct bd_cpu *p = &c->r->cpus[k];
	if (p->cur == (int64_t)x) {
		p->last = ts;
		return;
	}
	if (x == 0) { /* a switch to idle is missing */
		bd_lose_cpu(c, k);
		bd_cpu_set(c, k, 0, ts);
		return;
	}
	struct bd_thread *th = bd_thread_get(c, x);
	if (!th)
		return;
	/*
	 * The switch out of idle that this project's kernel does not record
	 * (docs/kernel.md): a CPU that a recorded switch left idle runs a
	 * runnable thread from the idle task's last event there (the
	 * interrupt that woke it) or from its wakeup, whichever is later.
	 */
	if (p->cur == 0 && th->state == BD_RUNNABLE) {
		uint64_t at = p->last > th->since ? p->last : th->since;
		bd_run_on(c, th, k, at < ts ? at : ts);
		return;
	}
	if (user)
		return;
	if (bd_running(th) && th->on >= 0 && (unsigned)th->on != k)
		bd_lose_cpu(c, (unsigned)th->on); /* it left that CPU unrecorded */
	bd_lose_cpu(c, k);
	bd_forget(th);
	bd_run_on(c, th, k, ts);
}

/* Interrupt handlers steal from the thread they interrupt: its running
 * time excludes them, as the kernel's own accounting does. */
void bd_handler(struct bd_ctx *c, struct bd_cpu *k, struct bd_thread *cur,
		bool enter, uint64_t ts)
{
	if (enter) {
		if (k->depth++ == 0 && cur && (cur->state == BD_USER || cur->state == BD_SYS))
			bd_set_state(c, cur, BD_IRQ, ts);
	} else if (k->depth > 0 && --k->depth == 0 && cur && cur->state == BD_IRQ) {
		bd_set_state(c, cur, cur->in_sys ? BD_SYS : BD_USER, ts);
	}
}
