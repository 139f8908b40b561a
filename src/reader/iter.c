/* SPDX-License-Identifier: MIT */
/* Per-stream cursors, the timestamp-ordered merge of streams, and seeking. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "rd.h"

/* Consumed stream bytes are given back to the kernel in steps of this
 * much (MADV_DONTNEED on the read-only mapping drops only our page-table
 * entries; the page cache keeps the data, a later seek faults it again).
 * This is what keeps a reader's resident memory bounded by the number of
 * streams rather than growing with the bytes read. */
#define RD_DROP_STEP (2u << 20)

struct rd_cursor {
	/* hot: read by cursor_next_fast on every event */
	const uint8_t *pos, *end; /* next event, end of content */
	uint64_t prev_ts;         /* format.md §3 reconstruction base */
	const struct rd_subtrace *sub;
	const uint8_t *map;       /* the stream's mapping (event offsets) */
	uint32_t pid, tid, cpu;   /* attribution, format.md §4 */
	uint32_t order;           /* tie-break: stream order */
	struct strata_event ev;   /* the cursor's current event */
	/* merge key: timestamp << 32 | order; RD_KEY_DONE when exhausted */
	unsigned __int128 key;
	/* cold */
	struct rd_stream *s;
	uint64_t pkt;             /* current packet; s->npackets: done */
	const uint8_t *drop;      /* mapping below this was given back (rss) */
	bool in_packet;
	bool done;
	bool pkt_damage_reported; /* once per packet */
	bool pending;             /* ev holds an event not yet returned (seek) */
	/* the head is not in ev yet: it is the ordinary event at pos (one
	 * run_fast can take), key already set from its timestamp; iter_step
	 * consumes it when the cursor wins (a batch's run switch costs no
	 * copy, see iter_batch) */
	bool peek;
};

/* The cursor's current event: the `len`-word event at `at`, of class
 * `cls`, attributed as the cursor's packet says (format.md §4). */
static inline __attribute__((always_inline)) void
cursor_set_event(struct rd_cursor *c, const struct strata_event_class *cls,
		 const uint8_t *at, uint32_t len, uint64_t ts, uint32_t id)
{
	struct strata_event *ev = &c->ev;

	ev->timestamp = ts;
	ev->cls = cls;
	ev->payload = at + 8;
	ev->size = (len - 1) * 8;
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
		drop_behind(c, s->map + p->offset);
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
		cursor_set_event(c, &cls->pub, at, len, ts, id);
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
	/* what was read before the seek is not needed any more */
	if (c->drop && c->end > c->drop) {
		uintptr_t a = (uintptr_t)c->drop & ~(uintptr_t)4095;
		uintptr_t e = ((uintptr_t)c->end + 4095) & ~(uintptr_t)4095;
		madvise((void *)a, e - a, MADV_DONTNEED);
	}
	c->drop = NULL;
	c->done = false;
	c->in_packet = false;
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
 * The common case of cursor_next, inlined into the merge: an event of a
 * known class, not a strata record, inside the packet, with no filter.
 * Anything else (packet end, damage, records, unknown ids) goes to
 * cursor_next from the same position: this path changes nothing before
 * it commits.
 */
static inline __attribute__((always_inline)) bool
cursor_next_fast(struct strata_iter *it, struct rd_cursor *c)
{
	const uint8_t *at = c->pos;
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
				cursor_set_event(c, &cls->pub, at, len, ts, id);
				return true;
			}
		}
	}
	return cursor_next(it, c);
}

static inline unsigned __int128 key_of(const struct rd_cursor *c)
{
	return (unsigned __int128)c->ev.timestamp << 32 | c->order;
}

/* STRATA_ITER_UNORDERED: the stream index ranks first, so the tree drains
 * the streams one after another (same code, no timestamp interleaving). */
static inline unsigned __int128 key_unordered(const struct rd_cursor *c)
{
	return (unsigned __int128)c->order << 64 | c->ev.timestamp;
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
		c->key = !has ? RD_KEY_DONE : it->unordered ? key_unordered(c) : key_of(c);
	}
	it->tree[0] = build_tree(it, 1);
	it->started = true;
	it->advance_top = false;
}

/* Cursor w's key changed to wk: replay its matches up to the root, with
 * branch-free selects; returns the new winner. */
