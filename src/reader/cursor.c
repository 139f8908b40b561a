/* SPDX-License-Identifier: MIT */
/* One stream's cursor: entering packets, reading the events of both
 * stream classes, damage, the cheap filters, and seeking. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>

#include "iter.h"

/* Consumed stream bytes are given back to the kernel in steps of this
 * much (MADV_DONTNEED on the read-only mapping drops only our page-table
 * entries; the page cache keeps the data, a later seek faults it again).
 * This is what keeps a reader's resident memory bounded by the number of
 * streams rather than growing with the bytes read. */
#define RD_DROP_STEP (2u << 20)

/* The readable packet before packet i of s, its index entry checked
 * against its header (after a seek the cursor did not enter it), or NULL.
 * A check that rebuilt the index keeps the slots: look again. */
static const struct rd_packet *prev_readable(struct strata_iter *it, struct rd_stream *s,
					     uint64_t i)
{
	for (uint64_t j = i; j-- > 0;) {
		if ((s->packets[j].flags & RD_PK_UNCHECKED) && rd_packet_check(it->t, s, j)) {
			j = i;
			continue;
		}
		if (!(s->packets[j].flags & RD_PK_BAD))
			return &s->packets[j];
	}
	return NULL;
}

/*
 * Time went back in c's stream, at `off`, from `from` to `to`: reported
 * once per stream (babeltrace2 refuses such a stream). The events are
 * kept as written, in stream order: the merged order goes back with them
 * there, and time windows and seeks, which take a stream's times to
 * grow, may miss them (docs/reader.md).
 */
static void time_back(struct strata_iter *it, struct rd_cursor *c, uint64_t off,
		      uint64_t from, uint64_t to, const char *what)
{
	if (c->s->back_reported)
		return;
	c->s->back_reported = true;
	rd_report(it->t, STRATA_PROBLEM_DAMAGED, c->s->path, off, 0, to,
		  "time goes back by %" PRIu64 " ticks: %s %" PRIu64 ", after an event at %"
		  PRIu64 "; events read as written, in stream order (said once per stream)",
		  from - to, what, to, from);
}

static void report_packet_end(struct strata_iter *it, struct rd_cursor *c)
{
	struct rd_stream *s = c->s;
	/* events_discarded is cumulative: this packet's share is the delta to
	 * the previous readable packet (format.md §2). */
	const struct rd_packet *q = prev_readable(it, s, c->pkt);
	uint64_t prev = q ? q->discarded : 0;
	struct rd_packet *p = &s->packets[c->pkt];
	if (p->discarded > prev && !(p->flags & RD_PK_DISC_REPORTED)) {
		p->flags |= RD_PK_DISC_REPORTED;
		rd_report(it->t, STRATA_PROBLEM_DISCARDED, s->path, p->offset,
			  p->discarded - prev, c->prev_ts,
			  "%" PRIu64 " events discarded (ring full) on cpu %u",
			  p->discarded - prev, c->cpu);
	}
}

/* Give back the mapping below `upto` once a step of it was consumed. The
 * last step stays mapped: the events of a strata_iter_read batch point
 * into packets the cursor already left, and reading them would map the
 * pages again below c->drop, where nothing gives them back. */
static void drop_behind(struct rd_cursor *c, const uint8_t *upto)
{
	uintptr_t lo = ((uintptr_t)c->drop + 4095) & ~(uintptr_t)4095;
	uintptr_t hi = ((uintptr_t)upto - RD_DROP_STEP) & ~(uintptr_t)4095;
	if (!c->drop || upto < c->drop) {
		c->drop = upto;
		return;
	}
	if ((uintptr_t)upto - (uintptr_t)c->drop < 2 * (uintptr_t)RD_DROP_STEP)
		return;
	if (hi > lo && hi - lo >= RD_DROP_STEP) {
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
		c->drop = (const uint8_t *)hi;
	}
}

/*
 * Read-ahead. A stream is mapped MADV_SEQUENTIAL: a full scan gets the
 * kernel's large read-ahead. Once a cursor seeks in it, that read-ahead
 * is wrong: each fault after a seek would read read_ahead_kb (8 MiB on
 * virtio disks here) for a packet of 256 KiB, which made cold seeks take
 * 10-30 ms. So a seek turns the kernel's off (MADV_RANDOM, which also
 * stops it mapping cached pages around a fault) and the reader says what
 * it reads: entering a packet maps all of it at once (MADV_POPULATE_READ,
 * one call instead of a fault per page) and starts reading the next one
 * (MADV_WILLNEED). Advice only: errors change nothing.
 */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
