/* SPDX-License-Identifier: MIT */
/* Out of the box: one unpinned thread logs through the session its environment started (STRATA_OUTPUT, STRATA_GUARD=1, strata record), flat out or paced; and the disk's own O_DIRECT write bandwidth. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "bench_util.h"
#include "bench_events.h" /* strata-gen, from bench_events.strata */

/*
 * No strata_start(): libstrata's constructor has already started what the
 * environment asks for, as for any program (docs/record.md, "The embedded
 * mode"), with the default rings (16 x 256 KiB per CPU) unless the
 * environment says otherwise, and stops it at exit (the trace is written,
 * a line on stderr if anything was lost). run.sh reads the counts from the
 * trace with `strata info`. The event is the strata-gen function a user
 * would call (one u64 field: 12 bytes on disk, docs/compact.md).
 */

BENCH_OPAQUE static void ev(uint64_t w)
{
	strata_bench_one(w);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- where the consumer runs, and what the scheduler gave it ------------ */

/* Scheduler figures of a set of threads (/proc/PID/task/TID/schedstat
 * and status): time on a CPU, time runnable but waiting for one, time
 * slices, and the switches away: voluntary (it slept: no work, or waiting
 * for its write) and involuntary (preempted). */
struct sched_sum {
	unsigned long long cpu_ns, wait_ns, slices, vcsw, ivcsw;
	int tasks;
};

/*
 * The consumer's process: ours (the in-process consumer thread), the
 * parent under `strata record` (the session daemon), or the guardian,
 * which is nobody's child: the `strata record --guard FD -o DIR` whose DIR
 * is our STRATA_OUTPUT (other programs may have guardians of their own).
 * 0 when it cannot be found.
 */
static int consumer_pid(const char **via)
{
	const char *g = getenv("STRATA_GUARDED"),
		   *out = getenv("STRATA_OUTPUT");
	const char *sess = getenv("STRATA_SESSION");
	char want[PATH_MAX], path[300], buf[8192];

	/* strata record sets STRATA_SESSION for us; the library sets it
	 * and STRATA_GUARDED once it has joined its guardian */
	if (!g || strcmp(g, "1")) {
		*via = sess ? "daemon" : "inproc";
		return sess ? (int)getppid() : (int)getpid();
	}
	*via = "guardian";
	if (!out || !realpath(out, want))
		return 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		int guard = 0;
		for (char *a = buf; a < buf + n; a += strlen(a) + 1) {
			if (!strcmp(a, "--guard"))
				guard = 1;
			if (guard && !strcmp(a, "-o") &&
			    a + strlen(a) + 1 < buf + n &&
			    !strcmp(a + strlen(a) + 1, want))
				found = atoi(e->d_name);
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* Sums the schedstat of every thread of `pid` but the calling one. */
static void sched_sample(int pid, struct sched_sum *s)
{
	char path[96];
	int self = (int)gettid();

	memset(s, 0, sizeof(*s));
	if (!pid)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int tid = atoi(e->d_name);
		if (tid <= 0 || tid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid,
			 tid);
		FILE *f = fopen(path, "re");
		unsigned long long c, w, n;
		if (f && fscanf(f, "%llu %llu %llu", &c, &w, &n) == 3) {
			s->cpu_ns += c;
			s->wait_ns += w;
			s->slices += n;
			s->tasks++;
		}
		if (f)
			fclose(f);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid,
			 tid);
		char line[256];
		if (!(f = fopen(path, "re")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &n) ==
			    1)
				s->vcsw += n;
			else if (sscanf(line,
					"nonvoluntary_ctxt_switches: %llu",
					&n) == 1)
				s->ivcsw += n;
		}
		fclose(f);
	}
	if (d)
		closedir(d);
}

/* Steal time: what the hypervisor took from each of this guest's CPUs
 * (/proc/stat, 8th value, in USER_HZ ticks). A consumer whose virtual CPU
 * is not run for longer than its ring lasts loses events that no figure
 * inside the guest explains (its schedstat wait counts only the guest's
 * own scheduler). Sums over the CPUs, and the largest of one CPU, in ms. */
