/* SPDX-License-Identifier: MIT */
/* The ring's slow path: packet switch, first use, limits (docs/ring.md §4). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/format.h"
#include "common/log.h"
#include "ring/ring.h"

STRATA_API __thread struct strata_tls strata_tls
	__attribute__((tls_model("initial-exec")));
STRATA_API uint32_t strata_pid;
STRATA_API int strata_rseq;

uint64_t ring_lost_global[STRATA_LOST_NCAUSES];

/* Packet header: common/format.h (docs/format.md §2). */
_Static_assert(sizeof(struct strata_pkt_header) == STRATA_PACKET_HEADER,
	       "packet header is 96 bytes (format.md §2)");

uint64_t ring_lost_own_global;

/* A record of strata's own (calibration, loss report, state dump: major
 * 0, compact ids 1-9), as opposed to one the program logged. */
static bool header_id_own(uint32_t header_id)
{
	return !strata_header_id_user(header_id);
}

void (*ring_thread_hook)(uint32_t tid);

/* Count a dropped record: by cause for the program's events (the sum is
 * events_discarded), apart for strata's own (strata_ring_ctl.lost_own). */
static void count_lost(struct strata_ring *ring, enum strata_lost_cause cause,
		       uint32_t header_id)
{
	if (header_id_own(header_id))
		strata_add_relaxed(ring ? &ring->ctl->lost_own : &ring_lost_own_global, 1);
	else if (ring)
		strata_add_relaxed(&ring->ctl->lost[cause], 1);
	else
		strata_add_relaxed(&ring_lost_global[cause], 1);
}

/*
 * Close the packet that contains virtual offset `end - 1`, whose content
 * ends at `end` (ring.md §4). The closer owns timestamp_end, content_size
 * and events_discarded; the opener may still be writing the other fields.
 * `self_committed` of the packet's bytes are committed by their own
 * writers: all reserved bytes in CAS mode, the two-phase ones in rseq
 * mode, where inline events commit nothing (ring.md §7); there it is the
 * packet's `xr`, whose event count (STRATA_XR_*) the closer publishes in
 * the header for the consumer. The closer commits the rest, psize -
 * self_committed: the padding, and the inline events. That commit (a
 * release) publishes the closer's stores; when it is 0 (a packet exactly
 * filled by two-phase writers) the caller's own commit publishes them.
 */
static void ring_close(struct strata_ring *ring, uint64_t end, uint64_t ts,
		       uint64_t self_committed)
{
	uint64_t pos = ((end - 1) & ring->pmask) + 1;
	uint64_t bytes = STRATA_XR_BYTES(self_committed);
	struct strata_pkt_header *h = (struct strata_pkt_header *)
		ring_packet_addr(ring, ring_packet_begin(ring, end - 1));

	h->timestamp_end = ts;
	h->content_size = pos * 8;
	h->events_discarded = ring_lost_total(ring);
	/* Only the closer writes it (the opener may still be writing its
	 * fields); in CAS mode nobody counts, and the consumer walks. */
	h->events = ring->rseq ? (uint32_t)(self_committed >> 32) : 0;
	if (bytes < ring->psize)
		strata_ring_commit(ring, end - 1, ring->psize - bytes);
	/* ring.md §8: the commit above, then cwait (1 while a consumer
	 * sleeps on it); the consumer stores cwait, then reads the commit
	 * counts. The fence keeps one of the
	 * two from missing the other's store. The consumer is woken when
	 * a quarter of the ring waits for it: it then writes several packets
	 * per wake-up, and the rest leaves it time to come. And at every
	 * close of the first half of the first lap, to fault the next pages
	 * in (§1): from the half on, the consumer's window reaches the end. */
	strata_fence_seq_cst();
	uint64_t next = ring_packet_begin(ring, end - 1) + ring->psize;
	if (strata_load_relaxed(&ring->ctl->cwait) &&
	    (next - strata_load_relaxed(&ring->ctl->consumed) > ring->bufmask / 4 ||
	     next <= (ring->bufmask + 1) / 2))
		ring_doorbell(&ring->ctl->cwait);
}

STRATA_API void strata_ring_close_exact(struct strata_ring *ring, uint64_t end,
					uint64_t ts, uint64_t self_committed)
{
	ring_close(ring, end, ts, self_committed);
}