static void advise_packet(const struct rd_stream *s, uint64_t pkt, int advice)
{
	if (pkt >= s->npackets)
		return;
	const struct rd_packet *p = &s->packets[pkt];
	uintptr_t a = (uintptr_t)(s->map + p->offset) & ~(uintptr_t)4095;
	uintptr_t e = (uintptr_t)(s->map + p->offset + p->content);
	if (p->offset + p->content <= s->size && e > a)
		madvise((void *)a, e - a, advice);
}

/* Enter packet c->pkt or the next readable one; false at the end. */
static bool enter_packet(struct strata_iter *it, struct rd_cursor *c)
{
	struct rd_stream *s = c->s;
	const struct strata_filter *f = it->f;
	for (; c->pkt < s->npackets; c->pkt++) {
		/* an entry of the index file is compared with its header
		 * first; where they disagree, the index is rebuilt (the same
		 * slots: c->pkt is still this packet) */
		if (s->packets[c->pkt].flags & RD_PK_UNCHECKED)
			rd_packet_check(it->t, s, c->pkt);
		if (s->packets[c->pkt].flags & RD_PK_BAD)
			continue;
		if (f && f->ncpus && !rd_in(f->cpus, f->ncpus, s->packets[c->pkt].cpu))
			continue;
		if (f && rd_sub_time(c->sub, s->packets[c->pkt].ts_begin) > f->t_end)
			break;
		const struct rd_packet *q = prev_readable(it, s, c->pkt);
		struct rd_packet *p = &s->packets[c->pkt];
		if (p->flags & RD_PK_BAD)
			continue; /* q's check rebuilt the index, which skips p */
		/* packet_seq_num gap against the previous readable packet:
		 * damaged or zero-filled slots between explain part of it */
		uint64_t ps = q ? q->seq + (p->offset - q->offset) / s->packet_size - 1 : 0;
		if (q && p->seq > ps + 1 && !(p->flags & RD_PK_SEQ_REPORTED)) {
			p->flags |= RD_PK_SEQ_REPORTED;
			rd_report(it->t, STRATA_PROBLEM_PACKETS_LOST, s->path, p->offset,
				  p->seq - ps - 1, p->ts_begin,
				  "%" PRIu64 " packets lost before this one "
				  "(packet_seq_num %" PRIu64 " after %" PRIu64 ")",
				  p->seq - ps - 1, p->seq, ps);
		}
		if (c->have_last && p->ts_begin < c->last_ts)
			time_back(it, c, p->offset, c->last_ts, p->ts_begin,
				  "the packet's timestamp_begin is");
		drop_behind(c, s->map + p->offset);
		if (s->random) {
			advise_packet(s, c->pkt, MADV_POPULATE_READ);
			advise_packet(s, c->pkt + 1, MADV_WILLNEED);
		}
		c->pos = s->map + p->offset + RD_HEADER_SIZE;
		c->end = s->map + p->offset + p->content;
		c->prev_ts = p->ts_begin;
		c->cpu = p->cpu;
		c->pid = p->pid;
		c->tid = p->tid;
		c->in_packet = true;
		c->pkt_damage_reported = (p->flags & RD_PK_DAMAGE_REPORTED) != 0;
		return true;
	}
	c->pkt = s->npackets;
	c->done = true;
	return false;
}

__attribute__((format(printf, 4, 5))) static void
packet_damage(struct strata_iter *it, struct rd_cursor *c, const uint8_t *at,
	      const char *fmt, ...)
{
	struct rd_packet *p = &c->s->packets[c->pkt];
	char what[256];
	va_list ap;
	if (c->pkt_damage_reported)
		return;
	c->pkt_damage_reported = true;
	p->flags |= RD_PK_DAMAGE_REPORTED;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	rd_report(it->t, STRATA_PROBLEM_DAMAGED, c->s->path, at - c->s->map, 0,
		  c->prev_ts, "%s", what);
}

/* An event's payload and full timestamp. */
struct rd_body {
	const uint8_t *payload;
	uint32_t size;
	uint64_t ts;
};

