/* SPDX-License-Identifier: MIT */
/* Unit tests of the consumer: the event walk and the crash-salvage closer, on synthetic packets. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "consumer/cons_int.h"

#define PSIZE (16u << 10)
#define CID 10u                      /* a user compact id */
#define CID_ID STRATA_ID(7, 3)       /* the event it stands for */
#define CID_WORDS 3u                 /* header counted as one */
#define CID_LEN (STRATA_HDR_COMPACT + 8u * (CID_WORDS - 1u))
#define OWN_CID 2u                   /* one of strata's own (major 0) */
#define TS_MASK ((UINT64_C(1) << STRATA_TS_BITS) - 1)

/* A packet being built: its bytes and where the next event goes. */
struct pkt {
	unsigned char b[PSIZE];
	uint64_t pos;
};

static uint64_t u64_at(const struct pkt *p, size_t off)
{
	uint64_t v;
	memcpy(&v, p->b + off, 8);
	return v;
}

static void pkt_init(struct pkt *p, uint64_t ts_begin)
{
	uint32_t magic = STRATA_PKT_MAGIC;

	memset(p->b, 0, sizeof(p->b));
	memcpy(p->b + STRATA_PKT_OFF_MAGIC, &magic, 4);
	memcpy(p->b + STRATA_PKT_OFF_TS_BEGIN, &ts_begin, 8);
	p->pos = STRATA_PKT_HEADER_SIZE;
}

/* A compact event (docs/compact.md): 27 bits of time, the id in 5. */
static void put_compact(struct pkt *p, uint32_t cid, unsigned words,
			uint64_t ts)
{
	uint32_t h = (uint32_t)((ts & TS_MASK) << 5) | cid;

	memcpy(p->b + p->pos, &h, 4);
	memset(p->b + p->pos + 4, 0xab, 8u * (words - 1u));
	p->pos += STRATA_HDR_COMPACT + 8u * (words - 1u);
}

/* An extended event: length in 4-byte units, full id, full time. */
static void put_extended(struct pkt *p, uint32_t id, unsigned payload_words,
			 uint64_t ts)
{
	uint32_t len = STRATA_HDR_EXTENDED + 8u * payload_words;
	uint32_t h = (len / 4) << 5 | STRATA_CID_EXT;

	memcpy(p->b + p->pos, &h, 4);
	memcpy(p->b + p->pos + 4, &id, 4);
	memcpy(p->b + p->pos + 8, &ts, 8);
	memset(p->b + p->pos + 16, 0xcd, 8u * payload_words);
	p->pos += len;
}

/* A consumer of another process's rings with no stream: only what the
 * walk and the closer read is set up. */
static int setup(void **state)
{
	struct cons *c = calloc(1, sizeof(*c));

	if (!c || !(c->seen = calloc(1, (1u << 22) / 8)))
		return -1;
	c->external = 1;
	snprintf(c->dir, sizeof(c->dir), "unit");
	c->cids[CID] = CID_ID | (uint64_t)CID_WORDS << 32 | STRATA_CID_VALID;
	c->cids[OWN_CID] = STRATA_ID(0, 2) | UINT64_C(2) << 32 | STRATA_CID_VALID;
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct cons *c = *state;

	free(c->raw);
	free(c->seen);
	free(c);
	return 0;
}

/* ---- the event walk ------------------------------------------------------ */

static void test_event_at_compact(void **state)
{
	struct cons *c = *state;
	static struct pkt p;
	uint64_t ts = TS_MASK - 10; /* the 27-bit time wraps below */
	uint32_t id = 0;

	pkt_init(&p, ts);
	put_compact(&p, CID, CID_WORDS, TS_MASK + 6);
	const unsigned char *e = p.b + STRATA_PKT_HEADER_SIZE;
	assert_int_equal(cons_event_at(c, e, CID_LEN, &id, &ts), CID_LEN);
	assert_int_equal(id, CID_ID);
	assert_int_equal(ts, TS_MASK + 6);
	/* cut short: the event does not fit */
	assert_int_equal(cons_event_at(c, e, CID_LEN - 1, &id, &ts), 0);
}