/* What the closer of w's packet passes as self_committed (see
 * ring_close()): x, the ring's `xr` (its two-phase bytes and its events)
 * loaded with w, on a ring written with rseq; pos otherwise. The ring's
 * own flag, the one its readers go by. */
static uint64_t self_committed(const struct strata_ring *ring, uint64_t pos,
			       uint64_t x)
{
	return ring->rseq ? x : pos;
}

/* Write the opener's header fields (format.md §2). Published by the
 * opener's commit, which covers the header bytes. */
static void ring_open(struct strata_ring *ring, uint64_t begin, uint64_t ts,
		      uint32_t tid)
{
	struct strata_pkt_header *h =
		(struct strata_pkt_header *)ring_packet_addr(ring, begin);

	h->magic = STRATA_PKT_MAGIC;
	memcpy(h->uuid, ring->ctl->uuid, sizeof(h->uuid));
	h->stream_id = 1; /* compact event headers, docs/compact.md */
	h->stream_instance_id = ((uint64_t)strata_pid << 32) | ring->cpu;
	h->timestamp_begin = ts;
	h->packet_size = ring->psize * 8;
	h->packet_seq_num = begin >> ring->pshift;
	h->cpu_id = ring->cpu;
	h->pid = strata_pid;
	h->tid = tid;
	/* not `events`: the closer's (ring_close()) */
}

/*
 * Can the packet that would begin at `begin` be opened (ring.md §4)? Its
 * slot's previous lap must be complete, and in discard mode the consumer
 * must have drained it. Returns 0 if so, 1 if our view of `write` is stale
 * (the packet was opened already: its commit count is past the previous
 * lap) and the caller must reload, or -1 with *cause set if the event must
 * be dropped.
 */
static int slot_check(struct strata_ring *ring, uint64_t begin,
		      enum strata_lost_cause *cause)
{
	uint64_t lap = ring_lap(ring, begin);
	uint64_t cc = ring_committed(ring, begin);

	if (cc > lap * ring->psize)
		return 1;
	if (cc < lap * ring->psize) {
		*cause = STRATA_LOST_BUSY;
		return -1;
	}
	if (ring->ctl->mode != STRATA_MODE_OVERWRITE &&
	    begin - strata_load_acquire(&ring->ctl->consumed) > ring->bufmask) {
		*cause = STRATA_LOST_FULL;
		return -1;
	}
	return 0;
}

static uint32_t coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* vDSO */
	return (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}

/* The nesting depth of this thread's tracepoint that waits in
 * block_wait(), 0 if none: a writer nested in a signal handler may wait
 * only when the one it interrupted is waiting too (it holds no
 * reservation then); else the interrupted one may hold the very packet
 * the consumer needs next, and the handler would wait for itself. */
static __thread uint32_t block_waiter __attribute__((tls_model("initial-exec")));

/*
 * Blocking mode (ring.md §4, "Blocking"): the packet that would begin at
 * `begin` is not drained yet, or a lagging writer has not committed its
 * last lap (full, busy). Wake the consumer and wait for it to be free,
 * until *deadline (coarse ms, set at the first wait of this event):
 * yielding first, then sleeping from 20 us to 1 ms. True when there is
 * room now; false when the time is up (the event is dropped), and at
 * once when an earlier wait timed out and the consumer has not moved
 * since (ring->stalled).
 */
static bool block_wait(struct strata_ring *ring, uint64_t begin,
		       uint32_t nest, uint32_t *deadline)
{
	struct timespec nap = {0, 20000};
	int saved_errno; /* a tracepoint's caller keeps its errno */
	uint32_t outer = block_waiter;
	bool room = false;

	if (nest > 1 && outer != nest - 1)
		return false;
	uint64_t consumed = strata_load_acquire(&ring->ctl->consumed);
	enum strata_lost_cause cause;
	if (strata_load_relaxed(&ring->stalled) == consumed + 1)
		return false; /* timed out already; nothing drained since */
	saved_errno = errno;
	block_waiter = nest;
	strata_barrier(); /* before a signal handler may look */
	if (!*deadline)
		*deadline = (coarse_ms() + ring_cfg.block_ms) | 1;
	/* Wake the consumer whether it sleeps or not: ring_doorbell()
	 * rings only when cwait (its "consumer waiting" flag) is 1. */
	strata_store_relaxed(&ring->ctl->cwait, 1);
	ring_doorbell(&ring->ctl->cwait);
	for (unsigned spin = 0;; spin++) {
		if (slot_check(ring, begin, &cause) >= 0) {
			room = true; /* drained, and its last lap complete */
			break;
		}
		if ((int32_t)(coarse_ms() - *deadline) >= 0) {
			strata_store_relaxed(&ring->stalled, consumed + 1);
			break;
		}
		if (spin < 64) {
			sched_yield();
			continue;
		}
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 1000000)
			nap.tv_nsec *= 2;
	}
	strata_barrier();
	block_waiter = outer;
	errno = saved_errno;
	return room;
}

