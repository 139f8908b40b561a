/* SPDX-License-Identifier: MIT */
/* The trace clock: TSC when invariant, CLOCK_MONOTONIC otherwise (format.md §5). */
#ifndef STRATA_LIB_CLOCK_H
#define STRATA_LIB_CLOCK_H

#include <stdint.h>

/* One calibration point: the trace clock and the two system clocks read
 * as close together as possible. */
struct clock_point {
	uint64_t ts;
	uint64_t mono_ns;
	uint64_t real_ns;
};

/* Decide the trace clock (sets strata_clock_tsc; STRATA_CLOCK=mono forces
 * CLOCK_MONOTONIC, STRATA_CLOCK=tsc an invariant TSC that neither the
 * kernel nor a KVM host vouches for) and with it the ring's write protocol
 * (ring_init(): the inline rseq sections read rdtsc, others run out of
 * line). Reads /proc and /sys. Before any ring exists. */
void clock_init(void);
/* CLOCK_MONOTONIC from now on (a daemon's session says so), protocol
 * included. Before any ring exists. */
void clock_use_mono(void);

/* The point clock_init() took (the library's load, as a rule): the
 * first point of an in-process session's clock fit, which then needs no
 * waiting to have a baseline (consumer.c, cons_create()). */
extern struct clock_point clock_init_point;

/* Take a calibration point (the tightest of a few tries). */
void clock_point_take(struct clock_point *p);

/* Frequency (Hz) and epoch offset derived from two points far apart:
 * realtime_ns(ts) = offset_ns + ts * 1e9 / freq. */
void clock_fit(const struct clock_point *a, const struct clock_point *b,
	       uint64_t *freq_hz, int64_t *offset_ns);

/* "x86 TSC, invariant (why)" or "CLOCK_MONOTONIC (why)": the metadata's
 * clock description. */
const char *clock_description(void);

/* The boot id (clock UUID, format.md §5) as 36 characters + NUL. */
void clock_uuid(char out[37]);
struct meta_info;
/* The trace clock's uuid and description into a sub-trace's metadata
 * (common/metadata.h), for each of its writers. */
void clock_meta(struct meta_info *mi);

#endif /* STRATA_LIB_CLOCK_H */