/*
 * rd_cursor_next's step for stream class 1 (docs/compact.md, "Reading, and
 * damage"): the event at `at`, c->pos moved past it. Returns its class,
 * or NULL for one to pass over: strata's own records (the thread record
 * attributes what follows) unless `internal`, an extended event of an
 * unknown id, or damage, which ends the packet's readable part (a compact
 * event's length comes from its class, so nothing after an unknown one
 * can be found).
 */
static const struct rd_class *compact_next(struct strata_iter *it,
					   struct rd_cursor *c, const uint8_t *at,
					   const bool internal, struct rd_body *b)
{
	const struct rd_class *cls;
	size_t room = (size_t)(c->end - at);
	uint32_t h = rd_le32(at), cid = h & 31, len, hdr;
	uint64_t ts;

	if (cid == 31) {
		/* extended: u32 length in 32-bit words << 5 | 31, u32 id, u64 clock */
		len = (h >> 5) * 4;
		hdr = 16;
		if (strata_unlikely(len < hdr || len > room ||
				    (len - hdr) % 8)) {
			packet_damage(it, c, at, "extended event of %u bytes does not "
				      "fit the packet; rest of packet skipped", len);
			c->pos = c->end;
			return NULL;
		}
		c->pos = at + len;
		uint32_t id = rd_le32(at + 4);
		ts = rd_le64(at + 8);
		if (strata_unlikely(ts < c->prev_ts))
			time_back(it, c, (uint64_t)(at - c->map), c->prev_ts, ts,
				  "an extended header gives");
		cls = rd_lookup(c->sub, id);
		if (strata_unlikely(!cls)) {
			packet_damage(it, c, at, "unknown event id %u; skipped, with "
				      "later unknown ids of this packet", id);
			return NULL;
		}
	} else {
		cls = cid ? rd_lookup(c->sub, cid) : NULL;
		if (strata_unlikely(!cls || !cls->clen || cls->clen > room)) {
			packet_damage(it, c, at, "%s; rest of packet skipped",
				      !cid ? "event id 0" :
				      !cls ? "unknown compact event id" :
				      !cls->clen ? "compact event of a variable-length class" :
						   "event runs past content_size");
			c->pos = c->end;
			return NULL;
		}
		len = cls->clen;
		hdr = 4;
		c->pos = at + len;
		ts = c->prev_ts + (((h >> 5) - c->prev_ts) & ((1u << 27) - 1));
	}
	c->prev_ts = ts;
	*b = (struct rd_body){ at + hdr, len - hdr, ts };
	if (strata_unlikely(!(cls->pub.id >> 16))) {
		/* strata's own records, format.md §4 */
		if (cls->ctf == RD_ID_THREAD && b->size >= 8) {
			c->tid = rd_le32(b->payload);
			c->pid = rd_le32(b->payload + 4);
		} else if (cls->ctf == RD_ID_CLOCK && b->size >= 8) {
			b->ts = c->prev_ts = rd_le64(b->payload);
		}
		if (!internal)
			return NULL;
	}
	return cls;
}

/*
 * Move cursor c to its next event that passes the cheap filters (and the
 * expression). Returns false at the end of the stream. Every read is within
 * [pos, end), and end is within the mapping (index building clamps it).
 */
