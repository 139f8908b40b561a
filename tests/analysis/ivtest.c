/* SPDX-License-Identifier: MIT */
/* Jobs, a contended lock, nested phases and a queue, each timed by the program itself: ground truth for strata intervals and latency --by. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "ivtest.h"

/*
 * The main thread queues JOBS jobs (ivt:submit); WORKERS threads take
 * them and log ivt:done; each job is ivt:job_begin .. job_end around two
 * nested phases (phase_start .. phase_start .. phase_end .. phase_end)
 * and a critical section under one mutex (lock_wait, lock_acquire ..
 * lock_release) that sleeps, so the workers wait for each other.
 * Every interval is timed twice with CLOCK_MONOTONIC: inside its events
 * (read after the begin, before the end) and around them (before the
 * begin, after the end); what the trace measures lies between. Prints one
 * JSON line: per kind and per thread, count and the inner and outer
 * totals, minimums and maximums; per job, submit-to-done inner and outer.
 * "flood N" instead logs N events from two threads as fast as it can.
 */
#define WORKERS 3
#define JOBS 60
enum { K_JOB, K_WAIT, K_HOLD, K_PHASE, NK };
static const char *const kind_names[NK] = {
	"ivt:job_begin..job_end", "ivt:lock_wait..lock_acquire",
	"ivt:lock_acquire..lock_release", "ivt:phase_start..phase_end",
};

struct acc {
	uint64_t n, in_total, out_total, in_min, in_max, out_min, out_max;
};

static struct acc kinds[NK], per[WORKERS][NK];
static pid_t tids[WORKERS];
static pthread_mutex_t acc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static uint64_t queue[JOBS], qhead, qtail;
static int closed;
static uint64_t sub_out[JOBS], sub_in[JOBS], done_in[JOBS], done_out[JOBS];

static uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec d = { 0, us * 1000 };
	nanosleep(&d, NULL);
}

static void note(int w, int k, uint64_t o0, uint64_t i0, uint64_t i1, uint64_t o1)
{
	uint64_t in = i1 - i0, out = o1 - o0;
	pthread_mutex_lock(&acc_lock);
	struct acc *a[2] = { &kinds[k], &per[w][k] };
	for (int i = 0; i < 2; i++) {
		if (!a[i]->n++) {
			a[i]->in_min = a[i]->in_max = in;
			a[i]->out_min = a[i]->out_max = out;
		}
		a[i]->in_total += in;
		a[i]->out_total += out;
		a[i]->in_min = in < a[i]->in_min ? in : a[i]->in_min;
		a[i]->in_max = in > a[i]->in_max ? in : a[i]->in_max;
		a[i]->out_min = out < a[i]->out_min ? out : a[i]->out_min;
		a[i]->out_max = out > a[i]->out_max ? out : a[i]->out_max;
	}
	pthread_mutex_unlock(&acc_lock);
}

/* A phase at depth d holds one at depth d + 1 (two levels). */
static void phase(int w, uint32_t d)
{
	uint64_t o0 = now();
	strata_ivt_phase_start(d);
	uint64_t i0 = now();
	sleep_us(200);
	if (d == 0)
		phase(w, 1);
	uint64_t i1 = now();
	strata_ivt_phase_end(d);
	note(w, K_PHASE, o0, i0, i1, now());
}

