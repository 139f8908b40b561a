/* SPDX-License-Identifier: MIT */
/* Generic tracepoints of 0 to 4 words: STRATA_EVENT0 ... STRATA_EVENT4. */
#ifndef STRATA_INLINE_EVENT_H
#define STRATA_INLINE_EVENT_H

#include <stdint.h>

#include <strata/strata.h> /* strata_mask, STRATA_MAJOR_BIT, STRATA_ID */

#ifndef STRATA_DISABLE

#include <strata/inline/branch.h>
#include <strata/inline/ring.h>

/* The mask check of every tracepoint: one load of a hot word and a
 * predictable branch (DESIGN.md, the producer, step 1). */
#define strata_major_enabled(major)                                            \
	strata_unlikely(strata_mask & STRATA_MAJOR_BIT(major))

/* Each call site keeps its compact id in a byte of its own (docs/compact.md):
 * 0 until its first event asks the library for one. Only a site whose id
 * is a constant: one whose major or minor varies would log every event
 * under the id it saw first; it takes the library's id cache instead
 * (NULL), at the cost of the out-of-line path. */
#define STRATA_SITE_CID_(major, minor, cid)                                    \
	(__builtin_constant_p(STRATA_ID(major, minor)) ? &(cid) : (uint8_t *)0)
/*
 * The site (docs/patch.md): a 5-byte jump that the library patches into a
 * no-op while the major is off, so that a disabled tracepoint reads no
 * data; the jump goes on to the mask test, as before, which stays the
 * truth (a site patched late or never is still correct). Each site gets
 * a label of its own from __COUNTER__, passed down once so that both of
 * its uses see the same number.
 */
#define STRATA_EVENT_(major, minor, n, ...)                                    \
	STRATA_EVENT_AT_(__COUNTER__, major, minor, n, __VA_ARGS__)
#define STRATA_EVENT_AT_(c, major, minor, n, ...)                              \
	STRATA_EVENT_AT2_(c, major, minor, n, __VA_ARGS__)
#define STRATA_EVENT_AT2_(c, major, minor, n, ...)                             \
	do {                                                                   \
		STRATA_BRANCH(major, "0", strata_on_##c);                      \
		break;                                                         \
	strata_on_##c:                                                         \
		if (strata_major_enabled(major)) {                             \
			static uint8_t strata_cid_;                            \
			const uint64_t strata_w_[] = {__VA_ARGS__};            \
			strata_log_fixed(STRATA_SITE_CID_(major, minor,        \
							  strata_cid_),        \
					 STRATA_ID(major, minor), (n) + 1,     \
					 strata_w_);                           \
		}                                                              \
	} while (0)

#define STRATA_EVENT0(major, minor) STRATA_EVENT0_AT_(__COUNTER__, major, minor)
#define STRATA_EVENT0_AT_(c, major, minor) STRATA_EVENT0_AT2_(c, major, minor)
#define STRATA_EVENT0_AT2_(c, major, minor)                                    \
	do {                                                                   \
		STRATA_BRANCH(major, "0", strata_on_##c);                      \
		break;                                                         \
	strata_on_##c:                                                         \
		if (strata_major_enabled(major)) {                             \
			static uint8_t strata_cid_;                            \
			strata_log_fixed(STRATA_SITE_CID_(major, minor,        \
							  strata_cid_),        \
					 STRATA_ID(major, minor), 1, 0);       \
		}                                                              \
	} while (0)
#define STRATA_EVENT1(major, minor, w0)                                        \
	STRATA_EVENT_(major, minor, 1, (uint64_t)(w0))
#define STRATA_EVENT2(major, minor, w0, w1)                                    \
	STRATA_EVENT_(major, minor, 2, (uint64_t)(w0), (uint64_t)(w1))
#define STRATA_EVENT3(major, minor, w0, w1, w2)                                \
	STRATA_EVENT_(major, minor, 3, (uint64_t)(w0), (uint64_t)(w1),         \
		      (uint64_t)(w2))
#define STRATA_EVENT4(major, minor, w0, w1, w2, w3)                            \
	STRATA_EVENT_(major, minor, 4, (uint64_t)(w0), (uint64_t)(w1),         \
		      (uint64_t)(w2), (uint64_t)(w3))

#else /* STRATA_DISABLE: every tracepoint compiles to nothing, arguments
       * are not evaluated, and nothing references libstrata. */

#define strata_major_enabled(major) 0
#define STRATA_EVENT0(major, minor) ((void)0)
#define STRATA_EVENT1(major, minor, w0) ((void)sizeof(w0))
#define STRATA_EVENT2(major, minor, w0, w1) ((void)sizeof(w0), (void)sizeof(w1))
#define STRATA_EVENT3(major, minor, w0, w1, w2)                                \
	((void)sizeof(w0), (void)sizeof(w1), (void)sizeof(w2))
#define STRATA_EVENT4(major, minor, w0, w1, w2, w3)                            \
	((void)sizeof(w0), (void)sizeof(w1), (void)sizeof(w2), (void)sizeof(w3))

#endif /* STRATA_DISABLE */

#endif /* STRATA_INLINE_EVENT_H */
