/* SPDX-License-Identifier: MIT */
/* Unit tests of the ring: packet switch, exact fill, full, overwrite, limits. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <strata/strata.h>

#include "lib/clock.h"
#include "lib/session.h"
#include "ring/ring.h"

#define PSIZE (16u << 10)
/* Bytes of an event of `w` words (one for the header) with a compact
 * header (docs/compact.md): 4 + 8 per payload word. */
#define EVB(w) (4u + 8u * ((w) - 1u))
#define CID 10u /* a compact id for the tests' events */

/* The first 32-bit word at p, and the 64-bit word at p + off. */
static uint32_t u32_at(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t u64_at(const void *p, size_t off)
{
	uint64_t v;
	memcpy(&v, (const char *)p + off, 8);
	return v;
}

struct hdr {
	uint32_t magic;
	uint8_t uuid[16];
	uint32_t stream_id;
	uint64_t stream_instance_id, ts_begin, ts_end, content_bits, packet_bits,
		seq, discarded;
	uint32_t cpu, pid, tid, events;
};

static unsigned next_cpu = 100; /* a fresh ring slot per test */

static struct strata_ring *new_ring(unsigned npackets_shift, int mode)
{
	ring_cfg.psize_shift = 14;
	ring_cfg.npackets_shift = npackets_shift;
	ring_cfg.mode = (uint32_t)mode;
	struct strata_ring *r = ring_get_or_create(next_cpu++);
	assert_non_null(r);
	return r;
}

static const struct hdr *packet(struct strata_ring *r, uint64_t begin)
{
	return (const struct hdr *)ring_packet_addr(r, begin);
}

/* Log one event of `words` words (header included) on ring r. */
static int log_on(struct strata_ring *r, uint32_t words, uint64_t v)
{
	struct strata_rsv rsv;
	if (!ring_reserve(r, &rsv, CID, words))
		return 0;
	for (uint32_t i = 0; i + 1 < words; i++)
		rsv.p[i] = v;
	strata_commit(&rsv);
	return 1;
}

static void test_first_event_opens_packet(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(2, STRATA_MODE_DISCARD);

	assert_int_equal(log_on(r, 2, 7), 1);
	const struct hdr *h = packet(r, 0);
	assert_int_equal(h->magic, 0xC1FC1FC1u);
	assert_int_equal(h->packet_bits, PSIZE * 8);
	assert_int_equal(h->seq, 0);
	assert_int_equal(h->tid, strata_tls.tid);
	assert_int_equal(h->cpu, r->cpu);
	/* The opener writes no thread record: header, then the event. */
	const char *e = (const char *)h + 96;
	assert_int_equal(u32_at(e) & 31, CID);
	assert_int_equal(u64_at(e, 4), 7);
	assert_int_equal(r->ctl->write, 96 + EVB(2));
	/* Open, not complete: 108 of 16384 bytes committed. */
	assert_int_equal(r->commit[0], 96 + EVB(2));
	assert_false(ring_packet_complete(r, 0));
	/* Same thread again: no record, 2 words. */
	assert_int_equal(log_on(r, 2, 8), 1);
	assert_int_equal(r->ctl->write, 96 + 2 * EVB(2));
}

static void test_switch_closes_with_padding(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(2, STRATA_MODE_DISCARD);
	uint64_t n = 0;

	while (r->ctl->write < PSIZE)
		n += (uint64_t)log_on(r, 100, n);
	/* The event that did not fit went to packet 1. */
	const struct hdr *h0 = packet(r, 0), *h1 = packet(r, PSIZE);
	uint64_t content = 96 + (n - 1) * EVB(100);
	assert_int_equal(h0->content_bits, content * 8);
	assert_true(ring_packet_complete(r, 0));
	assert_int_equal(h1->seq, 1);
	assert_true(h1->ts_begin >= h0->ts_end);
	assert_true(h0->ts_end >= h0->ts_begin);
	assert_int_equal(r->ctl->write, PSIZE + 96 + EVB(100));
}

static void test_exact_fill(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(2, STRATA_MODE_DISCARD);

	/* Open with one event, then fill exactly. */
	assert_int_equal(log_on(r, 2, 1), 1);       /* 96 + 12 */
	uint64_t left = PSIZE - r->ctl->write;      /* 16276 */
	while (left > 8000) {
		assert_int_equal(log_on(r, 1000, 2), 1);
		left -= EVB(1000);
	}
	assert_int_equal(left % 8, 4);
	assert_int_equal(log_on(r, (uint32_t)((left - 4) / 8 + 1), 3), 1);
	assert_int_equal(r->ctl->write, PSIZE);
	/* The writer that filled it closed it: no padding, complete. */
	assert_true(ring_packet_complete(r, 0));
	assert_int_equal(packet(r, 0)->content_bits, PSIZE * 8);
	/* The next event opens packet 1. */
	assert_int_equal(log_on(r, 2, 4), 1);
	assert_int_equal(packet(r, PSIZE)->seq, 1);
	assert_int_equal(r->ctl->write, PSIZE + 96 + EVB(2));
}

/* ring.md §8: a new ring bumps ring_bell; the closer of a packet wakes a
 * sleeping consumer (takes cwait from 1 to 0) only when more than a
 * quarter of the ring waits for it. */
static void test_doorbell(void **state)
{
	(void)state;
	uint32_t bell = ring_bell;
	struct strata_ring *r = new_ring(3, STRATA_MODE_DISCARD); /* 8 packets */
	uint64_t n = 0;

	assert_int_not_equal(ring_bell, bell);
	/* First half of the first lap: every close wakes a sleeping
	 * consumer (to fault the next pages in, ring.md §1); after it, only
	 * a backlog does. */
	for (uint64_t p = 1; p <= 8; p++) {
		r->ctl->cwait = 1;
		while (r->ctl->write < p * PSIZE)
			n += (uint64_t)log_on(r, 100, n);
		assert_true(ring_packet_complete(r, (p - 1) * PSIZE));
		assert_int_equal(r->ctl->cwait, p <= 4 ? 0 : 1);
		r->ctl->consumed = p * PSIZE; /* the consumer keeps up */
	}
	/* Then a quarter of the ring waiting for the consumer wakes it. */
	while (r->ctl->write < 9 * PSIZE)
		n += (uint64_t)log_on(r, 100, n);
	assert_true(ring_packet_complete(r, 8 * PSIZE));
	assert_int_equal(r->ctl->cwait, 1); /* an eighth: no wake */
	while (r->ctl->write < 10 * PSIZE)
		n += (uint64_t)log_on(r, 100, n);
	assert_true(ring_packet_complete(r, 9 * PSIZE));
	assert_int_equal(r->ctl->cwait, 0); /* a quarter: woken */
	/* Once the consumer has caught up, a close is an eighth again. */
	r->ctl->consumed = 10 * PSIZE;
	r->ctl->cwait = 1;
	while (r->ctl->write < 11 * PSIZE)
		n += (uint64_t)log_on(r, 100, n);
	assert_int_equal(r->ctl->cwait, 1);
	/* An awake consumer (cwait 0) is left alone. */
	r->ctl->cwait = 0;
	while (r->ctl->write < 12 * PSIZE)
		n += (uint64_t)log_on(r, 100, n);
	assert_int_equal(r->ctl->cwait, 0);
}

/* Pages of [p, p + len) resident in this mapping. */
static size_t resident(const unsigned char *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = 0;
	unsigned char vec[64];

	assert_true(len / pg <= sizeof(vec));
	assert_int_equal(mincore((void *)p, len, vec), 0);
	for (size_t i = 0; i < len / pg; i++)
		n += vec[i] & 1;
	return n;
}

/* The consumer's prefault (ring.md §1, "First lap"): only the range
 * asked for, contents untouched, and nothing out of the ring. */
static void test_prefault(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(3, STRATA_MODE_DISCARD); /* 8 × 16 KiB */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	assert_int_equal(resident(r->data, 8 * PSIZE), 0); /* a fresh memfd */
	assert_int_equal(ring_prefault(r, PSIZE, 2 * PSIZE), 0);
	assert_int_equal(resident(r->data, PSIZE), 0);
	assert_int_equal(resident(r->data + PSIZE, 2 * PSIZE), 2 * PSIZE / pg);
	assert_int_equal(resident(r->data + 3 * PSIZE, 5 * PSIZE), 0);
	/* written events survive a prefault over them */
	uint64_t n = 0;
	while (r->ctl->write < PSIZE / 2)
		n += (uint64_t)log_on(r, 4, 0x5eed);
	assert_int_equal(ring_prefault(r, 0, 8 * PSIZE), 0);
	assert_int_equal(resident(r->data, 8 * PSIZE), 8 * PSIZE / pg);
	assert_int_equal(u64_at(r->data, STRATA_PACKET_HEADER + 4), 0x5eed);
	assert_int_equal(ring_prefault(r, 8 * PSIZE, 1), -EINVAL);
	assert_int_equal(ring_prefault(r, PSIZE, 8 * PSIZE), -EINVAL);
}

static void test_discard_when_full(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(1, STRATA_MODE_DISCARD); /* 2 packets */
	uint64_t lost0 = r->ctl->lost[STRATA_LOST_FULL];
	int ok = 0, dropped = 0;

	for (int i = 0; i < 100; i++) {
		if (log_on(r, 1000, (uint64_t)i))
			ok++;
		else
			dropped++;
	}
	/* Two packets of two 8000-byte events each; the rest is dropped. */
	assert_int_equal(ok, 4);
	assert_int_equal(dropped, 96);
	assert_int_equal(r->ctl->lost[STRATA_LOST_FULL] - lost0, 96);
	/* The consumer releases packet 0: the writers go on, and the
	 * packet closed by the switch carries the loss count. */
	strata_store_release(&r->ctl->consumed, PSIZE);
	assert_int_equal(log_on(r, 1000, 100), 1);
	assert_int_equal(packet(r, PSIZE)->discarded, 96);
	assert_int_equal(packet(r, 2 * PSIZE)->seq, 2);
}

static void test_overwrite_reuses_oldest(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(1, STRATA_MODE_OVERWRITE);

	for (int i = 0; i < 100; i++)
		assert_int_equal(log_on(r, 1000, (uint64_t)i), 1);
	/* 50 packets went by in a 2-packet ring; the last two are held. */
	uint64_t w = r->ctl->write;
	uint64_t cur = ring_packet_begin(r, w);
	assert_int_equal(packet(r, cur)->seq, cur / PSIZE);
	assert_true(ring_packet_complete(r, cur - PSIZE));
	assert_false(ring_packet_complete(r, cur));
	ring_flush(r);
	assert_true(ring_packet_complete(r, cur));
	assert_int_equal(r->ctl->lost[STRATA_LOST_FULL], 0);
}

static void test_busy_packet_is_not_reused(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(1, STRATA_MODE_OVERWRITE);
	struct strata_rsv held;

	/* A writer reserves in packet 0 and does not commit (preempted).
	 * Two 8000-byte events fill each packet; the fifth event needs
	 * packet 0 again. */
	assert_int_equal(ring_reserve(r, &held, STRATA_ID(3, 1), 2), 1);
	for (int i = 0; i < 6; i++)
		log_on(r, 1000, 0);
	/* Packet 0 cannot be overwritten while it is incomplete. */
	assert_true(r->ctl->lost[STRATA_LOST_BUSY] > 0);
	assert_true(r->ctl->write <= 2 * PSIZE);
	strata_commit(&held);
	assert_int_equal(log_on(r, 1000, 0), 1);
	assert_true(r->ctl->write > 2 * PSIZE);
}

static void test_too_big_and_nesting(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(2, STRATA_MODE_DISCARD);
	struct strata_rsv rsv;

	assert_int_equal(ring_reserve(r, &rsv, STRATA_ID(3, 1), 1024), 0);
	assert_int_equal(r->ctl->lost[STRATA_LOST_TOO_BIG], 1);
	assert_int_equal(strata_tls.nesting, 0);

	strata_tls.nesting = STRATA_MAX_NEST; /* four tracepoints deep */
	assert_int_equal(ring_reserve(r, &rsv, STRATA_ID(3, 1), 2), 0);
	assert_int_equal(r->ctl->lost[STRATA_LOST_NESTED], 1);
	assert_int_equal(strata_tls.nesting, STRATA_MAX_NEST);
	strata_tls.nesting = 0;
}

static void test_nested_writer_writes_thread_record(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(2, STRATA_MODE_DISCARD);

	assert_int_equal(log_on(r, 2, 1), 1); /* opens, owner = us */
	uint64_t before = r->ctl->write;
	strata_tls.nesting = 1; /* as if a signal interrupted a tracepoint */
	assert_int_equal(log_on(r, 2, 2), 1);
	strata_tls.nesting = 0;
	/* ring.md §3 rule 3: record (2 words) + event (2 words). */
	assert_int_equal(r->ctl->write - before, 2 * EVB(2));
	assert_int_equal(u32_at(r->data + before) & 31, STRATA_ID_THREAD);
	assert_int_equal((uint32_t)u64_at(r->data + before, 4), strata_tls.tid);
}

static void test_flush_closes_partial_packet(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(2, STRATA_MODE_DISCARD);

	assert_int_equal(log_on(r, 3, 1), 1);
	ring_flush(r);
	assert_true(ring_packet_complete(r, 0));
	assert_int_equal(packet(r, 0)->content_bits, (96 + EVB(3)) * 8);
	assert_int_equal(r->ctl->write, PSIZE);
	ring_flush(r); /* nothing open: no-op */
	assert_int_equal(r->ctl->write, PSIZE);
}

static void test_stale_view_retries(void **state)
{
	(void)state;
	struct strata_ring *r = new_ring(2, STRATA_MODE_DISCARD);

	/* Packet 1 open and committed partway: a writer whose view of
	 * `write` still says packet 0 must reload, not declare the ring
	 * corrupt (the bug the stress test found). */
	while (r->ctl->write < PSIZE)
		log_on(r, 1000, 0);
	assert_int_equal(log_on(r, 2, 1), 1);
	assert_int_equal(r->ctl->disabled, 0);
	assert_int_equal(r->ctl->lost[STRATA_LOST_BUSY], 0);
}

/*
 * The rseq paths (ring.md §7) on a real CPU: the fast path reserves and
 * commits with plain stores; a writer that migrates between reserve and
 * commit commits to the remote counter, and the packet still completes.
 */
/* rseq mode on CPU `cpu` with fresh 4 × 16 KiB rings; 0 (and the test
 * skipped) where there is no rseq or a single CPU. */
static int rseq_on(unsigned cpu, cpu_set_t *saved)
{
	cpu_set_t one;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		skip();
		return 0;
	}
	ring_init();
	if (!strata_rseq) {
		skip(); /* no rseq here: the CAS tests above cover the ring */
		return 0;
	}
	sched_getaffinity(0, sizeof(*saved), saved);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	ring_cfg.psize_shift = 14;
	ring_cfg.npackets_shift = 2;
	ring_cfg.mode = STRATA_MODE_DISCARD;
	return 1;
}

