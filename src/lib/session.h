/* SPDX-License-Identifier: MIT */
/* Internal glue between the session (start/stop) and its parts. */
#ifndef STRATA_LIB_SESSION_H
#define STRATA_LIB_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <strata/strata.h>

/* strata_options.majors value meaning "explicitly none" (0 means default,
 * all). Bit 63 is otherwise unused: major 63 is reserved. */
#define STRATA_MAJORS_NONE STRATA_MAJOR_BIT(63)

int options_parse_majors(const char *s, uint64_t *out);
/* Apply defaults and validate; sets the detail string on error. */
int options_check(struct strata_options *o);

/* The major mask and the start/stop gate (src/lib/control.c). Every
 * wholesale write of strata_mask goes through mask_set(). */
void mask_set(uint64_t m);
uint64_t mask_wanted(void);       /* the mask as set, whatever the gate */
struct strata_event_desc;
/* Registration of a batch of events (registry lock held): arms triggers. */
void control_registered(const struct strata_event_desc *const *evs, size_t n);
/* -e patterns to apply to events as they register (on = 0: none, while
 * a session is stopped). */
void control_enable_patterns(const char *pats, int on);

#endif /* STRATA_LIB_SESSION_H */