static void test_event_at_extended(void **state)
{
	struct cons *c = *state;
	static struct pkt p;
	uint64_t ts = 0;
	uint32_t id = 0, h;

	pkt_init(&p, 0);
	put_extended(&p, STRATA_ID(5, 1), 2, 12345);
	unsigned char *e = p.b + STRATA_PKT_HEADER_SIZE;
	assert_int_equal(cons_event_at(c, e, 32, &id, &ts), 32);
	assert_int_equal(id, STRATA_ID(5, 1));
	assert_int_equal(ts, 12345);
	/* a length past the content, or not whole payload words */
	assert_int_equal(cons_event_at(c, e, 28, &id, &ts), 0);
	h = (28 / 4) << 5 | STRATA_CID_EXT;
	memcpy(e, &h, 4);
	assert_int_equal(cons_event_at(c, e, 32, &id, &ts), 0);
}

static void test_event_at_damaged(void **state)
{
	struct cons *c = *state;
	unsigned char zero[16] = {0};
	uint32_t id, unknown = 12; /* a compact id nobody gave */
	uint64_t ts = 0;

	assert_int_equal(cons_event_at(c, zero, sizeof(zero), &id, &ts), 0);
	memcpy(zero, &unknown, 4);
	assert_int_equal(cons_event_at(c, zero, sizeof(zero), &id, &ts), 0);
	assert_int_equal(cons_event_at(c, zero, 3, &id, &ts), 0);
}

/* The program's events are counted, strata's own are not; an id never
 * seen, with no descriptor, is noted for the metadata once. */
static void test_scan_counts(void **state)
{
	struct cons *c = *state;
	static struct pkt p;

	pkt_init(&p, 100);
	put_compact(&p, CID, CID_WORDS, 101);
	put_compact(&p, OWN_CID, 2, 102);
	put_extended(&p, STRATA_ID(5, 1), 3, 103);
	put_extended(&p, STRATA_ID(5, 1), 3, 104);
	put_compact(&p, CID, CID_WORDS, 105);
	assert_int_equal(cons_scan_events(c, p.b, p.pos), 4);
	assert_int_equal(c->nraw, 1);
	assert_int_equal(c->raw[0].id, STRATA_ID(5, 1));
	assert_int_equal(c->raw[0].words, 4);
	assert_true(c->meta_dirty);
}

/* A damaged event ends the walk: what follows it is not counted. */
static void test_scan_stops_at_damage(void **state)
{
	struct cons *c = *state;
	static struct pkt p;

	pkt_init(&p, 100);
	put_compact(&p, CID, CID_WORDS, 101);
	p.pos += 4; /* a header of zeros: compact id 0 */
	put_compact(&p, CID, CID_WORDS, 102);
	assert_int_equal(cons_scan_events(c, p.b, p.pos), 1);
}

/* ---- the salvage closer ------------------------------------------------ */

struct fake_ring {
	struct strata_ring_ctl ctl;
	struct strata_ring r;
	struct cons_stream s;
};

static void fake_init(struct fake_ring *f, uint64_t lost0, uint64_t lost1)
{
	memset(f, 0, sizeof(*f));
	f->ctl.lost[0] = lost0;
	f->ctl.lost[1] = lost1;
	f->r.ctl = &f->ctl;
	f->r.psize = PSIZE;
	f->s.ring = &f->r;
}

/* A ring whose loss counters sum to `lost`, and a packet begun at time
 * 1000 holding one compact event, at 1010. */
static void close_case(struct fake_ring *f, struct pkt *p, uint64_t lost)
{
	fake_init(f, lost, 0);
	pkt_init(p, 1000);
	put_compact(p, CID, CID_WORDS, 1010);
}

/* Whole events, then a reservation in flight (garbage past `done`): the
 * copy is closed at `done` exactly, its timestamp_end the last event's,
 * its events_discarded the ring's count. */
static void test_close_whole(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;

	close_case(&f, &p, 5);
	f.ctl.lost[1] = 2; /* the causes are summed */
	put_extended(&p, STRATA_ID(5, 1), 1, 2000);
	put_compact(&p, CID, CID_WORDS, 2005);
	uint64_t done = p.pos;
	memset(p.b + done, 0xff, 64); /* in flight, never committed */
	assert_int_equal(cons_close_copy(c, &f.s, p.b, done), 0);
	/* content_size is in bits, and is what was committed */
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_CONTENT_SIZE), done * 8);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_TS_END), 2005);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_DISCARDED), 7);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_TS_BEGIN), 1000);
}

/* An empty packet (the header only) closes as empty, at its begin. */
static void test_close_empty(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;

	fake_init(&f, 0, 0);
	pkt_init(&p, 777);
	assert_int_equal(cons_close_copy(c, &f.s, p.b, p.pos), 0);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_CONTENT_SIZE),
			 STRATA_PKT_HEADER_SIZE * 8);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_TS_END), 777);
}

