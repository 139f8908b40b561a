/* SPDX-License-Identifier: MIT */
/* Packets left open: crash salvage, and the committed part of a snapshot's open packet (docs/record.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "consumer/cons_int.h"

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
 * events_discarded), and written. Otherwise (an event in the middle was
 * never committed) it cannot be told apart from garbage: reported and
 * skipped.
 */
int cons_close_copy(struct cons *c, const struct cons_stream *s,
		    unsigned char *pkt, uint64_t done)
{
	const struct strata_ring *r = s->ring;
	uint64_t off, ts;
	uint32_t id;

	memcpy(&ts, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	for (off = STRATA_PACKET_HEADER; off < done;) {
		uint32_t len = cons_event_at(c, pkt + off, done - off, &id,
					     &ts);
		if (len == 0)
			return -1;
		off += len;
	}
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
	unsigned char *pkt;

	if (done < STRATA_PACKET_HEADER) {
		/* The opener died before committing the header: an empty
		 * packet, nothing of it was committed. */
		if (reserved > done)
			c->dropped_bytes += reserved - done;
		return;
	}
	if (done > r->psize || !cons_copy_packet(c, s, begin))
		goto bad;
	pkt = c->pktbuf;
	if (cons_close_copy(c, s, pkt, done)) {
		/* An rseq ring's packet whose closer died between its close
		 * and its commit: the closer wrote content_size, and the
		 * inline events up to there are whole (write passed them); a
		 * walk that ends there exactly makes it the packet's content.
		 * The opener never writes content_size (opener and closer
		 * write disjoint fields, ring.md §4): one left from the
		 * slot's previous lap comes with that lap's timestamp_end,
		 * before this lap's timestamp_begin. A two-phase event in
		 * flight (one per thread at most) may be torn: the events
		 * strata-gen writes through strata_reserve() (ring.md §7). */
		uint64_t cs, tb, te;
		memcpy(&tb, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
		memcpy(&te, pkt + STRATA_PKT_OFF_TS_END, 8);
		memcpy(&cs, pkt + STRATA_PKT_OFF_CONTENT_SIZE, 8);
		cs /= 8;
		if (!r->rseq || reserved || te < tb || cs <= done || cs > r->psize ||
		    cons_close_copy(c, s, pkt, cs))
			goto bad;
		done = cs;
	}
	cons_write_packet_buf(c, s, pkt, begin, 0);
	c->salvaged++;
	if (reserved > done && reserved <= r->psize) {
		c->dropped_bytes += reserved - done;
		slog("%s/cpu%u: packet %llu salvaged; %llu bytes a writer was "
		     "writing when it died were dropped",
		     c->dir, r->cpu, (unsigned long long)(begin >> r->pshift),
		     (unsigned long long)(reserved - done));
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