#define STEAL_CPUS 256
struct steal {
	unsigned long long cpu[STEAL_CPUS];
	int n;
};

static void steal_sample(struct steal *st)
{
	char line[512];
	FILE *f = fopen("/proc/stat", "re");
	st->n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long v[8];
		int cpu;
		if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9')
			continue;
		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 9 &&
		    st->n < STEAL_CPUS)
			st->cpu[st->n++] = v[7];
	}
	if (f)
		fclose(f);
}

static void steal_diff(const struct steal *a, const struct steal *b, double *sum_ms,
		       double *max_ms)
{
	double ms = 1000.0 / (double)sysconf(_SC_CLK_TCK);
	*sum_ms = *max_ms = 0;
	for (int i = 0; i < a->n && i < b->n; i++) {
		double d = (double)(b->cpu[i] - a->cpu[i]) * ms;
		*sum_ms += d;
		*max_ms = d > *max_ms ? d : *max_ms;
	}
}

/* The traces' block device over the run (/sys/dev/block/MAJ:MIN/stat of
 * the file system holding BENCH_OOB_DISK_DIR, else the current folder):
 * sectors written and the milliseconds it had a request in flight
 * (io_ticks). The consumer writes one request at a time, so a device busy
 * the whole run is a consumer that wrote the whole run: the disk's rate
 * during the run, not beside it, was what the program logged. */
struct disk_stat {
	unsigned long long wsect, busy_ms;
	int ok;
};

static void disk_sample(struct disk_stat *d)
{
	const char *dir = getenv("BENCH_OOB_DISK_DIR");
	char path[96];
	struct stat st;
	unsigned long long v[10];

	d->ok = 0;
	if (stat(dir && *dir ? dir : ".", &st))
		return;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat", major(st.st_dev),
		 minor(st.st_dev));
	FILE *f = fopen(path, "re");
	if (f && fscanf(f, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
			&v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) == 10) {
		d->wsect = v[6];
		d->busy_ms = v[9];
		d->ok = 1;
	}
	if (f)
		fclose(f);
}

/* Bursts of the paced loop: long enough that the two rdtsc around each
 * (the time inside the calls) cost under half a nanosecond per event,
 * short enough (about a microsecond) that the rate stays even. Flat out,
 * the clock is read every FLAT_CHUNK events. */
#define BURST 64
#define FLAT_CHUNK 4096

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * Log for `ms` milliseconds on the calling thread, wherever the scheduler
 * puts it: flat out when rate <= 0, else `rate` events per second, in
 * bursts of BURST as the TSC allows them (a CPU-bound program: it spins
 * between bursts). Prints one OOB_LOOP line:
 *   loop_ns   the loop's wall time (flat out: time inside the logging loop)
 *   call_ns   time inside the chunks of calls (paced: what the producer
 *             paid for its events, preemptions during a burst included)
 *   med_ns_ev the median chunk's time per event: the usual cost, which
 *             the rare preempted chunk does not move (nor the rare slow
 *             path: a packet switch is one event in 21,845)
 *   cpu_ns    the thread's CPU time over the loop (less than loop_ns when
 *             it was preempted: by the consumer, or by anything else)
 *   via       where the consumer runs: inproc (a thread of ours),
 *             guardian (STRATA_GUARD=1), daemon (strata record)
 *   cons_*    the consumer's threads over the loop (consumer_pid()): CPU
 *             time, time spent runnable waiting for a CPU, time slices,
 *             voluntary and involuntary switches
 *   steal_*   the hypervisor's steal time over the loop, summed over the
 *             CPUs and the most of one CPU, ms (steal_sample())
 *   disk_*    the traces' device over the loop: MB written (by anyone)
 *             and ms with a request in flight (disk_sample()); -1 when
 *             its statistics cannot be read
 */