static int current_cpu(void)
{
	int cpu = strata_cpu();
	if (cpu < 0)
		cpu = sched_getcpu();
	if (cpu < 0 || cpu >= STRATA_MAX_CPUS)
		cpu = 0;
	return cpu;
}

/* ring_advance()'s outcomes besides strata_rseq_reserve()'s */
#define ADV_TS_GAP 3   /* needs an extended header (ring.md §2, compact.md) */
#define ADV_MIGRATED 4 /* not on the ring's CPU (rseq mode) */

#ifdef STRATA_RSEQ_X86
_Static_assert(STRATA_PKT_OFF_CONTENT_SIZE == STRATA_PKT_OFF_TS_END + 8,
	       "rseq_switch() stores timestamp_end and content_size together");

/*
 * strata_rseq_reserve() for a packet switch (ring.md §7, "Crash
 * salvage"): inside the same section, after R2 and before the commit,
 * the closed packet's timestamp_end and content_size (te[0], te[1]). A
 * writer killed between the switch and its ring_close() then leaves a
 * packet whose end is known. Harmless if the section aborts after those
 * stores: `write` did not move, the packet is still open, and whoever
 * closes it stores both again.
 */
static strata_always_inline int rseq_switch(struct rseq *rs, uint32_t cpu,
					    uint64_t *wp, uint64_t w,
					    uint64_t neww, uint64_t newx,
					    uint32_t *ownp, uint32_t own,
					    uint64_t *te, uint64_t ts,
					    uint64_t cs)
{
	STRATA_RSEQ_RESERVE_SECTION(
		"movq %[ts], (%[te])\n\t"                /* timestamp_end */
		"movq %[cs], 8(%[te])\n\t",              /* content_size */
		(, [te] "r"(te), [ts] "r"(ts), [cs] "r"(cs)));
	return STRATA_RSEQ_OK;
retry:
	return STRATA_RSEQ_RETRY;
stale:
	return STRATA_RSEQ_STALE;
}
#endif

/*
 * Move `write` from w to neww, reading the clock between the two (ring.md
 * §2 B-F, §7 R1-R5), storing `own` into the owner hint first when not 0,
 * and, with check_hi, refusing (ADV_TS_GAP) when the event would
 * need the full timestamp of an extended header. In rseq mode `xr` (the
 * packet's two-phase bytes) becomes newx in the same store, and for a
 * packet switch (`closing`: w is inside the packet it closes) the closed
 * packet's end is stored in the same section (rseq_switch()). The caller
 * loaded w (and then xr) just before.
 */
static int ring_advance(struct strata_ring *ring, uint64_t w, uint64_t neww,
			uint64_t newx, uint32_t own, uint32_t check_hi,
			int closing, uint64_t *ts)
{
	struct strata_ring_ctl *c = ring->ctl;

	/* after B: ordered in the CAS protocol (strata_clock_ordered) */
	*ts = strata_rseq ? strata_clock() : strata_clock_ordered(); /* D */
	if (check_hi && (uint32_t)(*ts >> STRATA_TS_HI_SHIFT) !=
				strata_load_relaxed(&c->last_ts_hi))
		return ADV_TS_GAP;
#ifdef STRATA_RSEQ_X86
	if (strata_rseq) {
		struct rseq *rs = strata_rseq_area();
		if (*(volatile uint32_t *)&rs->cpu_id != ring->cpu)
			return ADV_MIGRATED;
		if (closing) {
			uint64_t pos = w & ring->pmask;
			unsigned char *h = ring_packet_addr(ring, w - pos);
			return rseq_switch(rs, ring->cpu, &c->write, w, neww,
					   newx, &c->owner, own,
					   (uint64_t *)(h + STRATA_PKT_OFF_TS_END),
					   *ts, pos * 8);
		}
		return strata_rseq_reserve(rs, ring->cpu, &c->write, w, neww,
					   newx, &c->owner, own);
	}
#endif
	(void)closing;
	if (own)
		strata_store_relaxed(&c->owner, own);                /* E */
	return strata_cas_acq_rel(&c->write, &w, neww) ? STRATA_RSEQ_OK /* F */
						      : STRATA_RSEQ_STALE;
}

