/* SPDX-License-Identifier: MIT */
/* A packet whose opener dies inside its own reservation (issue 26, item 2): salvage keeps what others wrote behind it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <strata/strata.h>

#include "cpu0.h"

/*
 * opendie N: both threads on CPU 0. The opener logs 5:1 (w0 = 0), closes
 * the packet (strata_flush()), then reserves an event of its own, which
 * opens the next packet (header and event, ring/slow.c's switch), and
 * never commits it, as a thread killed there would not. The other thread
 * then logs N events 5:2 (w0 = 0 .. N-1) into that packet, and the process
 * kills itself (SIGKILL): crash salvage must keep all N (docs/record.md,
 * "Crash salvage"), and the opener's event is lost.
 */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int reserved;

static void *opener(void *arg)
{
	struct strata_rsv r;

	(void)arg;
	on_cpu0("opendie");
	STRATA_EVENT1(5, 1, 0);
	strata_flush();
	if (!strata_reserve_slow(&r, STRATA_ID(5, 1) | STRATA_HID_EXT, 2, 0)) {
		fprintf(stderr, "opendie: the reservation was dropped\n");
		exit(2);
	}
	pthread_mutex_lock(&mu);
	reserved = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	for (;;)
		pause(); /* never commits */
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 100;
	pthread_t th;

	on_cpu0("opendie");
	pthread_create(&th, NULL, opener, NULL);
	pthread_mutex_lock(&mu);
	while (!reserved)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (unsigned long i = 0; i < n; i++)
		STRATA_EVENT1(5, 2, i);
	raise(SIGKILL);
	return 0;
}
