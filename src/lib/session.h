/* SPDX-License-Identifier: MIT */
/* Internal glue between the session (start/stop) and its parts. */
#ifndef STRATA_LIB_SESSION_H
#define STRATA_LIB_SESSION_H

#include <stdint.h>

#include <strata/strata.h>

/* strata_options.majors value meaning "explicitly none" (0 means default,
 * all). Bit 63 is otherwise unused: major 63 is reserved. */
#define STRATA_MAJORS_NONE STRATA_MAJOR_BIT(63)

int options_parse_majors(const char *s, uint64_t *out);
/* Apply defaults and validate; sets the detail string on error. */
int options_check(struct strata_options *o);

#endif /* STRATA_LIB_SESSION_H */