static inline __attribute__((always_inline)) unsigned
replay(struct strata_iter *it, unsigned w, unsigned __int128 wk)
{
	struct rd_cursor *cur = it->cur;
	unsigned *tree = it->tree;
	for (unsigned node = (w + it->width) >> 1; node; node >>= 1) {
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
		c->key = RD_LIKELY(has) ? (it->unordered ? key_unordered(c) : key_of(c))
					: RD_KEY_DONE;
		w = replay(it, w, c->key);
	} else {
		w = it->tree[0];
	}
	if (RD_UNLIKELY(cur[w].key == RD_KEY_DONE)) {
		it->advance_top = false;
		return NULL;
	}
	if (RD_UNLIKELY(cur[w].peek)) {
		/* the event run_fast looked at: the fast path takes it, with
		 * the timestamp that made the key */
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
	unsigned fast_nf;        /* values run_fast may write per event */
	unsigned need;           /* values the general path may write */
	unsigned k;              /* events written */
	uint32_t nv;             /* values written */
};

/*
 * The end of the run of winner w: its events come before every other
 * stream's head while their timestamp is below the returned bound. The
 * runner-up is the least of the losers on w's path (a loser tree keeps
 * them there). Conservative only at UINT64_MAX (never a bound here):
 * run_fast leaves such an event to the exact merge.
 */
static uint64_t run_limit(const struct strata_iter *it, unsigned w)
{
	if (it->unordered)
		return UINT64_MAX; /* keys rank streams first */
	unsigned __int128 best = RD_KEY_DONE;
	for (unsigned node = (w + it->width) >> 1; node; node >>= 1) {
		unsigned __int128 k = it->cur[it->tree[node]].key;
		best = k < best ? k : best;
	}
	if (best == RD_KEY_DONE)
		return UINT64_MAX;
	uint64_t ts = (uint64_t)(best >> 32);
	/* ties go to the lower stream order */
	if (it->cur[w].order < (uint32_t)best)
		return ts == UINT64_MAX ? ts : ts + 1;
	return ts;
}

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
	       "run_fast writes struct strata_event as 7 words");

enum run_end {
	RUN_ROOM,  /* the batch is full */
	RUN_SLOW,  /* the event at pos needs the general path */
	RUN_LIMIT, /* the event at pos is ordinary but not before lim: peeked */
};

/*
 * The batch's hot loop: cursor c's events, straight from the packet into
 * o, while they are ordinary events (not strata records, known class with
 * a decode plan, inside the packet) with timestamps below lim, at most
 * `room` of them. It stops before the first event it cannot take, without
 * consuming it; at RUN_LIMIT *ts is that event's timestamp. Attribution
 * (cpu, pid, tid) is constant over the run: a strata:thread record ends it.
 * Every byte is untrusted: the length is checked against the packet's
 * content before anything of the event is read past its header.
 */
