/* SPDX-License-Identifier: MIT */
/* Per-stream cursors, the timestamp-ordered merge of streams, and seeking. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "rd.h"

/* Consumed stream bytes are given back to the kernel in steps of this
 * much (MADV_DONTNEED on the read-only mapping drops only our page-table
 * entries; the page cache keeps the data, a later seek faults it again).
 * This is what keeps a reader's resident memory bounded by the number of
 * streams rather than growing with the bytes read. */
#define RD_DROP_STEP (2u << 20)

struct rd_cursor {
	/* merge key of the head: timestamp << 32 | order; RD_KEY_DONE when
	 * exhausted */
	unsigned __int128 key;
	/* hot: read by cursor_next_fast on every event */
	const uint8_t *pos, *end; /* next event, end of content */
	uint64_t prev_ts;         /* format.md §3 reconstruction base */
	const struct rd_subtrace *sub;
	const uint8_t *map;       /* the stream's mapping (event offsets) */
	uint32_t pid, tid, cpu;   /* attribution, format.md §4 */
	uint32_t order;           /* tie-break: stream order */
	bool c1;                  /* stream class 1 (docs/compact.md) */
	struct strata_event ev;   /* the cursor's current event */
	/* cold */
	struct rd_stream *s;
	uint64_t pkt;             /* current packet; s->npackets: done */
	const uint8_t *drop;      /* mapping below this was given back (rss) */
	bool in_packet;
	bool done;
	bool pkt_damage_reported; /* once per packet */
	bool pending;             /* ev holds an event not yet returned (seek) */
	bool have_last;           /* last_ts: the timestamp of the last event
				   * of the packet the cursor left (time going
				   * back across packets, enter_packet) */
	uint64_t last_ts;
	/* the head is not in ev yet: it is the event at pos, one the batch
	 * path takes (cursor_peek), prev_ts and key already its timestamp;
	 * iter_step consumes it when the cursor wins */
	bool peek;
};

/* The cursor's current event: the event at `at`, of class `cls`, its
 * payload the `size` bytes at `payload` (at + 8 in stream class 0, 4 or
 * 16 after at in stream class 1), attributed as the cursor's packet says
 * (format.md §4). */
static inline __attribute__((always_inline)) void
cursor_set_event(struct rd_cursor *c, const struct strata_event_class *cls,
		 const uint8_t *at, const uint8_t *payload, uint32_t size,
		 uint64_t ts, uint32_t id)
{
	struct strata_event *ev = &c->ev;

	ev->timestamp = ts;
	ev->cls = cls;
	ev->payload = payload;
	ev->size = size;
	ev->cpu = c->cpu;
	ev->pid = c->pid;
	ev->tid = c->tid;
	ev->id = id;
	ev->offset = (uint64_t)(at - c->map);
}

#define RD_KEY_DONE (~(unsigned __int128)0)

/*
 * The merge is a loser tree (tournament) over `width` leaves, a power of
 * two >= the number of cursors; leaves past ncur are exhausted sentinels.
 * tree[0] is the winner (the cursor whose event is returned), tree[n] for
 * 1 <= n < width the loser of the match at node n. After the winner
 * advances, it replays the log2(width) matches on its path to the root:
 * a fixed number of compare-and-select steps with no data-dependent
 * branch, where a binary heap's sift mispredicts about once per event
 * when streams interleave finely (the common case: threads on CPUs).
 */
struct strata_iter {
	struct strata_trace *t;
	const struct strata_filter *f;
	unsigned flags;
	bool fast;      /* no internal records: cursor_next_fast, unless a
			 * filter with conditions */
	bool unordered; /* STRATA_ITER_UNORDERED */
	bool started;   /* tree built */
	bool advance_top;
	struct rd_cursor *cur; /* width entries */
	unsigned ncur;
	unsigned width;
	unsigned *tree;
};

