/* SPDX-License-Identifier: MIT */
/* The ring's internal API: creation, packet switch, flush (docs/ring.md). */
#ifndef STRATA_RING_RING_H
#define STRATA_RING_RING_H

#include <stdbool.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <strata/strata.h>

/* Geometry and identity of the rings this process creates from now on. */
struct ring_config {
	uint32_t psize_shift;    /* log2(packet size) */
	uint32_t npackets_shift; /* log2(packets per ring) */
	uint32_t mode;           /* enum strata_mode */
	uint32_t block_ms;       /* STRATA_MODE_BLOCK: longest wait for room */
	uint32_t cas_only;       /* STRATA_RSEQ=0: never rseq (ring_init()) */
	uint8_t uuid[16];        /* of the sub-trace (format.md §2) */
};

extern struct ring_config ring_cfg;

/* Losses that happened before any ring existed for the CPU (no ring). */
extern uint64_t ring_lost_global[STRATA_LOST_NCAUSES];
/* strata's own records dropped where there was no ring */
extern uint64_t ring_lost_own_global;

/* Create the ring of `cpu` in a fresh memfd mapping and publish it in
 * strata_rings[]. Async-signal-safe (system calls only, no malloc).
 * Returns the ring (possibly another thread's, if it won the race), or NULL. */
struct strata_ring *ring_get_or_create(unsigned cpu);

/* Called once for each ring this process creates, right after it is
 * published (async-signal-safe context: the slow path of a tracepoint).
 * Set by the session layer to hand rings to a `strata record` daemon;
 * NULL otherwise. */
extern void (*ring_created_hook)(struct strata_ring *ring);

/* Called once per thread, at its first event (before that event is
 * reserved: the hook may log records of its own, nested like a signal
 * handler's). Async-signal-safe context. Set by the state dump to name
 * the thread from its first event on; NULL otherwise. */
extern void (*ring_thread_hook)(uint32_t tid);

/*
 * Doorbells (ring.md §8). A consumer about to sleep sets ctl->cwait
 * ("consumer waiting") of each ring it drains (or is still faulting in,
 * §1) to 1 and waits on those words; the closer of a packet that finds 1
 * there takes it back to 0 and wakes the waiter
 * (ring_close()). `ring_bell` is bumped, and its waiters woken, when
 * ring_get_or_create() publishes a ring (a consumer waits on it too, to
 * learn of rings it does not wait on yet) or when ring_bell_ring() is
 * called (a consumer being stopped).
 */
extern uint32_t ring_bell;
/* The session daemon's doorbell for this process's rings (ring.md §8,
 * "The session daemon"): an eventfd that closers write instead of waking
 * a futex; -1 without a daemon. The eventfd is never closed while the
 * process runs (a closer may have just loaded it: a closed number could
 * be taken by another file, which the write would then hit). */
extern int ring_bellfd;
/* One past the highest CPU that has a ring: loops over strata_rings[]
 * stop there (set before ring_bell moves). */
extern uint32_t ring_hwm;
void ring_bell_ring(void);
/* Wake the consumer waiting on *word if it is 1, setting it to 0 (a
 * closer, src/ring/doorbell.c). Async-signal-safe; keeps errno. */
void ring_doorbell(uint32_t *word);

/* Reserve on a given ring rather than the current CPU's (the consumer's
 * own records). Same contract as strata_reserve(). */
int ring_reserve(struct strata_ring *ring, struct strata_rsv *r,
		 uint32_t header_id, uint32_t words);

/* Compact ids (docs/compact.md, src/ring/cid.c): fill a new ring's
 * table (before and after publishing it); the entry of compact id `cid`
 * in this process (full id | words << 32 | STRATA_CID_VALID) or 0. */
void ring_cids_copy(struct strata_ring_ctl *c);
uint64_t ring_cid_entry(uint32_t cid);
/* The header id of an event of class `id` and `words` words from call
 * site `cidp` (strata_log_fixed()): its compact id, given at its first
 * event, or id | STRATA_HID_EXT. Async-signal-safe, lock-free. */
uint32_t ring_header_id_of(uint8_t *cidp, uint32_t id, uint32_t words);

/* Choose rseq or CAS (sets strata_rseq) from the clock and
 * ring_cfg.cas_only; call before any ring exists. */
void ring_init(void);

