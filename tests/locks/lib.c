/* SPDX-License-Identifier: MIT */
/* A shared library's static mutex and its own locking function, for the symbols and call-chain checks of strata locks (locks_test.py symbols, libchain). */
#include <pthread.h>

static pthread_mutex_t lib_hot = PTHREAD_MUTEX_INITIALIZER;

pthread_mutex_t *locks_lib_hot(void);
pthread_mutex_t *locks_lib_hot(void)
{
	return &lib_hot;
}

/* Takes m from inside this library, so that the wait's call chain starts
 * in the library's own code; not inlined into a caller, the add after
 * the call keeps it from being a tail call. */
__attribute__((noinline)) int locks_lib_lock(pthread_mutex_t *m);
__attribute__((noinline)) int locks_lib_lock(pthread_mutex_t *m)
{
	int r = pthread_mutex_lock(m);
	__asm__ volatile("" ::: "memory");
	return r + 0;
}
