/* SPDX-License-Identifier: MIT */
/* Threads named before their first event and gone long before the state dump's next update: strata info must name them (threadname.sh). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <strata/strata.h>

/* Eight short-lived threads, named "short-N", each logging one event;
 * the process ends within a few milliseconds, far from the periodic
 * update's second. */
static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "short-%u", (unsigned)(uintptr_t)arg);
	pthread_setname_np(pthread_self(), name);
	STRATA_EVENT1(2, 1, (uintptr_t)arg);
	return NULL;
}

int main(void)
{
	pthread_t t[8];

	STRATA_EVENT1(2, 2, 0);
	for (unsigned i = 0; i < 8; i++) {
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
		pthread_join(t[i], NULL); /* one after another: gone at exit */
	}
	STRATA_EVENT1(2, 2, 1);
	return 0;
}
