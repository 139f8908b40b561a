/* SPDX-License-Identifier: MIT */
/* Function probes: per function, its calls and the time spent in them, from libstrata-func's func:call_entry and func:call_exit (docs/profile.md). */
#ifndef STRATA_ANALYSIS_CALLS_H
#define STRATA_ANALYSIS_CALLS_H

#include <stdint.h>

#include <strata/reader.h>

/* One function (all processes' calls of it, by symbol and file). */
struct calls_entry {
	char *name;
	char *module;      /* the file it is in, or "" */
	uint64_t calls;    /* entries matched by their exits */
	uint64_t total_ns; /* inside it, its callees included; a recursive
			    * call's time counted once, in its outermost */
	uint64_t self_ns;  /* inside it, its callees' time excluded */
	uint64_t max_ns;   /* the longest call */
	uint64_t unwound;  /* calls left without their exit (longjmp, an
			    * exception): closed at an outer function's exit */
	uint32_t max_depth; /* the deepest a call of it was on its stack (1: the
			     * outermost probed call) */
};

struct calls_result {
	struct calls_entry *entries; /* most total time first */
	size_t nentries;
	uint64_t calls;     /* every call matched */
	uint64_t unwound;   /* of which left without their exit */
	uint64_t open;      /* entered and not left by the end of the window */
	uint64_t stray;     /* exits whose entry is not in the window */
	uint64_t skipped;   /* not logged: deeper than the bound, or excluded
			     * (func:skipped, at the threads' exits) */
	uint64_t lost;      /* events_discarded of the user-space streams */
	unsigned threads;
	uint32_t max_depth;
};

/*
 * Pair every func:call_entry and func:call_exit that `it` returns (the
 * caller's filter: window, pids, tids) per thread on a stack, and add up
 * each function's calls and times; symbolize through sy (NULL: addresses).
 * Returns 0, -ENOENT (no func:call_entry class: build with
 * -finstrument-functions, link libstrata-func, record with --functions),
 * -ENOMEM.
 */
int calls_compute(struct strata_trace *t, struct strata_iter *it,
		  struct strata_symbolizer *sy, struct calls_result **out);
void calls_free(struct calls_result *r); /* NULL ok */

#endif /* STRATA_ANALYSIS_CALLS_H */