/* The committed count ends inside an event (or the events walked run
 * past it): not a whole prefix, refused, and the copy left as it was. */
static void test_close_not_at_event_end(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;

	close_case(&f, &p, 0);
	put_compact(&p, CID, CID_WORDS, 1020);
	assert_int_equal(cons_close_copy(c, &f.s, p.b, p.pos - 8), -1);
	assert_int_equal(cons_close_copy(c, &f.s, p.b, p.pos - CID_LEN + 4), -1);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_CONTENT_SIZE), 0);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_TS_END), 0);
}

/* An event in the middle never committed (its bytes still zero) before
 * a committed one: the walk fails, nothing is closed. */
static void test_close_gap(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;

	close_case(&f, &p, 0);
	p.pos += CID_LEN; /* reserved, never written */
	put_compact(&p, CID, CID_WORDS, 1030);
	assert_int_equal(cons_close_copy(c, &f.s, p.b, p.pos), -1);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_CONTENT_SIZE), 0);
}

/* events_discarded is free-running: never below the last packet's. */
static void test_close_discarded_monotonic(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;

	close_case(&f, &p, 3);
	f.s.last_disc = 40;
	assert_int_equal(cons_close_copy(c, &f.s, p.b, p.pos), 0);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_DISCARDED), 40);
}

/* A packet whose closer ran before that of the packet written before it
 * (delayed between its switch and its close) counts fewer losses: it is
 * written with the last packet's count, never a decrease. */
static void test_write_discarded_monotonic(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;

	close_case(&f, &p, 0);
	assert_int_equal(cons_close_copy(c, &f.s, p.b, p.pos), 0);
	uint64_t disc = 50;
	memcpy(p.b + STRATA_PKT_OFF_DISCARDED, &disc, 8);
	f.s.last_disc = 120;
	f.s.dead = 1; /* counted, not written: no file needed */
	cons_write_packet_buf(c, &f.s, p.b, 0, 0);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_DISCARDED), 120);
}

/* ---- batches onto a full disk -------------------------------------------- */

#define BATCH_PKTS 4u

/* Packet i of a batch: nearly full of compact events (so that it joins a
 * batch, stream.c batch_takes()), closed as the producer closes it. */
static uint64_t batch_packet(unsigned char *b, unsigned i)
{
	static struct pkt p;
	uint64_t ts = 1000 + 100000 * (uint64_t)i, n = 0, seq = i, disc = i;

	pkt_init(&p, ts);
	while (p.pos + CID_LEN <= PSIZE - 16) {
		put_compact(&p, CID, CID_WORDS, ++ts);
		n++;
	}
	uint64_t bits = p.pos * 8;
	memcpy(p.b + STRATA_PKT_OFF_CONTENT_SIZE, &bits, 8);
	memcpy(p.b + STRATA_PKT_OFF_TS_END, &ts, 8);
	memcpy(p.b + STRATA_PKT_OFF_SEQ, &seq, 8);
	memcpy(p.b + STRATA_PKT_OFF_DISCARDED, &disc, 8);
	memcpy(b, p.b, PSIZE);
	return n;
}

/* A batch whose write the disk cuts short (here a file size limit, at two
 * packets and a half): the two whole packets stay written, counted and
 * indexed; the rest is cut from the file and counted as not written. */