/*
 * The full reservation on a given ring, with every case the inline path
 * leaves out; the packet switch is ring.md §4. The caller holds the
 * nesting guard (`nest` is its depth); it is released here on drop, by
 * strata_commit() otherwise. Returns 1, 0 (dropped, counted), or -1 when
 * the thread is not on the ring's CPU in rseq mode (the caller picks the
 * ring again; nothing was counted and the guard is still held).
 */
static int ring_reserve_held(struct strata_ring *ring, struct strata_rsv *r,
			     uint32_t header_id, uint32_t words, uint32_t need,
			     uint32_t nest)
{
	struct strata_tls *t = &strata_tls;
	enum strata_lost_cause cause = STRATA_LOST_BUSY;
	struct strata_ring_ctl *c;
	uint64_t w, x, ts, pos, begin;
	uint32_t ts_gap = 0, len, i, deadline = 0;
	int rc;

	if (strata_unlikely(!t->tid)) {
		int saved = errno; /* we may be in a signal handler */
		t->tid = (uint32_t)syscall(SYS_gettid);
		void (*hook)(uint32_t) = strata_load_relaxed(&ring_thread_hook);
		if (hook)
			hook(t->tid);
		errno = saved;
	}
	if (!ring || strata_load_relaxed(&ring->ctl->disabled)) {
		count_lost(ring, STRATA_LOST_NO_RING, header_id);
		goto release;
	}
	if (words == 0 || words > STRATA_MAX_WORDS) {
		cause = STRATA_LOST_TOO_BIG;
		goto drop;
	}
	if (nest > STRATA_MAX_NEST) {
		cause = STRATA_LOST_NESTED;
		goto drop;
	}
	need |= nest > 1;
	c = ring->ctl;
	for (i = 0; i < STRATA_MAX_RETRIES; i++) {
		w = strata_load_acquire(&c->write);                  /* B */
		/* xr, the packet's two-phase bytes: checked with w by R2 */
		x = strata_load_relaxed(&c->xr);
		need |= strata_load_relaxed(&c->owner) != t->tid;    /* C */
		pos = w & ring->pmask;
		len = strata_rsv_len(header_id, words, need, ts_gap);
		if (pos != 0 && pos + len <= ring->psize) {
			/* It fits after all (first use of the thread or the
			 * ring, or a retry): the fast path's steps. */
			uint64_t newx = strata_xr_add(x, len, header_id);
			rc = ring_advance(ring, w, w + len, newx,
					  need ? t->tid : 0, !ts_gap, 0, &ts);
			if (rc == ADV_TS_GAP)
				ts_gap = 1;
			if (rc == ADV_MIGRATED)
				return -1;
			if (rc != STRATA_RSEQ_OK)
				continue;
			strata_rsv_fill(r, ring, w, len, ts, header_id, words,
					need, ts_gap,
					self_committed(ring, pos + len, newx));
			return 1;
		}

		/* Packet switch. The opener writes no thread record (the
		 * packet context names it) and needs no extended header for
		 * its time (timestamp_begin is the base). */
		begin = pos == 0 ? w : w - pos + ring->psize;
		int busy = slot_check(ring, begin, &cause);
		if (busy > 0)
			continue;
		/* strata's own records never wait: the in-process consumer
		 * writes some (calibration, thread names) and would wait
		 * for itself */
		if (busy < 0 && !header_id_own(header_id) &&
		    c->mode == STRATA_MODE_BLOCK &&
		    block_wait(ring, begin, nest, &deadline)) {
			i = 0; /* room after a wait: bounded by the deadline */
			continue;
		}
		if (busy < 0)
			goto drop;
		len = STRATA_PACKET_HEADER +
		      strata_rsv_len(header_id, words, 0, 0);
		/* The new packet's two-phase bytes, header and event, and
		 * its first event. */
		rc = ring_advance(ring, w, begin + len,
				  strata_xr_add(0, len, header_id), need ? t->tid : 0,
				  0, pos != 0, &ts);
		if (rc == ADV_MIGRATED)
			return -1;
		if (rc != STRATA_RSEQ_OK)
			continue;
		strata_store_relaxed(&c->last_ts_hi,
				     (uint32_t)(ts >> STRATA_TS_HI_SHIFT));
		if (pos != 0)
			ring_close(ring, w, ts, self_committed(ring, pos, x));
		ring_open(ring, begin, ts, t->tid);
		unsigned char *p = strata_put_hdr(ring_packet_addr(ring, begin) +
						  STRATA_PACKET_HEADER,
						  header_id, 8 * words - 8, ts, 0);
		r->ring = ring;
		r->off = begin;
		r->bytes = len;
		r->p = (strata_u64_a4 *)p;
		return 1;
	}
	cause = STRATA_LOST_BUSY;
drop:
	/* ring.md §3 rule 4: our owner store, if any, was not followed by a
	 * reservation. */
	if (need)
		strata_store_relaxed(&ring->ctl->owner, STRATA_OWNER_NONE);
	count_lost(ring, cause, header_id);
release:
	strata_barrier();
	t->nesting--;
	return 0;
}