/* ---- one stream ---------------------------------------------------------------- */

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
		if (f && s->packets[c->pkt].ts_begin > f->t_end)
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
 * cursor_next's step for stream class 1 (docs/compact.md, "Reading, and
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
		if (RD_UNLIKELY(len < hdr || len > room || (len - hdr) % 8)) {
			packet_damage(it, c, at, "extended event of %u bytes does not "
				      "fit the packet; rest of packet skipped", len);
			c->pos = c->end;
			return NULL;
		}
		c->pos = at + len;
		uint32_t id = rd_le32(at + 4);
		ts = rd_le64(at + 8);
		if (RD_UNLIKELY(ts < c->prev_ts))
			time_back(it, c, (uint64_t)(at - c->map), c->prev_ts, ts,
				  "an extended header gives");
		cls = rd_lookup(c->sub, id);
		if (RD_UNLIKELY(!cls)) {
			packet_damage(it, c, at, "unknown event id %u; skipped, with "
				      "later unknown ids of this packet", id);
			return NULL;
		}
	} else {
		cls = cid ? rd_lookup(c->sub, cid) : NULL;
		if (RD_UNLIKELY(!cls || !cls->clen || cls->clen > room)) {
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
	if (RD_UNLIKELY(!(cls->pub.id >> 16))) {
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
static bool cursor_next(struct strata_iter *it,
							       struct rd_cursor *c)
{
	const struct strata_filter *f = it->f;
	const struct rd_subtrace *sub = c->s->sub;
	const bool internal = it->flags & STRATA_ITER_INTERNAL;
	for (;;) {
		if (RD_UNLIKELY(c->pos >= c->end)) {
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
		if (RD_UNLIKELY(len == 0 || (size_t)(c->end - at) / 8 < len)) {
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
		if (RD_UNLIKELY(id >> 16 == 0)) {
			/* strata's own records, format.md §4 */
			if (id == RD_ID_THREAD && len >= 2) {
				c->tid = rd_le32(at + 8);
				c->pid = rd_le32(at + 12);
			} else if (id == RD_ID_CLOCK && len >= 2) {
				ts = rd_le64(at + 8);
				if (RD_UNLIKELY(ts < before))
					time_back(it, c, (uint64_t)(at - c->map), before, ts,
						  "a strata:clock record gives");
				c->prev_ts = ts;
			}
			if (!internal)
				continue;
		}
		cls = rd_lookup(sub, id);
		if (RD_UNLIKELY(!cls)) {
			if (id >> 16)
				packet_damage(it, c, at, "unknown event id %u (%u:%u); "
					      "skipped, with later unknown ids of this packet",
					      id, id >> 16, id & 0xffff);
			continue;
		}
		b = (struct rd_body){ at + 8, (len - 1) * 8, ts };
filter:
		if (f) {
			if (b.ts < f->t_begin)
				continue;
			if (b.ts > f->t_end) {
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
static void cursor_seek(struct strata_iter *it, struct rd_cursor *c, uint64_t ts)
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
			if (s->packets[mid].ts_begin <= ts)
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
	while (cursor_next(it, c))
		if (c->ev.timestamp >= ts) {
			c->pending = true;
			return;
		}
}

/*
 * An event header as the fast paths read it, `c1` a constant of each
 * inlined copy: stream class 0's 64-bit word (format.md §3: length, id,
 * 32 bits of clock) or stream class 1's 32-bit one (docs/compact.md: 27
 * bits of clock << 5 | compact id), and the full timestamp it gives after
 * `prev`. A header inside the content is there whole: content ends on a
 * word of its class (packet.c rd_check_header).
 */
static inline __attribute__((always_inline)) uint64_t
hdr_word(const uint8_t *at, const bool c1)
{
	return c1 ? rd_le32(at) : rd_le64(at);
}

static inline __attribute__((always_inline)) uint64_t
hdr_ts(uint64_t prev, uint64_t w, const bool c1)
{
	if (c1)
		return prev + (((w >> 5) - prev) & ((UINT64_C(1) << 27) - 1));
	return prev + (uint32_t)((uint32_t)w - (uint32_t)prev);
}

/* The header's size: where the payload starts. */
static inline __attribute__((always_inline)) uint32_t hdr_size(const bool c1)
{
	return c1 ? 4 : 8;
}

/*
 * The common case of cursor_next, inlined into the merge: an event of a
 * known class, not a strata record, inside the packet, with no filter.
 * Anything else (packet end, damage, records, unknown ids) goes to
 * cursor_next from the same position: this path changes nothing before
 * it commits. In stream class 1, the compact events the batch path takes
 * (its table, classes.c build_fast1); the extended form and classes with no
 * plan take cursor_next.
 */
static inline __attribute__((always_inline)) bool
cursor_next_fast(struct strata_iter *it, struct rd_cursor *c)
{
	const uint8_t *at = c->pos;
	if (c->c1) {
		if (RD_LIKELY(at < c->end)) {
			uint32_t h = rd_le32(at);
			const struct rd_fast *e = &c->sub->fast[h & 31];
			if (RD_LIKELY(e->size < (uint64_t)(c->end - at))) {
				uint64_t ts = hdr_ts(c->prev_ts, h, true);
				c->prev_ts = ts;
				c->pos = at + 4 + e->size;
				cursor_set_event(c, &e->cls->pub, at, at + 4,
						 (uint32_t)e->size, ts, e->cls->pub.id);
				return true;
			}
		}
		return cursor_next(it, c);
	}
	if (RD_LIKELY(at < c->end)) {
		uint64_t w = rd_le64(at);
		uint32_t len = (uint32_t)(w >> 54);
		uint32_t id = (uint32_t)(w >> 32) & 0x3fffff;
		uint32_t major = id >> 16, minor = id & 0xffff;
		const struct rd_subtrace *sub = c->sub;
		if (RD_LIKELY((len - 1u) < (uint64_t)(c->end - at) / 8 && major != 0 &&
			      minor < sub->nminor[major])) {
			const struct rd_class *cls = sub->by_major[major][minor];
			if (RD_LIKELY(cls != NULL)) {
				uint64_t ts = c->prev_ts +
					      (uint32_t)((uint32_t)w - (uint32_t)c->prev_ts);
				c->prev_ts = ts;
				c->pos = at + (size_t)len * 8;
				cursor_set_event(c, &cls->pub, at, at + 8, (len - 1) * 8, ts,
						 id);
				return true;
			}
		}
	}
	return cursor_next(it, c);
}

/* The merge key of a head with timestamp ts: ties go to the lower stream
 * order. STRATA_ITER_UNORDERED: the stream order ranks first, so the tree
 * drains the streams one after another (same code, no timestamp
 * interleaving). */
static inline unsigned __int128 rd_key(uint64_t ts, uint32_t order, const bool unord)
{
	if (unord)
		return (unsigned __int128)order << 64 | ts;
	return (unsigned __int128)ts << 32 | order;
}

static inline unsigned __int128 key_of(const struct strata_iter *it,
				       const struct rd_cursor *c)
{
	return rd_key(c->ev.timestamp, c->order, it->unordered);
}

/* The winner of the subtree at `node`; records the losers on the way. */
static unsigned build_tree(struct strata_iter *it, unsigned node)
{
	if (node >= it->width)
		return node - it->width;
	unsigned a = build_tree(it, 2 * node), b = build_tree(it, 2 * node + 1);
	bool bw = it->cur[b].key < it->cur[a].key;
	it->tree[node] = bw ? a : b;
	return bw ? b : a;
}

static void build_merge(struct strata_iter *it)
{
	for (unsigned i = 0; i < it->ncur; i++) {
		struct rd_cursor *c = &it->cur[i];
		/* a seek leaves the cursor on its first event: keep it */
		bool has = c->pending || cursor_next(it, c);
		c->pending = false;
		c->key = has ? key_of(it, c) : RD_KEY_DONE;
	}
	it->tree[0] = build_tree(it, 1);
	it->started = true;
	it->advance_top = false;
}

/* Cursor w's key changed to wk: replay its matches up to the root, with
 * branch-free selects; returns the new winner. */
static inline __attribute__((always_inline)) unsigned
replay_in(const struct rd_cursor *cur, unsigned *tree, unsigned width, unsigned w,
	  unsigned __int128 wk)
{
	if (width == 2) {
		/* one match, against the other leaf (constant width only) */
		unsigned l = w ^ 1;
		uint64_t m = -(uint64_t)(cur[l].key < wk);
		__asm__("" : "+r"(m));
		w ^= (unsigned)m & 1;
		tree[1] = w ^ 1;
		tree[0] = w;
		return w;
	}
	for (unsigned node = (w + width) >> 1; node; node >>= 1) {
		unsigned l = tree[node];
		unsigned __int128 lk = cur[l].key;
		/* all-ones when the stored loser wins this match; the empty
		 * asm keeps the compiler from turning the selects back into
		 * a (mispredicted) branch */
		uint64_t m = -(uint64_t)(lk < wk);
		__asm__("" : "+r"(m));
		unsigned d = (l ^ w) & (unsigned)m;
		tree[node] = l ^ d;
		w ^= d;
		uint64_t lo = (uint64_t)wk ^ (((uint64_t)wk ^ (uint64_t)lk) & m);
		uint64_t hi = (uint64_t)(wk >> 64) ^
			      (((uint64_t)(wk >> 64) ^ (uint64_t)(lk >> 64)) & m);
		wk = (unsigned __int128)hi << 64 | lo;
	}
	tree[0] = w;
	return w;
}

static inline __attribute__((always_inline)) unsigned
replay(struct strata_iter *it, unsigned w, unsigned __int128 wk)
{
	return replay_in(it->cur, it->tree, it->width, w, wk);
}

/* The cursor holding the next event, or NULL at the end: the body of
 * strata_iter_next, inlined into it and into the batches. */
static inline __attribute__((always_inline)) struct rd_cursor *
iter_step(struct strata_iter *it)
{
	struct rd_cursor *cur = it->cur;
	unsigned w;
	if (RD_UNLIKELY(!it->started)) {
		build_merge(it);
		w = it->tree[0];
	} else if (RD_LIKELY(it->advance_top)) {
		w = it->tree[0];
		struct rd_cursor *c = &cur[w];
		/* a filter with no condition (the CLI always makes one) keeps
		 * the fast path; conditions added later take effect at once */
		bool fast = it->fast && (!it->f || !it->f->narrowed);
		bool has = RD_LIKELY(fast) ? cursor_next_fast(it, c) : cursor_next(it, c);
		c->key = RD_LIKELY(has) ? key_of(it, c) : RD_KEY_DONE;
		w = replay(it, w, c->key);
	} else {
		w = it->tree[0];
	}
	if (RD_UNLIKELY(cur[w].key == RD_KEY_DONE)) {
		it->advance_top = false;
		return NULL;
	}
	if (RD_UNLIKELY(cur[w].peek)) {
		/* a head peeked by the batch path: the fast path takes
		 * it, with the timestamp that made the key */
		cur[w].peek = false;
		cursor_next_fast(it, &cur[w]);
	}
	it->advance_top = true;
	return &cur[w];
}

int strata_iter_next(struct strata_iter *it, const struct strata_event **ev)
{
	struct rd_cursor *c = iter_step(it);
	if (!c)
		return 0;
	*ev = &c->ev;
	return 1;
}

/* ---- batches ------------------------------------------------------------------ */

/* strata_batch_alloc's object: the public view, then the arrays. */
struct rd_batch {
	struct strata_batch pub;
	const struct strata_trace *t;
	struct strata_event *ev; /* cap */
	uint32_t *first;         /* cap + 1 */
	struct strata_value *val;
	unsigned cap, vcap;
};

_Static_assert(sizeof(struct strata_value) == 16 &&
		       offsetof(struct strata_value, u) == 8,
	       "rd_plan_value writes the value's head as one 8-byte word");

/* Where one batch call writes: events, and optionally their values. */
struct rd_out {
	struct strata_event *ev;
	uint32_t *first;
	struct strata_value *val;
	unsigned n;              /* room for events */
	unsigned vcap;           /* room for values */
	unsigned fast_nf;        /* values an event of the batch path may write */
	unsigned need;           /* values the general path may write */
	unsigned k;              /* events written */
	uint32_t nv;             /* values written */
};

/* Word i of a struct strata_event, stored as one 64-bit move: seven of
 * them fill the event (layout checked below) without a copy. */
static inline void rd_put64(struct strata_event *ev, unsigned i, uint64_t v)
{
	memcpy((char *)ev + 8 * i, &v, 8);
}
_Static_assert(sizeof(struct strata_event) == 56 &&
		       offsetof(struct strata_event, cls) == 8 &&
		       offsetof(struct strata_event, payload) == 16 &&
		       offsetof(struct strata_event, size) == 24 &&
		       offsetof(struct strata_event, cpu) == 28 &&
		       offsetof(struct strata_event, pid) == 32 &&
		       offsetof(struct strata_event, tid) == 36 &&
		       offsetof(struct strata_event, stream) == 40 &&
		       offsetof(struct strata_event, id) == 44 &&
		       offsetof(struct strata_event, offset) == 48,
	       "put_direct writes struct strata_event as 7 words");

/* The values of an event of entry e that is not `simple` (payload at
 * at + 8), in pairs by the class's plan; the odd one out decodes a padding entry,
 * inside the room of fast_nf per event. */
static void put_fields(const struct rd_fast *e, const uint8_t *at,
		       struct strata_value *val)
{
	const struct rd_plan *pl = e->cls->plan;
	for (unsigned j = 0; j < e->nf; j += 2) {
		rd_plan_value(&pl[j], at + 8, &val[j]);
		rd_plan_value(&pl[j + 1], at + 8, &val[j + 1]);
	}
}

/* The values of a `simple` entry e's event (payload at at + 8): the 16
 * bytes at voff beside the entry's value heads, two 16-byte values written
 * whole (so no stale byte of the batch survives); with one field the
 * second write, at val[0], is the value kept (struct rd_fast). */
static inline __attribute__((always_inline)) void
put_words(const struct rd_fast *e, const uint8_t *at, struct strata_value *val)
{
	char *const v = (char *)val;
	const uint64_t off = e->voff; /* not read again after a store */
#if defined(__SSE2__)
	const __m128i x = _mm_loadu_si128((const __m128i *)(at + off));
	const __m128i h = _mm_loadu_si128((const __m128i *)e->vh);
	_mm_storeu_si128((__m128i *)v, _mm_unpacklo_epi64(h, x));
	_mm_storeu_si128((__m128i *)(v + 2 * off), _mm_unpackhi_epi64(h, x));
#else
	const uint64_t x0 = rd_le64(at + off), x1 = rd_le64(at + off + 8);
	const uint64_t h0 = e->vh[0], h1 = e->vh[1];
	memcpy(v, &h0, 8);
	memcpy(v + 8, &x0, 8);
	memcpy(v + 2 * off, &h1, 8);
	memcpy(v + 2 * off + 8, &x1, 8);
#endif
}

/* One event by the general path: copied, fields by strata_event_fields. */
static inline void emit(struct rd_out *o, const struct strata_event *ev,
			const bool values)
{
	o->ev[o->k] = *ev;
	if (values) {
		o->first[o->k] = o->nv;
		int r = strata_event_fields(ev, o->val + o->nv, o->vcap - o->nv);
		if (r > 0)
			o->nv += (uint32_t)r;
	}
	o->k++;
}

/* Events of the batch path that still fit in o (a division only when
 * values are short: events of the general path took more than fast_nf
 * each). */
static inline unsigned room_of(const struct rd_out *o, const bool values)
{
	unsigned room = o->n - o->k;
	if (values && (uint64_t)room * o->fast_nf > o->vcap - o->nv)
		room = (o->vcap - o->nv) / o->fast_nf;
	return room;
}

/*
 * The batch path's class lookup: the entry of the event whose header word
 * is w, at `at` (< end: content ends on a word, packet.c, so a header is
 * there), when the batch path takes it, else NULL. The header's upper half
 * matching an entry (struct rd_fast) proves at once that the id is a class
 * with a decode plan, not a strata record, and that the event has its
 * class's length; the length is then checked against the content, so every
 * word the plan reads is inside it.
 */
struct rd_fast_tab {
	const struct rd_fast *tab;
	uint32_t mult;
	uint32_t mask;
};

static inline struct rd_fast_tab fast_tab(const struct rd_subtrace *sub)
{
	return (struct rd_fast_tab){ sub->fast, sub->fast_mult, sub->fast_mask };
}

/* The slot of header word w (stream class 0: the entry of w's class
 * when its hi is w's upper half; 1: the compact id's entry). */
static inline __attribute__((always_inline)) const struct rd_fast *
fast_slot(const struct rd_fast_tab *ft, uint64_t w, const bool c1)
{
	if (c1)
		return ft->tab + (w & 31);
	uint32_t hi = (uint32_t)(w >> 32);
	return (const struct rd_fast *)((const char *)ft->tab +
					(((uint32_t)(hi * ft->mult) >> 16) & ft->mask));
}

/* Stream class 1's check is the bound alone: the entry's size is the
 * class's payload (RD_FAST_NONE for an id the path does not take), and
 * the event, 4 + size bytes, fits in the content when size < end - at
 * (both multiples of 4). */
static inline __attribute__((always_inline)) const struct rd_fast *
fast_at(const struct rd_fast_tab *ft, const uint8_t *at, const uint8_t *end,
	uint64_t w, const bool c1)
{
	uint32_t hi = (uint32_t)(w >> 32);
	const struct rd_fast *e = fast_slot(ft, w, c1);
	if (RD_UNLIKELY((!c1 && e->hi != hi) || e->size >= (uint64_t)(end - at)))
		return NULL;
	return e;
}

/* The length of the event at header word w, entry e (fast_at took it). */
static inline __attribute__((always_inline)) uint64_t
ev_len(uint64_t w, const struct rd_fast *e, const bool c1)
{
	if (c1)
		return 4 + e->size;
	return (w >> 51) & ~(uint64_t)7;
}

/* A cursor's constants while the batch path writes its events: its end of
 * content and the words of struct strata_event that do not change from one
 * event to the next (attribution changes only in cursor_next). */
struct rd_lane {
	const uint8_t *end;
	uint64_t cpu_hi;  /* cpu << 32: beside size (word 3) */
	uint64_t pidtid;  /* word 4 */
	uint64_t stream;  /* beside id (word 5) */
	uintptr_t map;    /* offsets (word 6) */
};

static inline struct rd_lane lane_of(const struct rd_cursor *c)
{
	return (struct rd_lane){
		.end = c->end,
		.cpu_hi = (uint64_t)c->cpu << 32,
		.pidtid = c->pid | (uint64_t)c->tid << 32,
		.stream = c->order,
		.map = (uintptr_t)c->map,
	};
}

/* Where the batch loops write: the batch's next event, first and value
 * (locals of the loop, so in registers). */
struct rd_put {
	struct strata_event *ev;
	uint32_t *first;
	struct strata_value *val;
	uint32_t nv;
};

static inline __attribute__((always_inline)) struct rd_put
put_begin(const struct rd_out *o)
{
	return (struct rd_put){ o->ev + o->k, o->first + o->k, o->val + o->nv, o->nv };
}

static inline __attribute__((always_inline)) void
put_end(struct rd_out *o, const struct rd_put *p)
{
	o->k = (unsigned)(p->ev - o->ev);
	o->nv = p->nv;
}

/* The event at `at` (entry e, timestamp ts, of lane l) into the batch,
 * straight from the packet: the event's seven words, then its values
 * (fields 0 and 1 by the entry's own plan, with no loop: the common
 * case), into the room of fast_nf >= 2 per event that the caller checked
 * (room_of). */
static inline __attribute__((always_inline)) void
put_direct(struct rd_put *p, const uint8_t *at, uint64_t ts, const struct rd_fast *e,
	   const struct rd_lane *l, const bool values, const bool c1)
{
	struct strata_event *ev = p->ev++;
	/* read before the stores, which may alias it: not read twice */
	const uint64_t size = e->size;
	/* put_words and put_fields read the payload at base + 8 (stream
	 * class 0: the header; 1: the 4 bytes before it, inside the packet,
	 * whose header precedes every event) */
	const uint8_t *const base = at + hdr_size(c1) - 8;
	rd_put64(ev, 0, ts);
	rd_put64(ev, 1, (uintptr_t)&e->cls->pub);
	rd_put64(ev, 2, (uintptr_t)(base + 8));
	rd_put64(ev, 3, size | l->cpu_hi);
	rd_put64(ev, 4, l->pidtid);
	rd_put64(ev, 5, e->id_hi | l->stream);
	rd_put64(ev, 6, (uintptr_t)at - l->map);
	if (values) {
		*p->first++ = p->nv;
		if (RD_LIKELY(e->simple))
			put_words(e, base, p->val);
		else
			put_fields(e, base, p->val);
		p->val = (struct strata_value *)((char *)p->val + e->vbytes);
		p->nv += e->nf;
	}
}

/* c's next event as its head, when the batch path takes it (fast_at):
 * peeked at pos, its timestamp in prev_ts and in the key. False, with
 * nothing changed, otherwise. */
static inline __attribute__((always_inline)) bool
cursor_peek(struct rd_cursor *c, const bool unord, const bool c1)
{
	const uint8_t *at = c->pos;
	if (RD_UNLIKELY(at >= c->end))
		return false;
	uint64_t w = hdr_word(at, c1);
	struct rd_fast_tab ft = fast_tab(c->sub);
	if (!fast_at(&ft, at, c->end, w, c1))
		return false;
	c->prev_ts = hdr_ts(c->prev_ts, w, c1);
	c->peek = true;
	c->key = rd_key(c->prev_ts, c->order, unord);
	return true;
}

/* c's head was taken: its next one, peeked if the batch path takes it,
 * else by cursor_next (packet ends, records, damage, unknown ids, other
 * lengths), exactly as for strata_iter_next; sets c->key. */
static __attribute__((noinline)) void
cursor_advance(struct strata_iter *it, struct rd_cursor *c, const bool unord)
{
	c->peek = false;
	if (c->c1 ? cursor_peek(c, unord, true) : cursor_peek(c, unord, false))
		return;
	if (cursor_next(it, c))
		c->key = rd_key(c->ev.timestamp, c->order, unord);
	else
		c->key = RD_KEY_DONE;
}

/*
 * The winner c's peeked events into the batch while its key stays below
 * lim (`bounded`; else while it has events: the other cursors are done,
 * or STRATA_ITER_UNORDERED, where the stream order ranks first), straight
 * from the packet: per event the class lookup, the checks and the writes,
 * no merge logic. Leaves c with its next head (key set); the caller
 * replays its matches.
 */
static inline __attribute__((always_inline)) void
drain_direct(struct strata_iter *it, struct rd_out *o, struct rd_cursor *c,
	     const bool values, const bool unord, const bool bounded,
	     unsigned __int128 lim, const bool c1)
{
	const struct rd_fast_tab ft = fast_tab(c->sub);
	const struct rd_lane l = lane_of(c);
	const uint8_t *at = c->pos;
	uint64_t ts = c->prev_ts, w = hdr_word(at, c1);
	const struct rd_fast *e = fast_at(&ft, at, l.end, w, c1); /* peeked: taken */
	unsigned room = room_of(o, values);
	struct rd_put p = put_begin(o);
	bool gone = false;
	/* the head is peeked: e is its entry; the loop puts it, then reads
	 * the next header, which ends the loop unless the path takes it */
	for (; room; room--) {
		if (bounded && !(rd_key(ts, c->order, false) < lim))
			break;
		put_direct(&p, at, ts, e, &l, values, c1);
		at += ev_len(w, e, c1);
		if (RD_UNLIKELY(at >= l.end)) {
			gone = true;
			break;
		}
		w = hdr_word(at, c1);
		e = fast_at(&ft, at, l.end, w, c1);
		if (RD_UNLIKELY(!e)) {
			gone = true;
			break;
		}
		ts = hdr_ts(ts, w, c1);
	}
	put_end(o, &p);
	c->pos = at;
	c->prev_ts = ts;
	if (gone)
		cursor_advance(it, c, unord); /* not peekable: cursor_next */
	else
		c->key = rd_key(ts, c->order, unord);
}

#if !defined(__x86_64__)
/* x where m is 0, y where m is all ones, with no branch */
static inline uint64_t rd_sel(uint64_t x, uint64_t y, uint64_t m)
{
	return x ^ ((x ^ y) & m);
}
#endif

/* The pick of merge2_direct: all ones when tb < ta (b first), else 0,
 * and the earlier of the two in *ts, by conditional moves: a branch
 * would be mispredicted at every switch of stream. */
static inline uint64_t pick2(uint64_t ta, uint64_t tb, uint64_t *ts)
{
	uint64_t m, t;
#if defined(__x86_64__)
	__asm__("mov %[ta], %[t]\n\t"
		"cmp %[ta], %[tb]\n\t"
		"cmovb %[tb], %[t]\n\t"
		"sbb %[m], %[m]"
		: [m] "=&r"(m), [t] "=&r"(t)
		: [ta] "r"(ta), [tb] "r"(tb)
		: "cc");
#else
	m = -(uint64_t)(tb < ta);
	__asm__("" : "+r"(m)); /* keeps the select from becoming a branch */
	t = rd_sel(ta, tb, m);
#endif
	*ts = t;
	return m;
}

/* The winner of pick2's mask m takes timestamp t: *ta when m is 0, else
 * *tb (conditional moves). */
static inline void take2(uint64_t *ta, uint64_t *tb, uint64_t t, uint64_t m)
{
#if defined(__x86_64__)
	__asm__("test %[m], %[m]\n\t"
		"cmovz %[t], %[a]\n\t"
		"cmovnz %[t], %[b]"
		: [a] "+r"(*ta), [b] "+r"(*tb)
		: [t] "r"(t), [m] "r"(m)
		: "cc");
#else
	*ta = rd_sel(t, *ta, m);
	*tb = rd_sel(*tb, t, m);
#endif
}

/* One cursor's state in merge2_direct, indexed by the pick mask:
 * its head (peeked: its entry e matched, inside the content), the header
 * word of the event after it (nw, read one step ahead; 0 past the
 * content, which matches no entry), and its lane. */
struct rd_head {
	const uint8_t *at;
	const struct rd_fast *e;
	uint64_t nw;
	uint64_t tn; /* the timestamp of the event after the head */
	struct rd_lane l;
};

/* The header word after the head at `at` (entry e, so its length is e's
 * and it ends inside the content, at most at end), or 0 when the content
 * ends there. */
static inline __attribute__((always_inline)) uint64_t
next_word(const uint8_t *at, const struct rd_fast *e, const uint8_t *end,
	  const bool c1)
{
	const uint8_t *np = at + hdr_size(c1) + e->size;
	return np < end ? hdr_word(np, c1) : 0;
}

/*
 * The merge of two cursors of one sub-trace that both have peeked heads
 * (one process on two CPUs, the common case), straight from the packets
 * into the batch: per event one compare picks the head (ties to the lower
 * stream, cursor 0) and the other stays, by a mask, with no branch. Each
 * cursor's next timestamp is known one step ahead (ta/tb the heads', na/nb
 * those of the events after them, from the header read when the head was
 * taken), so the next pick waits on no load: the chain from one pick to
 * the next is the compare and two selects. The winner's next event becomes
 * its head once its header is looked up and checked as drain_direct does;
 * the loop ends, with that cursor at the event, when the batch path does
 * not take it.
 */
static inline __attribute__((always_inline)) void
merge2_direct(struct strata_iter *it, struct rd_out *o, const bool values,
	      const bool c1)
{
	struct rd_cursor *const a = &it->cur[0], *const b = &it->cur[1];
	const struct rd_fast_tab ft = fast_tab(a->sub);
	struct rd_head hd[2];
	for (int i = 0; i < 2; i++) {
		const struct rd_cursor *c = &it->cur[i];
		hd[i].l = lane_of(c);
		hd[i].at = c->pos;
		hd[i].e = fast_at(&ft, c->pos, c->end, hdr_word(c->pos, c1), c1); /* peeked */
		hd[i].nw = next_word(c->pos, hd[i].e, c->end, c1);
		hd[i].tn = hdr_ts(c->prev_ts, hd[i].nw, c1);
	}
	uint64_t ta = a->prev_ts, tb = b->prev_ts;
	unsigned room = room_of(o, values);
	struct rd_put p = put_begin(o);
	int gone = -1;
	for (; room; room--) {
		/* b first only when strictly earlier */
		uint64_t ts;
		const uint64_t m = pick2(ta, tb, &ts);
		/* &hd[m & 1], with no shift */
		struct rd_head *const h =
			(struct rd_head *)((char *)hd + (m & sizeof(*hd)));
		const uint64_t tn = h->tn;
		const uint8_t *const at = h->at;
		const struct rd_fast *const e = h->e;
		const uint8_t *const np = at + hdr_size(c1) + e->size;
		put_direct(&p, at, ts, e, &h->l, values, c1);
		const uint64_t nw = h->nw;
		h->at = np;
		/* fast_at, its bound by the end of the event after: when
		 * the entry matches, the header's length is the class's
		 * (stream class 1: the bound alone, fast_at) */
		const struct rd_fast *const ne = fast_slot(&ft, nw, c1);
		if (RD_UNLIKELY(c1 ? ne->size >= (uint64_t)(h->l.end - np) :
				     ne->hi != (uint32_t)(nw >> 32) ||
					     np + ((nw >> 51) & ~(uint64_t)7) > h->l.end)) {
			/* content ends (nw 0), or the general path takes
			 * the next event; ta/tb keep the last given */
			gone = h != hd;
			break;
		}
		h->e = ne;
		const uint8_t *const nnp = np + ev_len(nw, ne, c1);
		const uint64_t nnw = nnp < h->l.end ? hdr_word(nnp, c1) : 0;
		h->nw = nnw;
		h->tn = hdr_ts(tn, nnw, c1);
		/* the winner's head is its next event */
		take2(&ta, &tb, tn, m);
	}
	put_end(o, &p);
	a->pos = hd[0].at;
	b->pos = hd[1].at;
	for (int i = 0; i < 2; i++) {
		struct rd_cursor *c = i ? b : a;
		uint64_t t = i ? tb : ta;
		c->prev_ts = t; /* a gone cursor's: of the event it gave last */
		if (i == gone)
			cursor_advance(it, c, false);
		else
			c->key = rd_key(t, c->order, false);
	}
	/* the tree of two: the winner, and the other leaf as its loser */
	unsigned w = b->key < a->key;
	it->tree[0] = w;
	it->tree[1] = w ^ 1;
}

static __attribute__((noinline)) void merge2_values(struct strata_iter *it,
							 struct rd_out *o)
{
	merge2_direct(it, o, true, false);
}

static __attribute__((noinline)) void merge2_events(struct strata_iter *it,
							 struct rd_out *o)
{
	merge2_direct(it, o, false, false);
}

static __attribute__((noinline)) void merge2_values1(struct strata_iter *it,
							  struct rd_out *o)
{
	merge2_direct(it, o, true, true);
}

static __attribute__((noinline)) void merge2_events1(struct strata_iter *it,
							  struct rd_out *o)
{
	merge2_direct(it, o, false, true);
}

/* drain_direct for c's stream class */
static inline __attribute__((always_inline)) void
drain(struct strata_iter *it, struct rd_out *o, struct rd_cursor *c,
      const bool values, const bool unord, const bool bounded,
      unsigned __int128 lim)
{
	if (c->c1)
		drain_direct(it, o, c, values, unord, bounded, lim, true);
	else
		drain_direct(it, o, c, values, unord, bounded, lim, false);
}

/* The key of the runner-up when w wins: the least of the losers on w's
 * path to the root (each lost its last match to w). */
static inline unsigned __int128 runner_up(const struct strata_iter *it, unsigned w)
{
	unsigned __int128 k = RD_KEY_DONE;
	for (unsigned node = (w + it->width) >> 1; node; node >>= 1) {
		unsigned __int128 lk = it->cur[it->tree[node]].key;
		k = lk < k ? lk : k;
	}
	return k;
}

/*
 * The body of strata_iter_read and strata_iter_decode. Each cursor's head
 * is peeked (cursor_peek: an event the batch path takes, read in place)
 * or came from cursor_next (the general path: packet starts, events after
 * records, damage, unknown ids, other lengths, classes without a plan),
 * exactly as strata_iter_next's heads. The winner's peeked events go
 * straight from the packet into the batch: while it wins whatever its
 * keys (a lone cursor, the others done, STRATA_ITER_UNORDERED) or as long
 * as it stays below the runner-up (drain_direct), and two cursors of one
 * sub-trace interleave by merge2_direct with no branch per pick. A head of
 * the general path is copied, its fields decoded by strata_event_fields.
 * Filters with conditions take the general path for every event. Peeked
 * heads stay peeked between calls; strata_iter_next takes them as they
 * are (iter_step).
 */
static inline __attribute__((always_inline)) void
iter_direct(struct strata_iter *it, struct rd_out *o, const bool values,
	    const bool unord, const unsigned width)
{
	struct rd_cursor *const cur = it->cur;
	if (RD_UNLIKELY(!it->started))
		build_merge(it);
	if (it->advance_top) {
		/* strata_iter_next returned the winner's head */
		unsigned w = it->tree[0];
		cursor_advance(it, &cur[w], unord);
		replay(it, w, cur[w].key);
		it->advance_top = false;
	}
	for (;;) {
		unsigned w = it->tree[0];
		struct rd_cursor *c = &cur[w];
		if (RD_UNLIKELY(c->key == RD_KEY_DONE))
			break;
		if (RD_UNLIKELY(!c->peek)) {
			if (o->k >= o->n || (values && o->vcap - o->nv < o->need))
				break;
			emit(o, &c->ev, values);
			cursor_advance(it, c, unord);
		} else if (!room_of(o, values)) {
			break;
		} else if (unord || width == 1 ||
			   (width == 2 && cur[w ^ 1].key == RD_KEY_DONE)) {
			drain(it, o, c, values, unord, false, 0);
		} else if (width == 2 && cur[w ^ 1].peek && cur[0].sub == cur[1].sub) {
			if (c->c1)
				values ? merge2_values1(it, o) : merge2_events1(it, o);
			else
				values ? merge2_values(it, o) : merge2_events(it, o);
			continue; /* the tree is set */
		} else {
			drain(it, o, c, values, unord, true,
			      width == 2 ? cur[w ^ 1].key : runner_up(it, w));
		}
		replay(it, w, c->key);
	}
}

/* The general path for every event: filters with conditions, internal
 * records. */
static void iter_general(struct strata_iter *it, struct rd_out *o, const bool values)
{
	while (o->k < o->n && (!values || o->vcap - o->nv >= o->need)) {
		struct rd_cursor *c = iter_step(it);
		if (!c)
			return;
		emit(o, &c->ev, values);
	}
}

/* iter_direct for the iterator's mode and tree width. */
static inline __attribute__((always_inline)) void
iter_direct_w(struct strata_iter *it, struct rd_out *o, const bool values)
{
	if (it->unordered)
		iter_direct(it, o, values, true, 0); /* drain_direct only */
	else if (it->width == 2)
		iter_direct(it, o, values, false, 2);
	else if (it->width == 1)
		iter_direct(it, o, values, false, 1);
	else
		iter_direct(it, o, values, false, 0);
}

static void iter_batch(struct strata_iter *it, struct rd_out *o, const bool values)
{
	/* a filter with no condition (the CLI always makes one) keeps the
	 * fast path; conditions added later take effect at once */
	bool fast = it->fast && (!it->f || !it->f->narrowed);
	if (!fast)
		iter_general(it, o, values);
	else if (values)
		iter_direct_w(it, o, true);
	else
		iter_direct_w(it, o, false);
}

int strata_iter_read(struct strata_iter *it, struct strata_event *evs, unsigned n)
{
	struct rd_out o = { .ev = evs, .n = n };
	iter_batch(it, &o, false);
	return (int)o.k;
}

int strata_batch_alloc(const struct strata_trace *t, unsigned cap,
		       struct strata_batch **out)
{
	*out = NULL;
	if (!cap || cap > 65536)
		return -EINVAL;
	struct rd_batch *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->t = t;
	b->cap = cap;
	/* put_direct needs fast_nf per event, the general path the largest
	 * class rounded up to whole plan steps (strata_event_fields) */
	unsigned need = (t->max_nf + RD_PLAN_STEP - 1) / RD_PLAN_STEP * RD_PLAN_STEP;
	b->vcap = cap * t->fast_nf + need;
	b->ev = calloc(cap, sizeof(*b->ev));
	b->first = calloc(cap + 1, sizeof(*b->first));
	b->val = calloc(b->vcap, sizeof(*b->val));
	if (!b->ev || !b->first || !b->val) {
		strata_batch_free(&b->pub);
		return -ENOMEM;
	}
	b->pub.events = b->ev;
	b->pub.first = b->first;
	b->pub.values = b->val;
	*out = &b->pub;
	return 0;
}

void strata_batch_free(struct strata_batch *pb)
{
	if (!pb)
		return;
	struct rd_batch *b = (struct rd_batch *)pb;
	free(b->ev);
	free(b->first);
	free(b->val);
	free(b);
}

int strata_iter_decode(struct strata_iter *it, struct strata_batch *pb)
{
	struct rd_batch *b = (struct rd_batch *)pb;
	if (b->t != it->t)
		return -EINVAL;
	struct rd_out o = {
		.ev = b->ev, .first = b->first, .val = b->val, .n = b->cap,
		.vcap = b->vcap, .fast_nf = it->t->fast_nf,
		.need = (it->t->max_nf + RD_PLAN_STEP - 1) / RD_PLAN_STEP * RD_PLAN_STEP,
	};
	iter_batch(it, &o, true);
	b->first[o.k] = o.nv;
	b->pub.n = o.k;
	return (int)o.k;
}

int strata_iter_seek(struct strata_iter *it, uint64_t ts)
{
	for (unsigned i = 0; i < it->ncur; i++) {
		struct rd_cursor *c = &it->cur[i];
		cursor_seek(it, c, ts);
	}
	it->started = false;
	return 0;
}

uint64_t strata_iter_progress(const struct strata_iter *it)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < it->ncur; i++) {
		const struct rd_cursor *c = &it->cur[i];
		if (c->done)
			sum += c->s->size;
		else if (c->pkt < c->s->npackets)
			sum += c->s->packets[c->pkt].offset;
	}
	return sum;
}

int strata_iter_create(struct strata_trace *t, const struct strata_iter_options *opt,
		       struct strata_iter **out)
{
	struct strata_iter_options def = { .stream = -1 };
	if (!opt)
		opt = &def;
	*out = NULL;
	if (opt->stream >= 0 && (unsigned)opt->stream >= t->nstreams)
		return -EINVAL;
	if (opt->filter && opt->filter->trace != t)
		return -EINVAL;
	struct strata_iter *it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->t = t;
	it->f = opt->filter;
	it->flags = opt->flags;
	it->fast = !(it->flags & STRATA_ITER_INTERNAL);
	it->unordered = (it->flags & STRATA_ITER_UNORDERED) != 0;
	it->ncur = opt->stream >= 0 ? 1 : t->nstreams;
	it->width = 1;
	while (it->width < it->ncur)
		it->width *= 2;
	it->cur = calloc(it->width, sizeof(*it->cur));
	it->tree = calloc(it->width, sizeof(*it->tree));
	if (!it->cur || !it->tree) {
		strata_iter_destroy(it);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < it->width; i++) {
		struct rd_cursor *c = &it->cur[i];
		c->key = RD_KEY_DONE; /* sentinels past ncur stay so */
		if (i >= it->ncur) {
			c->done = true;
			continue;
		}
		unsigned si = opt->stream >= 0 ? (unsigned)opt->stream : i;
		c->s = &t->streams[si];
		c->sub = c->s->sub;
		c->map = c->s->map;
		c->order = si;
		c->c1 = c->s->sclass != 0;
		c->ev.stream = si;
		if (!t->streams[si].npackets)
			c->done = true;
	}
	if (it->f && it->f->t_begin > 0)
		strata_iter_seek(it, it->f->t_begin);
	*out = it;
	return 0;
}

void strata_iter_destroy(struct strata_iter *it)
{
	if (!it)
		return;
	free(it->cur);
	free(it->tree);
	free(it);
}
