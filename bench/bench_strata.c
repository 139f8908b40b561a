/* SPDX-License-Identifier: MIT */
/* strata's producer benchmarks: event cost enabled / disabled / flight recorder, and sustained throughput to disk. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "bench_sites.h"
#include "bench_util.h"
#include "bench_events.h" /* strata-gen, from bench_events.strata */

#define M 5 /* the benchmark's major class */

/* ---- the tracepoints, one opaque call per event like the floor ---------- */

BENCH_OPAQUE static void ev1(uint64_t w)
{
	STRATA_EVENT1(M, 1, w);
}

BENCH_OPAQUE static void ev2(uint64_t w)
{
	STRATA_EVENT2(M, 2, w, w + 1);
}

/* The same one-word event through a strata-gen function (major 6). */
BENCH_OPAQUE static void gen1(uint64_t w)
{
	strata_bench_one(w);
}

/* A string field: strata-gen reserves, copies and commits (two-phase). */
BENCH_OPAQUE static void str1(uint64_t w)
{
	strata_bench_named(w, "abc");
}

BENCH_OPAQUE static void ev8(uint64_t w)
{
	const uint64_t v[8] = {w, w + 1, w + 2, w + 3, w + 4, w + 5, w + 6, w + 7};
	strata_log_words(M, 3, v, 8);
}

static void loop_ev1(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		ev1(i);
}

static void loop_ev2(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		ev2(i);
}

static void loop_gen1(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		gen1(i);
}

static void loop_str1(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		str1(i);
}

static void loop_ev8(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		ev8(i);
}

/* Disabled: the tracepoint inlined in the loop, as in real code. */
BENCH_OPAQUE static void loop_hot(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++) {
		STRATA_EVENT1(M, 1, i);
		BENCH_USE(i);
	}
}

BENCH_OPAQUE static void loop_hot_empty(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		BENCH_USE(i);
}

BENCH_OPAQUE static void loop_cold(uint64_t n, uint32_t *ticks)
{
	for (uint64_t i = 0; i < n; i++) {
		bench_clflush(&strata_mask);
		uint64_t t0 = bench_rdtsc_fenced();
		STRATA_EVENT1(M, 1, i);
		ticks[i] = (uint32_t)(bench_rdtsc_fenced() - t0);
	}
}

BENCH_OPAQUE static void loop_cold_empty(uint64_t n, uint32_t *ticks)
{
	for (uint64_t i = 0; i < n; i++) {
		bench_clflush(&strata_mask);
		uint64_t t0 = bench_rdtsc_fenced();
		BENCH_USE(i);
		ticks[i] = (uint32_t)(bench_rdtsc_fenced() - t0);
	}
}

/* ---- sessions ------------------------------------------------------------ */

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	remove(p);
	return 0;
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void start_or_die(const char *dir, int mode, size_t psize,
			 unsigned npackets)
{
	struct strata_options o;
	int rc;

	rm_tree(dir);
	memset(&o, 0, sizeof(o));
	o.output = dir;
	o.mode = mode;
	o.packet_size = psize;
	o.npackets = npackets;
	rc = strata_start(&o);
	if (rc) {
		fprintf(stderr, "strata_start(%s): %s (%s)\n", dir, strerror(-rc),
			strata_strerror_detail());
		exit(1);
	}
}

static uint64_t lost_sum(const struct strata_stats *s)
{
	return s->lost_full + s->lost_busy + s->lost_too_big + s->lost_nested +
	       s->lost_no_ring;
}

