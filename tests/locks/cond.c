/* SPDX-License-Identifier: MIT */
/* Producers and consumers on a bounded queue under one mutex and two condition variables (some waits timed): the preload must not change what it computes (locks_test.py cond). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define QCAP 4
#define ITEMS 20000
#define PAIRS 2

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;
static uint64_t q[QCAP];
static unsigned qn, qhead;
static uint64_t taken_sum[PAIRS], timeouts;

/* Wait on c; every 16th wait with a deadline 1 ms away (its timeouts only
 * loop again). */
static void wait_on(pthread_cond_t *c, unsigned k)
{
	if (k % 16)
		return (void)pthread_cond_wait(c, &mu);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	if (pthread_cond_timedwait(c, &mu, &ts) == ETIMEDOUT)
		timeouts++;
}

static void *producer(void *arg)
{
	uint64_t base = (uintptr_t)arg * ITEMS;
	for (unsigned i = 0; i < ITEMS; i++) {
		pthread_mutex_lock(&mu);
		while (qn == QCAP)
			wait_on(&not_full, i);
		q[(qhead + qn++) % QCAP] = base + i;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	uintptr_t me = (uintptr_t)arg;
	for (unsigned i = 0; i < ITEMS; i++) {
		pthread_mutex_lock(&mu);
		while (!qn)
			wait_on(&not_empty, i);
		taken_sum[me] += q[qhead];
		qhead = (qhead + 1) % QCAP;
		qn--;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

int main(void)
{
	pthread_t p[PAIRS], c[PAIRS];
	for (uintptr_t i = 0; i < PAIRS; i++) {
		pthread_create(&p[i], NULL, producer, (void *)i);
		pthread_create(&c[i], NULL, consumer, (void *)i);
	}
	uint64_t sum = 0;
	for (unsigned i = 0; i < PAIRS; i++) {
		pthread_join(p[i], NULL);
		pthread_join(c[i], NULL);
		sum += taken_sum[i];
	}
	/* the items each taken once: 0 + 1 + ... + PAIRS * ITEMS - 1 */
	uint64_t n = (uint64_t)PAIRS * ITEMS;
	printf("%" PRIu64 " items, sum %" PRIu64 " (want %" PRIu64 ")\n", n, sum, n * (n - 1) / 2);
	return sum == n * (n - 1) / 2 ? 0 : 1;
}