static void test_batch_short_write_keeps_whole(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	unsigned char *ring = aligned_alloc(DIO_ALIGN, BATCH_PKTS * PSIZE);
	uint64_t nev[BATCH_PKTS];
	struct rlimit was, lim;
	struct stat st;
	const char *path = "unit-consumer-batch.tmp";

	assert_non_null(ring);
	c->batch_tails = aligned_alloc(DIO_ALIGN, BATCH_MAX * DIO_ALIGN);
	assert_non_null(c->batch_tails);
	fake_init(&f, 0, 0);
	f.s.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (f.s.fd < 0) /* a file system without direct I/O: the same cut */
		f.s.fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(f.s.fd >= 0);
	f.s.direct = 1;
	f.s.idx_fd = -1;
	for (unsigned i = 0; i < BATCH_PKTS; i++)
		nev[i] = batch_packet(ring + i * PSIZE, i);

	signal(SIGXFSZ, SIG_IGN); /* EFBIG rather than death */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	lim = was;
	lim.rlim_cur = 2 * PSIZE + PSIZE / 2; /* whole pages: direct I/O */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (unsigned i = 0; i < BATCH_PKTS; i++)
		cons_write_packet_batch(c, &f.s, ring + i * PSIZE,
					(uint64_t)i * PSIZE, 0, 1);
	assert_int_equal(f.s.batch_n, BATCH_PKTS); /* one batch */
	cons_stream_flush(c, &f.s);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);

	assert_int_equal(fstat(f.s.fd, &st), 0);
	assert_int_equal(st.st_size, 2 * PSIZE);
	assert_int_equal(f.s.file_off, 2 * PSIZE);
	assert_true(f.s.dead);
	assert_int_equal(c->err, -ENOSPC);
	assert_int_equal(c->events, nev[0] + nev[1]);
	assert_int_equal(c->packets, 2);
	assert_int_equal(f.s.lost_io, nev[2] + nev[3]);
	assert_int_equal(c->lost_io, nev[2] + nev[3]);
	assert_int_equal(f.s.idx_len, 2 * STRATA_IDX_ENTRY);
	/* the trailer's template is the last packet kept */
	uint64_t ts_end1;
	memcpy(&ts_end1, ring + PSIZE + STRATA_PKT_OFF_TS_END, 8);
	assert_int_equal(f.s.last_disc, 1);
	assert_int_equal(f.s.last_ts, ts_end1);
	assert_memory_equal(f.s.last_hdr, ring + PSIZE, STRATA_PACKET_HEADER);
	close(f.s.fd);
	unlink(path);
	free(c->batch_tails);
	c->batch_tails = NULL;
	free(ring);
}

/* ---- cutting out a reservation in flight ------------------------------- */

#define THREAD_REC_LEN (STRATA_HDR_COMPACT + 8u)

/* A strata:thread record (compact id 1): the events after it are tid's. */
static void put_thread(struct cons *c, struct pkt *p, uint32_t tid,
		       uint64_t ts)
{
	uint64_t v = tid | (uint64_t)4242 << 32;

	c->cids[STRATA_ID_THREAD] = STRATA_ID(0, STRATA_ID_THREAD) |
				    UINT64_C(2) << 32 | STRATA_CID_VALID;
	put_compact(p, STRATA_ID_THREAD, 2, ts);
	memcpy(p->b + p->pos - 8, &v, 8);
}

/* An event whose time goes back (an extended header left from the slot's
 * last lap) is not this packet's: the walk refuses it, whatever its
 * length. */
static void test_close_backwards(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;

	close_case(&f, &p, 0);
	put_extended(&p, STRATA_ID(5, 1), 1, 5);
	assert_int_equal(cons_close_copy(c, &f.s, p.b, p.pos), -1);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_CONTENT_SIZE), 0);
}

/* The reservation in flight never had its header written (zero bytes:
 * the slot's first lap): cut out where the walk stops, the event
 * committed after it kept. */
static void test_cut_unwritten(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;

	close_case(&f, &p, 0); /* one event at 1010 */
	uint64_t hole_at = p.pos;
	p.pos += 24;          /* reserved, never written */
	put_extended(&p, STRATA_ID(5, 1), 2, 1030);
	uint64_t reserved = p.pos, done = reserved - 24;
	assert_int_equal(cons_close_copy(c, &f.s, p.b, done), -1);
	assert_int_equal(cons_cut_in_flight(c, &f.s, p.b, reserved, done), 0);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_CONTENT_SIZE), done * 8);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_TS_END), 1030);
	assert_int_equal(u64_at(&p, hole_at + 8), 1030); /* moved up */
}

/* The bytes in flight are a header left from the slot's last lap, as long
 * as the committed event after it: the walk of the committed count used
 * to end at `done` through it, keeping the old event (time 5: babeltrace2
 * refused the trace) and dropping the committed one. */
static void test_cut_stale_header(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;

	close_case(&f, &p, 0);
	uint64_t hole_at = p.pos;
	put_extended(&p, STRATA_ID(5, 1), 1, 5); /* the last lap's */
	put_extended(&p, STRATA_ID(5, 1), 1, 1030);
	uint64_t reserved = p.pos, done = reserved - 24;
	assert_int_equal(cons_close_copy(c, &f.s, p.b, done), -1);
	assert_int_equal(cons_cut_in_flight(c, &f.s, p.b, reserved, done), 0);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_TS_END), 1030);
	assert_int_equal(u64_at(&p, hole_at + 8), 1030);
}

/* Two threads on one CPU: thread 7's last reservation (its record and an
 * event) was in flight, its header written, when thread 9 committed
 * after it. The committed count ends inside an event, so the prefix
 * cannot be whole; the one thread's last reservation as long as what is
 * missing is cut out. With both threads' last reservations that long,
 * which was in flight cannot be told: refused. */
