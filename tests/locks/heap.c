/* SPDX-License-Identifier: MIT */
/* Two malloc'd mutexes initialised in two functions, each waited for: `strata locks` names them by their init sites. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	nanosleep(&ts, NULL);
}

static void *taker(void *arg)
{
	pthread_mutex_t *m = arg;
	pthread_mutex_lock(m);
	pthread_mutex_unlock(m);
	return NULL;
}

/* noinline: the init sites are these functions, not main */
__attribute__((noinline)) static pthread_mutex_t *make_a(void)
{
	pthread_mutex_t *m = malloc(sizeof(*m));
	if (m && pthread_mutex_init(m, NULL))
		abort();
	return m;
}

/* calloc, not malloc: two identical functions would be folded into one
 * (GCC's -fipa-icf), with one init site */
__attribute__((noinline)) static pthread_mutex_t *make_b(void)
{
	pthread_mutex_t *m = calloc(1, sizeof(*m));
	if (m && pthread_mutex_init(m, NULL))
		abort();
	return m;
}

/* The main thread holds m while a thread waits for it, `rounds` times. */
static void contend(pthread_mutex_t *m, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		pthread_t t;
		pthread_mutex_lock(m);
		if (pthread_create(&t, NULL, taker, m))
			abort();
		sleep_ms(30);
		pthread_mutex_unlock(m);
		pthread_join(t, NULL);
	}
}

int main(void)
{
	pthread_mutex_t *a = make_a(), *b = make_b();
	if (!a || !b)
		return 1;
	contend(a, 2);
	contend(b, 3);
	printf("{\"a\": \"%p\", \"b\": \"%p\"}\n", (void *)a, (void *)b);
	return 0;
}
