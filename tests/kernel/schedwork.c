/* SPDX-License-Identifier: MIT */
/* Threads that wait for a CPU (two spinners and a sleeper on one CPU), for the scheduling latency test. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * Pinned to one CPU: A and B spin 200 ms each, preempting each other;
 * C sleeps 2 ms forty times meanwhile and waits for the CPU after each
 * wakeup. Prints their tids, one JSON line; perf sched latency and strata
 * latency --sched, recording the same run, must agree on every wait.
 */
static int cpu_pin;
static pthread_barrier_t start;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void pin(void)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu_pin, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static void *spinner(void *arg)
{
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	pin();
	pthread_barrier_wait(&start);
	uint64_t end = now_ns() + 200 * 1000000ull;
	while (now_ns() < end)
		;
	return NULL;
}

static void *sleeper(void *arg)
{
	struct timespec d = { 0, 2 * 1000 * 1000 };
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	pin();
	pthread_barrier_wait(&start);
	for (int i = 0; i < 40; i++)
		nanosleep(&d, NULL);
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	pid_t tid[3];

	cpu_pin = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0;
	pthread_barrier_init(&start, NULL, 3);
	pthread_create(&t[0], NULL, spinner, &tid[0]);
	pthread_create(&t[1], NULL, spinner, &tid[1]);
	pthread_create(&t[2], NULL, sleeper, &tid[2]);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("{\"spinners\":[%d,%d],\"sleeper\":%d}\n", (int)tid[0], (int)tid[1], (int)tid[2]);
	return 0;
}