static void test_rseq_paths(void **state)
{
	(void)state;
	cpu_set_t saved, one;
	struct strata_rsv r;

	if (!rseq_on(0, &saved))
		return;

	for (int i = 0; i < 10; i++) { /* first one through the slow path */
		assert_int_equal(strata_reserve(&r, CID, 2), 1);
		r.p[0] = (uint64_t)i;
		strata_commit(&r);
	}
	struct strata_ring *ring = strata_rings[0];
	assert_non_null(ring);
	assert_int_equal(ring->ctl->write, 96 + 10 * EVB(2));
	assert_int_equal(ring->commit[0], 96 + 10 * EVB(2)); /* local count */
	assert_int_equal(ring->commit[1], 0);

	/* Reserve on CPU 0, commit from CPU 1. */
	assert_int_equal(strata_reserve(&r, CID, 2), 1);
	r.p[0] = 99;
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	strata_commit(&r);
	assert_int_equal(ring->commit[1], EVB(2)); /* remote count */

	/* Flush from CPU 1: ring_flush runs on CPU 0 for it. */
	ring_flush(ring);
	assert_true(ring_packet_complete(ring, 0));
	assert_int_equal(packet(ring, 0)->content_bits, (96 + 11 * EVB(2)) * 8);
	assert_int_equal(sched_getcpu(), 1); /* affinity restored */

	sched_setaffinity(0, sizeof(saved), &saved);
	strata_rseq = 0;
}

