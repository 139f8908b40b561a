/* SPDX-License-Identifier: MIT */
/* Internal name for the atomics of the public inline header. */
#ifndef STRATA_COMMON_ATOMIC_H
#define STRATA_COMMON_ATOMIC_H

/* One set of primitives for the whole project: the producer's inline fast
 * path is public, so they live in include/strata/inline/atomic.h. */
#include <strata/inline/atomic.h>

#endif /* STRATA_COMMON_ATOMIC_H */
