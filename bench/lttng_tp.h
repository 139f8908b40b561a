/* SPDX-License-Identifier: MIT */
/* LTTng-UST tracepoint provider of the peer benchmark: one event with one uint64 field. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER strata_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(STRATA_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define STRATA_BENCH_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
	strata_bench, ev,
	LTTNG_UST_TP_ARGS(uint64_t, w),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, w, w))
)

#endif /* STRATA_BENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
