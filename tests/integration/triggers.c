/* SPDX-License-Identifier: MIT */
/* Start and stop triggers: ticks 0..N-1 with trig:begin at B and trig:end at E, pings from other threads before, between and after (triggers.sh). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "triggers.h"

/* 100 pings from a new thread: the gate is the process's, not a thread's. */
static void *pinger(void *arg)
{
	uintptr_t base = (uintptr_t)arg;
	for (uintptr_t i = base; i < base + 100; i++)
		strata_other_ping(i);
	return NULL;
}

static int pings(uintptr_t base)
{
	pthread_t t;
	if (pthread_create(&t, NULL, pinger, (void *)base))
		return 1;
	return pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	unsigned n = (unsigned)atoi(argv[1]), b = (unsigned)atoi(argv[2]),
		 e = (unsigned)atoi(argv[3]);
	int rc = pings(0); /* before the start: not recorded */
	for (unsigned i = 0; i < n; i++) {
		if (i == b)
			strata_trig_begin(i);
		strata_trig_tick(i);
		if (i == b + 1)
			rc |= pings(1000); /* recorded */
		if (i == e)
			strata_trig_end(i);
	}
	return rc | pings(2000); /* after the stop: not recorded */
}
