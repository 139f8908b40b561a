/* SPDX-License-Identifier: MIT */
/* Per-stream cursors, the timestamp-ordered merge of streams, and seeking. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rd.h"

struct rd_cursor {
	struct rd_stream *s;
	uint64_t pkt;             /* current packet; s->npackets: done */
	const uint8_t *pos, *end; /* next event, end of content */
	uint64_t prev_ts;         /* format.md §3 reconstruction base */
	uint32_t pid, tid, cpu;   /* attribution, format.md §4 */
	bool in_packet;
	bool done;
	bool pkt_damage_reported; /* once per packet */
	bool pending;             /* ev holds an event not yet returned (seek) */
	struct strata_event ev;   /* the cursor's current event */
	uint32_t order;           /* tie-break: stream order */
};

struct strata_iter {
	struct strata_trace *t;
	const struct strata_filter *f;
	unsigned flags;
	struct rd_cursor *cur;
	unsigned ncur;
	unsigned *heap; /* indexes into cur[], min-heap on (ts, order) */
	unsigned nheap;
	bool started;   /* heap built */
	bool advance_top;
};

/* ---- one stream ---------------------------------------------------------------- */

static void report_packet_end(struct strata_iter *it, struct rd_cursor *c)
{
	struct rd_stream *s = c->s;
	struct rd_packet *p = &s->packets[c->pkt];
	/* events_discarded is cumulative: this packet's share is the delta to
	 * the previous readable packet (format.md §2). */
	uint64_t prev = 0;
	for (uint64_t i = c->pkt; i-- > 0;)
		if (!(s->packets[i].flags & RD_PK_BAD)) {
			prev = s->packets[i].discarded;
			break;
		}
	if (p->discarded > prev && !(p->flags & RD_PK_DISC_REPORTED)) {
		p->flags |= RD_PK_DISC_REPORTED;
		rd_report(it->t, STRATA_PROBLEM_DISCARDED, s->path, p->offset,
			  p->discarded - prev, c->prev_ts,
			  "%" PRIu64 " events discarded (ring full) on cpu %u",
			  p->discarded - prev, c->cpu);
	}
}

