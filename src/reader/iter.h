/* SPDX-License-Identifier: MIT */
/* The iterator's cursors and merge, and the inlined hot path they share
 * (cursor.c, iter.c, batch.c; not installed). */
#ifndef STRATA_RD_ITER_H
#define STRATA_RD_ITER_H

#include "rd.h"

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
	int64_t shift;            /* added to every timestamp: the sub-trace's
				   * clock offset (docs/reader.md, "Several
				   * hosts"); 0 but in a merge of hosts */
	bool drift;               /* and its drift: rd_sub_time() */
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
static strata_always_inline void
cursor_set_event(struct rd_cursor *c, const struct strata_event_class *cls,
		 const uint8_t *at, const uint8_t *payload, uint32_t size,
		 uint64_t ts, uint32_t id)
{
	struct strata_event *ev = &c->ev;

	ev->timestamp = strata_unlikely(c->drift) ? rd_sub_time(c->sub, ts)
						  : ts + (uint64_t)c->shift;
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
	bool shifted;   /* some cursor has a shift: the batch path, which
			 * compares raw timestamps, is not taken */
	bool started;   /* tree built */
	bool advance_top;
	struct rd_cursor *cur; /* width entries */
	unsigned ncur;
	unsigned width;
	unsigned *tree;
};

/* ---- one stream (cursor.c) -------------------------------------------- */

/* c's next event that passes the filters, in c->ev; false at the end of
 * its stream. The general path: every case, damage included. */
bool rd_cursor_next(struct strata_iter *it, struct rd_cursor *c);
/* Position c before its first event with timestamp >= ts. */
void rd_cursor_seek(struct strata_iter *it, struct rd_cursor *c, uint64_t ts);

/*
 * An event header as the fast paths read it, `c1` a constant of each
 * inlined copy: stream class 0's 64-bit word (format.md §3: length, id,
 * 32 bits of clock) or stream class 1's 32-bit one (docs/compact.md: 27
 * bits of clock << 5 | compact id), and the full timestamp it gives after
 * `prev`. A header inside the content is there whole: content ends on a
 * word of its class (packet.c rd_check_header).
 */
static strata_always_inline uint64_t
hdr_word(const uint8_t *at, const bool c1)
{
	return c1 ? rd_le32(at) : rd_le64(at);
}

static strata_always_inline uint64_t
hdr_ts(uint64_t prev, uint64_t w, const bool c1)
{
	if (c1)
		return prev + (((w >> 5) - prev) & ((UINT64_C(1) << 27) - 1));
	return prev + (uint32_t)((uint32_t)w - (uint32_t)prev);
}

/* The header's size: where the payload starts. */
static strata_always_inline uint32_t hdr_size(const bool c1)
{
	return c1 ? 4 : 8;
}

/*
 * The common case of rd_cursor_next, inlined into the merge: an event of a
 * known class, not a strata record, inside the packet, with no filter.
 * Anything else (packet end, damage, records, unknown ids) goes to
 * rd_cursor_next from the same position: this path changes nothing before
 * it commits. In stream class 1, the compact events the batch path takes
 * (its table, classes.c build_fast1); the extended form and classes with no
 * plan take rd_cursor_next.
 */
static strata_always_inline bool
cursor_next_fast(struct strata_iter *it, struct rd_cursor *c)
{
	const uint8_t *at = c->pos;
	if (c->c1) {
		if (strata_likely(at < c->end)) {
			uint32_t h = rd_le32(at);
			const struct rd_fast *e = &c->sub->fast[h & 31];
			if (strata_likely(e->size < (uint64_t)(c->end - at))) {
				uint64_t ts = hdr_ts(c->prev_ts, h, true);
				c->prev_ts = ts;
				c->pos = at + 4 + e->size;
				cursor_set_event(c, &e->cls->pub, at, at + 4,
						 (uint32_t)e->size, ts, e->cls->pub.id);
				return true;
			}
		}
		return rd_cursor_next(it, c);
	}
	if (strata_likely(at < c->end)) {
		uint64_t w = rd_le64(at);
		uint32_t len = (uint32_t)(w >> 54);
		uint32_t id = (uint32_t)(w >> 32) & 0x3fffff;
		uint32_t major = id >> 16, minor = id & 0xffff;
		const struct rd_subtrace *sub = c->sub;
		if (strata_likely((len - 1u) < (uint64_t)(c->end - at) / 8 &&
				  major != 0 && minor < sub->nminor[major])) {
			const struct rd_class *cls = sub->by_major[major][minor];
			if (strata_likely(cls != NULL)) {
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
	return rd_cursor_next(it, c);
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

/* ---- the merge (iter.c) ------------------------------------------------ */

/* Every cursor's head and the tree over them (the first read, and after
 * a seek). */
void rd_build_merge(struct strata_iter *it);

/* Cursor w's key changed to wk: replay its matches up to the root, with
 * branch-free selects; returns the new winner. */
static strata_always_inline unsigned
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

static strata_always_inline unsigned
replay(struct strata_iter *it, unsigned w, unsigned __int128 wk)
{
	return replay_in(it->cur, it->tree, it->width, w, wk);
}

/* The cursor holding the next event, or NULL at the end: the body of
 * strata_iter_next, inlined into it and into the batches. */
static strata_always_inline struct rd_cursor *
iter_step(struct strata_iter *it)
{
	struct rd_cursor *cur = it->cur;
	unsigned w;
	if (strata_unlikely(!it->started)) {
		rd_build_merge(it);
		w = it->tree[0];
	} else if (strata_likely(it->advance_top)) {
		w = it->tree[0];
		struct rd_cursor *c = &cur[w];
		/* a filter with no condition (the CLI always makes one) keeps
		 * the fast path; conditions added later take effect at once */
		bool fast = it->fast && (!it->f || !it->f->narrowed);
		bool has = strata_likely(fast) ? cursor_next_fast(it, c)
					       : rd_cursor_next(it, c);
		c->key = strata_likely(has) ? key_of(it, c) : RD_KEY_DONE;
		w = replay(it, w, c->key);
	} else {
		w = it->tree[0];
	}
	if (strata_unlikely(cur[w].key == RD_KEY_DONE)) {
		it->advance_top = false;
		return NULL;
	}
	if (strata_unlikely(cur[w].peek)) {
		/* a head peeked by the batch path: the fast path takes
		 * it, with the timestamp that made the key */
		cur[w].peek = false;
		cursor_next_fast(it, &cur[w]);
	}
	it->advance_top = true;
	return &cur[w];
}

#endif /* STRATA_RD_ITER_H */
