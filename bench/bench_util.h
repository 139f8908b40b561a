/* SPDX-License-Identifier: MIT */
/* Shared helpers of the benchmark programs: clocks, pinning, the timed thread runner and result lines. */
#ifndef STRATA_BENCH_UTIL_H
#define STRATA_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* An opaque call: neither inlined, cloned nor specialised by IPA, so the
 * measured loop really pays one call per event, for every tracer alike. */
#if defined(__GNUC__) && !defined(__clang__)
#define BENCH_OPAQUE __attribute__((noipa))
#else
#define BENCH_OPAQUE __attribute__((noinline))
#endif

/* Keep `v` alive in a register without emitting any instruction. */
#define BENCH_USE(v) __asm__ __volatile__("" ::"r"(v))

static inline uint64_t bench_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* rdtsc that neither starts before earlier instructions complete nor lets
 * later ones start before it (lfence on both sides). */
static inline uint64_t bench_rdtsc_fenced(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence"
			     : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Evict the cache line holding `p` and wait for the eviction. */
static inline void bench_clflush(const volatile void *p)
{
	__asm__ __volatile__("clflush (%0)\n\tmfence" ::"r"(p) : "memory");
}

uint64_t bench_now_ns(void); /* CLOCK_MONOTONIC */
double bench_tsc_ghz(void);  /* calibrated once, ticks per ns */
int bench_ncpus(void);       /* CPUs this process may run on */
int bench_pin(int cpu);      /* pin the calling thread; 0 or -errno */
uint64_t bench_env_u64(const char *name, uint64_t dflt);

/* The floor: rdtsc plus a 16-byte store into a thread-local array. */
void bench_floor_event(uint64_t w);

/*
 * Run `loop(n, arg)` on `nthreads` threads pinned to CPUs 0..nthreads-1,
 * `reps` times. Each thread first runs `warmup` iterations untimed, waits
 * on a barrier with the others, then times its own loop of `n`. Prints one
 * line per repetition:
 *   RESULT suite=S threads=T rep=R events=N ns_ev=MEAN ns_ev_max=MAX tsc_ev=TICKS floor_ns=F
 * where MEAN/MAX are over threads (each thread's ns per event). Unless
 * $BENCH_PAIRED_FLOOR=0, each thread times n floor events just before its
 * loop (F, their mean ns per event; 0 when not paired). Between
 * repetitions `between(rep, arg)` runs (NULL: sleep $BENCH_PAUSE_MS).
 * Returns the number of loop iterations run in all (warm-ups included).
 */
typedef void (*bench_loop_fn)(uint64_t n, void *arg);
uint64_t bench_run(const char *suite, int nthreads, uint64_t n,
		   uint64_t warmup, int reps, bench_loop_fn loop, void *arg,
		   void (*between)(int rep, void *arg));

/*
 * Disabled-tracepoint cost. `hot(n)` and `hot_empty(n)` run n iterations
 * with and without the tracepoint; `cold(n, ticks)`/`cold_empty` time each
 * iteration after flushing the mask's cache line. Prints
 *   RESULT suite=S-hot  ... ns_ev=<added ns per iteration>
 *   RESULT suite=S-cold ... ns_ev=<added ns> tsc_ev=<added ticks>
 * per repetition.
 */
typedef void (*bench_cold_fn)(uint64_t n, uint32_t *ticks);
void bench_disabled(const char *suite, uint64_t n_hot, uint64_t n_cold,
		    int reps, bench_loop_fn hot, bench_loop_fn hot_empty,
		    bench_cold_fn cold, bench_cold_fn cold_empty);

/* CPU time (ns) consumed so far by thread `tid` of this process, from
 * /proc/self/task/TID/schedstat, or /proc/.../stat when that is missing. */
uint64_t bench_task_cpu_ns(int tid);
/* Thread ids of this process, into `tids` (at most `max`); returns count. */
int bench_list_tasks(int *tids, int max);

/* Bytes of the regular files under `dir`, recursively, skipping files
 * named "metadata" and directories named "index". */
uint64_t bench_dir_bytes(const char *dir);

#endif /* STRATA_BENCH_UTIL_H */