/* Enter packet c->pkt or the next readable one; false at the end. */
static bool enter_packet(struct strata_iter *it, struct rd_cursor *c)
{
	struct rd_stream *s = c->s;
	const struct strata_filter *f = it->f;
	for (; c->pkt < s->npackets; c->pkt++) {
		struct rd_packet *p = &s->packets[c->pkt];
		if (p->flags & RD_PK_BAD)
			continue;
		if (p->cpu == UINT32_MAX) {
			/* loaded from an index file: the header was not checked */
			struct rd_packet h;
			const char *why = NULL;
			if (p->offset + RD_HEADER_SIZE > s->size)
				why = "truncated packet header";
			else {
				const uint8_t *hp = s->map + p->offset;
				if (rd_le32(hp) != RD_PACKET_MAGIC)
					why = "bad packet magic";
				else if (rd_le64(hp + 48) / 8 != p->content ||
					 rd_le64(hp + 32) != p->ts_begin)
					why = "packet header disagrees with the index";
				h.cpu = rd_le32(hp + 80);
				h.pid = rd_le32(hp + 84);
				h.tid = rd_le32(hp + 88);
			}
			if (why) {
				rd_report(it->t, STRATA_PROBLEM_DAMAGED, s->path, p->offset, 0,
					  p->ts_begin, "%s; packet skipped", why);
				p->flags |= RD_PK_BAD;
				continue;
			}
			p->cpu = h.cpu;
			p->pid = h.pid;
			p->tid = h.tid;
		}
		if (f && f->ncpus && !rd_in(f->cpus, f->ncpus, p->cpu))
			continue;
		if (f && p->ts_begin > f->t_end)
			break;
		/* packet_seq_num gap against the previous readable packet */
		uint64_t nbad = 0; /* damaged packets explain part of a gap */
		for (uint64_t i = c->pkt; i-- > 0; nbad++)
			if (!(s->packets[i].flags & RD_PK_BAD)) {
				uint64_t ps = s->packets[i].seq + nbad;
				if (p->seq > ps + 1 && !(p->flags & RD_PK_SEQ_REPORTED)) {
					p->flags |= RD_PK_SEQ_REPORTED;
					rd_report(it->t, STRATA_PROBLEM_PACKETS_LOST, s->path,
						  p->offset, p->seq - ps - 1, p->ts_begin,
						  "%" PRIu64 " packets lost before this one "
						  "(packet_seq_num %" PRIu64 " after %" PRIu64 ")",
						  p->seq - ps - 1, p->seq, ps);
				}
				break;
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
			}
			if (c->done || !enter_packet(it, c))
				return false;
			continue;
		}
		const uint8_t *at = c->pos;
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
		uint64_t ts = c->prev_ts + (uint32_t)((uint32_t)w - (uint32_t)c->prev_ts);
		c->prev_ts = ts;
		if (RD_UNLIKELY(id >> 16 == 0)) {
			/* strata's own records, format.md §4 */
			if (id == RD_ID_THREAD && len >= 2) {
				c->tid = rd_le32(at + 8);
				c->pid = rd_le32(at + 12);
			} else if (id == RD_ID_CLOCK && len >= 2) {
				ts = rd_le64(at + 8);
				c->prev_ts = ts;
			}
			if (!internal)
				continue;
		}
		const struct rd_class *cls = rd_lookup(sub, id);
		if (RD_UNLIKELY(!cls)) {
			if (id >> 16)
				packet_damage(it, c, at, "unknown event id %u (%u:%u); "
					      "skipped, with later unknown ids of this packet",
					      id, id >> 16, id & 0xffff);
			continue;
		}
		if (f) {
			if (ts < f->t_begin)
				continue;
			if (ts > f->t_end) {
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
		struct strata_event *ev = &c->ev;
		ev->timestamp = ts;
		ev->cls = &cls->pub;
		ev->payload = at + 8;
		ev->size = (len - 1) * 8;
		ev->cpu = c->cpu;
		ev->pid = c->pid;
		ev->tid = c->tid;
		ev->id = id;
		ev->offset = at - c->s->map;
		if (f && f->nprogs && !rd_filter_expr_match(f, ev))
			continue;
		return true;
	}
}

/* Position c before its first event with timestamp >= ts. */
static void cursor_seek(struct strata_iter *it, struct rd_cursor *c, uint64_t ts)
{
	struct rd_stream *s = c->s;
	/* last packet whose begin <= ts: bad packets carry their predecessor's
	 * end as begin/end, so the begins are sorted. O(log packets). */
	uint64_t lo = 0, hi = s->npackets;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (s->packets[mid].ts_begin <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	c->pkt = lo ? lo - 1 : 0;
	c->done = false;
	c->in_packet = false;
	c->pos = c->end = NULL;
	c->pending = false;
	/* scan within the packet (and on, if all its events are earlier) */
	while (cursor_next(it, c))
		if (c->ev.timestamp >= ts) {
			c->pending = true;
			return;
		}
}

/* ---- merge ----------------------------------------------------------------------- */

static inline bool before(const struct rd_cursor *a, const struct rd_cursor *b)
{
	return a->ev.timestamp < b->ev.timestamp ||
	       (a->ev.timestamp == b->ev.timestamp && a->order < b->order);
}

static void sift_down(struct strata_iter *it, unsigned i)
{
	unsigned *h = it->heap, n = it->nheap, x = h[i];
	for (;;) {
		unsigned l = 2 * i + 1, m;
		if (l >= n)
			break;
		m = l;
		if (l + 1 < n && before(&it->cur[h[l + 1]], &it->cur[h[l]]))
			m = l + 1;
		if (!before(&it->cur[h[m]], &it->cur[x]))
			break;
		h[i] = h[m];
		i = m;
	}
	h[i] = x;
}

static void build_heap(struct strata_iter *it)
{
	it->nheap = 0;
	for (unsigned i = 0; i < it->ncur; i++) {
		struct rd_cursor *c = &it->cur[i];
		/* a seek leaves the cursor on its first event: keep it */
		bool has = c->pending || cursor_next(it, c);
		c->pending = false;
		if (has)
			it->heap[it->nheap++] = i;
	}
	for (unsigned i = it->nheap / 2; i-- > 0;)
		sift_down(it, i);
	it->started = true;
	it->advance_top = false;
}

int strata_iter_next(struct strata_iter *it, const struct strata_event **ev)
{
	if (RD_UNLIKELY(!it->started))
		build_heap(it);
	else if (it->advance_top) {
		struct rd_cursor *c = &it->cur[it->heap[0]];
		if (!cursor_next(it, c)) {
			it->heap[0] = it->heap[--it->nheap];
		}
		if (it->nheap > 1) {
			/* common case: the same stream is still first */
			unsigned *h = it->heap;
			const struct rd_cursor *top = &it->cur[h[0]];
			if (!(before(&it->cur[h[1]], top) ||
			      (it->nheap > 2 && before(&it->cur[h[2]], top))))
				goto done;
			sift_down(it, 0);
		}
	done:
	}
	if (!it->nheap) {
		it->advance_top = false;
		return 0;
	}
	it->advance_top = true;
	*ev = &it->cur[it->heap[0]].ev;
	return 1;
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
	it->ncur = opt->stream >= 0 ? 1 : t->nstreams;
	it->cur = calloc(it->ncur ? it->ncur : 1, sizeof(*it->cur));
	it->heap = calloc(it->ncur ? it->ncur : 1, sizeof(*it->heap));
	if (!it->cur || !it->heap) {
		strata_iter_destroy(it);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < it->ncur; i++) {
		unsigned si = opt->stream >= 0 ? (unsigned)opt->stream : i;
		it->cur[i].s = &t->streams[si];
		it->cur[i].order = si;
		it->cur[i].ev.stream = si;
		if (!t->streams[si].npackets)
			it->cur[i].done = true;
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
	free(it->heap);
	free(it);
}
