/* SPDX-License-Identifier: MIT */
/* What the breakdown makes of its threads at the end: the kernel's split of untraced on-CPU time, and the roll-ups. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/breakdown_int.h"

/*
 * The kernel's split of what tracing cannot time (docs/kernel.md, "User
 * and kernel time outside system calls"). Each tick charges the thread it
 * interrupts as user or system time; taskstats gives those samples, not
 * scaled (the kernel scales them to its runtime only for /proc and
 * rusage, cputime_adjust). Their ratio over the thread's recorded life,
 * applied as the kernel applies it to the thread's runtime, here to its
 * traced on-CPU time, gives its system time; what the traced system calls
 * and handlers do not hold of it is kernel time outside them (faults, the
 * entry and exit path), taken from user+trap. Only for a thread seen
 * whole, from its baseline (or its fork: zero) to its final values, over
 * the whole trace, with at least one sample.
 */
static uint64_t split_trap(const uint64_t *t, uint64_t kutime, uint64_t kstime)
{
	uint64_t oncpu = t[BD_USER] + t[BD_SYS] + t[BD_IRQ];
	uint64_t ks = (uint64_t)((unsigned __int128)oncpu * kstime / (kutime + kstime));
	uint64_t timed = t[BD_SYS] + t[BD_IRQ];
	uint64_t trap = ks > timed ? ks - timed : 0;
	return trap < t[BD_USER] ? trap : t[BD_USER];
}

void bd_kernel_split(struct bd_thread *th, bool whole)
{
	uint8_t need = BD_KT_END | (th->created ? 0 : BD_KT_BASE);
	if (!whole || th->partial || (th->kt_have & BD_KT_TWICE) ||
	    (th->kt_have & need) != need)
		return;
	uint64_t u0 = th->created ? 0 : th->kt_base[0], s0 = th->created ? 0 : th->kt_base[1];
	if (th->kt_end[0] < u0 || th->kt_end[1] < s0)
		return;
	th->kutime = th->kt_end[0] - u0;
	th->kstime = th->kt_end[1] - s0;
	th->kt_have |= BD_KT_WHOLE; /* bd_group() pools its samples */
	if (th->kutime + th->kstime == 0)
		return;
	th->split = true;
	th->trap = split_trap(th->t, th->kutime, th->kstime);
	th->user = th->t[BD_USER] - th->trap;
}

/* ---- roll-ups ------------------------------------------------------------- */

static uint64_t oncpu(const uint64_t *t)
{
	return t[BD_USER] + t[BD_SYS] + t[BD_IRQ];
}

static int cmp_group(const void *a, const void *b)
{
	const struct bd_group *x = a, *y = b;
	uint64_t cx = oncpu(x->t), cy = oncpu(y->t);
	if (cx != cy)
		return cx < cy ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int bd_group(const struct bd_result *r, enum bd_by by, struct bd_group **out)
{
	struct bd_group *g = calloc(r->nthreads ? r->nthreads : 1, sizeof(*g));
	unsigned n = 0;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	/* threads are sorted by pid: a process's threads are neighbours */
	for (unsigned i = 0, end; i < r->nthreads; i = end) {
		const char *name = "";
		uint32_t pid = r->threads[i].pid;
		for (end = i; end < r->nthreads && r->threads[end].pid == pid; end++)
			if (!name[0] || r->threads[end].tid == pid)
				name = r->threads[end].comm[0] ? r->threads[end].comm : name;
		unsigned k;
		for (k = 0; k < n; k++)
			if (by == BD_BY_PROCESS ? g[k].pid == pid : !strcmp(g[k].comm, name))
				break;
		struct bd_group *x = &g[k];
		if (k == n) {
			n++;
			x->pid = pid;
			snprintf(x->comm, sizeof(x->comm), "%s", name);
		}
		unsigned before = x->nthreads;
		for (unsigned j = i; j < end; j++) {
			const struct bd_thread *th = &r->threads[j];
			if (th->t[BD_UNSEEN] == r->end - r->begin)
				continue; /* not in the window */
			x->nthreads++;
			x->npartial += th->partial;
			for (int s = 0; s < BD_NSTATES; s++)
				x->t[s] += th->t[s];
			x->faults_user += th->faults_user;
			x->faults_kernel += th->faults_kernel;
			x->switches_in += th->switches_in;
			x->preempted += th->preempted;
			x->notwhole |= !(th->kt_have & BD_KT_WHOLE);
			x->kutime += th->kutime;
			x->kstime += th->kstime;
		}
		x->nprocs += x->nthreads > before;
	}
	/* the kernel's split of a group: its threads' samples pooled, as the
	 * kernel does for a process (thread_group_cputime_adjusted), so that
	 * threads shorter than a tick count too; only when all are whole */
	for (unsigned k = 0; k < n; k++)
		if (!g[k].notwhole && g[k].kutime + g[k].kstime) {
			g[k].split = true;
			g[k].trap = split_trap(g[k].t, g[k].kutime, g[k].kstime);
		}
	unsigned m = 0; /* groups with a thread in the window */
	for (unsigned k = 0; k < n; k++)
		if (g[k].nthreads)
			g[m++] = g[k];
	n = m;
	qsort(g, n, sizeof(*g), cmp_group);
	*out = g;
	return (int)n;
}