static int run_log(double rate, uint64_t ms)
{
	double ghz = bench_tsc_ghz();
	uint64_t deadline = ms * 1000000u, i = 0, call_ticks = 0;
	uint64_t total = rate > 0 ? (uint64_t)(rate * (double)ms / 1000.0) : 0;
	/* chunk times: flat out at 1 ns/event would be 250 chunks per ms */
	size_t cap = rate > 0 ? (size_t)(total / BURST + 2) :
				(size_t)(ms * 256 + 16);
	uint32_t *chunk = malloc(cap * sizeof(*chunk));
	size_t nchunk = 0;
	struct rusage ru0, ru1;
	struct sched_sum s0, s1;
	static struct steal st0, st1;
	struct disk_stat dk0, dk1;
	double steal_ms, steal_max_ms;
	const char *via = "?";
	int cpid = consumer_pid(&via);

	if (!chunk) {
		perror("malloc");
		return 1;
	}
	if (!(strata_majors() & STRATA_MAJOR_BIT(6))) {
		fprintf(stderr,
			"bench_oob: tracing is not on (set STRATA_OUTPUT, "
			"or run under strata record)\n");
		free(chunk);
		return 1;
	}
	/* the pages of the chunk array now, not inside the loop */
	memset(chunk, 0, cap * sizeof(*chunk));
	sched_sample(cpid, &s0);
	steal_sample(&st0);
	disk_sample(&dk0);
	getrusage(RUSAGE_THREAD, &ru0);
	uint64_t c0 = thread_cpu_ns();
	uint64_t n0 = bench_now_ns(), t0 = bench_rdtsc();
	if (rate <= 0) {
		for (;;) {
			uint64_t b = bench_rdtsc();
			for (int k = 0; k < FLAT_CHUNK; k++, i++)
				ev(i);
			uint64_t d = bench_rdtsc() - b;
			call_ticks += d;
			if (nchunk < cap)
				chunk[nchunk++] = d > UINT32_MAX ? UINT32_MAX :
								   (uint32_t)d;
			if (bench_now_ns() - n0 >= deadline)
				break;
		}
	} else {
		double per_tick = rate / (ghz * 1e9);
		while (i < total) {
			uint64_t now = bench_rdtsc();
			uint64_t allowed =
				(uint64_t)((double)(now - t0) * per_tick);
			if (allowed > total)
				allowed = total;
			if (allowed < i + BURST && allowed < total) {
				__asm__ __volatile__("pause");
				continue;
			}
			uint64_t end = i + BURST < total ? i + BURST : total;
			int full = end - i == BURST;
			for (; i < end; i++)
				ev(i);
			uint64_t d = bench_rdtsc() - now;
			call_ticks += d;
			if (full && nchunk < cap)
				chunk[nchunk++] = d > UINT32_MAX ? UINT32_MAX :
								   (uint32_t)d;
		}
	}
	uint64_t loop_ns = bench_now_ns() - n0;
	uint64_t cpu_ns = thread_cpu_ns() - c0;
	getrusage(RUSAGE_THREAD, &ru1);
	sched_sample(cpid, &s1);
	steal_sample(&st1);
	disk_sample(&dk1);
	int dk = dk0.ok && dk1.ok;
	steal_diff(&st0, &st1, &steal_ms, &steal_max_ms);
	double med = 0;
	if (nchunk) {
		qsort(chunk, nchunk, sizeof(*chunk), cmp_u32);
		med = (double)chunk[nchunk / 2] / ghz /
		      (rate > 0 ? BURST : FLAT_CHUNK);
	}
	free(chunk);
	printf("OOB_LOOP asked=%.0f logged=%llu loop_ns=%llu call_ns=%.0f "
	       "med_ns_ev=%.3f cpu_ns=%llu nivcsw=%ld nvcsw=%ld minflt=%ld "
	       "majors=0x%llx via=%s cons_pid=%d cons_tasks=%d cons_cpu_ns=%llu "
	       "cons_wait_ns=%llu cons_slices=%llu cons_vcsw=%llu cons_ivcsw=%llu "
	       "steal_ms=%.0f steal_max_ms=%.0f disk_mb=%.1f disk_busy_ms=%lld\n",
	       rate > 0 ? rate : 0.0, (unsigned long long)i,
	       (unsigned long long)loop_ns, (double)call_ticks / ghz, med,
	       (unsigned long long)cpu_ns, ru1.ru_nivcsw - ru0.ru_nivcsw,
	       ru1.ru_nvcsw - ru0.ru_nvcsw, ru1.ru_minflt - ru0.ru_minflt,
	       (unsigned long long)strata_majors(), via, cpid, s1.tasks,
	       s1.cpu_ns - s0.cpu_ns, s1.wait_ns - s0.wait_ns,
	       s1.slices - s0.slices, s1.vcsw - s0.vcsw, s1.ivcsw - s0.ivcsw, steal_ms,
	       steal_max_ms, dk ? (double)(dk1.wsect - dk0.wsect) * 512 / 1e6 : -1.0,
	       dk ? (long long)(dk1.busy_ms - dk0.busy_ms) : -1LL);
	fflush(stdout);
	return 0;
}