static void print_count(const char *suite, int threads, uint64_t logged,
			const struct strata_stats *s0, const char *dir)
{
	struct strata_stats s;
	static const struct strata_stats zero;

	if (!s0)
		s0 = &zero;
	strata_get_stats(&s);
	printf("COUNT suite=%s threads=%d logged=%llu recorded=%llu lost=%llu "
	       "lost_full=%llu lost_busy=%llu lost_other=%llu bytes_written=%llu "
	       "stream_bytes=%llu packets_incomplete=%llu\n",
	       suite, threads, (unsigned long long)logged,
	       (unsigned long long)(s.events_written - s0->events_written),
	       (unsigned long long)(lost_sum(&s) - lost_sum(s0)),
	       (unsigned long long)(s.lost_full - s0->lost_full),
	       (unsigned long long)(s.lost_busy - s0->lost_busy),
	       (unsigned long long)(s.lost_too_big + s.lost_nested +
				    s.lost_no_ring - s0->lost_too_big -
				    s0->lost_nested - s0->lost_no_ring),
	       (unsigned long long)(s.bytes_written - s0->bytes_written),
	       (unsigned long long)(dir ? bench_dir_bytes(dir) : 0),
	       (unsigned long long)s.packets_incomplete);
	fflush(stdout);
}

/* Event cost with the consumer writing to disk (or, in overwrite mode,
 * keeping the newest packets in memory). The rings are big enough for one
 * repetition; a first untimed lap touches every page of them, so that no
 * repetition pays the page faults of a fresh mapping. */
static int run_enabled(const char *suite, bench_loop_fn loop, int words,
		       int threads, const char *dir, int mode)
{
	uint64_t n = bench_env_u64("BENCH_EVENTS", 1000000);
	int reps = (int)bench_env_u64("BENCH_REPS", 5);
	size_t psize = (size_t)bench_env_u64("BENCH_STRATA_PACKET", 256 << 10);
	unsigned np = (unsigned)bench_env_u64("BENCH_STRATA_PACKETS", 512);
	uint64_t logged = 0;

	if (mode == STRATA_MODE_OVERWRITE)
		np = (unsigned)bench_env_u64("BENCH_STRATA_OW_PACKETS", 16);
	start_or_die(dir, mode, psize, np);
	uint64_t lap = (uint64_t)psize * np / (8u * (uint64_t)(words + 1)) + 1;
	char pre[128];
	snprintf(pre, sizeof(pre), "%s-firstlap", suite);
	uint64_t pre_logged = bench_run(pre, threads, lap, 0, 1, loop, NULL, NULL);
	struct timespec d = {0, 500 * 1000 * 1000};
	if (mode != STRATA_MODE_OVERWRITE)
		strata_flush(); /* the first lap's last packet goes out now */
	nanosleep(&d, NULL);
	struct strata_stats s0;
	strata_get_stats(&s0);
	print_count(pre, threads, pre_logged, NULL, NULL);
	logged = bench_run(suite, threads, n, n / 10, reps, loop, NULL, NULL);
	int rc = strata_stop();
	if (rc)
		fprintf(stderr, "strata_stop: %s\n", strerror(-rc));
	/* Discard mode: the timed phase only (counters minus those after the
	 * first lap). Overwrite mode: what the ring kept of the whole run. */
	if (mode == STRATA_MODE_OVERWRITE)
		print_count(suite, threads, logged + pre_logged, NULL, dir);
	else
		print_count(suite, threads, logged, &s0, dir);
	return rc ? 1 : 0;
}

/*
 * Disabled: the site as this process runs it (a patched no-op, or with
 * STRATA_PATCH=0 the jump to the mask test: suite -fallback), or
 * (`inline`) today's inline mask test, built without static branches.
 * Cold flushes strata_mask's line: a patched site does not read it.
 */