bool rd_cursor_next(struct strata_iter *it, struct rd_cursor *c)
{
	const struct strata_filter *f = it->f;
	const struct rd_subtrace *sub = c->s->sub;
	const bool internal = it->flags & STRATA_ITER_INTERNAL;
	for (;;) {
		if (strata_unlikely(c->pos >= c->end)) {
			if (c->in_packet) {
				report_packet_end(it, c);
				c->in_packet = false;
				c->pkt++;
				c->last_ts = c->prev_ts;
				c->have_last = true;
			}
			if (c->done || !enter_packet(it, c))
				return false;
			continue;
		}
		const uint8_t *at = c->pos;
		const struct rd_class *cls;
		struct rd_body b;
		if (c->s->sclass) {
			cls = compact_next(it, c, at, internal, &b);
			if (!cls)
				continue;
			goto filter;
		}
		uint64_t w = rd_le64(at);
		uint32_t len = (uint32_t)(w >> 54);
		if (strata_unlikely(len == 0 ||
				    (size_t)(c->end - at) / 8 < len)) {
			if (len)
				packet_damage(it, c, at, "event of %u words runs past "
					      "content_size; rest of packet skipped", len);
			else
				packet_damage(it, c, at, "event length 0; rest of packet skipped");
			c->pos = c->end;
			continue;
		}
		c->pos = at + (size_t)len * 8;
		uint32_t id = (uint32_t)(w >> 32) & 0x3fffff;
		const uint64_t before = c->prev_ts;
		uint64_t ts = before + (uint32_t)((uint32_t)w - (uint32_t)before);
		c->prev_ts = ts;
		if (strata_unlikely(id >> 16 == 0)) {
			/* strata's own records, format.md §4 */
			if (id == RD_ID_THREAD && len >= 2) {
				c->tid = rd_le32(at + 8);
				c->pid = rd_le32(at + 12);
			} else if (id == RD_ID_CLOCK && len >= 2) {
				ts = rd_le64(at + 8);
				if (strata_unlikely(ts < before))
					time_back(it, c, (uint64_t)(at - c->map), before, ts,
						  "a strata:clock record gives");
				c->prev_ts = ts;
			}
			if (!internal)
				continue;
		}
		cls = rd_lookup(sub, id);
		if (strata_unlikely(!cls)) {
			if (id >> 16)
				packet_damage(it, c, at, "unknown event id %u (%u:%u); "
					      "skipped, with later unknown ids of this packet",
					      id, id >> 16, id & 0xffff);
			continue;
		}
		b = (struct rd_body){ at + 8, (len - 1) * 8, ts };
filter:
		if (f) {
			/* the filter's times are the merged time base's */
			if (rd_sub_time(c->sub, b.ts) < f->t_begin)
				continue;
			if (rd_sub_time(c->sub, b.ts) > f->t_end) {
				/* timestamps only grow within a stream */
				c->pos = c->end;
				c->pkt = c->s->npackets;
				c->done = true;
				c->in_packet = false;
				return false;
			}
			if (f->by_name && !f->name_ok[cls->pub.index])
				continue;
			if (f->ntids && !rd_in(f->tids, f->ntids, c->tid))
				continue;
			if (f->npids && !rd_in(f->pids, f->npids, c->pid))
				continue;
		}
		cursor_set_event(c, &cls->pub, at, b.payload, b.size, b.ts, cls->pub.id);
		if (f && f->nprogs && !rd_filter_expr_match(f, &c->ev))
			continue;
		return true;
	}
}

/* Position c before its first event with timestamp >= ts. */
void rd_cursor_seek(struct strata_iter *it, struct rd_cursor *c, uint64_t ts)
{
	struct rd_stream *s = c->s;
	/* last packet whose begin <= ts: bad packets carry their predecessor's
	 * end as begin/end, so the begins are sorted. O(log packets). The
	 * two entries that bracket ts decide: an index file's are compared
	 * with their headers first (and, rebuilt, searched again), so an
	 * index that lies cannot move the seek. */
	uint64_t lo, hi;
	for (bool again = true; again;) {
		lo = 0;
		hi = s->npackets;
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (rd_sub_time(c->sub, s->packets[mid].ts_begin) <= ts)
				lo = mid + 1;
			else
				hi = mid;
		}
		again = (lo && (s->packets[lo - 1].flags & RD_PK_UNCHECKED) &&
			 rd_packet_check(it->t, s, lo - 1)) ||
			(lo < s->npackets && (s->packets[lo].flags & RD_PK_UNCHECKED) &&
			 rd_packet_check(it->t, s, lo));
	}
	c->pkt = lo ? lo - 1 : 0;
	if (!s->random && s->map) {
		madvise((void *)s->map, s->size, MADV_RANDOM);
		s->random = true;
	}
	advise_packet(s, c->pkt, MADV_WILLNEED);
	/* what was read before the seek is not needed any more */
	if (c->drop && c->end > c->drop) {
		uintptr_t a = (uintptr_t)c->drop & ~(uintptr_t)4095;
		uintptr_t e = ((uintptr_t)c->end + 4095) & ~(uintptr_t)4095;
		madvise((void *)a, e - a, MADV_DONTNEED);
	}
	c->drop = NULL;
	c->done = false;
	c->in_packet = false;
	c->have_last = false;
	c->pos = c->end = NULL;
	c->pending = false;
	c->peek = false;
	/* scan within the packet (and on, if all its events are earlier) */
	while (rd_cursor_next(it, c))
		if (c->ev.timestamp >= ts) {
			c->pending = true;
			return;
		}
}