/* The inline path (ring.md §7, "The inline path") and each case it
 * leaves to the slow path. */
static void test_rseq_inline_path(void **state)
{
	(void)state;
	cpu_set_t saved;
	uint64_t pl[2] = {11, 12}, before;
	uint32_t n0 = 0; /* events logged into packet 0 */
	/* call sites' compact ids, given already (docs/compact.md) */
	static uint8_t cid3 = CID + 3, cid1a = CID + 4, cid1b = CID + 5;

	if (!rseq_on(1, &saved))
		return;
	n0++, strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl); /* opens: slow path */
	struct strata_ring *ring = strata_rings[1];
	assert_non_null(ring);
	assert_int_equal(ring->ctl->owner, strata_tls.tid);
	assert_int_equal(ring->ctl->write, 96 + EVB(3));
	/* two-phase: the opener; and one event (ring.md §7) */
	assert_int_equal(ring->ctl->xr, 96 + EVB(3) + STRATA_XR_EVENT);
	assert_int_equal(ring->rseq, 1);

	/* Inline: no record, header + payload, no commit count: whole once
	 * `write` passed it, and counted in xr (ring.md §7). */
	pl[0] = 21;
	pl[1] = 22;
	n0++, strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl);
	const unsigned char *e = ring->data + 96 + EVB(3);
	assert_int_equal(ring->ctl->write, 96 + 2 * EVB(3));
	assert_int_equal(u32_at(e) & 31, cid3);
	assert_int_equal(u64_at(e, 4), 21);
	assert_int_equal(u64_at(e, 12), 22);
	assert_int_equal(ring->commit[0], 96 + EVB(3));
	assert_int_equal(ring->ctl->xr, 96 + EVB(3) + 2 * STRATA_XR_EVENT);
	assert_int_equal(ring_open_done(ring, 0), 96 + 2 * EVB(3));
	assert_int_equal(strata_tls.nesting, 0);

	/* Inside a tracepoint of this thread (a signal handler): slow path,
	 * with a thread record (rule 3). */
	strata_tls.nesting = 1;
	before = ring->ctl->write;
	n0++, strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl);
	strata_tls.nesting = 0;
	assert_int_equal(ring->ctl->write - before, EVB(2) + EVB(3));
	assert_int_equal(u32_at(ring->data + before) & 31, STRATA_ID_THREAD);
	/* The slow path's events are two-phase: counted in xr, committed. */
	assert_int_equal(ring->ctl->xr,
			 96 + EVB(3) + EVB(2) + EVB(3) + 3 * STRATA_XR_EVENT);
	assert_int_equal(ring->commit[0], 96 + EVB(3) + EVB(2) + EVB(3));

	/* Another thread wrote last: a record, and the owner is us again. */
	ring->ctl->owner = strata_tls.tid + 1;
	before = ring->ctl->write;
	n0++, strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl);
	assert_int_equal(ring->ctl->write - before, EVB(2) + EVB(3));
	assert_int_equal(ring->ctl->owner, strata_tls.tid);
	before = ring->ctl->write;
	n0++, strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl);
	assert_int_equal(ring->ctl->write - before, EVB(3));

	/* A timestamp gap: the event takes the extended header (16 bytes:
	 * 31 | length, its id, the full clock). */
	ring->ctl->last_ts_hi ^= 1;
	before = ring->ctl->write;
	uint64_t t0 = strata_clock();
	n0++, strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl);
	assert_int_equal(ring->ctl->write - before, 16 + 16);
	e = ring->data + before;
	assert_int_equal(u32_at(e), 31 | (32 / 4) << 5);
	assert_int_equal(u32_at(e + 4), cid3);
	assert_true(u64_at(e, 8) >= t0 && u64_at(e, 8) - t0 < (1ull << 32));
	assert_int_equal(u64_at(e, 16), 21);
	assert_int_equal(ring->ctl->last_ts_hi, (uint32_t)(u64_at(e, 8) >> 27));

	/* Fill the packet to the byte: the event that fills it closes it
	 * (slow path), and the next one opens packet 1. */
	uint64_t room;
	while ((room = PSIZE - (ring->ctl->write & (PSIZE - 1))) > EVB(3)) {
		if (room >= EVB(3) + EVB(2))
			n0++, strata_log_fixed(&cid1a, STRATA_ID(3, 1), 2, pl);
		else
			n0++, strata_log_fixed(&cid1b, STRATA_ID(3, 1), 1, pl);
	}
	assert_int_equal(PSIZE - (ring->ctl->write & (PSIZE - 1)), EVB(3));
	n0++, strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl);
	assert_int_equal(ring->ctl->write, PSIZE);
	assert_true(ring_packet_complete(ring, 0));
	assert_int_equal(packet(ring, 0)->content_bits, PSIZE * 8);
	/* its closer's count: every event, inline or not; no full id */
	assert_int_equal(packet(ring, 0)->events, n0);
	strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl);
	assert_int_equal(ring->ctl->write, PSIZE + 96 + EVB(3));
	assert_int_equal(ring->ctl->lost[STRATA_LOST_BUSY] +
				 ring->ctl->lost[STRATA_LOST_FULL],
			 0);

	sched_setaffinity(0, sizeof(saved), &saved);
	strata_rseq = 0;
}