static int run_disabled(const char *dir, int inl)
{
	uint64_t n = bench_env_u64("BENCH_EVENTS", 1000000);
	int reps = (int)bench_env_u64("BENCH_REPS", 5);
	const char *suite = inl ? "strata-disabled-inline"
			    : !strcmp(strata_sites_mode(), "patched") ? "strata-disabled"
								       : "strata-disabled-fallback";

	start_or_die(dir, STRATA_MODE_DISCARD, 0, 0);
	strata_disable_majors(STRATA_MAJOR_BIT(M));
	if (strata_majors() & STRATA_MAJOR_BIT(M)) {
		fprintf(stderr, "major %d still enabled\n", M);
		return 1;
	}
	if (inl)
		bench_disabled(suite, n * 20, n / 10 ? n / 10 : 1, reps,
			       bench_inline_loop_hot, loop_hot_empty,
			       bench_inline_loop_cold, loop_cold_empty);
	else
		bench_disabled(suite, n * 20, n / 10 ? n / 10 : 1, reps,
			       loop_hot, loop_hot_empty, loop_cold, loop_cold_empty);
	strata_stop();
	print_count(suite, 1, 0, NULL, dir);
	return 0;
}

/*
 * Toggling BENCH_SITES sites: one strata_enable_majors() and one
 * strata_disable_majors() of their major, each patching every site
 * (docs/patch.md: a batch, three membarriers). ns_ev is the pair's
 * time. And the code each site costs, with and without static branches.
 */
static int run_toggle(const char *dir)
{
	int reps = (int)bench_env_u64("BENCH_REPS", 5) * 4;

	start_or_die(dir, STRATA_MODE_DISCARD, 0, 0);
	strata_disable_majors(STRATA_MAJOR_BIT(BENCH_SITES_MAJOR));
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = bench_now_ns();
		strata_enable_majors(STRATA_MAJOR_BIT(BENCH_SITES_MAJOR));
		strata_disable_majors(STRATA_MAJOR_BIT(BENCH_SITES_MAJOR));
		uint64_t t1 = bench_now_ns();
		printf("RESULT suite=strata-toggle threads=1 rep=%d events=%d ns_ev=%.1f "
		       "ns_site=%.2f mode=%s\n", r, BENCH_SITES, (double)(t1 - t0),
		       (double)(t1 - t0) / BENCH_SITES, strata_sites_mode());
		fflush(stdout);
	}
	strata_stop();
	printf("INFO site_count=%d site_code_branch=%zu site_code_inline=%zu "
	       "site_desc=%zu\n", BENCH_SITES, branch_code_bytes(), inline_code_bytes(),
	       sizeof(struct strata_site));
	return 0;
}

/* ---- sustained throughput ------------------------------------------------ */

struct trial {
	double rate;        /* events/s asked for; 0: flat out */
	double seconds;
	uint64_t logged;    /* out */
	uint64_t ns;        /* out: the producer's elapsed time */
};

static void *producer(void *p)
{
	struct trial *t = p;
	double ghz = bench_tsc_ghz();
	uint64_t total = (uint64_t)(t->rate * t->seconds);
	uint64_t deadline_ns = (uint64_t)(t->seconds * 1e9);
	uint64_t i = 0;

	bench_pin(0);
	uint64_t n0 = bench_now_ns(), t0 = bench_rdtsc();
	if (t->rate <= 0) {
		for (;;) {
			for (int k = 0; k < 4096; k++, i++)
				ev1(i);
			if (bench_now_ns() - n0 >= deadline_ns)
				break;
		}
	} else {
		double per_tick = t->rate / (ghz * 1e9);
		while (i < total) {
			uint64_t allowed =
				(uint64_t)((double)(bench_rdtsc() - t0) * per_tick);
			if (allowed > total)
				allowed = total;
			if (i >= allowed) {
				__asm__ __volatile__("pause");
				continue;
			}
			for (int k = 0; k < 16 && i < allowed; k++, i++)
				ev1(i);
		}
	}
	t->ns = bench_now_ns() - n0;
	t->logged = i;
	return NULL;
}

static int is_in(int x, const int *v, int n)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* The rings of the sustained runs: "default", or "NxSIZE" as asked by
 * BENCH_SUST_PACKETS / BENCH_SUST_PACKET. */
