/* SPDX-License-Identifier: MIT */
/* The ring's internal API: creation, packet switch, flush (docs/ring.md). */
#ifndef STRATA_RING_RING_H
#define STRATA_RING_RING_H

#include <stdbool.h>
#include <stdint.h>

#include <strata/strata.h>

/* Geometry and identity of the rings this process creates from now on. */
struct ring_config {
	uint32_t psize_shift;    /* log2(packet size) */
	uint32_t npackets_shift; /* log2(packets per ring) */
	uint32_t mode;           /* enum strata_mode */
	uint8_t uuid[16];        /* of the sub-trace (format.md §2) */
};

extern struct ring_config ring_cfg;

/* Losses that happened before any ring existed for the CPU (no ring). */
extern uint64_t ring_lost_global[STRATA_LOST_NCAUSES];

/* Create the ring of `cpu` in a fresh memfd mapping and publish it in
 * strata_rings[]. Async-signal-safe (system calls only, no malloc).
 * Returns the ring (possibly another thread's, if it won the race), or NULL. */
struct strata_ring *ring_get_or_create(unsigned cpu);

/* Called once for each ring this process creates, right after it is
 * published (async-signal-safe context: the slow path of a tracepoint).
 * Set by the session layer to hand rings to a `strata record` daemon;
 * NULL otherwise. */
extern void (*ring_created_hook)(struct strata_ring *ring);

/* Reserve on a given ring rather than the current CPU's (the consumer's
 * own records). Same contract as strata_reserve(). */
int ring_reserve(struct strata_ring *ring, struct strata_rsv *r, uint32_t id,
		 uint32_t words);

/* Choose rseq or CAS (sets strata_rseq); call before any ring exists. */
void ring_init(void);

/* Unmap a ring (after tracing stopped and it was drained). */
void ring_destroy(struct strata_ring *ring);

/* Close the current packet if it is open (ring.md §4, flush). Any thread. */
void ring_flush(struct strata_ring *ring);

/* Virtual offset of the packet containing `off`. */
static inline uint64_t ring_packet_begin(const struct strata_ring *r, uint64_t off)
{
	return off & ~r->pmask;
}

/* Whether the packet that began at virtual offset `begin` is complete,
 * i.e. every byte reserved in it was committed (ring.md §1). */
static inline bool ring_packet_complete(const struct strata_ring *r,
					uint64_t begin)
{
	uint32_t idx = (begin >> r->pshift) & r->nmask;
	uint64_t lap = begin >> (r->pshift + __builtin_ctz(r->nmask + 1));
	const uint64_t *cc = &r->commit[idx * STRATA_COMMIT_STRIDE];
	/* local + remote counts (ring.md §7) */
	return strata_load_acquire(&cc[0]) + strata_load_acquire(&cc[1]) ==
	       (lap + 1) * r->psize;
}

static inline unsigned char *ring_packet_addr(const struct strata_ring *r,
					      uint64_t begin)
{
	return r->data + (begin & r->bufmask);
}

/* Sum of the ring's loss counters: the stream's events_discarded. */
uint64_t ring_lost_total(const struct strata_ring *r);

#endif /* STRATA_RING_RING_H */
