/* SPDX-License-Identifier: MIT */
/* Packets left open: crash salvage, and the committed part of a snapshot's open packet (docs/record.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "consumer/cons_int.h"

/*
 * Walk the events of a packet copy from `off` towards `to`, from time
 * *ts: the offset where the walk stopped, `to` when the events end there
 * exactly; otherwise the start of the first event that is damaged, runs
 * past `to`, or is older than the one before it. Timestamps never go back
 * in buffer order (ring.md §2): a header that does is not this lap's (the
 * bytes of a reservation whose writer died before writing them, left
 * from the slot's previous lap, or payload read as a header), and
 * keeping it would give readers an event from the past, or from the
 * boot, whose time babeltrace2 refuses. *ts: the last whole event's time.
 */
static uint64_t salvage_walk(struct cons *c, const unsigned char *pkt,
			     uint64_t off, uint64_t to, uint64_t *ts)
{
	while (off < to) {
		uint64_t t = *ts;
		uint32_t id, len = cons_event_at(c, pkt + off, to - off, &id,
						 &t);

		if (len == 0 || t < *ts)
			break;
		*ts = t;
		off += len;
	}
	return off;
}

/*
 * Crash salvage (docs/record.md): the packet that began at `begin` was
 * left incomplete by writers that will never come back (the process died
 * or exec'd). `reserved` is how far writers had reserved in it (the
 * packet size when unknown). Committed bytes are not a prefix in
 * general, but a writer commits what it reserved, in order, and a thread
 * has one reservation in flight at most: when the events walked from the
 * header end exactly at the committed count, what lies past it is the
 * reservation(s) in flight when the writers stopped, and the prefix is
 * whole. The packet is then closed in a private copy, as ring_close()
 * would have (content_size, timestamp_end of its last event,
 * events_discarded), and written. Otherwise an event in the middle was
 * never committed: cons_cut_in_flight() cuts it out when it can be told
 * which it is; when it cannot, the packet is reported and skipped.
 */
