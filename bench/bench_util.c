/* SPDX-License-Identifier: MIT */
/* Shared helpers of the benchmark programs: clocks, pinning, the timed thread runner and result lines. */
#define _GNU_SOURCE
#include "bench_util.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t bench_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

double bench_tsc_ghz(void)
{
	static double ghz;
	if (ghz == 0) {
		uint64_t n0 = bench_now_ns(), t0 = bench_rdtsc();
		struct timespec d = {0, 100 * 1000 * 1000};
		nanosleep(&d, NULL);
		uint64_t n1 = bench_now_ns(), t1 = bench_rdtsc();
		ghz = (double)(t1 - t0) / (double)(n1 - n0);
	}
	return ghz;
}

int bench_ncpus(void)
{
	cpu_set_t s;
	if (sched_getaffinity(0, sizeof(s), &s))
		return 1;
	return CPU_COUNT(&s);
}

int bench_pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return -pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

uint64_t bench_env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	return strtoull(v, NULL, 0);
}

/* ---- the floor ---------------------------------------------------------- */

#define FLOOR_RECS 4096 /* 64 KiB per thread: stays in L2, like a hot buffer */
struct floor_rec {
	uint64_t ts, w;
};
static __thread struct floor_rec floor_buf[FLOOR_RECS]
	__attribute__((aligned(64)));
static __thread unsigned floor_pos;

BENCH_OPAQUE void bench_floor_event(uint64_t w)
{
	unsigned i = floor_pos;
	floor_buf[i].ts = bench_rdtsc();
	floor_buf[i].w = w;
	floor_pos = (i + 1) & (FLOOR_RECS - 1);
}

/* ---- the timed runner --------------------------------------------------- */

struct worker {
	pthread_t th;
	int cpu;
	uint64_t n, warmup;
	bench_loop_fn loop;
	void *arg;
	pthread_barrier_t *bar;
	uint64_t ns, ticks;
	uint64_t cpu_ns;   /* the thread's own CPU time over the loop */
	long nivcsw;       /* times it was preempted during the loop */
	uint64_t floor_ns; /* the floor's loop, timed just before ours */
	int pin_err;
	int paired;
};

