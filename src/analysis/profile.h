/* SPDX-License-Identifier: MIT */
/* Where the CPU time goes inside processes: flat profile, call tree totals and folded stacks from sample:cpu_clock (docs/profile.md). */
#ifndef STRATA_ANALYSIS_PROFILE_H
#define STRATA_ANALYSIS_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include <strata/reader.h>

enum prof_by { PROF_BY_FUNCTION, PROF_BY_MODULE, PROF_BY_LINE };

/* x86-64's upper half: the kernel's addresses in a sample's chain. */
#define PROF_KERNEL_HALF 0xffff800000000000ull

/* Frame pc of process pid in a sample's chain, into *sym: the interrupted
 * ip (leaf) as itself, a return address as the call before it
 * (strata_symbolize_return). False, *sym left STRATA_SYM_UNKNOWN, for a
 * kernel address (not looked up: no map has it) or without a
 * symbolizer. strata profile's and the viewer's frames both. */
bool prof_symbolize_frame(struct strata_symbolizer *sy, uint32_t pid, uint64_t pc, bool leaf,
			  struct strata_symbol *sym);

/* One function (or module, or line): samples where it was the leaf
 * (self) and where it was anywhere on the stack (total, once a sample). */
struct prof_entry {
	char *name;
	char *module; /* the file it is in, or "" */
	uint64_t self, total;
};

/* One call stack, root first, names joined by ';' (flamegraph.pl's and
 * speedscope's folded format), and its samples. */
struct prof_stack {
	char *folded;
	uint64_t count;
};

struct prof_result {
	struct prof_entry *entries; /* most self first */
	size_t nentries;
	struct prof_stack *stacks;  /* most samples first */
	size_t nstacks;
	uint64_t samples;           /* in the window, of the threads chosen:
				     * periods of CPU time, a sample's weight */
	uint64_t signals;           /* the events (samples of weight 1 but for
				     * the timer sampler's, lib/sampler.c) */
	uint64_t kernel;            /* of which in the kernel ("[kernel]") */
	unsigned threads;
	uint64_t lost;              /* the sampler's losses (events_discarded) */
	uint64_t unavailable;       /* timer sampler: due in threads that
				     * blocked its signal */
	unsigned hz;                /* the rate asked (env sample_hz, the timer
				     * sampler's sample:thread), or 0 */
	bool timer;                 /* taken by the timer sampler (sample:thread) */
	uint64_t cpu_ns;            /* timer sampler: the threads' CPU time while
				     * armed (the achieved rate's divisor) */
};

/*
 * Read every sample:cpu_clock event `it` returns (the caller's filter:
 * window, pids, tids) and symbolize its stack through sy (NULL: addresses
 * by module only). Returns 0, -ENOENT (no sample:cpu_clock class: record
 * with --sample), -ENOMEM.
 */
int prof_compute(struct strata_trace *t, struct strata_iter *it, struct strata_symbolizer *sy,
		 enum prof_by by, struct prof_result **out);
void prof_free(struct prof_result *r); /* NULL ok */

#endif /* STRATA_ANALYSIS_PROFILE_H */