static void *worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	tids[w] = (pid_t)syscall(SYS_gettid);
	for (;;) {
		pthread_mutex_lock(&q_lock);
		while (qhead == qtail && !closed)
			pthread_cond_wait(&q_cond, &q_lock);
		if (qhead == qtail) {
			pthread_mutex_unlock(&q_lock);
			return NULL;
		}
		uint64_t j = queue[qhead++ % JOBS];
		pthread_mutex_unlock(&q_lock);

		uint64_t jo0 = now();
		strata_ivt_job_begin(j);
		uint64_t ji0 = now();
		phase(w, 0);
		uint64_t wo0 = now();
		strata_ivt_lock_wait(1);
		uint64_t wi0 = now();
		pthread_mutex_lock(&work_lock);
		uint64_t wi1 = now();
		strata_ivt_lock_acquire(1);
		uint64_t wo1 = now(), ho0 = wi1, hi0 = wo1;
		note(w, K_WAIT, wo0, wi0, wi1, wo1);
		sleep_us(300 + (long)(j % 5) * 100);
		uint64_t hi1 = now();
		strata_ivt_lock_release(1);
		uint64_t ho1 = now();
		pthread_mutex_unlock(&work_lock);
		note(w, K_HOLD, ho0, hi0, hi1, ho1);
		uint64_t ji1 = now();
		strata_ivt_job_end(j);
		uint64_t jo1 = now();
		note(w, K_JOB, jo0, ji0, ji1, jo1);
		done_in[j] = now();
		strata_ivt_done(j);
		done_out[j] = now();
	}
}

static void *flooder(void *arg)
{
	long n = (long)(intptr_t)arg;
	for (long i = 0; i < n; i++)
		strata_ivt_flood((uint64_t)i);
	return NULL;
}

static void print_acc(const struct acc *a)
{
	printf("{\"n\":%llu,\"in_total\":%llu,\"out_total\":%llu,\"in_min\":%llu,\"out_min\":%llu,"
	       "\"in_max\":%llu,\"out_max\":%llu}",
	       (unsigned long long)a->n, (unsigned long long)a->in_total,
	       (unsigned long long)a->out_total, (unsigned long long)a->in_min,
	       (unsigned long long)a->out_min, (unsigned long long)a->in_max,
	       (unsigned long long)a->out_max);
}

int main(int argc, char **argv)
{
	pthread_t t[WORKERS];

	if (argc > 2 && !strcmp(argv[1], "flood")) {
		long n = atol(argv[2]);
		pthread_create(&t[0], NULL, flooder, (void *)(intptr_t)n);
		pthread_create(&t[1], NULL, flooder, (void *)(intptr_t)n);
		pthread_join(t[0], NULL);
		pthread_join(t[1], NULL);
		return 0;
	}
	for (int w = 0; w < WORKERS; w++)
		pthread_create(&t[w], NULL, worker, (void *)(intptr_t)w);
	for (uint64_t j = 0; j < JOBS; j++) {
		if (j % 6 == 0)
			sleep_us(2000);
		sub_out[j] = now();
		strata_ivt_submit(j);
		sub_in[j] = now();
		pthread_mutex_lock(&q_lock);
		queue[qtail++ % JOBS] = j;
		pthread_cond_signal(&q_cond);
		pthread_mutex_unlock(&q_lock);
	}
	pthread_mutex_lock(&q_lock);
	closed = 1;
	pthread_cond_broadcast(&q_cond);
	pthread_mutex_unlock(&q_lock);
	for (int w = 0; w < WORKERS; w++)
		pthread_join(t[w], NULL);

	printf("{\"kinds\":{");
	for (int k = 0; k < NK; k++) {
		printf("%s\"%s\":", k ? "," : "", kind_names[k]);
		print_acc(&kinds[k]);
	}
	printf("},\"threads\":{");
	for (int w = 0; w < WORKERS; w++) {
		printf("%s\"%d\":{", w ? "," : "", (int)tids[w]);
		for (int k = 0; k < NK; k++) {
			printf("%s\"%s\":", k ? "," : "", kind_names[k]);
			print_acc(&per[w][k]);
		}
		printf("}");
	}
	printf("},\"queue_in\":[");
	for (int j = 0; j < JOBS; j++)
		printf("%s%llu", j ? "," : "", (unsigned long long)(done_in[j] - sub_in[j]));
	printf("],\"queue_out\":[");
	for (int j = 0; j < JOBS; j++)
		printf("%s%llu", j ? "," : "", (unsigned long long)(done_out[j] - sub_out[j]));
	printf("]}\n");
	return 0;
}
