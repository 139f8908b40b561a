/* SPDX-License-Identifier: MIT */
/* A shared library's static mutex, for the symbols check of strata locks (locks_test.py symbols). */
#include <pthread.h>

static pthread_mutex_t lib_hot = PTHREAD_MUTEX_INITIALIZER;

pthread_mutex_t *locks_lib_hot(void);
pthread_mutex_t *locks_lib_hot(void)
{
	return &lib_hot;
}
