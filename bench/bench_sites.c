/* SPDX-License-Identifier: MIT */
/* 10,000 tracepoint sites for bench_strata's toggle and code-size rows: built twice, with static branches and with the inline mask test (STRATA_NO_STATIC_BRANCH), and the disabled loops of the latter. */
#include <stdint.h>

#include <strata/strata.h>

#include "bench_sites.h"
#include "bench_util.h"

/*
 * Each variant's site functions go to a section of their own, so that
 * __start_/__stop_ give their code's size exactly (GCC does not split
 * functions with a section into hot and cold parts), and are not
 * aligned (compiled with -falign-functions=1): the difference between
 * the two sections, over BENCH_SITES, is what a static branch adds to a
 * site's code. Major BENCH_SITES_MAJOR is never enabled but by the
 * toggle row.
 */
#ifdef STRATA_NO_STATIC_BRANCH
#define VARIANT(x) inline_##x
#define SECTION "bench_code_inline"
#else
#define VARIANT(x) branch_##x
#define SECTION "bench_code_branch"
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(n) CAT(VARIANT(site_), n)

#define SITE(n)                                                                \
	__attribute__((noinline, section(SECTION))) void FN(n)(uint64_t v);    \
	void FN(n)(uint64_t v)                                                 \
	{                                                                      \
		STRATA_EVENT1(BENCH_SITES_MAJOR, n, v);                        \
	}
#include "bench_sites.inc"
#undef SITE

#ifdef STRATA_NO_STATIC_BRANCH
/* Today's tracepoint: the mask test inline, as before static branches,
 * in the same loops as bench_strata.c's (M = 5). */
BENCH_OPAQUE void bench_inline_loop_hot(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++) {
		STRATA_EVENT1(5, 1, i);
		BENCH_USE(i);
	}
}

BENCH_OPAQUE void bench_inline_loop_cold(uint64_t n, uint32_t *ticks)
{
	for (uint64_t i = 0; i < n; i++) {
		bench_clflush(&strata_mask);
		uint64_t t0 = bench_rdtsc_fenced();
		STRATA_EVENT1(5, 1, i);
		ticks[i] = (uint32_t)(bench_rdtsc_fenced() - t0);
	}
}
#endif

extern const char CAT(__start_, bench_code_inline)[] __attribute__((weak));
extern const char CAT(__stop_, bench_code_inline)[] __attribute__((weak));
extern const char CAT(__start_, bench_code_branch)[] __attribute__((weak));
extern const char CAT(__stop_, bench_code_branch)[] __attribute__((weak));

/* Bytes of code of the BENCH_SITES functions of each variant. */
size_t VARIANT(code_bytes)(void)
{
#ifdef STRATA_NO_STATIC_BRANCH
	return (size_t)(__stop_bench_code_inline - __start_bench_code_inline);
#else
	return (size_t)(__stop_bench_code_branch - __start_bench_code_branch);
#endif
}