/* Any other clock (ring.md §7, "Any clock"): the same sections, run out
 * of line around strata_clock(); the one-shot attempt still commits
 * nothing, and the timestamps are CLOCK_MONOTONIC's. */
static void test_rseq_outline(void **state)
{
	(void)state;
	cpu_set_t saved;
	struct strata_rsv r;
	uint64_t pl[2] = {31, 32}, before, t0;
	static uint8_t cid3 = CID + 3;

	strata_clock_tsc = 0;
	if (!rseq_on(0, &saved)) {
		clock_init();
		return;
	}
	assert_int_equal(strata_rseq, STRATA_RSEQ_OUTLINE);
	/* CPU 0's ring of test_rseq_paths, closed by its flush: this event
	 * opens the next packet (slow path) */
	strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl);
	struct strata_ring *ring = strata_rings[0];
	assert_non_null(ring);
	assert_int_equal(ring->rseq, 1);
	t0 = strata_clock_mono();
	before = ring->ctl->write;
	uint64_t cc = *strata_ring_cc(ring, before), x = ring->ctl->xr;
	strata_log_fixed(&cid3, STRATA_ID(3, 3), 3, pl);
	assert_int_equal(ring->ctl->write - before, EVB(3));
	assert_int_equal(*strata_ring_cc(ring, before), cc); /* one-shot */
	assert_int_equal(ring->ctl->xr, x + STRATA_XR_EVENT);
	const unsigned char *e = ring->data + (before & ring->bufmask);
	uint32_t h = u32_at(e);
	assert_int_equal(h & 31, cid3);
	assert_int_equal(u64_at(e, 4), 31);
	/* the header holds the low 27 bits of CLOCK_MONOTONIC, not of the
	 * TSC: the time they stand for, from t0, is within 20 ms of it */
	assert_true((((h >> 5) - (uint32_t)t0) & ((1u << 27) - 1)) < 20000000u);

	/* Two-phase (strata_reserve) goes out of line too, and commits. */
	before = ring->ctl->write;
	cc = *strata_ring_cc(ring, before);
	assert_int_equal(strata_reserve(&r, CID, 2), 1);
	r.p[0] = 7;
	strata_commit(&r);
	assert_int_equal(ring->ctl->write - before, EVB(2));
	assert_int_equal(*strata_ring_cc(ring, before), cc + EVB(2));
	assert_int_equal(strata_tls.nesting, 0);

	/* A full id (an extended header, docs/compact.md) is counted too, and
	 * marks the packet for the consumer's walk; the closer (here a flush)
	 * publishes both in the header (ring.md §7). */
	uint64_t begin = ring_packet_begin(ring, ring->ctl->write);
	x = ring->ctl->xr;
	assert_int_equal(strata_reserve(&r, STRATA_ID(3, 7), 2), 1);
	r.p[0] = 8;
	strata_commit(&r);
	assert_int_equal(ring->ctl->xr,
			 x + 16 + 8 + STRATA_XR_EVENT + STRATA_XR_FULL_ID);
	/* a second one: the bit stays set (it is or'ed, not added) */
	assert_int_equal(strata_reserve(&r, STRATA_ID(3, 8), 1), 1);
	strata_commit(&r);
	assert_int_equal(ring->ctl->xr,
			 x + 16 + 8 + 16 + 2 * STRATA_XR_EVENT + STRATA_XR_FULL_ID);
	ring_flush(ring);
	assert_int_equal(packet(ring, begin)->events,
			 (uint32_t)(x >> 32) + 2 + (1u << 31));

	sched_setaffinity(0, sizeof(saved), &saved);
	clock_init(); /* the TSC again where it was; strata_rseq with it */
	strata_rseq = 0;
}

