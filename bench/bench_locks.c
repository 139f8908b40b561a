/* SPDX-License-Identifier: MIT */
/* Uncontended pthread_mutex lock/unlock pairs, timed: the program behind bench/locks.sh (libstrata-locks.so against LTTng-UST's pthread wrapper). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * usage: bench_locks PAIRS [event]
 * Prints "ns_per_pair=X" for PAIRS lock/unlock pairs of one mutex, with
 * one idle thread alive (glibc's mutexes are cheaper in a single-threaded
 * process, and a traced one is never single-threaded: libstrata runs a
 * thread). With "event", each pair also logs one strata event of one
 * word: the anchor of the target "the pair under the preload costs at
 * most 1.5 x the bare pair plus one event".
 */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;

static void *idle(void *arg)
{
	(void)arg;
	while (!stop)
		usleep(10000);
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long pairs = atol(argv[1]);
	int event = argc > 2 && !strcmp(argv[2], "event");
	pthread_t th;
	pthread_create(&th, NULL, idle, NULL);
	for (long i = 0; i < pairs / 10; i++) { /* warm */
		pthread_mutex_lock(&mu);
		pthread_mutex_unlock(&mu);
	}
	uint64_t t0 = now_ns();
	if (event)
		for (long i = 0; i < pairs; i++) {
			pthread_mutex_lock(&mu);
			STRATA_EVENT1(5, 1, (uint64_t)i);
			pthread_mutex_unlock(&mu);
		}
	else
		for (long i = 0; i < pairs; i++) {
			pthread_mutex_lock(&mu);
			pthread_mutex_unlock(&mu);
		}
	uint64_t t1 = now_ns();
	stop = 1;
	pthread_join(th, NULL);
	printf("ns_per_pair=%.2f\n", (double)(t1 - t0) / (double)pairs);
	return 0;
}