static void test_cut_threads_last(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;
	uint32_t tid = 7;

	close_case(&f, &p, 0);                  /* thread 7's, at 1010 */
	memcpy(p.b + STRATA_PKT_OFF_TID, &tid, 4);
	put_thread(c, &p, 9, 1012);
	put_compact(&p, CID, CID_WORDS, 1012);  /* thread 9's */
	uint64_t cut = p.pos;
	put_thread(c, &p, 7, 1020);             /* thread 7's, in flight */
	put_extended(&p, STRATA_ID(5, 1), 1, 1020);
	uint64_t hole = p.pos - cut;
	put_thread(c, &p, 9, 1030);
	put_compact(&p, CID, CID_WORDS, 1030);  /* thread 9's, committed */
	uint64_t reserved = p.pos, done = reserved - hole;
	static struct pkt q;
	memcpy(&q, &p, sizeof(q));

	assert_int_equal(cons_close_copy(c, &f.s, p.b, done), -1);
	assert_int_equal(cons_cut_in_flight(c, &f.s, p.b, reserved, done), 0);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_TS_END), 1030);
	uint64_t rec;
	memcpy(&rec, p.b + cut + 4, 8);
	assert_int_equal((uint32_t)rec, 9); /* thread 9's record moved up */

	/* thread 9's last as long as thread 7's: ambiguous */
	q.pos = cut + THREAD_REC_LEN;
	put_extended(&q, STRATA_ID(5, 1), 1, 1020);
	put_thread(c, &q, 9, 1030);
	put_extended(&q, STRATA_ID(5, 1), 1, 1030);
	assert_int_equal(cons_cut_in_flight(c, &f.s, q.b, q.pos, q.pos - hole),
			 -1);
}

/* Two threads' last reservations as long as each other, the first marked
 * in flight by its writer (strata_log_slow()): the prefix walk would end
 * at `done` through it, keeping it and dropping the committed one; the
 * mark says which. A mark of another packet, or marks that do not add up
 * to what is missing, are not used. */
static void test_cut_marked(void **state)
{
	struct cons *c = *state;
	static struct fake_ring f;
	static struct pkt p;
	const uint64_t begin = UINT64_C(5) * PSIZE;

	close_case(&f, &p, 0);
	put_thread(c, &p, 7, 1020);
	uint64_t at = p.pos;
	put_extended(&p, STRATA_ID(5, 1), 1, 1020); /* in flight */
	uint64_t len = p.pos - at;
	put_thread(c, &p, 9, 1030);
	put_extended(&p, STRATA_ID(5, 1), 1, 1030); /* committed */
	uint64_t reserved = p.pos, done = reserved - len - THREAD_REC_LEN;
	static struct pkt q;
	memcpy(&q, &p, sizeof(q));

	/* the record and the event were one reservation */
	f.ctl.inflight[3] = STRATA_INFLIGHT_MARK(begin + at - THREAD_REC_LEN,
						 len + THREAD_REC_LEN);
	/* another packet's mark, the same offset in it */
	f.ctl.inflight[5] = STRATA_INFLIGHT_MARK(begin + PSIZE + at, len);
	assert_int_equal(cons_cut_marked(c, &f.s, p.b, begin, reserved, done), 0);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_CONTENT_SIZE), done * 8);
	assert_int_equal(u64_at(&p, STRATA_PKT_OFF_TS_END), 1030);
	uint64_t rec;
	memcpy(&rec, p.b + at - THREAD_REC_LEN + 4, 8);
	assert_int_equal((uint32_t)rec, 9); /* thread 9's record moved up */

	/* unmarked, the lengths cannot tell: refused either way */
	f.ctl.inflight[3] = 0;
	assert_int_equal(cons_cut_marked(c, &f.s, q.b, begin, reserved, done), -1);
	assert_int_equal(cons_cut_in_flight(c, &f.s, q.b, reserved, done), -1);
	/* a mark that is not all that is missing */
	f.ctl.inflight[3] = STRATA_INFLIGHT_MARK(begin + at, len);
	assert_int_equal(cons_cut_marked(c, &f.s, q.b, begin, reserved, done), -1);
	assert_int_equal(u64_at(&q, STRATA_PKT_OFF_CONTENT_SIZE), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_event_at_compact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_at_extended, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_at_damaged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_stops_at_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_discarded_monotonic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_not_at_event_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_gap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_discarded_monotonic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_short_write_keeps_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_backwards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_unwritten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_stale_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_threads_last, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_marked, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
