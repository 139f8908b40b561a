/* SPDX-License-Identifier: MIT */
/* Function probes' call tree: main -> a -> b, main -> c, rec to depth 3, a thread never left; prints its own clock's times (tree_test.py). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define PROBED __attribute__((noinline))

static volatile uint64_t sink;

__attribute__((no_instrument_function)) static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* us microseconds in the caller's own code: not probed */
__attribute__((no_instrument_function)) static void spin(unsigned us)
{
	uint64_t end = now_ns() + us * 1000ull;
	while (now_ns() < end)
		sink++;
}

static uint64_t b_ns, a_ns, c_ns, rec_ns;

PROBED void b(void)
{
	uint64_t t0 = now_ns();
	spin(2000);
	b_ns += now_ns() - t0;
}

PROBED void a(void)
{
	uint64_t t0 = now_ns();
	spin(1000);
	b();
	a_ns += now_ns() - t0;
}

PROBED void c(void)
{
	uint64_t t0 = now_ns();
	spin(3000);
	c_ns += now_ns() - t0;
}

/* rec(3) -> rec(2) -> rec(1): 500 us of its own at each level */
PROBED void rec(int n)
{
	spin(500);
	if (n > 1)
		rec(n - 1);
}

/* Never returns: the process ends with its call open. */
PROBED void stuck(void)
{
	for (;;)
		pause();
}

PROBED void *stuck_thread(void *arg)
{
	(void)arg;
	stuck();
	return NULL;
}

int main(void)
{
	pthread_t t;
	uint64_t t0;

	pthread_create(&t, NULL, stuck_thread, NULL);
	for (int i = 0; i < 2; i++)
		a();
	c();
	t0 = now_ns();
	rec(3);
	rec_ns = now_ns() - t0;
	printf("{\"a_ns\": %llu, \"b_ns\": %llu, \"c_ns\": %llu, \"rec_ns\": %llu}\n",
	       (unsigned long long)a_ns, (unsigned long long)b_ns, (unsigned long long)c_ns,
	       (unsigned long long)rec_ns);
	fflush(stdout);
	return 0;
}