/*
 * The disk's own sequential write bandwidth, as the consumer writes
 * (docs/record.md, "Direct I/O", "Batches"): a new file, O_DIRECT, 1 MiB
 * writes from one aligned buffer, one at a time, then fdatasync (256 KiB
 * ones, a packet each as the consumer wrote before, moved 1.6 GB/s here
 * where 1 MiB ones move 2.6). Prints
 *   DISK bytes=B ns=T mbps=M direct=1 p50_ms=.. p99_ms=.. max_ms=..
 * the last three: the time of one write (a stall longer than a ring
 * lasts at the rate it is written costs events, docs/ring.md §8);
 * (direct=0: the file system refused O_DIRECT; buffered writes, then the
 * figure includes the page cache and means little).
 */
static int run_disk(const char *path, uint64_t mib)
{
	const size_t bs = 1 << 20;
	uint64_t n = mib * (1u << 20) / bs, done = 0;
	int direct = 1;
	void *buf;
	uint32_t *lat = calloc(n ? n : 1, sizeof(*lat)); /* us per write */

	if (!lat || posix_memalign(&buf, 4096, bs)) {
		perror("bench_oob: memory");
		free(lat);
		return 1;
	}
	for (size_t k = 0; k < bs; k++) /* not all zeros, in case it matters */
		((unsigned char *)buf)[k] = (unsigned char)(k * 131 + 7);
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC,
		      0600);
	if (fd < 0 && errno == EINVAL) {
		direct = 0;
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		fprintf(stderr, "bench_oob: %s: %s\n", path, strerror(errno));
		free(buf);
		free(lat);
		return 1;
	}
	uint64_t t0 = bench_now_ns();
	for (uint64_t k = 0; k < n; k++) {
		uint64_t w0 = bench_now_ns();
		ssize_t w = pwrite(fd, buf, bs, (off_t)(k * bs));
		lat[k] = (uint32_t)((bench_now_ns() - w0) / 1000);
		if (w != (ssize_t)bs) {
			fprintf(stderr, "bench_oob: %s: write: %s\n", path,
				w < 0 ? strerror(errno) : "short write");
			break;
		}
		done += bs;
	}
	fdatasync(fd);
	uint64_t ns = bench_now_ns() - t0;
	close(fd);
	unlink(path);
	free(buf);
	uint64_t nw = done / bs;
	qsort(lat, nw ? nw : 1, sizeof(*lat), cmp_u32);
	printf("DISK bytes=%llu ns=%llu mbps=%.1f direct=%d p50_ms=%.3f "
	       "p99_ms=%.3f max_ms=%.3f\n",
	       (unsigned long long)done, (unsigned long long)ns,
	       ns ? (double)done / 1e6 / ((double)ns / 1e9) : 0.0, direct,
	       lat[nw / 2] / 1e3, lat[nw * 99 / 100] / 1e3,
	       lat[nw ? nw - 1 : 0] / 1e3);
	free(lat);
	return done == n * bs ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "log")) {
		double rate = strcmp(argv[2], "flat") ? strtod(argv[2], NULL) :
							0;
		return run_log(rate, strtoull(argv[3], NULL, 0));
	}
	if (argc == 4 && !strcmp(argv[1], "disk"))
		return run_disk(argv[2], strtoull(argv[3], NULL, 0));
	fprintf(stderr,
		"usage: %s log flat|EVENTS_PER_SECOND MS   (under STRATA_OUTPUT or strata record)\n"
		"       %s disk FILE MIB\n",
		argv[0], argv[0]);
	return 2;
}
