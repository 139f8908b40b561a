/* SPDX-License-Identifier: MIT */
/* The ring's slow path: packet switch, first use, limits (docs/ring.md §4). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "ring/ring.h"

STRATA_API __thread struct strata_tls strata_tls
	__attribute__((tls_model("initial-exec")));
STRATA_API uint32_t strata_pid;

uint64_t ring_lost_global[STRATA_LOST_NCAUSES];

/* Packet header, docs/format.md §2. */
struct packet_header {
	uint32_t magic;
	uint8_t uuid[16];
	uint32_t stream_id;
	uint64_t stream_instance_id;
	uint64_t timestamp_begin;
	uint64_t timestamp_end;
	uint64_t content_size;
	uint64_t packet_size;
	uint64_t packet_seq_num;
	uint64_t events_discarded;
	uint32_t cpu_id;
	uint32_t pid;
	uint32_t tid;
	uint32_t pad;
};
_Static_assert(sizeof(struct packet_header) == STRATA_PACKET_HEADER,
	       "packet header is 96 bytes (format.md §2)");

static void count_lost(struct strata_ring *ring, enum strata_lost_cause cause)
{
	if (ring)
		strata_add_relaxed(&ring->ctl->lost[cause], 1);
	else
		strata_add_relaxed(&ring_lost_global[cause], 1);
}

static uint64_t *commit_of(struct strata_ring *ring, uint64_t off)
{
	return &ring->commit[((off >> ring->pshift) & ring->nmask) *
			     STRATA_COMMIT_STRIDE];
}

/*
 * Close the packet that contains virtual offset `end - 1`, whose content
 * ends at `end` (ring.md §4). The closer owns timestamp_end, content_size
 * and events_discarded; the opener may still be writing the other fields.
 * The padding commit (a release) publishes the closer's stores; when the
 * packet is exactly full there is no padding and the caller's own commit
 * publishes them.
 */
static void ring_close(struct strata_ring *ring, uint64_t end, uint64_t ts)
{
	uint64_t pos = ((end - 1) & ring->pmask) + 1;
	struct packet_header *h = (struct packet_header *)ring_packet_addr(
		ring, ring_packet_begin(ring, end - 1));

	h->timestamp_end = ts;
	h->content_size = pos * 8;
	h->events_discarded = ring_lost_total(ring);
	if (pos < ring->psize)
		strata_add_release(commit_of(ring, end - 1), ring->psize - pos);
}

STRATA_API void strata_ring_close_exact(struct strata_ring *ring, uint64_t end,
					uint64_t ts)
{
	ring_close(ring, end, ts);
}

/* Write the opener's header fields (format.md §2). Published by the
 * opener's commit, which covers the header bytes. */
