/* SPDX-License-Identifier: MIT */
/* Threads still in a lock wait or hold at exit(): their own counts are the truth of `strata locks`' partial per-thread totals. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sleeping.h"

/*
 * The main thread holds `blocker` and `held`. Worker A takes its own
 * mutex NA times, then waits for `blocker` until the process exits.
 * Worker B takes its own NB times, then waits for `held`, which main lets
 * go once B sleeps in that wait; B then keeps it (one contended
 * acquisition, never released) and sleeps. main exits with both
 * running. Threads meet through atomics, never a pthread lock.
 */
#define NA 1000
#define NB 500

static pthread_mutex_t blocker = PTHREAD_MUTEX_INITIALIZER, held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t own[2] = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
static _Atomic int tid_a, tid_b, b_has;
static _Atomic uint64_t a_since; /* CLOCK_MONOTONIC ns: A's wait began */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void take_own(int i, int n)
{
	for (int k = 0; k < n; k++) {
		pthread_mutex_lock(&own[i]);
		pthread_mutex_unlock(&own[i]);
	}
}

static void *worker_a(void *arg)
{
	(void)arg;
	take_own(0, NA);
	atomic_store(&tid_a, (int)syscall(SYS_gettid));
	atomic_store(&a_since, now_ns());
	pthread_mutex_lock(&blocker); /* until the process exits */
	return NULL;
}

static void *worker_b(void *arg)
{
	(void)arg;
	take_own(1, NB);
	atomic_store(&tid_b, (int)syscall(SYS_gettid));
	pthread_mutex_lock(&held);
	atomic_store(&b_has, 1);
	for (;;)
		pause_us(100000);
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	pthread_mutex_lock(&blocker);
	pthread_mutex_lock(&held);
	if (pthread_create(&a, NULL, worker_a, NULL) || pthread_create(&b, NULL, worker_b, NULL))
		return 1;
	while (!atomic_load(&tid_a) || !atomic_load(&tid_b))
		pause_us(100);
	while (!sleeping(atomic_load(&tid_a)) || !sleeping(atomic_load(&tid_b)))
		pause_us(100);
	pthread_mutex_unlock(&held);
	while (!atomic_load(&b_has))
		pause_us(100);
	/* a wait long beside what the preload spends before its wait_begin
	 * (the chain: the first in a thread costs tens of us) */
	pause_us(50000);
	/* A's wait so far: the trace's view of it, which ends later (at the
	 * last event, logged at the exit), is at least this */
	printf("{\"blocker\":\"%p\",\"held\":\"%p\",\"a\":{\"tid\":%d,\"acquisitions\":%d,"
	       "\"waited_ns\":%" PRIu64 "},\"b\":{\"tid\":%d,\"acquisitions\":%d}}\n",
	       (void *)&blocker, (void *)&held, atomic_load(&tid_a), NA,
	       now_ns() - atomic_load(&a_since), atomic_load(&tid_b), NB + 1);
	fflush(stdout);
	exit(0); /* A waits, B holds */
}
