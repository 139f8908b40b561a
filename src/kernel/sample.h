/* SPDX-License-Identifier: MIT */
/* CPU-time sampling of a process tree with perf_event_open, written as the TRACE/samples sub-trace on the trace clock (docs/profile.md). */
#ifndef STRATA_KERNEL_SAMPLE_H
#define STRATA_KERNEL_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The sample event's id: major SAMPLE_MAJOR, minor SAMPLE_MINOR (its
 * sub-trace's metadata has it as "sample:cpu_clock"). */
#define SAMPLE_MAJOR 1
#define SAMPLE_MINOR 1
#define SAMPLE_FRAMES 32 /* call chain entries kept per sample */

struct samp_options {
	const char *trace_dir; /* the sub-trace goes to TRACE/samples */
	pid_t pid;             /* sample this process and what it forks, from
				* its next exec (the caller holds it gated) */
	unsigned hz;           /* samples per second of CPU time, per thread */
	unsigned stack_bytes;  /* 0: frame-pointer chains; else the stack
				* bytes copied per sample and unwound with
				* DWARF (--call-graph dwarf, kernel/unwind.c) */
	char *err;             /* one line on failure (optional) */
	size_t errlen;
};

struct samp_stats {
	uint64_t samples; /* written */
	uint64_t lost;    /* the kernel's PERF_RECORD_LOST counts */
	uint64_t maps;    /* strata:map records (executable mappings) */
	uint64_t unwound; /* samples whose chain DWARF unwinding made */
	int dwarf;        /* stacks were asked for (--call-graph dwarf) */
	unsigned ncpus;
};

struct samp_session;

/*
 * Whether perf_event_open samples here at all (the user-space cpu-clock
 * of this thread, opened and closed): `strata record --sample` falls back
 * to the program's own timers (lib/sampler.c) when not. 0, or the
 * negative errno with one line in err.
 */
int samp_probe(char *err, size_t errlen);

/*
 * Open a software cpu-clock event per CPU for pid (inherited by its
 * children, enabled at its exec), with the user call chain, and start the
 * reader thread. Returns 0 or a negative errno (-EACCES, -EPERM: the
 * kernel's perf_event_paranoid; -ENOENT, -ENODEV: no perf events), with
 * one line in o->err. One session per process; call from one thread.
 */
int samp_start(const struct samp_options *o, struct samp_session **out);
/* Stop, drain, close the streams and write the metadata (the user
 * sub-traces' clock class when they exist). 0 or a negative errno. */
int samp_stop(struct samp_session *s, struct samp_stats *st);

#endif /* STRATA_KERNEL_SAMPLE_H */
