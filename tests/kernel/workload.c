/* SPDX-License-Identifier: MIT */
/* A thread with known behaviour (spin, sleep, sync writes, preempted) and its own ground truth, for the breakdown test. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * The subject thread, pinned to CPU 1 (or 0 on one CPU):
 *   1. spins 300 ms alone                 -> running
 *   2. sleeps 300 ms (nanosleep)          -> sleep (S)
 *   3. 40 x (write 64 KiB + fdatasync)    -> I/O wait (D)
 *   4. spins 300 ms (wall) while a competitor pinned to the same CPU
 *      spins too                          -> running ~150 ms, runnable ~150 ms
 * then prints, as one JSON line, its tid and what it measured itself:
 * /proc/self/task/TID/schedstat (run and run-queue wait ns), the sleep
 * and I/O phases' wall and CPU time, getrusage and /proc stat (ps's view).
 * User events 11:1..11:4 mark the phases (value = phase).
 */
static int cpu_pin;
static const char *io_path;
static volatile int go_competitor;

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * Steal time of the pinned CPU, in clock ticks (/proc/stat's 8th value):
 * a KVM guest's kernel leaves the time the host ran something else on
 * this vCPU out of its threads' CPU time (PARAVIRT_TIME_ACCOUNTING),
 * while the trace, reading the TSC, sees the thread on its CPU all along.
 * Only whole ticks are shown, so a phase's steal is under (delta + 1)
 * ticks.
 */
static unsigned long long steal_ticks(void)
{
	char line[512], want[16];
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");

	snprintf(want, sizeof(want), "cpu%d ", cpu_pin);
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, want, strlen(want)))
			continue;
		sscanf(line + strlen(want), "%llu %llu %llu %llu %llu %llu %llu %llu",
		       &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
		break;
	}
	if (f)
		fclose(f);
	return v[7];
}

static void pin(void)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu_pin, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static void spin_wall(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + ns;
	while (now_ns(CLOCK_MONOTONIC) < end)
		;
}

static void *competitor(void *arg)
{
	(void)arg;
	pin();
	while (!go_competitor)
		usleep(1000);
	spin_wall(300 * 1000000ull);
	return NULL;
}

static void *subject(void *arg)
{
	char line[256];
	(void)arg;
	pin();
	pid_t tid = (pid_t)syscall(SYS_gettid);

	/* A mark reads the clocks, then logs its event: a thread preempted
	 * between the two (a loaded machine) shifts the phase the trace sees
	 * from the one it measured; slack[] says by how much at most. */
	uint64_t pc[6], pw[6], slack[6];
	unsigned long long stl[6];
#define MARK(k)                                                      \
	do {                                                         \
		stl[k - 1] = steal_ticks();                              \
		pc[k - 1] = now_ns(CLOCK_THREAD_CPUTIME_ID);             \
		pw[k - 1] = now_ns(CLOCK_MONOTONIC);                    \
		STRATA_EVENT1(11, k, k);                                 \
		slack[k - 1] = now_ns(CLOCK_MONOTONIC) - pw[k - 1];      \
	} while (0)
	MARK(1);
	spin_wall(300 * 1000000ull);

	MARK(2);
	uint64_t s0 = now_ns(CLOCK_MONOTONIC);
	struct timespec ts = { 0, 300 * 1000000 };
	nanosleep(&ts, NULL);
	uint64_t sleep_wall = now_ns(CLOCK_MONOTONIC) - s0;

	MARK(3);
	static char buf[65536];
	memset(buf, 'x', sizeof(buf));
	int fd = open(io_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	uint64_t i0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	for (int i = 0; fd >= 0 && i < 40; i++) {
		if (write(fd, buf, sizeof(buf)) < 0 || fdatasync(fd) < 0)
			break;
	}
	uint64_t io_wall = now_ns(CLOCK_MONOTONIC) - i0;
	uint64_t io_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	if (fd >= 0)
		close(fd);
	unlink(io_path);

	MARK(4);
	go_competitor = 1;
	spin_wall(300 * 1000000ull);
	MARK(5);

	unsigned long long run = 0, wait = 0, slices = 0;
	snprintf(line, sizeof(line), "/proc/self/task/%d/schedstat", (int)tid);
	FILE *f = fopen(line, "r");
	if (f) {
		if (fscanf(f, "%llu %llu %llu", &run, &wait, &slices) != 3)
			run = wait = 0;
		fclose(f);
	}
	STRATA_EVENT1(11, 6, 6);
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	unsigned long utime = 0, stime = 0;
	snprintf(line, sizeof(line), "/proc/self/task/%d/stat", (int)tid);
	if ((f = fopen(line, "r"))) {
		char st[1024];
		if (fgets(st, sizeof(st), f)) {
			char *p = strrchr(st, ')');
			/* fields after ")": state(3) ... utime(14) stime(15) */
			if (p)
				sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				       &utime, &stime);
		}
		fclose(f);
	}
	printf("{\"tid\":%d,\"pid\":%d,\"cpu\":%d,\"run_ns\":%llu,\"wait_ns\":%llu,"
	       "\"sleep_wall_ns\":%llu,\"io_wall_ns\":%llu,\"io_cpu_ns\":%llu,"
	       "\"ru_utime_ns\":%llu,\"ru_stime_ns\":%llu,\"ps_utime_ns\":%llu,"
	       "\"ps_stime_ns\":%llu,\"phase_cpu_ns\":[%llu,%llu,%llu,%llu],"
	       "\"phase_wall_ns\":[%llu,%llu,%llu,%llu],\"mark_slack_ns\":[%llu,%llu,%llu,%llu,%llu],"
	       "\"phase_steal_ticks\":[%llu,%llu,%llu,%llu],\"tick_ns\":%llu}\n",
	       (int)tid, (int)getpid(), cpu_pin, run, wait,
	       (unsigned long long)sleep_wall, (unsigned long long)io_wall,
	       (unsigned long long)io_cpu,
	       (unsigned long long)ru.ru_utime.tv_sec * 1000000000ull + ru.ru_utime.tv_usec * 1000ull,
	       (unsigned long long)ru.ru_stime.tv_sec * 1000000000ull + ru.ru_stime.tv_usec * 1000ull,
	       (unsigned long long)utime * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK)),
	       (unsigned long long)stime * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK)),
	       (unsigned long long)(pc[1] - pc[0]), (unsigned long long)(pc[2] - pc[1]),
	       (unsigned long long)(pc[3] - pc[2]), (unsigned long long)(pc[4] - pc[3]),
	       (unsigned long long)(pw[1] - pw[0]), (unsigned long long)(pw[2] - pw[1]),
	       (unsigned long long)(pw[3] - pw[2]), (unsigned long long)(pw[4] - pw[3]),
	       (unsigned long long)slack[0], (unsigned long long)slack[1],
	       (unsigned long long)slack[2], (unsigned long long)slack[3],
	       (unsigned long long)slack[4], stl[1] - stl[0], stl[2] - stl[1], stl[3] - stl[2],
	       stl[4] - stl[3], 1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;

	io_path = argc > 1 ? argv[1] : "/var/tmp/strata-kernel-io";
	cpu_pin = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0;
	pthread_create(&b, NULL, competitor, NULL);
	pthread_create(&a, NULL, subject, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	strata_stop();
	return 0;
}