static inline __attribute__((always_inline)) enum run_end
run_fast(struct rd_cursor *c, uint64_t lim, unsigned room, struct rd_out *o,
	 uint64_t *tsp, const bool values)
{
	const uint8_t *pos = c->pos, *const end = c->end;
	const struct rd_subtrace *const sub = c->sub;
	/* the event's constant words: cpu beside size, pid/tid, stream
	 * beside id (struct strata_event's layout) */
	const uint64_t cpu_hi = (uint64_t)c->cpu << 32;
	const uint64_t pidtid = c->pid | (uint64_t)c->tid << 32;
	const uint64_t stream = c->order;
	const uintptr_t map = (uintptr_t)c->map;
	uint64_t prev = c->prev_ts;
	struct strata_event *ev = o->ev + o->k, *const ev_end = ev + room;
	uint32_t *first = o->first + o->k;
	struct strata_value *val = o->val + o->nv;
	enum run_end why = RUN_ROOM;
	while (ev < ev_end) {
		if (RD_UNLIKELY(pos >= end)) {
			why = RUN_SLOW;
			break;
		}
		uint64_t w = rd_le64(pos);
		uint64_t len = w >> 54;
		uint32_t id = (uint32_t)(w >> 32) & 0x3fffff;
		uint32_t major = id >> 16, minor = id & 0xffff;
		/* len 0 wraps to a huge value: one compare checks both */
		if (RD_UNLIKELY(len - 1 >= (uint64_t)(end - pos) / 8 ||
				major == 0 || minor >= sub->nminor[major])) {
			why = RUN_SLOW;
			break;
		}
		const struct rd_class *cls = sub->by_major[major][minor];
		uint32_t size = (uint32_t)(len * 8 - 8);
		if (RD_UNLIKELY(!cls || size < cls->fast_min)) {
			why = RUN_SLOW;
			break;
		}
		uint64_t ts = prev + (uint32_t)((uint32_t)w - (uint32_t)prev);
		if (ts >= lim) {
			/* another stream's turn: once per run */
			*tsp = ts;
			why = RUN_LIMIT;
			break;
		}
		rd_put64(ev, 0, ts);
		rd_put64(ev, 1, (uintptr_t)&cls->pub);
		rd_put64(ev, 2, (uintptr_t)(pos + 8));
		rd_put64(ev, 3, size | cpu_hi);
		rd_put64(ev, 4, pidtid);
		rd_put64(ev, 5, stream | (uint64_t)id << 32);
		rd_put64(ev, 6, (uintptr_t)pos - map);
		if (values) {
			/* pairs: one loop trip for the common 1-2 fields; the
			 * odd one out decodes a padding entry (0) past the
			 * event's values, inside the room */
			const struct rd_plan *pl = cls->plan;
			const unsigned nf = cls->pub.nfields;
			*first++ = (uint32_t)(val - o->val);
			if (RD_LIKELY(cls->words)) {
				/* whole words: a load and the type; the odd
				 * one out copies word 0 past the values */
				for (unsigned j = 0; j < nf; j += 2) {
					rd_plan_word(&pl[j], pos + 8, &val[j]);
					rd_plan_word(&pl[j + 1], pos + 8, &val[j + 1]);
				}
			} else {
				for (unsigned j = 0; j < nf; j += 2) {
					rd_plan_value(&pl[j], pos + 8, &val[j]);
					rd_plan_value(&pl[j + 1], pos + 8, &val[j + 1]);
				}
			}
			val += nf;
		}
		prev = ts;
		pos += len * 8;
		ev++;
	}
	c->pos = pos;
	c->prev_ts = prev;
	o->k = (unsigned)(ev - o->ev);
	o->nv = (uint32_t)(val - o->val);
	return why;
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

/* Events run_fast may still write into o (a division only when values
 * are short: events of the general path took more than fast_nf each). */
static inline unsigned room_of(const struct rd_out *o, const bool values)
{
	unsigned room = o->n - o->k;
	if (values && (uint64_t)room * o->fast_nf > o->vcap - o->nv)
		room = (o->vcap - o->nv) / o->fast_nf;
	return room;
}

/*
 * The body of strata_iter_read and strata_iter_decode. The merge picks a
 * winner, then run_fast takes its following events without touching the
 * tree while they stay ahead of the runner-up. Streams interleave in runs
 * (a thread logs a few events between two of another's); at the end of a
 * run the cursor keeps its next event unread but keyed (peek), one tree
 * replay names the next winner, and if that one is peeked too, run_fast
 * goes on from its position: no event is copied or decoded twice.
 * Everything else (packet ends, records, damage, filters) goes through
 * iter_step and cursor_next, exactly as strata_iter_next does.
 */
static inline __attribute__((always_inline)) void
iter_batch(struct strata_iter *it, struct rd_out *o, const bool values)
{
	const bool fast = it->fast && (!it->f || !it->f->narrowed);
	struct rd_cursor *const cur = it->cur;
	while (o->k < o->n && (!values || o->vcap - o->nv >= o->need)) {
		struct rd_cursor *c = iter_step(it);
		if (!c)
			return;
		emit(o, &c->ev, values);
		if (!fast)
			continue;
		unsigned w = (unsigned)(c - cur);
		for (;;) {
			uint64_t ts;
			enum run_end why = run_fast(c, run_limit(it, w), room_of(o, values),
						    o, &ts, values);
			if (why != RUN_LIMIT)
				break; /* full, or iter_step advances c */
			/* c's head is the event at pos: keyed, not consumed */
			c->ev.timestamp = ts;
			c->key = it->unordered ? key_unordered(c) : key_of(c);
			c->peek = true;
			w = replay(it, w, c->key);
			c = &cur[w];
			if (RD_UNLIKELY(!c->peek || !room_of(o, values))) {
				/* a head the general path made (or no room):
				 * iter_step returns it as it is */
				it->advance_top = false;
				break;
			}
			c->peek = false; /* run_fast consumes it */
		}
	}
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
	/* run_fast needs fast_nf per event, the general path the largest
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
