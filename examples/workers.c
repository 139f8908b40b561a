/* SPDX-License-Identifier: MIT */
/* A multi-threaded workload with tracepoints: workers take jobs under a lock. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <strata/strata.h>

/*
 * Subsystem 1 "work": the events of this example. (Until strata-gen is
 * wired in, the descriptors are written by hand: this is exactly what a
 * generated header contains.)
 */
enum { WORK = 1 };
enum { JOB_BEGIN = 1, JOB_END = 2, LOCK_WAIT = 3, LOCK_GOT = 4, LOCK_FREE = 5 };

static const struct strata_field_desc f_job[] = {
	{"job", STRATA_T_U64, 0, 0},
	{"size", STRATA_T_U64, 0, 0},
};
static const struct strata_field_desc f_end[] = {
	{"job", STRATA_T_U64, 0, 0},
	{"result", STRATA_T_U64, 0, STRATA_F_HEX},
};
static const struct strata_field_desc f_lock[] = {
	{"lock", STRATA_T_PTR, 0, 0},
};
static const struct strata_event_desc ev_begin = {
	"work", "job_begin", WORK, STRATA_EV_BEGIN, JOB_BEGIN, 2, 0, f_job,
	"job %{job} of %{size} steps", "a worker starts a job", NULL};
static const struct strata_event_desc ev_end = {
	"work", "job_end", WORK, STRATA_EV_END, JOB_END, 2, 0, f_end,
	"job %{job} done: %{result:x}", "a worker finishes a job", NULL};
static const struct strata_event_desc ev_wait = {
	"work", "lock_wait", WORK, STRATA_EV_POINT, LOCK_WAIT, 1, 0, f_lock,
	"waiting for %{lock}", NULL, NULL};
static const struct strata_event_desc ev_got = {
	"work", "lock_acquire", WORK, STRATA_EV_BEGIN, LOCK_GOT, 1, 0, f_lock,
	"acquired %{lock}", NULL, NULL};
static const struct strata_event_desc ev_free = {
	"work", "lock_release", WORK, STRATA_EV_END, LOCK_FREE, 1, 0, f_lock,
	"released %{lock}", NULL, NULL};
static const struct strata_event_desc *const work_events[] = {
	&ev_begin, &ev_end, &ev_wait, &ev_got, &ev_free};
static const struct strata_subsys_desc work_subsys = {"work", WORK,
						      "the example's jobs"};

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long next_job, njobs;

static unsigned long take_job(void)
{
	unsigned long j;

	STRATA_EVENT1(WORK, LOCK_WAIT, (uintptr_t)&queue_lock);
	pthread_mutex_lock(&queue_lock);
	STRATA_EVENT1(WORK, LOCK_GOT, (uintptr_t)&queue_lock);
	j = next_job < njobs ? next_job++ : ~0ul;
	STRATA_EVENT1(WORK, LOCK_FREE, (uintptr_t)&queue_lock);
	pthread_mutex_unlock(&queue_lock);
	return j;
}

static void *worker(void *arg)
{
	unsigned long j;
	(void)arg;

	while ((j = take_job()) != ~0ul) {
		uint64_t size = 50 + (j * 7919) % 200, h = j;
		STRATA_EVENT2(WORK, JOB_BEGIN, j, size);
		for (uint64_t i = 0; i < size; i++)
			h = h * 6364136223846793005ull + 1442695040888963407ull;
		STRATA_EVENT2(WORK, JOB_END, j, h);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t th[64];
	struct timespec t0, t1;

	njobs = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
	if (nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "usage: %s [THREADS (1-64)] [JOBS]\n", argv[0]);
		return 2;
	}
	strata_register(&work_subsys, work_events,
			sizeof(work_events) / sizeof(work_events[0]));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	double s = (double)(t1.tv_sec - t0.tv_sec) +
		   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "workers: %d threads, %lu jobs, %lu events logged, %.3f s\n",
		nthreads, njobs, njobs * 5 + (unsigned long)nthreads * 3, s);
	return 0;
}
