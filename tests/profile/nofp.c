/* SPDX-License-Identifier: MIT */
/* Built without frame pointers (tests/profile, --call-graph dwarf): two threads spin in leaf() under known chains, main -> outer -> middle -> leaf and worker -> outer -> middle -> leaf. */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double thread_cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Spins until the thread has used `secs` more of CPU time. */
__attribute__((noinline)) static uint64_t leaf(double secs)
{
	double until = thread_cpu_s() + secs;
	volatile uint64_t x = 0;

	while (thread_cpu_s() < until)
		for (uint64_t i = 0; i < 20000; i++)
			x += i * 2654435761u;
	return x;
}

/* The empty asm keeps each call from being a tail call (a jump leaves no
 * frame to unwind through). */
__attribute__((noinline)) static uint64_t middle(double secs)
{
	uint64_t r = leaf(secs);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

__attribute__((noinline)) static uint64_t outer(double secs)
{
	uint64_t r = middle(secs);

	__asm__ volatile("" ::: "memory");
	return r + 2;
}

static double secs = 1.0;

__attribute__((noinline)) static void *worker(void *arg)
{
	uint64_t r = outer(secs);

	__asm__ volatile("" ::: "memory");
	return (void *)(uintptr_t)(r & (uintptr_t)arg);
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1)
		secs = atof(argv[1]);
	/* FORKS children one after the other, each doing what main does
	 * below, without exec: they run the parent's mapped code */
	for (int i = 0, n = argc > 2 ? atoi(argv[2]) : 0; i < n; i++) {
		pid_t c = fork();
		if (c < 0)
			return 1;
		if (c == 0)
			break;
		if (waitpid(c, NULL, 0) != c)
			return 1;
		if (i == n - 1)
			return 0;
	}
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	uint64_t r = outer(secs);
	pthread_join(t, NULL);
	printf("%llu\n", (unsigned long long)(r & 1));
	return 0;
}