static void test_clock_fit(void **state)
{
	(void)state;
	struct clock_point a = {1000, 5000000000ull, 1700000000000000000ull};
	struct clock_point b = {1000 + 3000000000ull, 6000000000ull,
				1700000001000000000ull};
	uint64_t f = 0;
	int64_t off;

	strata_clock_tsc = 1;
	clock_fit(&a, &b, &f, &off);
	assert_int_equal(f, 3000000000ull);
	/* realtime(ts_b) = off + ts_b / f */
	double rt = (double)off + (double)b.ts / 3.0;
	assert_true(rt > 1700000000999999000.0 && rt < 1700000001000001000.0);
	clock_init();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_event_opens_packet),
		cmocka_unit_test(test_switch_closes_with_padding),
		cmocka_unit_test(test_exact_fill),
		cmocka_unit_test(test_doorbell),
		cmocka_unit_test(test_prefault),
		cmocka_unit_test(test_discard_when_full),
		cmocka_unit_test(test_overwrite_reuses_oldest),
		cmocka_unit_test(test_busy_packet_is_not_reused),
		cmocka_unit_test(test_too_big_and_nesting),
		cmocka_unit_test(test_nested_writer_writes_thread_record),
		cmocka_unit_test(test_flush_closes_partial_packet),
		cmocka_unit_test(test_stale_view_retries),
		cmocka_unit_test(test_clock_fit),
		cmocka_unit_test(test_rseq_paths),
		cmocka_unit_test(test_rseq_inline_path),
		cmocka_unit_test(test_rseq_outline),
	};
	/* The tests above use rings of CPUs that do not exist (100 on), so
	 * they run the CAS protocol; test_rseq_paths switches to rseq. */
	strata_rseq = 0;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
