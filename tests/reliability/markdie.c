/* SPDX-License-Identifier: MIT */
/* A writer dies inside a two-phase event as long as the committed one after it (issue 26, item 2): its mark says which was in flight. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <strata/strata.h>

#include "cpu0.h"

/*
 * Two threads on CPU 0. The writer logs an event of WORDS words and
 * stops for good after its reservation, before its commit: out of line
 * (`slow`: strata_log_slow(): reserve, write the payload, commit),
 * inside the payload's copy (this program's memcpy() stands in for the C
 * library's, and libstrata's call reaches it); or inline (`inline`:
 * strata_reserve() in this program's own code, as strata-gen's events of
 * variable size, then no commit). Then main logs N events of the same
 * length behind it and the process is killed. Every event main logged
 * was committed; the writer's was not, and by lengths alone the two
 * cannot be told apart (record.md, "Crash salvage"): its mark in the
 * ring's control block must make salvage cut it out and keep all of
 * main's.
 */
#define WORDS 20u
#define PAYLOAD ((WORDS - 1u) * 8u)

static __thread int stop_here; /* the writer's next payload copy stops */
static volatile int stopped;
static int inline_rsv; /* the writer stops inside strata_reserve()'s event */

/* A plain copy, and the stop: volatile, so that the compiler does not
 * make the loop a call to memcpy(), this function. */
void *memcpy(void *restrict d, const void *restrict s, size_t n)
{
	volatile unsigned char *o = d;
	const volatile unsigned char *i = s;

	if (n == PAYLOAD && stop_here) {
		__atomic_store_n(&stopped, 1, __ATOMIC_RELEASE);
		for (;;)
			pause(); /* never commits */
	}
	while (n--)
		*o++ = *i++;
	return d;
}

static void *writer(void *arg)
{
	uint64_t pl[WORDS - 1] = {0};

	(void)arg;
	on_cpu0("markdie");
	STRATA_EVENT1(5, 1, 0);
	strata_flush(); /* a packet of its own, opened by the next event */
	STRATA_EVENT1(5, 1, 1);
	if (inline_rsv) {
		struct strata_rsv r;

		if (strata_reserve(&r, STRATA_HID_EXT | STRATA_ID(5, 3), WORDS)) {
			__atomic_store_n(&stopped, 1, __ATOMIC_RELEASE);
			for (;;)
				pause(); /* never commits */
		}
	} else {
		stop_here = 1;
		strata_log_slow(NULL, STRATA_ID(5, 3), WORDS, pl);
	}
	fprintf(stderr, "markdie: the writer's event was not reserved\n");
	exit(2);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 100;
	uint64_t pl[WORDS - 1] = {0};
	pthread_t th;

	inline_rsv = argc > 2 && !strcmp(argv[2], "inline");

	on_cpu0("markdie");
	pthread_create(&th, NULL, writer, NULL);
	while (!__atomic_load_n(&stopped, __ATOMIC_ACQUIRE))
		sched_yield();
	for (unsigned long i = 0; i < n; i++) {
		pl[0] = i;
		strata_log_slow(NULL, STRATA_ID(5, 2), WORDS, pl);
	}
	raise(SIGKILL);
	return 0;
}