static void ring_open(struct strata_ring *ring, uint64_t begin, uint64_t ts,
		      uint32_t tid)
{
	struct packet_header *h =
		(struct packet_header *)ring_packet_addr(ring, begin);

	h->magic = 0xC1FC1FC1u;
	memcpy(h->uuid, ring->ctl->uuid, sizeof(h->uuid));
	h->stream_id = 0;
	h->stream_instance_id = ((uint64_t)strata_pid << 32) | ring->cpu;
	h->timestamp_begin = ts;
	h->packet_size = ring->psize * 8;
	h->packet_seq_num = begin >> ring->pshift;
	h->cpu_id = ring->cpu;
	h->pid = strata_pid;
	h->tid = tid;
	h->pad = 0;
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
	uint64_t lap = begin >> (ring->pshift + __builtin_ctz(ring->nmask + 1));
	uint64_t cc = strata_load_acquire(commit_of(ring, begin));

	if (cc > lap * ring->psize)
		return 1;
	if (cc < lap * ring->psize) {
		*cause = STRATA_LOST_BUSY;
		return -1;
	}
	if (ring->ctl->mode == STRATA_MODE_DISCARD &&
	    begin - strata_load_acquire(&ring->ctl->consumed) > ring->bufmask) {
		*cause = STRATA_LOST_FULL;
		return -1;
	}
	return 0;
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

/*
 * The full reservation on a given ring, with every case the inline path
 * leaves out. Same steps and labels as ring.md §2; the packet switch is
 * ring.md §4. The caller holds the nesting guard (`nest` is its depth);
 * it is released here on drop, by strata_commit() otherwise.
 */
static int ring_reserve_held(struct strata_ring *ring, struct strata_rsv *r,
			     uint32_t id, uint32_t words, uint32_t need,
			     uint32_t nest)
{
	struct strata_tls *t = &strata_tls;
	enum strata_lost_cause cause = STRATA_LOST_BUSY;
	struct strata_ring_ctl *c;
	uint64_t w, ts, pos, begin;
	uint32_t xts, len, i;

	if (strata_unlikely(!t->tid)) {
		int saved = errno; /* we may be in a signal handler */
		t->tid = (uint32_t)syscall(SYS_gettid);
		errno = saved;
	}
	if (!ring || strata_load_relaxed(&ring->ctl->disabled)) {
		count_lost(ring, STRATA_LOST_NO_RING);
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
		need |= strata_load_relaxed(&c->owner) != t->tid;    /* C */
		ts = strata_clock();                                 /* D */
		pos = w & ring->pmask;
		if (pos != 0) {
			xts = (uint32_t)(ts >> STRATA_TS_HI_SHIFT) !=
			      strata_load_relaxed(&c->last_ts_hi);
			len = (words + 2 * need + 2 * xts) * 8;
			if (pos + len <= ring->psize) {
				/* It fits after all (first use of the thread or
				 * ring, or a retry): the fast path's steps. */
				if (need)
					strata_store_relaxed(&c->owner, t->tid);
				if (!strata_cas_acq_rel(&c->write, &w, w + len))
					continue;
				strata_store_relaxed(&c->last_ts_hi,
					(uint32_t)(ts >> STRATA_TS_HI_SHIFT));
				uint64_t *p = (uint64_t *)(ring->data +
							   (w & ring->bufmask));
				if (need) {
					p[0] = strata_header(ts, STRATA_ID_THREAD, 2);
					p[1] = t->tid | ((uint64_t)strata_pid << 32);
					p += 2;
				}
				if (xts) {
					p[0] = strata_header(ts, STRATA_ID_CLOCK, 2);
					p[1] = ts;
					p += 2;
				}
				p[0] = strata_header(ts, id, words);
				if (((w + len) & ring->pmask) == 0)
					ring_close(ring, w + len, ts);
				r->ring = ring;
				r->off = w;
				r->bytes = len;
				r->p = p + 1;
				return 1;
			}
		}

		/* Packet switch. The opener writes no thread record (the
		 * packet context names it) and no clock record
		 * (timestamp_begin is the base). */
		begin = pos == 0 ? w : w - pos + ring->psize;
		int busy = slot_check(ring, begin, &cause);
		if (busy > 0)
			continue;
		if (busy < 0)
			goto drop;
		len = STRATA_PACKET_HEADER + words * 8;
		if (need)
			strata_store_relaxed(&c->owner, t->tid);        /* E */
		if (!strata_cas_acq_rel(&c->write, &w, begin + len)) /* F */
			continue;
		strata_store_relaxed(&c->last_ts_hi,
				     (uint32_t)(ts >> STRATA_TS_HI_SHIFT));
		if (pos != 0)
			ring_close(ring, w, ts);
		ring_open(ring, begin, ts, t->tid);
		uint64_t *p = (uint64_t *)(ring_packet_addr(ring, begin) +
					   STRATA_PACKET_HEADER);
		p[0] = strata_header(ts, id, words);
		r->ring = ring;
		r->off = begin;
		r->bytes = len;
		r->p = p + 1;
		return 1;
	}
	cause = STRATA_LOST_BUSY;
drop:
	/* ring.md §3 rule 4: our owner store, if any, was not followed by a
	 * reservation. */
	if (need)
		strata_store_relaxed(&ring->ctl->owner, 0);
	count_lost(ring, cause);
release:
	strata_barrier();
	t->nesting--;
	return 0;
}

STRATA_API int strata_reserve_slow(struct strata_rsv *r, uint32_t id,
				   uint32_t words, uint32_t need)
{
	struct strata_tls *t = &strata_tls;
	uint32_t nest;

	if (need & STRATA_SLOW_HELD) {
		nest = t->nesting;
	} else {
		nest = ++t->nesting;
		strata_barrier();
	}
	return ring_reserve_held(ring_get_or_create((unsigned)current_cpu()),
				 r, id, words, need & 1, nest);
}

int ring_reserve(struct strata_ring *ring, struct strata_rsv *r, uint32_t id,
		 uint32_t words)
{
	uint32_t nest = ++strata_tls.nesting;

	strata_barrier();
	return ring_reserve_held(ring, r, id, words, 0, nest);
}

void ring_flush(struct strata_ring *ring)
{
	struct strata_ring_ctl *c = ring->ctl;
	uint64_t w, ts, pos;

	for (;;) {
		w = strata_load_acquire(&c->write);
		pos = w & ring->pmask;
		if (pos == 0)
			return; /* closed already */
		ts = strata_clock();
		if (strata_cas_acq_rel(&c->write, &w, w - pos + ring->psize)) {
			ring_close(ring, w, ts);
			return;
		}
	}
}
