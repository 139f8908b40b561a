/* SPDX-License-Identifier: MIT */
/* The timer sampler's hard cases (lib/sampler.c): a process that forks a child which spins in its own function, and a thread that blocks every signal while it spins (sampler_test.py). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t cpu_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

static __attribute__((noinline)) void burn(uint64_t ns)
{
	uint64_t end = cpu_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	while (cpu_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i;
}

__attribute__((noinline)) void in_parent(uint64_t ns) { burn(ns); __asm__ volatile(""); }
__attribute__((noinline)) void in_child(uint64_t ns) { burn(ns); __asm__ volatile(""); }
__attribute__((noinline)) void in_blocked(uint64_t ns) { burn(ns); __asm__ volatile(""); }
__attribute__((noinline)) void in_open(uint64_t ns) { burn(ns); __asm__ volatile(""); }

static uint64_t ms = 500;

/* Blocks every signal first, as many programs' worker threads do: the
 * sampler's timer then never interrupts it. */
static void *blocked(void *arg)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* let the sampler arm it (it scans every 10 ms), blocked already */
	struct timespec nap = { 0, 50000000 };
	nanosleep(&nap, NULL);
	uint64_t t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	in_blocked(ms * 1000000);
	*(uint64_t *)arg = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 2)
		ms = (uint64_t)atoi(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		in_parent(ms * 1000000);
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			in_child(ms * 1000000);
			printf("child %d cpu_ns=%llu thread_ns=%llu\n", getpid(),
			       (unsigned long long)cpu_ns(CLOCK_PROCESS_CPUTIME_ID),
			       (unsigned long long)cpu_ns(CLOCK_THREAD_CPUTIME_ID));
			return 0;
		}
		int st;
		waitpid(c, &st, 0);
		printf("parent %d cpu_ns=%llu thread_ns=%llu\n", getpid(),
		       (unsigned long long)cpu_ns(CLOCK_PROCESS_CPUTIME_ID),
		       (unsigned long long)cpu_ns(CLOCK_THREAD_CPUTIME_ID));
		return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : 1;
	}
	if (argc > 1 && !strcmp(argv[1], "block")) {
		pthread_t th;
		uint64_t blocked_ns = 0;
		pthread_create(&th, NULL, blocked, &blocked_ns);
		uint64_t t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		in_open(ms * 1000000);
		uint64_t open_ns = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		pthread_join(th, NULL);
		printf("open_ns=%llu blocked_ns=%llu\n", (unsigned long long)open_ns,
		       (unsigned long long)blocked_ns);
		return 0;
	}
	fprintf(stderr, "usage: profile_sampled fork|block [MS]\n");
	return 2;
}
