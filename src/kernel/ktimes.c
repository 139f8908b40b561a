/* SPDX-License-Identifier: MIT */
/* strata:thread_times records: each thread's utime/stime from the kernel at the start, at its exit and at the end. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "common/format.h"
#include "kernel/kern_int.h"
#include "kernel/taskstats.h"

/*
 * What tracing cannot time, the kernel's accounting splits (docs/kernel.md,
 * "User and kernel time outside system calls"): a thread's on-CPU time
 * outside system calls and handlers is user code plus the page faults and
 * kernel entries no tracepoint times. Its user and system tick samples
 * over the recording give its system time; less the system calls' and
 * handlers' traced time, that is the kernel part.
 *
 * The records (format.md §4, 0:10) go into CPU 0's stream: the baseline of
 * every thread in scope when the recording starts (before tracing is on,
 * so first in the stream), and at the stop, after the last event, the
 * final values of every thread that exited meanwhile (taskstats sends
 * them as each thread dies: /proc is gone by the time the reader sees the
 * exit) and of every thread still alive. A thread forked during the
 * recording starts from zero and needs no baseline.
 */

#define KT_MAX_EXITS (1u << 20) /* 24 MiB of exits kept; beyond, counted */

struct ktimes {
	struct kacct *acct;
	struct kacct_times *exits;
	size_t nexits, cap;
	uint64_t dropped; /* exits beyond KT_MAX_EXITS */
};

static const struct strata_field_desc times_fields[] = {
	{ .name = "tid", .type = STRATA_T_U32 },
	{ .name = "pid", .type = STRATA_T_U32 },
	{ .name = "utime_ns", .type = STRATA_T_U64 },
	{ .name = "stime_ns", .type = STRATA_T_U64 },
	{ .name = "when", .type = STRATA_T_U32 },
	{ .name = "pad", .type = STRATA_T_U32 },
};

static const struct strata_event_desc times_desc = {
	.subsystem = "strata",
	.name = "thread_times",
	.major = 0,
	.minor = STRATA_ID_THREAD_TIMES,
	.nfields = sizeof(times_fields) / sizeof(times_fields[0]),
	.fields = times_fields,
	.description = "a thread's utime and stime from the kernel's accounting "
		       "(when: 0 at the start, 1 at its exit, 2 alive at the end)",
};

const struct strata_event_desc *ktimes_desc(void)
{
	return &times_desc;
}

static void put(struct kstream *ks, uint64_t ts, const struct kacct_times *t,
		uint32_t when)
{
	uint64_t w[4] = {
		t->tid | (uint64_t)t->pid << 32,
		t->utime_ns,
		t->stime_ns,
		when,
	};
	kstream_event(ks, ts, 0, 0, STRATA_ID(0, STRATA_ID_THREAD_TIMES), w, 4);
}

/* Query one thread and write its record now. */
static void put_live(struct ktimes *k, struct kstream *ks, uint32_t tid, uint32_t when)
{
	struct kacct_times t;
	if (kacct_query(k->acct, tid, &t) == 0)
		put(ks, strata_clock(), &t, when);
}

/* Every thread of the system, from /proc/PID/task. */
static void put_all_live(struct ktimes *k, struct kstream *ks, uint32_t when)
{
	DIR *proc = opendir("/proc");
	struct dirent *p;

	while (proc && (p = readdir(proc))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		char dir[300];
		snprintf(dir, sizeof(dir), "/proc/%s/task", p->d_name);
		DIR *task = opendir(dir);
		struct dirent *t;
		while (task && (t = readdir(task)))
			if (t->d_name[0] >= '1' && t->d_name[0] <= '9')
				put_live(k, ks, (uint32_t)strtoul(t->d_name, NULL, 10), when);
		if (task)
			closedir(task);
	}
	if (proc)
		closedir(proc);
}

int ktimes_start(struct ktimes **out, unsigned ncpus, const char *scope,
		 struct kstream *ks)
{
	struct ktimes *k = calloc(1, sizeof(*k));
	int ret;

	*out = NULL;
	if (!k)
		return -ENOMEM;
	if ((ret = kacct_open(ncpus, &k->acct))) {
		free(k);
		return ret;
	}
	if (scope) { /* the threads set_event_pid was given */
		for (const char *s = scope; *s;) {
			char *end;
			unsigned long tid = strtoul(s, &end, 10);
			if (end == s)
				break;
			put_live(k, ks, (uint32_t)tid, STRATA_TIMES_FIRST);
			s = end;
		}
	} else {
		put_all_live(k, ks, STRATA_TIMES_FIRST);
	}
	*out = k;
	return 0;
}

int ktimes_fd(const struct ktimes *k)
{
	return k ? kacct_fd(k->acct) : -1;
}

static void keep_exit(const struct kacct_times *t, void *arg)
{
	struct ktimes *k = arg;
	if (k->nexits == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 1024;
		struct kacct_times *n = cap <= KT_MAX_EXITS ?
			realloc(k->exits, cap * sizeof(*n)) : NULL;
		if (!n) {
			k->dropped++;
			return;
		}
		k->exits = n;
		k->cap = cap;
	}
	k->exits[k->nexits++] = *t;
}

void ktimes_poll(struct ktimes *k)
{
	if (k)
		(void)kacct_exits(k->acct, keep_exit, k);
}

uint64_t ktimes_stop(struct ktimes *k, struct kstream *ks)
{
	uint64_t lost;

	if (!k)
		return 0;
	if (ks) {
		ktimes_poll(k);
		uint64_t now = strata_clock();
		for (size_t i = 0; i < k->nexits; i++)
			put(ks, now, &k->exits[i], STRATA_TIMES_EXITED);
		put_all_live(k, ks, STRATA_TIMES_END);
	}
	/* exits not kept: those threads have no final record, and the
	 * breakdown gives them no split (nothing is guessed) */
	lost = k->dropped + (kacct_overflowed(k->acct) ? 1 : 0);
	kacct_close(k->acct);
	free(k->exits);
	free(k);
	return lost;
}
