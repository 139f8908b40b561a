/* SPDX-License-Identifier: MIT */
/* Instantiates the LTTng-UST probe of lttng_tp.h (linked statically into bench_lttng). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"
