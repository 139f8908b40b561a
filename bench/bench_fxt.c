/* SPDX-License-Identifier: MIT */
/* FxT (FUT) peer: the cost of FUT_PROBE1 with one word, enabled (recording to a file) or disabled. */
#define CONFIG_FUT
#include <fut.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_util.h"

#define KEY FUT_KEYMASK1
#define CODE 0x1234

BENCH_OPAQUE static void ev_fxt(uint64_t w)
{
	FUT_PROBE1(KEY, CODE, w);
}

static void loop_enabled(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		ev_fxt(i);
}

BENCH_OPAQUE static void loop_hot(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++) {
		FUT_PROBE1(KEY, CODE, i);
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
		bench_clflush(&fut_active);
		uint64_t t0 = bench_rdtsc_fenced();
		FUT_PROBE1(KEY, CODE, i);
		ticks[i] = (uint32_t)(bench_rdtsc_fenced() - t0);
	}
}

BENCH_OPAQUE static void loop_cold_empty(uint64_t n, uint32_t *ticks)
{
	for (uint64_t i = 0; i < n; i++) {
		bench_clflush(&fut_active);
		uint64_t t0 = bench_rdtsc_fenced();
		BENCH_USE(i);
		ticks[i] = (uint32_t)(bench_rdtsc_fenced() - t0);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	const char *out = argc > 3 ? argv[3] : NULL;
	uint64_t n = bench_env_u64("BENCH_EVENTS", 1000000);
	int reps = (int)bench_env_u64("BENCH_REPS", 5);
	unsigned tid = (unsigned)syscall(SYS_gettid);

	if (!strcmp(mode, "enabled") && threads >= 1 && out) {
		/*
		 * FxT has one buffer shared by all threads and a flush that
		 * stops every writer while it writes; size the buffer for the
		 * whole run so that no flush lands in a timed loop, as FxT's
		 * users do (STARPU_TRACE_BUFFER_SIZE). Events that do not fit
		 * are lost: FxT then clears fut_active.
		 */
		uint64_t logged_max = (uint64_t)threads * (n + n / 10) * reps;
		uint64_t bytes = logged_max * FUT_SIZE(1) + (16u << 20);
		fut_set_filename((char *)out);
		if (fut_setup(bytes, FUT_KEYMASKALL, tid) < 0) {
			perror("fut_setup");
			return 1;
		}
		if (fut_keychange(FUT_ENABLE, FUT_KEYMASKALL, tid) < 0) {
			perror("fut_keychange");
			return 1;
		}
		uint64_t logged = bench_run("fxt", threads, n, n / 10, reps,
					    loop_enabled, NULL, NULL);
		int still_active = fut_active != 0;
		if (fut_endup((char *)out) == (uint64_t)-1) {
			perror("fut_endup");
			return 1;
		}
		fut_done();
		struct stat st;
		printf("LOGGED suite=fxt threads=%d logged=%llu active_at_end=%d "
		       "file_bytes=%lld\n", threads, (unsigned long long)logged,
		       still_active, stat(out, &st) ? -1LL : (long long)st.st_size);
		return 0;
	}
	if (!strcmp(mode, "disabled")) {
		/* FxT never set up: fut_active is 0, every probe is masked. */
		bench_disabled("fxt-disabled", n * 20, n / 10 ? n / 10 : 1, reps,
			       loop_hot, loop_hot_empty, loop_cold,
			       loop_cold_empty);
		return 0;
	}
	fprintf(stderr, "usage: %s enabled THREADS FILE | disabled\n", argv[0]);
	return 2;
}