/* strata_log_rseq() reads owner and last_ts_hi as one word, and the
 * thread's tid and nesting as another. */
_Static_assert(offsetof(struct strata_ring_ctl, last_ts_hi) ==
		       offsetof(struct strata_ring_ctl, owner) + 4 &&
		       offsetof(struct strata_tls, nesting) ==
			       offsetof(struct strata_tls, tid) + 4,
	       "owner | last_ts_hi << 32, tid | nesting << 32");

STRATA_API void strata_log_slow(uint8_t *cidp, uint32_t id, uint32_t words,
				const uint64_t *pl)
{
	struct strata_rsv r;
	uint32_t header_id = ring_header_id_of(cidp, id, words);

#ifdef STRATA_RSEQ_X86
	/* The inline path's attempt, with a clock the inline code cannot
	 * read (ring.md §7, "Any clock"). */
	if (strata_rseq == STRATA_RSEQ_OUTLINE &&
	    strata_header_id_compact(header_id) &&
	    strata_log_rseq(header_id, words, pl, 0))
		return;
#endif
	/* In rseq mode the attempt has just failed: go straight to the loop
	 * that handles every case; in CAS mode, the CAS fast path. In flight
	 * until its commit: marked for crash salvage as strata_reserve()
	 * marks (strata_ring_ctl.inflight), unmarked by strata_commit(). */
	if (!(strata_rseq ? strata_reserve_slow(&r, header_id, words, 0)
			  : strata_reserve_unmarked(&r, header_id, words)))
		return;
	strata_rsv_mark(&r);
	if (words > 1)
		memcpy(r.p, pl, (size_t)(words - 1) * 8);
	strata_commit(&r);
}

STRATA_API void strata_log_slow4(uint8_t *cidp, uint32_t id, uint32_t words,
				 uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	const uint64_t pl[4] = {a, b, c, d};

	strata_log_slow(cidp, id, words, pl);
}

STRATA_API int strata_reserve_slow(struct strata_rsv *r, uint32_t header_id,
				   uint32_t words, uint32_t flags)
{
	struct strata_tls *t = &strata_tls;
	uint32_t nest;
	int rc = -1;

	if (flags & STRATA_SLOW_HELD) {
		nest = t->nesting;
	} else {
		nest = ++t->nesting;
		strata_barrier();
	}
	/* In rseq mode the ring is the one of the CPU we run on: pick it
	 * again if we migrate meanwhile (bounded). */
	struct strata_ring *ring = NULL;
	for (int tries = 0; rc < 0 && tries < STRATA_MAX_RETRIES; tries++) {
		ring = ring_get_or_create((unsigned)current_cpu());
		rc = ring_reserve_held(ring, r, header_id, words,
				       !!(flags & STRATA_SLOW_THREAD), nest);
	}
	if (rc < 0) {
		/* migrated at every try: counted in the last ring tried,
		 * whose packets carry it to readers */
		count_lost(ring, STRATA_LOST_BUSY, header_id);
		strata_barrier();
		t->nesting--;
		rc = 0;
	}
	return rc;
}

