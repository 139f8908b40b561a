/* SPDX-License-Identifier: MIT */
/* State dump of this process as strata records (src/lib/statedump.c). */
#ifndef STRATA_LIB_STATEDUMP_H
#define STRATA_LIB_STATEDUMP_H

#include <stdint.h>

/* Log strata:statedump begin, strata:process, one strata:thread_name per
 * thread, one strata:map per named mapping, strata:statedump end. */
void statedump_self(void);
/* Records attempted so far (they count in internal_logged). */
uint64_t statedump_logged(void);

#endif /* STRATA_LIB_STATEDUMP_H */