static const char *rings_label(void)
{
	static char buf[64];
	uint64_t np = bench_env_u64("BENCH_SUST_PACKETS", 0);
	uint64_t ps = bench_env_u64("BENCH_SUST_PACKET", 0);

	if (!np && !ps)
		return "default";
	snprintf(buf, sizeof(buf), "%llux%lluKiB",
		 (unsigned long long)(np ? np : 16),
		 (unsigned long long)((ps ? ps : 256 << 10) >> 10));
	return buf;
}

/* One trial: a fresh session, one producer pinned to CPU 0, the consumer
 * thread where the scheduler puts it. Prints a SUSTAIN line. */
static int trial_run(const char *dir, struct trial *t, const char *tag,
		     struct strata_stats *out, uint64_t *cons_ns)
{
	int before[256], after[256], nb, na;
	size_t psize = (size_t)bench_env_u64("BENCH_SUST_PACKET", 0);
	unsigned np = (unsigned)bench_env_u64("BENCH_SUST_PACKETS", 0);
	pthread_t th;

	nb = bench_list_tasks(before, 256);
	start_or_die(dir, STRATA_MODE_DISCARD, psize, np);
	na = bench_list_tasks(after, 256);
	uint64_t c0 = 0;
	for (int i = 0; i < na; i++)
		if (!is_in(after[i], before, nb))
			c0 += bench_task_cpu_ns(after[i]);
	pthread_create(&th, NULL, producer, t);
	pthread_join(th, NULL);
	/* let the consumer drain what is complete, then read its CPU time */
	struct strata_stats s;
	uint64_t last = UINT64_MAX;
	for (int k = 0; k < 300; k++) {
		strata_get_stats(&s);
		if (s.bytes_written == last)
			break;
		last = s.bytes_written;
		struct timespec d = {0, 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	uint64_t c1 = 0;
	na = bench_list_tasks(after, 256);
	for (int i = 0; i < na; i++)
		if (!is_in(after[i], before, nb))
			c1 += bench_task_cpu_ns(after[i]);
	strata_stop();
	strata_get_stats(&s);
	*out = s;
	*cons_ns = c1 - c0;
	double secs = (double)t->ns / 1e9;
	printf("SUSTAIN rings=%s tag=%s asked=%.0f achieved=%.0f logged=%llu "
	       "recorded=%llu lost=%llu bytes_written=%llu seconds=%.3f "
	       "consumer_cpu_ns=%llu\n",
	       rings_label(), tag, t->rate, (double)t->logged / secs,
	       (unsigned long long)t->logged,
	       (unsigned long long)s.events_written,
	       (unsigned long long)lost_sum(&s),
	       (unsigned long long)s.bytes_written, secs,
	       (unsigned long long)*cons_ns);
	fflush(stdout);
	rm_tree(dir);
	return lost_sum(&s) == 0 && s.events_written == t->logged;
}

static int run_sustained(const char *dir)
{
	double secs = (double)bench_env_u64("BENCH_SUST_MS", 2000) / 1000.0;
	int steps = (int)bench_env_u64("BENCH_SUST_STEPS", 8);
	struct strata_stats s;
	uint64_t cns;
	struct trial t = {.rate = 0, .seconds = secs};

	int ok = trial_run(dir, &t, "flatout", &s, &cns);
	double flat = (double)t.logged / ((double)t.ns / 1e9);
	double lo = 0, hi = flat;
	struct strata_stats best = {0};
	uint64_t best_cns = 0;
	double best_secs = 0, best_got = ok ? flat : 0;

	if (ok) { /* the producer, not the consumer, is the limit */
		lo = flat;
		best = s;
		best_cns = cns;
		best_secs = (double)t.ns / 1e9;
	}
	for (int k = 0; !ok && k < steps; k++) {
		double mid = (lo + hi) / 2;
		struct trial u = {.rate = mid, .seconds = secs};
		int good = trial_run(dir, &u, "search", &s, &cns);
		double got = (double)u.logged / ((double)u.ns / 1e9);
		if (good && got >= 0.98 * mid) {
			lo = mid;
			best = s;
			best_cns = cns;
			best_secs = (double)u.ns / 1e9;
			best_got = got;
		} else {
			hi = mid;
		}
	}
	double mb = (double)best.bytes_written / 1e6;
	/* rate: what the best lossless trial achieved (asked: its target) */
	printf("SUSTAINED rings=%s rate=%.0f asked=%.0f flatout=%.0f flatout_lost=%s "
	       "mbps=%.1f bytes_per_event=%.2f consumer_cpu_ms_per_mb=%.4f\n",
	       rings_label(), best_got, lo, flat, ok ? "0" : "yes",
	       best_secs > 0 ? mb / best_secs : 0.0,
	       best.events_written ? (double)best.bytes_written /
					     (double)best.events_written
				   : 0.0,
	       mb > 0 ? (double)best_cns / 1e6 / mb : 0.0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	const char *dir = argc > 3 ? argv[3] : NULL;

	if (!dir || threads < 1)
		goto usage;
	printf("INFO tsc_ghz=%.4f\n", bench_tsc_ghz());
	if (!strcmp(mode, "ev1"))
		return run_enabled("strata-ev1", loop_ev1, 1, threads, dir,
				   STRATA_MODE_DISCARD);
	if (!strcmp(mode, "gen1"))
		return run_enabled("strata-gen1", loop_gen1, 1, threads, dir,
				   STRATA_MODE_DISCARD);
	if (!strcmp(mode, "ev2"))
		return run_enabled("strata-ev2", loop_ev2, 2, threads, dir,
				   STRATA_MODE_DISCARD);
	if (!strcmp(mode, "str"))
		return run_enabled("strata-str", loop_str1, 2, threads, dir,
				   STRATA_MODE_DISCARD);
	/* The same event with the fallbacks' write protocols (ring.md §7):
	 * CAS, and rseq around CLOCK_MONOTONIC. The library chooses when it
	 * is loaded: run again with the environment that makes it choose so. */
	static const struct {
		const char *mode, *suite, *var, *val;
	} fallback[] = {{"cas", "strata-cas", "STRATA_RSEQ", "0"},
			{"mono", "strata-mono", "STRATA_CLOCK", "mono"}};
	for (size_t i = 0; i < sizeof(fallback) / sizeof(fallback[0]); i++) {
		const char *cur = getenv(fallback[i].var);

		if (strcmp(mode, fallback[i].mode))
			continue;
		if (!cur || strcmp(cur, fallback[i].val)) {
			setenv(fallback[i].var, fallback[i].val, 1);
			execv("/proc/self/exe", argv);
			perror("execv /proc/self/exe");
			return 1;
		}
		return run_enabled(fallback[i].suite, loop_ev1, 1, threads, dir,
				   STRATA_MODE_DISCARD);
	}
	if (!strcmp(mode, "ev8"))
		return run_enabled("strata-ev8", loop_ev8, 8, threads, dir,
				   STRATA_MODE_DISCARD);
	if (!strcmp(mode, "overwrite"))
		return run_enabled("strata-overwrite", loop_ev1, 1, threads, dir,
				   STRATA_MODE_OVERWRITE);
	if (!strcmp(mode, "disabled"))
		return run_disabled(dir, 0);
	if (!strcmp(mode, "disabled-inline"))
		return run_disabled(dir, 1);
	if (!strcmp(mode, "toggle"))
		return run_toggle(dir);
	if (!strcmp(mode, "sustained"))
		return run_sustained(dir);
usage:
	fprintf(stderr,
		"usage: %s ev1|gen1|ev2|ev8|str|cas|mono|overwrite|disabled|disabled-inline|toggle|sustained THREADS DIR\n",
		argv[0]);
	return 2;
}
