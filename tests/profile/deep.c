/* SPDX-License-Identifier: MIT */
/* Function probes 100,000 calls deep: a recursion on a thread with a big stack, for the call tree's walks (deep_test.py). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define PROBED __attribute__((noinline))

static volatile unsigned long sink;

/* Recurse n deep; the add after the call keeps it from being a tail call. */
PROBED unsigned long deep(unsigned long n)
{
	if (!n)
		return sink;
	return deep(n - 1) + 1;
}

__attribute__((no_instrument_function)) static void *run(void *arg)
{
	unsigned long n = *(unsigned long *)arg;
	if (deep(n) != n)
		return (void *)1;
	return NULL;
}

__attribute__((no_instrument_function)) int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	pthread_attr_t a;
	pthread_t t;
	void *ret;

	/* a frame and the probes' hooks: well under 1 KiB a level */
	if (pthread_attr_init(&a) || pthread_attr_setstacksize(&a, 512ul << 20) ||
	    pthread_create(&t, &a, run, &n) || pthread_join(t, &ret) || ret)
		return 1;
	printf("{\"depth\": %lu}\n", n);
	return 0;
}
