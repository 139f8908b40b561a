/* SPDX-License-Identifier: MIT */
/* The in-process CPU-time sampler: per-thread timers and a signal handler (src/lib/sampler.c, docs/profile.md). */
#ifndef STRATA_LIB_SAMPLER_H
#define STRATA_LIB_SAMPLER_H

#include <stdint.h>

/*
 * The major class of the sampler's events, below the function probes'
 * (61) and the lock tracer's (62), for the same reason: high, so that it
 * rarely meets a program's own DSL numbering. Its events are named as
 * those of the perf_event_open path (src/kernel/sample.h), so that
 * `strata profile` reads both alike.
 */
#define SAMPLER_MAJOR 60

enum sampler_minor {
	SAMPLER_CPU_CLOCK = 1, /* ip, n, frames[32] as sample:cpu_clock; weight */
	SAMPLER_THREAD = 2,    /* a thread's totals, once it is gone */
};

#define SAMPLER_FRAMES 32 /* as SAMPLE_FRAMES (kernel/sample.h) */

/* STRATA_SAMPLE=HZ (lib/options.c): samples per second of each thread's
 * CPU time into *hz, 0 when unset. 0, or -EINVAL (not a number from 1 to
 * 100000; strata_strerror_detail() says so). */
int env_sample_hz(unsigned *hz);

#endif /* STRATA_LIB_SAMPLER_H */