/*
 * Fault in the pages of bytes [off, off + len) of the ring's data in this
 * mapping (ring.md §1, "First lap"), so that the writers of a fresh ring
 * do not take a page fault every 4 KiB of its first lap. For a consumer:
 * it never writes the ring (MADV_POPULATE_WRITE, or a read of each page
 * where the kernel lacks it). Returns 0, or -errno: stop trying.
 */
int ring_prefault(struct strata_ring *ring, uint64_t off, uint64_t len);

/* Unmap a ring (after tracing stopped and it was drained). */
void ring_destroy(struct strata_ring *ring);

/* Close the current packet if it is open (ring.md §4, flush). Any thread. */
void ring_flush(struct strata_ring *ring);
/* ring_flush() on every ring of this process; returns how many of them
 * it saw move their `write` (a packet closed). Any thread. */
unsigned ring_flush_all(void);

/* Virtual offset of the packet containing `off`. */
static inline uint64_t ring_packet_begin(const struct strata_ring *r, uint64_t off)
{
	return off & ~r->pmask;
}

/* The lap of virtual offset `off`: how many times the ring was written
 * through before it (ring.md §1). */
static inline uint64_t ring_lap(const struct strata_ring *r, uint64_t off)
{
	return off >> (r->pshift + __builtin_ctz(r->nmask + 1));
}

/* Bytes committed into the packet slot of `off`, over all laps: the
 * local and remote counts (ring.md §1, §7). */
static inline uint64_t ring_committed(const struct strata_ring *r, uint64_t off)
{
	const uint64_t *cc =
		&r->commit[((off >> r->pshift) & r->nmask) * STRATA_COMMIT_STRIDE];
	/* Pairs with the writers' release commits (strata_commit(),
	 * ring_close()): the bytes counted were written before. */
	return strata_load_acquire(&cc[0]) + strata_load_acquire(&cc[1]);
}

/* Whether the packet that began at virtual offset `begin` is complete,
 * i.e. every byte reserved in it was committed (ring.md §1). */
static inline bool ring_packet_complete(const struct strata_ring *r,
					uint64_t begin)
{
	return ring_committed(r, begin) == (ring_lap(r, begin) + 1) * r->psize;
}

/* Bytes committed into the packet that began at `begin`, in its lap;
 * 0 if its slot has not reached that lap. */
static inline uint64_t ring_lap_committed(const struct strata_ring *r,
					  uint64_t begin)
{
	uint64_t n = ring_committed(r, begin), base = ring_lap(r, begin) * r->psize;

	return n < base ? 0 : n - base;
}

/*
 * How many bytes of the open packet that began at `begin`, header
 * included, are whole: those committed, plus, on a ring written with
 * restartable sequences, its inline events (ring.md §7), which commit
 * nothing and are whole once `write` has passed them: (write - begin) -
 * the two-phase bytes of xr. `write` and `xr` are stored together by one
 * 16-byte store, and read here together; the committed count is read before and after them
 * and must not move, so that the three agree (a two-phase writer that
 * reserved after our read of `write` commits after it). 0 when the
 * writers kept moving, or the packet is not the open one any more.
 * Whether the whole bytes are a prefix is for the caller's event walk.
 */
static inline uint64_t ring_open_done(const struct strata_ring *r,
				      uint64_t begin)
{
	if (!r->rseq)
		return ring_lap_committed(r, begin);
#if defined(__x86_64__)
	for (int i = 0; i < 64; i++) {
		uint64_t before = ring_lap_committed(r, begin), w, x;
		__m128i v = _mm_load_si128((const __m128i *)&r->ctl->write);
		/* The load of write and xr before the second count's; pairs
		 * with the writers' release commits: a count that did not
		 * move saw no commit in between. */
		strata_fence_acquire();
		if (ring_lap_committed(r, begin) != before)
			continue;
		w = (uint64_t)_mm_cvtsi128_si64(v);
		x = STRATA_XR_BYTES((uint64_t)_mm_cvtsi128_si64(
			_mm_unpackhi_epi64(v, v)));
		if (w <= begin || w - begin >= r->psize || x > w - begin)
			return 0;
		return before + (w - begin - x);
	}
#endif
	return 0;
}

static inline unsigned char *ring_packet_addr(const struct strata_ring *r,
					      uint64_t begin)
{
	return r->data + (begin & r->bufmask);
}

/* Sum of the ring's loss counters: the stream's events_discarded. */
uint64_t ring_lost_total(const struct strata_ring *r);

#endif /* STRATA_RING_RING_H */