static void loop_floor_paired(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		bench_floor_event(i);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *worker_main(void *p)
{
	struct worker *w = p;
	w->pin_err = bench_pin(w->cpu);
	if (w->warmup)
		w->loop(w->warmup, w->arg);
	pthread_barrier_wait(w->bar);
	if (w->paired) {
		/* Paired floor: on a noisy machine a ratio of two loops timed
		 * back to back on the same thread drifts far less than a
		 * ratio of two runs minutes apart. */
		uint64_t f0 = bench_now_ns();
		loop_floor_paired(w->n);
		w->floor_ns = bench_now_ns() - f0;
	}
	/* Wall time is the figure; the thread's CPU time and involuntary
	 * switches tell contention (it costs CPU time) from sharing a CPU
	 * with another thread, e.g. the consumer (it costs wall time only). */
	struct rusage ru0, ru1;
	getrusage(RUSAGE_THREAD, &ru0);
	uint64_t c0 = thread_cpu_ns();
	uint64_t n0 = bench_now_ns(), t0 = bench_rdtsc();
	w->loop(w->n, w->arg);
	uint64_t t1 = bench_rdtsc(), n1 = bench_now_ns();
	w->cpu_ns = thread_cpu_ns() - c0;
	getrusage(RUSAGE_THREAD, &ru1);
	w->ns = n1 - n0;
	w->ticks = t1 - t0;
	w->nivcsw = ru1.ru_nivcsw - ru0.ru_nivcsw;
	return NULL;
}

static void default_between(int rep, void *arg)
{
	(void)rep;
	(void)arg;
	uint64_t ms = bench_env_u64("BENCH_PAUSE_MS", 200);
	struct timespec d = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	nanosleep(&d, NULL);
}

uint64_t bench_run(const char *suite, int nthreads, uint64_t n,
		   uint64_t warmup, int reps, bench_loop_fn loop, void *arg,
		   void (*between)(int rep, void *arg))
{
	struct worker *w = calloc((size_t)nthreads, sizeof(*w));
	pthread_barrier_t bar;
	int ncpu = bench_ncpus();
	uint64_t total = 0;

	if (!w) {
		perror("calloc");
		exit(1);
	}
	if (!between)
		between = default_between;
	int paired = bench_env_u64("BENCH_PAIRED_FLOOR", 1) != 0 &&
		     strcmp(suite, "floor") != 0;
	for (int r = 0; r < reps; r++) {
		pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
		for (int i = 0; i < nthreads; i++) {
			w[i] = (struct worker){.cpu = i % ncpu, .n = n,
					       .warmup = warmup, .loop = loop,
					       .arg = arg, .bar = &bar,
					       .paired = paired};
			if (pthread_create(&w[i].th, NULL, worker_main, &w[i])) {
				perror("pthread_create");
				exit(1);
			}
		}
		double sum = 0, max = 0, tsum = 0, fsum = 0, csum = 0;
		long nivcsw = 0;
		int pin_err = 0;
		for (int i = 0; i < nthreads; i++) {
			pthread_join(w[i].th, NULL);
			double ns = (double)w[i].ns / (double)n;
			sum += ns;
			tsum += (double)w[i].ticks / (double)n;
			fsum += (double)w[i].floor_ns / (double)n;
			csum += (double)w[i].cpu_ns / (double)n;
			nivcsw += w[i].nivcsw;
			if (ns > max)
				max = ns;
			pin_err |= w[i].pin_err;
		}
		pthread_barrier_destroy(&bar);
		total += (uint64_t)nthreads * (n + warmup);
		printf("RESULT suite=%s threads=%d rep=%d events=%llu ns_ev=%.4f "
		       "ns_ev_max=%.4f tsc_ev=%.3f floor_ns=%.4f cpu_ns_ev=%.4f "
		       "nivcsw=%ld pinned=%d\n",
		       suite, nthreads, r, (unsigned long long)n,
		       sum / nthreads, max, tsum / nthreads,
		       paired ? fsum / nthreads : 0.0, csum / nthreads, nivcsw,
		       pin_err == 0);
		fflush(stdout);
		if (r + 1 < reps)
			between(r, arg);
	}
	free(w);
	return total;
}

/* ---- disabled tracepoints ------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static double median_ticks(bench_cold_fn fn, uint64_t n, uint32_t *buf)
{
	fn(n, buf);
	qsort(buf, n, sizeof(*buf), cmp_u32);
	return n % 2 ? buf[n / 2] : (buf[n / 2 - 1] + (double)buf[n / 2]) / 2;
}

void bench_disabled(const char *suite, uint64_t n_hot, uint64_t n_cold,
		    int reps, bench_loop_fn hot, bench_loop_fn hot_empty,
		    bench_cold_fn cold, bench_cold_fn cold_empty)
{
	double ghz = bench_tsc_ghz();
	uint32_t *buf = malloc(n_cold * sizeof(*buf));

	if (!buf) {
		perror("malloc");
		exit(1);
	}
	bench_pin(0);
	hot(n_hot / 10, NULL); /* warm the code and the mask's line */
	hot_empty(n_hot / 10, NULL);
	for (int r = 0; r < reps; r++) {
		uint64_t a0 = bench_now_ns();
		hot_empty(n_hot, NULL);
		uint64_t a1 = bench_now_ns();
		hot(n_hot, NULL);
		uint64_t a2 = bench_now_ns();
		double empty = (double)(a1 - a0) / (double)n_hot;
		double with = (double)(a2 - a1) / (double)n_hot;
		printf("RESULT suite=%s-hot threads=1 rep=%d events=%llu ns_ev=%.4f "
		       "ns_ev_max=%.4f tsc_ev=%.3f base_ns=%.4f with_ns=%.4f\n",
		       suite, r, (unsigned long long)n_hot, with - empty,
		       with - empty, (with - empty) * ghz, empty, with);
		fflush(stdout);
	}
	for (int r = 0; r < reps; r++) {
		double e = median_ticks(cold_empty, n_cold, buf);
		double c = median_ticks(cold, n_cold, buf);
		printf("RESULT suite=%s-cold threads=1 rep=%d events=%llu ns_ev=%.4f "
		       "ns_ev_max=%.4f tsc_ev=%.3f base_ticks=%.1f with_ticks=%.1f\n",
		       suite, r, (unsigned long long)n_cold, (c - e) / ghz,
		       (c - e) / ghz, c - e, e, c);
		fflush(stdout);
	}
	free(buf);
}

/* ---- consumer CPU time and trace sizes ---------------------------------- */

uint64_t bench_task_cpu_ns(int tid)
{
	char path[96], line[1024];
	FILE *f;
	unsigned long long run = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	f = fopen(path, "r");
	if (f) {
		int ok = fscanf(f, "%llu", &run) == 1;
		fclose(f);
		if (ok)
			return run;
	}
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f)) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	/* fields after the command name, which ends at the last ')' */
	char *p = strrchr(line, ')');
	unsigned long long ut = 0, st = 0;
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			&ut, &st) == 2)
		return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	return 0;
}

int bench_list_tasks(int *tids, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			tids[n++] = atoi(e->d_name);
	}
	closedir(d);
	return n;
}

uint64_t bench_dir_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t sum = 0;
	char path[4096];
	struct stat st;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (strcmp(e->d_name, "index"))
				sum += bench_dir_bytes(path);
		} else if (S_ISREG(st.st_mode) && strcmp(e->d_name, "metadata")) {
			sum += (uint64_t)st.st_size;
		}
	}
	closedir(d);
	return sum;
}