int cons_close_copy(struct cons *c, const struct cons_stream *s,
		    unsigned char *pkt, uint64_t done)
{
	const struct strata_ring *r = s->ring;
	uint64_t ts;

	memcpy(&ts, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	if (salvage_walk(c, pkt, STRATA_PACKET_HEADER, done, &ts) != done)
		return -1;
	uint64_t bits = done * 8, disc = 0;
	/* r->ctl, not the fast path's computed address: this view is not
	 * laid out like the creator's (consumer/mapped.c). */
	for (int i = 0; i < STRATA_LOST_NCAUSES; i++)
		disc += strata_load_relaxed(&r->ctl->lost[i]);
	memcpy(pkt + STRATA_PKT_OFF_TS_END, &ts, 8);
	memcpy(pkt + STRATA_PKT_OFF_CONTENT_SIZE, &bits, 8);
	if (disc < s->last_disc)
		disc = s->last_disc; /* a free-running counter never decreases */
	memcpy(pkt + STRATA_PKT_OFF_DISCARDED, &disc, 8);
	return 0;
}

/* A thread's last reservation in a packet: where it begins (its thread
 * record, when it has one) and its length. */
struct last_rsv {
	uint32_t tid;
	uint32_t len;
	uint64_t off;
};

#define SALVAGE_THREADS 64

/*
 * The events from the header walk whole to `reserved`: a reservation in
 * flight had its header written. A thread has one reservation in flight
 * at most and commits in order, so the one in flight is the last of its
 * thread in the packet; the one of `hole` bytes if exactly one thread's
 * last is that long. Its offset, or 0 when none or several are.
 */
static uint64_t in_flight_last(struct cons *c, const unsigned char *pkt,
			       uint64_t reserved, uint64_t hole)
{
	struct last_rsv last[SALVAGE_THREADS];
	uint64_t off = STRATA_PACKET_HEADER, rec = 0, ts, found = 0;
	unsigned n = 0, i, hits = 0;
	uint32_t tid;

	memcpy(&tid, pkt + STRATA_PKT_OFF_TID, 4);
	memcpy(&ts, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	while (off < reserved) {
		uint32_t id, len = cons_event_at(c, pkt + off, reserved - off,
						 &id, &ts);

		if (len == 0) /* walked whole just before: cannot happen */
			return 0;
		if (id == STRATA_ID_THREAD) {
			/* tid | pid << 32, the record's one payload word */
			memcpy(&tid, pkt + off + len - 8, 4);
			rec = off;
			off += len;
			continue;
		}
		for (i = 0; i < n && last[i].tid != tid; i++)
			;
		if (i == n && n++ == SALVAGE_THREADS)
			return 0;
		last[i].tid = tid;
		last[i].off = rec ? rec : off;
		last[i].len = (uint32_t)(off + len - last[i].off);
		rec = 0;
		off += len;
	}
	for (i = 0; i < n; i++) {
		if (last[i].len == hole) {
			found = last[i].off;
			hits++;
		}
	}
	return hits == 1 ? found : 0;
}

/* Bytes of a packet copy that were reserved and never committed. */
struct hole {
	uint64_t at, len;
};

/*
 * Cut the holes (in order, apart) out of a copy reserved to `reserved`,
 * and close it at `done`, what is left: when the events between them walk
 * whole, each ending exactly where a hole begins and the last at
 * `reserved`, times never going back (the holes' own bytes are not
 * read). 0, or -1 (the copy unchanged unless the walk held and the
 * close failed, which it cannot: it walks the same events).
 */
static int cut_holes(struct cons *c, const struct cons_stream *s,
		     unsigned char *pkt, const struct hole *h, unsigned n,
		     uint64_t reserved, uint64_t done)
{
	uint64_t off = STRATA_PACKET_HEADER, ts, to;
	unsigned i;

	memcpy(&ts, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	for (i = 0; i <= n; i++) {
		to = i < n ? h[i].at : reserved;
		if (to < off || salvage_walk(c, pkt, off, to, &ts) != to)
			return -1;
		off = i < n ? h[i].at + h[i].len : reserved;
	}
	for (off = h[0].at, i = 0; i < n; i++) {
		uint64_t from = h[i].at + h[i].len;
		uint64_t len = (i + 1 < n ? h[i + 1].at : reserved) - from;

		memmove(pkt + off, pkt + from, len);
		off += len;
	}
	return off == done ? cons_close_copy(c, s, pkt, done) : -1;
}

/*
 * The reservations the process's threads marked in flight in the ring's
 * control block (strata_ring_ctl.inflight: the library's out-of-line
 * events, marked from their reservation to just before their commit)
 * that lie in this packet, the one open at `begin`, reserved to
 * `reserved`: when they are all that is missing (their lengths add up
 * to `reserved - done`), they are cut out and the copy closed at `done`.
 * Where guessing from lengths cannot tell an event in flight from a
 * committed one as long, the marks can. 0, or -1 (no marks, or not
 * all).
 */
int cons_cut_marked(struct cons *c, const struct cons_stream *s,
		    unsigned char *pkt, uint64_t begin, uint64_t reserved,
		    uint64_t done)
{
	const uint64_t mask = (UINT64_C(1) << 48) - 1;
	struct hole h[STRATA_INFLIGHT_SLOTS];
	uint64_t sum = 0;
	unsigned n = 0, i, j;

	if (reserved <= done || reserved > s->ring->psize ||
	    done < STRATA_PACKET_HEADER)
		return -1;
	for (i = 0; i < STRATA_INFLIGHT_SLOTS; i++) {
		uint64_t m = strata_load_relaxed(&s->ring->ctl->inflight[i]);
		uint64_t at = ((m >> 16) - begin) & mask, len = (m & 0xffff) * 4;

		if (!m || at < STRATA_PACKET_HEADER || at >= reserved ||
		    len > reserved - at)
			continue; /* another packet's, or not one */
		for (j = n++; j > 0 && h[j - 1].at > at; j--)
			h[j] = h[j - 1];
		h[j] = (struct hole){at, len};
		sum += len;
	}
	for (i = 1; i < n; i++)
		if (h[i - 1].at + h[i - 1].len > h[i].at)
			return -1;
	if (!n || sum != reserved - done)
		return -1;
	return cut_holes(c, s, pkt, h, n, reserved, done);
}

/*
 * The prefix of committed bytes is not whole events (or has an event
 * from the past), and no marks say why: a reservation in flight,
 * `reserved - done` bytes, lies before committed events (two threads of
 * one CPU, one killed inside a two-phase event, the other having gone
 * on). Found either where the walk from the header stops (its header
 * never written: the bytes left from the slot's last lap), when the
 * events from past it walk whole to `reserved`; or, when all of them
 * walk whole, as the only thread's last reservation that long
 * (in_flight_last()). It is cut out of the copy, which is then closed at
 * `done`: the event in flight is lost, the committed ones after it kept.
 * 0, or -1.
 */
int cons_cut_in_flight(struct cons *c, const struct cons_stream *s,
		       unsigned char *pkt, uint64_t reserved, uint64_t done)
{
	struct hole h = {0, reserved - done};
	uint64_t ts;

	if (reserved <= done || reserved > s->ring->psize ||
	    done < STRATA_PACKET_HEADER)
		return -1;
	memcpy(&ts, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	h.at = salvage_walk(c, pkt, STRATA_PACKET_HEADER, reserved, &ts);
	if (h.at == reserved && !(h.at = in_flight_last(c, pkt, reserved,
						       h.len)))
		return -1;
	return cut_holes(c, s, pkt, &h, 1, reserved, done);
}

int cons_write_open(struct cons *c, unsigned cpu, unsigned char *pkt,
		    uint64_t begin, uint64_t done)
{
	struct cons_stream *s = cpu < STRATA_MAX_CPUS ? c->streams[cpu] : NULL;

	if (!s || done < STRATA_PACKET_HEADER || done > s->ring->psize ||
	    cons_close_copy(c, s, pkt, done) ||
	    !cons_packet_ours(c, s->ring, pkt, begin))
		return -EINVAL;
	cons_write_packet_buf(c, s, pkt, begin, 0);
	return s->dead ? c->err : 0;
}

/*
 * The open packet of an rseq ring whose opener died inside its own
 * reservation, the packet's header and first event (ring/slow.c, the
 * switch), after other threads had written inline events behind it: the
 * whole bytes are not a prefix, they follow a hole of `reserved - done`
 * bytes at the packet's start, the opener's, the only reservation left
 * uncommitted (a thread has one at most; the others' two-phase events
 * committed). When the events from there walk exactly to `reserved`,
 * they are moved behind a header made again from the stream's last one
 * (the ring's constants), its packet number, and for its start the time
 * the last packet written ended, which is at most the switch's (the
 * closer stores it with the switch, rseq_switch()); the copy is then
 * closed as cons_close_copy() does. For salvage_packet()'s `behind`
 * case only (rseq, 0 < done < reserved). 0, or -1 (the copy unchanged).
 */
static int reopen_copy(struct cons *c, const struct cons_stream *s,
		       unsigned char *pkt, int ours, uint64_t begin,
		       uint64_t reserved, uint64_t done)
{
	const struct strata_ring *r = s->ring;
	uint64_t hole = reserved - done, seq = begin >> r->pshift;
	uint64_t ts = s->last_ts;
	uint32_t tid = strata_load_relaxed(&r->ctl->owner);

	/* the opener's header, if it wrote it, has the packet's start */
	if (ours)
		memcpy(&ts, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);

	/* shorter than a header: not the opener's */
	if (!s->have_hdr || hole < STRATA_PACKET_HEADER)
		return -1;
	/* from the time the copy's header will have: cons_close_copy()
	 * then walks the same events from the same time, and cannot fail
	 * after the copy was changed */
	if (salvage_walk(c, pkt, hole, reserved, &ts) != reserved)
		return -1;
	memmove(pkt + STRATA_PACKET_HEADER, pkt + hole, reserved - hole);
	if (!ours) {
		memcpy(pkt, s->last_hdr, STRATA_PACKET_HEADER);
		memcpy(pkt + STRATA_PKT_OFF_TS_BEGIN, &s->last_ts, 8);
		memcpy(pkt + STRATA_PKT_OFF_SEQ, &seq, 8);
		/* the thread its events before any thread record belong
		 * to: the last owner (the opener, unless another thread
		 * wrote since, whose events then begin with their own
		 * record) */
		memcpy(pkt + STRATA_PKT_OFF_TID, &tid, 4);
	}
	memset(pkt + STRATA_PKT_OFF_EVENTS, 0, 4);
	return cons_close_copy(c, s, pkt,
			       STRATA_PACKET_HEADER + reserved - hole);
}

/* The closed packet of an rseq ring whose closer died before its commit
 * (the inline events were its to count, so the walk to the committed
 * bytes failed): its end, 0 if it cannot be told. */
static uint64_t closed_end(struct cons *c, const struct cons_stream *s,
			   unsigned char *pkt, uint64_t done)
{
	const struct strata_ring *r = s->ring;
	uint64_t cs, tb, te;

	/* The closer stores content_size with the switch (rseq_switch()),
	 * and the inline events up to there are whole (write passed them).
	 * The opener never writes it (opener and closer write disjoint
	 * fields, ring.md §4): one left from the slot's previous lap comes
	 * with that lap's timestamp_end, before this lap's
	 * timestamp_begin. A two-phase event in flight (one per thread at
	 * most) may be torn: the events strata-gen writes through
	 * strata_reserve() (ring.md §7). */
	memcpy(&tb, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	memcpy(&te, pkt + STRATA_PKT_OFF_TS_END, 8);
	memcpy(&cs, pkt + STRATA_PKT_OFF_CONTENT_SIZE, 8);
	cs /= 8;
	if (te >= tb && cs > done && cs <= r->psize &&
	    !cons_close_copy(c, s, pkt, cs))
		return cs;
	/* filled exactly by an inline reservation whose writer died before
	 * strata_ring_close_exact() */
	if (done < r->psize && !cons_close_copy(c, s, pkt, r->psize))
		return r->psize;
	return 0;
}

static void salvage_packet(struct cons *c, struct cons_stream *s,
			   uint64_t begin, uint64_t reserved)
{
	struct strata_ring *r = s->ring;
	/* The open packet: its whole bytes, inline events included (ring.md
	 * §7). An earlier one: what was committed (its closer died before
	 * its own commit; on an rseq ring the inline events were the
	 * closer's to count, and the walk below then fails). */
	uint64_t done = reserved && reserved < r->psize
				? ring_open_done(r, begin)
				: ring_lap_committed(r, begin);
	uint64_t end;
	/* whole bytes behind an opener's uncommitted reservation */
	int behind = r->rseq && reserved && done && done < reserved;
	unsigned char *pkt;

	if (done < STRATA_PACKET_HEADER && !behind) {
		/* The opener died before committing the header: an empty
		 * packet, nothing of it was committed. */
		if (reserved > done)
			c->dropped_bytes += reserved - done;
		return;
	}
	if (done > r->psize)
		goto bad;
	/* a raw copy: the header may be the one missing (reopen_copy()) */
	cons_stream_flush(c, s);
	pkt = c->pktbuf;
	memcpy(pkt, ring_packet_addr(r, begin), r->psize);
	/* the opener's header of this lap (not one the slot kept from an
	 * earlier lap, which the opener had not written over yet) */
	uint32_t magic;
	uint64_t seq;
	memcpy(&magic, pkt, 4);
	memcpy(&seq, pkt + STRATA_PKT_OFF_SEQ, 8);
	int ours = magic == STRATA_PKT_MAGIC && seq == begin >> r->pshift &&
		   !memcmp(pkt + STRATA_PKT_OFF_UUID, c->uuid, 16);
	if (behind && !reopen_copy(c, s, pkt, ours, begin, reserved, done)) {
		/* First: an uncommitted reservation this long is the
		 * opener's (its header and event), whose walk from the
		 * packet's start could end at `done` as well, keeping the
		 * opener's event and dropping as many bytes of the last
		 * ones as its header's. */
		c->dropped_bytes += reserved - done;
		slog("%s/cpu%u: packet %llu salvaged without its header and "
		     "first event, which the writer that opened it was writing "
		     "when it died (%llu bytes)",
		     c->dir, r->cpu, (unsigned long long)(begin >> r->pshift),
		     (unsigned long long)(reserved - done));
		end = reserved;
	} else if (ours && reserved > done &&
		   !cons_cut_marked(c, s, pkt, begin, reserved, done)) {
		end = done; /* what was marked in flight cut out */
	} else if (ours && done >= STRATA_PACKET_HEADER &&
		   !cons_close_copy(c, s, pkt, done)) {
		end = done; /* a whole prefix; what follows was in flight */
	} else if (ours && reserved > done &&
		   !cons_cut_in_flight(c, s, pkt, reserved, done)) {
		end = done; /* the event in flight was in the middle */
	} else if (ours && done >= STRATA_PACKET_HEADER && r->rseq && !reserved &&
		   (end = closed_end(c, s, pkt, done))) {
		reserved = end;
	} else {
		goto bad;
	}
	cons_write_packet_buf(c, s, pkt, begin, 0);
	c->salvaged++;
	if (reserved > end && reserved <= r->psize) {
		c->dropped_bytes += reserved - end;
		slog("%s/cpu%u: packet %llu salvaged; %llu bytes a writer was "
		     "writing when it died were dropped",
		     c->dir, r->cpu, (unsigned long long)(begin >> r->pshift),
		     (unsigned long long)(reserved - end));
	}
	return;
bad:
	c->unsalvageable++;
	c->incomplete++;
	slog("%s/cpu%u: packet %llu: an event in its middle was never "
	     "committed (its writer died): skipped",
	     c->dir, r->cpu, (unsigned long long)(begin >> r->pshift));
}

/* An external ring at the end: drain, then salvage or report the rest. */
void cons_finish_external(struct cons *c, struct cons_stream *s,
			  int writers_gone)
{
	struct strata_ring *r = s->ring;
	uint64_t w = strata_load_acquire(&r->ctl->write);
	uint64_t end = ring_packet_begin(r, w + r->pmask);
	uint64_t b;

	if (c->mode != STRATA_MODE_OVERWRITE)
		cons_drain_ring(c, s);
	/* From what is left after the drain. In overwrite mode: the packets
	 * held, but none an earlier trace of a long-lived session wrote
	 * already (no writer reads `consumed` there, so it marks where the
	 * last trace ended). Untrusted either way: cons_window() clamps. */
	b = cons_window(r, end, strata_load_relaxed(&r->ctl->consumed));
	for (; b < end; b += r->psize) {
		if (ring_packet_complete(r, b)) {
			cons_write_packet(c, s, b, 0);
		} else if (writers_gone) {
			/* The open packet: reserved up to `write`. An earlier
			 * one: its closer died before committing the padding;
			 * how far it was reserved is not known (0). */
			salvage_packet(c, s, b, w - b < r->psize ? w - b : 0);
		} else {
			c->incomplete++;
			slog("%s/cpu%u: packet %llu still open when the session "
			     "stopped (the process still runs): not written",
			     c->dir, r->cpu, (unsigned long long)(b >> r->pshift));
		}
	}
	strata_store_release(&r->ctl->consumed, end);
}
