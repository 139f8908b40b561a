/* SPDX-License-Identifier: MIT */
/* The reliability programs that race two threads on one CPU's ring put each on CPU 0. */
#ifndef STRATA_TESTS_CPU0_H
#define STRATA_TESTS_CPU0_H

#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* The calling thread onto CPU 0, or the program ends (exit 2). */
static inline void on_cpu0(const char *prog)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "%s: CPU 0: ", prog);
		perror(NULL);
		exit(2);
	}
}

#endif
