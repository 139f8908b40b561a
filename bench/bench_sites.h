/* SPDX-License-Identifier: MIT */
/* bench_sites.c's two variants, as bench_strata.c calls them. */
#ifndef BENCH_SITES_H
#define BENCH_SITES_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_SITES 10000
#define BENCH_SITES_MAJOR 7

size_t branch_code_bytes(void);
size_t inline_code_bytes(void);
void bench_inline_loop_hot(uint64_t n, void *arg);
void bench_inline_loop_cold(uint64_t n, uint32_t *ticks);

#endif
