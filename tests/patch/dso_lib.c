/* SPDX-License-Identifier: MIT */
/* A shared library with tracepoint sites of its own, loaded and unloaded by dso_test.c. */
#include <stdint.h>

#include <strata/strata.h>

#include "dso.h"

#define API __attribute__((visibility("default")))

extern const struct strata_site __start___strata_sites[] __attribute__((weak, visibility("hidden")));
extern const struct strata_site __stop___strata_sites[] __attribute__((weak, visibility("hidden")));

/* This library's own section, for the test to read its sites. */
API void lib_sites(const struct strata_site **start, const struct strata_site **stop);
API void lib_sites(const struct strata_site **start, const struct strata_site **stop)
{
	*start = __start___strata_sites;
	*stop = __stop___strata_sites;
}

/* One event of each kind: a generic site of major 21, two generated
 * events with flags (major 22). */
API void lib_fire(uint64_t v);
API void lib_fire(uint64_t v)
{
	STRATA_EVENT1(21, 1, v);
	strata_dsoev_one(v);
	strata_dsoev_two(v);
}
