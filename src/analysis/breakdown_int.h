/* SPDX-License-Identifier: MIT */
/* Internals of the time breakdown shared by its files: the context and the machines' transitions. */
#ifndef STRATA_ANALYSIS_BREAKDOWN_INT_H
#define STRATA_ANALYSIS_BREAKDOWN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/analysis.h"

/* Event kinds the breakdown understands, resolved once per class. */
enum kk {
	K_NONE, K_SWITCH, K_WAKEUP, K_FORK, K_EXIT, K_SYS_ENTER, K_SYS_EXIT,
	K_IRQ_ENTRY, K_IRQ_EXIT, K_SOFTIRQ_ENTRY, K_SOFTIRQ_EXIT, K_EXEC,
	K_FAULT_USER, K_FAULT_KERNEL, K_DUMP_THREAD, K_THREAD_TIMES,
};

struct kclass_info {
	uint8_t kind;
	int f[4]; /* field indexes, per kind (below) */
};

struct bd_ctx {
	struct strata_trace *t;
	struct bd_result *r;
	struct kclass_info *ci;    /* per class, ncls of them (one spare) */
	bool *kernel_stream;       /* per stream, nstreams of them */
	unsigned ncls, nstreams;
	uint64_t wfrom, wto;
	/* tid -> thread; threads stay where they were allocated (pointers
	 * are kept across lookups) */
	struct an_tidmap threads;
	struct an_scope scope; /* its threads, when the trace is scoped */
	int err;
	bd_state_fn on_state; /* bd_options' hooks, or NULL */
	int (*on_record)(void *arg, const struct strata_event *ev);
	void *arg;
};

static inline uint64_t bd_clip(const struct bd_ctx *c, uint64_t a, uint64_t b)
{
	return an_clip(c->wfrom, c->wto, a, b);
}

static inline bool bd_running(const struct bd_thread *th)
{
	return th->state == BD_USER || th->state == BD_SYS || th->state == BD_IRQ;
}

/* ---- the machines (breakdown_state.c) ---- */

struct bd_thread *bd_thread_find(const struct bd_ctx *c, uint32_t tid);
/* The thread `tid`, created on first sight; NULL (c->err set) when out of memory. */
struct bd_thread *bd_thread_get(struct bd_ctx *c, uint32_t tid);
void bd_sys_inside(struct bd_ctx *c, struct bd_thread *th,
		   const struct strata_event_class *cls);
void bd_sys_account(struct bd_ctx *c, struct bd_thread *th, uint32_t nr,
		    uint64_t time, uint64_t oncpu, bool count);
void bd_set_state(struct bd_ctx *c, struct bd_thread *th, int st, uint64_t ts);
void bd_cpu_set(struct bd_ctx *c, unsigned k, int64_t who, uint64_t ts);
void bd_leave_cpu(struct bd_ctx *c, struct bd_thread *th, int st, uint64_t ts);
void bd_run_on(struct bd_ctx *c, struct bd_thread *th, unsigned k, uint64_t ts);
void bd_lose_cpu(struct bd_ctx *c, unsigned k);
void bd_forget(struct bd_thread *th);
void bd_on_cpu(struct bd_ctx *c, unsigned k, uint32_t x, uint64_t ts, bool user);
void bd_handler(struct bd_ctx *c, struct bd_cpu *k, struct bd_thread *cur,
		bool enter, uint64_t ts);

/* ---- at the end (breakdown_report.c) ---- */

/* Split th's on-CPU time with the kernel's samples, if it was seen whole. */
void bd_kernel_split(struct bd_thread *th, bool whole);

#endif /* STRATA_ANALYSIS_BREAKDOWN_INT_H */