/* Run on the ring's CPU, so that rseq-mode updates of another CPU's ring
 * are CPU-local (ring.md §7). Returns 1 if the affinity was changed (and
 * *saved holds the old mask), 0 if not needed or impossible. */
static int pin_to(struct strata_ring *ring, cpu_set_t *saved)
{
	cpu_set_t set;

	if (!strata_rseq)
		return 0;
	if (sched_getaffinity(0, sizeof(*saved), saved) < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(ring->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		return 0; /* offline or outside our cpuset: nobody writes there */
	return 1;
}

static void unpin(int pinned, cpu_set_t *saved)
{
	if (pinned)
		sched_setaffinity(0, sizeof(*saved), saved);
}

int ring_reserve(struct strata_ring *ring, struct strata_rsv *r,
		 uint32_t header_id, uint32_t words)
{
	cpu_set_t saved;
	int pinned = pin_to(ring, &saved);
	uint32_t nest = ++strata_tls.nesting;
	int rc;

	strata_barrier();
	rc = ring_reserve_held(ring, r, header_id, words, 0, nest);
	if (rc < 0) { /* could not run there: give up, counted */
		count_lost(ring, STRATA_LOST_BUSY, header_id);
		strata_barrier();
		strata_tls.nesting--;
		rc = 0;
	}
	unpin(pinned, &saved);
	return rc;
}

void ring_flush(struct strata_ring *ring)
{
	struct strata_ring_ctl *c = ring->ctl;
	cpu_set_t saved;
	int pinned = pin_to(ring, &saved);
	uint64_t w, x, ts, pos;

	for (int i = 0; i < 1000; i++) {
		w = strata_load_acquire(&c->write);
		x = strata_load_relaxed(&c->xr);
		pos = w & ring->pmask;
		if (pos == 0)
			break; /* closed already */
		int rc = ring_advance(ring, w, w - pos + ring->psize, 0, 0, 0,
				      1, &ts);
		if (rc == ADV_MIGRATED && !pinned) {
			/* Cannot run on that CPU (offline, or outside our
			 * cpuset): no thread writes there now; close it with
			 * a CAS. */
			ts = strata_clock();
			if (!strata_cas_acq_rel(&c->write, &w,
						w - pos + ring->psize))
				continue;
			rc = STRATA_RSEQ_OK;
		}
		if (rc == STRATA_RSEQ_OK) {
			ring_close(ring, w, ts, self_committed(ring, pos, x));
			break;
		}
	}
	unpin(pinned, &saved);
}

unsigned ring_flush_all(void)
{
	/* Pairs with the release CAS of ring_hwm, each ring's load with its
	 * publishing CAS (ring_get_or_create(), shm.c). */
	unsigned hwm = strata_load_acquire(&ring_hwm), closed = 0;

	for (unsigned i = 0; i < hwm; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		if (!r)
			continue;
		uint64_t w = strata_load_relaxed(&r->ctl->write);
		ring_flush(r);
		closed += strata_load_relaxed(&r->ctl->write) != w;
	}
	return closed;
}

/* Choose the write protocol once, before any ring exists (ring.md §7). */
void ring_init(void)
{
#if defined(STRATA_TSAN)
	/* ThreadSanitizer cannot see the ordering that the rseq sections
	 * provide (plain stores in asm, atomicity from the kernel): under
	 * TSan, the CAS protocol, which it can check. */
	strata_rseq = 0;
#elif defined(STRATA_RSEQ_X86)
	/* The inline sections read the clock with rdtsc: with any other
	 * trace clock (no invariant TSC that someone vouches for, or
	 * STRATA_CLOCK=mono), the sections run out of line only, around the
	 * library's clock. Called by clock_init() once it has decided the
	 * clock. */
	strata_rseq = 0;
	if (__rseq_size >= 20 && /* cpu_id_start, cpu_id, rseq_cs */
	    (int32_t)strata_rseq_area()->cpu_id >= 0 &&
	    !ring_cfg.cas_only)
		strata_rseq = strata_clock_tsc ? STRATA_RSEQ_INLINE
					       : STRATA_RSEQ_OUTLINE;
#else
	strata_rseq = 0;
#endif
}
