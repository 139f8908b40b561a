/* SPDX-License-Identifier: MIT */
/* Function probes (-finstrument-functions, libstrata-func): known calls, nesting, a longjmp, recursion; prints what it called (calls_test.py). */
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Not static, and the executable exports them (-rdynamic): dladdr() names
 * them for STRATA_FUNCTIONS_EXCLUDE; noinline: every call is a call. */
#define PROBED __attribute__((noinline))

static volatile uint64_t sink;

__attribute__((no_instrument_function)) static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ~`us` microseconds of work in its own code */
PROBED void spin_us(unsigned us)
{
	uint64_t end = now_ns() + us * 1000ull;
	while (now_ns() < end)
		sink++;
}

PROBED uint64_t fib(unsigned n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/* a calls b 3 times, b calls c twice: 1, 3 and 6 calls; c spins 200 us,
 * b 100 us of its own, a 300 us of its own */
PROBED void c_leaf(void)
{
	spin_us(200);
}

PROBED void b_mid(void)
{
	c_leaf();
	spin_us(100);
	c_leaf();
}

PROBED void a_top(void)
{
	for (int i = 0; i < 3; i++)
		b_mid();
	spin_us(300);
}

/* jmp_top calls jmp_mid, which calls jmp_leaf, which longjmps back into jmp_top: jmp_mid and jmp_leaf
 * never return, jmp_top does. */
static jmp_buf jb;

PROBED void jmp_leaf(void)
{
	longjmp(jb, 1);
}

PROBED void jmp_mid(void)
{
	jmp_leaf();
}

PROBED void jmp_top(void)
{
	if (!setjmp(jb))
		jmp_mid();
}

static uint64_t worker_fib_ns;

PROBED void *worker(void *arg)
{
	(void)arg;
	uint64_t t0 = now_ns();
	sink += fib(15); /* 1973 calls */
	worker_fib_ns = now_ns() - t0;
	return NULL;
}

/* Prints its calls and its own clock's durations of the outermost calls
 * of fib (both threads) and of a_top, as JSON. */
int main(void)
{
	pthread_t t;
	uint64_t t0, fib_ns, a_ns;

	pthread_create(&t, NULL, worker, NULL);
	t0 = now_ns();
	sink += fib(20); /* 21891 calls */
	fib_ns = now_ns() - t0;
	t0 = now_ns();
	a_top();
	a_ns = now_ns() - t0;
	jmp_top();
	pthread_join(t, NULL);
	/* the spin_us calls: 6 in c_leaf, 3 in b_mid, 1 in a_top */
	printf("{\"calls\": {\"fib\": %d, \"a_top\": 1, \"b_mid\": 3, \"c_leaf\": 6, "
	       "\"spin_us\": 10, \"jmp_top\": 1, \"jmp_mid\": 1, \"jmp_leaf\": 1, \"worker\": 1, "
	       "\"main\": 1}, \"fib_ns\": %llu, \"a_top_ns\": %llu}\n",
	       21891 + 1973, (unsigned long long)(fib_ns + worker_fib_ns),
	       (unsigned long long)a_ns);
	return 0;
}
