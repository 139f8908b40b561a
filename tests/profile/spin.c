/* SPDX-License-Identifier: MIT */
/* Threads that spend known shares of their CPU time in f (60 %), g (30 %) and h (10 %): the ground truth of strata profile (profile_test.py). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

/* Spin for `ns` of this thread's CPU time. */
static __attribute__((noinline)) void burn(uint64_t ns)
{
	uint64_t end = cpu_ns() + ns;
	while (cpu_ns() < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i;
}

__attribute__((noinline)) void f(uint64_t ns) { burn(ns); __asm__ volatile(""); }
__attribute__((noinline)) void g(uint64_t ns) { burn(ns); __asm__ volatile(""); }
__attribute__((noinline)) void h(uint64_t ns) { burn(ns); __asm__ volatile(""); }

static unsigned rounds = 100;
/* A round's CPU time. The timer sampler's signals come at the kernel's
 * tick (lib/sampler.c): its test takes a round that no tick period
 * divides, so that the samples do not fall on the same phases of every
 * round (profile_test.py). */
static uint64_t round_ns = 10000000;

static void *worker(void *arg)
{
	(void)arg;
	for (unsigned r = 0; r < rounds; r++) { /* f 60 %, g 30 %, h 10 % */
		f(round_ns * 6 / 10);
		g(round_ns * 3 / 10);
		h(round_ns / 10);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 2;
	if (argc > 2)
		rounds = (unsigned)atoi(argv[2]);
	if (argc > 3 && atoi(argv[3]) > 0)
		round_ns = (uint64_t)atoi(argv[3]) * 1000u;
	pthread_t th[16];
	if (n > 16)
		n = 16;
	for (unsigned i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	printf("%u threads, %u rounds of %llu us of CPU, f 60 %%, g 30 %%, h 10 %%; cpu_ns=%llu\n",
	       n, rounds, (unsigned long long)(round_ns / 1000),
	       (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	return 0;
}
