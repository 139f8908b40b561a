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

/* One event of a cursor's staging block (stage_block): the event as a
 * batch holds it, and its class entry (the merge decodes its values). */
struct rd_slot {
	struct strata_event ev;
	const struct rd_fast *e;
};

struct rd_cursor {
	/* hot in the batch merge (iter_blocks): the key of the cursor's
	 * head, its staged events */
	/* merge key: timestamp << 32 | order; RD_KEY_DONE when exhausted */
	unsigned __int128 key;
	struct rd_slot *sev, *sev_end; /* staged, not merged yet: the head */
	struct rd_slot *blk;           /* the staging block, it->bcap slots */
	/* hot: read by cursor_next_fast on every event */
	const uint8_t *pos, *end; /* next event, end of content */
	uint64_t prev_ts;         /* format.md §3 reconstruction base */
	const struct rd_subtrace *sub;
	const uint8_t *map;       /* the stream's mapping (event offsets) */
	uint32_t pid, tid, cpu;   /* attribution, format.md §4 */
	uint32_t order;           /* tie-break: stream order */
	struct strata_event ev;   /* the cursor's current event */
	/* cold */
	struct rd_stream *s;
	uint64_t pkt;             /* current packet; s->npackets: done */
	const uint8_t *drop;      /* mapping below this was given back (rss) */
	bool in_packet;
	bool done;
	bool pkt_damage_reported; /* once per packet */
	bool pending;             /* ev holds an event not yet returned (seek) */
	/* the head is not in ev yet: it is the event at pos, of a class
	 * cursor_next_fast takes, key already set from its timestamp (a
	 * staged event given back, unstage); iter_step consumes it when the
	 * cursor wins */
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
	/* the batch path's staging blocks (iter_blocks), made at its first
	 * use: bcap events per cursor */
	void *stage_mem;
	unsigned bcap;
	bool staged;        /* some cursor may have staged events */
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
	c->sev = c->sev_end = c->blk;
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
		/* a staged event given back (unstage): the fast path takes
		 * it, with the timestamp that made the key */
		cur[w].peek = false;
		cursor_next_fast(it, &cur[w]);
	}
	it->advance_top = true;
	return &cur[w];
}

static void unstage_all(struct strata_iter *it);

int strata_iter_next(struct strata_iter *it, const struct strata_event **ev)
{
	if (RD_UNLIKELY(it->staged))
		unstage_all(it);
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
	unsigned fast_nf;        /* values a staged event may write */
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
		       offsetof(struct strata_event, offset) == 48 &&
		       offsetof(struct rd_slot, e) == 56,
	       "stage_block writes struct strata_event as 7 words");

/* The values of an event of entry e that is not `simple` (header at at),
 * in pairs by the class's plan; the odd one out decodes a padding entry,
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

/*
 * The batch path's per-stream decoder: cursor c's next events, straight
 * from the packet into its staging block, with no merge logic in the loop.
 * It takes an event only when its header matches a batch class entry
 * (struct rd_fast: not a strata record, a class with a decode plan, the
 * class's own length) and the event ends inside the packet's content; it
 * stops before any other event without consuming it, so cursor_next
 * reports or handles it exactly as strata_iter_next would. Attribution is
 * constant over a block: a strata:thread record ends it. Every byte is
 * untrusted: nothing past the header is read before the event's length is
 * checked against the content. Returns the events staged.
 */
static inline struct rd_slot *slot_add(struct rd_slot *s, uintptr_t bytes)
{
	return (struct rd_slot *)((char *)s + bytes);
}

_Static_assert(sizeof(struct rd_slot) == 64, "merge2 steps by a mask of 64");

static inline __attribute__((always_inline)) unsigned
stage_block(struct rd_cursor *c, unsigned bcap, const bool tail)
{
	/* everything in locals: with -fno-strict-aliasing, each store below
	 * would reload a field read through a pointer */
	const struct rd_fast *const tab = c->sub->fast;
	const uint32_t mult = c->sub->fast_mult;
	const unsigned shift = c->sub->fast_shift;
	const uint8_t *pos = c->pos, *const end = c->end;
	/* the event's constant words: cpu beside size, pid/tid, stream
	 * beside id (struct strata_event's layout) */
	const uint64_t cpu_hi = (uint64_t)c->cpu << 32;
	const uint64_t pidtid = c->pid | (uint64_t)c->tid << 32;
	const uint64_t stream = c->order;
	const uintptr_t map = (uintptr_t)c->map;
	uint64_t prev = c->prev_ts;
	struct rd_slot *s = c->blk, *const s_end = s + bcap;
	/* content ends on a word (trace.c), so pos < end leaves a header;
	 * without `tail` the 8 bytes at end are mapped too (the packet's
	 * padding, or more of the file), and a header read there fails
	 * the length check below */
	while (s != s_end && (!tail || pos < end)) {
		uint64_t w = rd_le64(pos);
		uint32_t hi = (uint32_t)(w >> 32);
		const struct rd_fast *e = &tab[(uint32_t)(hi * mult) >> shift];
		const uint64_t size = e->size;
		if (RD_UNLIKELY(e->hi != hi || size >= (uint64_t)(end - pos)))
			break;
		uint64_t ts = prev + (uint32_t)((uint32_t)w - (uint32_t)prev);
		struct strata_event *ev = &s->ev;
		rd_put64(ev, 0, ts);
		rd_put64(ev, 1, (uintptr_t)&e->cls->pub);
		rd_put64(ev, 2, (uintptr_t)(pos + 8));
		rd_put64(ev, 3, size | cpu_hi);
		rd_put64(ev, 4, pidtid);
		rd_put64(ev, 5, e->id_hi | stream);
		rd_put64(ev, 6, (uintptr_t)pos - map);
		s->e = e;
		prev = ts;
		/* the header's own length (the entry's, as hi matched): the
		 * next load's address waits on this load only, not on the
		 * entry's too */
		pos += (w >> 51) & ~(uint64_t)7;
		s++;
	}
	c->pos = pos;
	c->prev_ts = prev;
	c->sev = c->blk;
	c->sev_end = s;
	return (unsigned)(s - c->blk);
}

/* c's head was consumed: its next one, staged if stage_block takes it,
 * else by the general path; sets c->key. */
static __attribute__((noinline)) void
cursor_fill(struct strata_iter *it, struct rd_cursor *c, const bool unord)
{
	unsigned n = 0;
	if (c->pos >= c->end)
		; /* packet end (or none yet): cursor_next */
	else if ((uintptr_t)(c->map + c->s->size) - (uintptr_t)c->end >= 8)
		n = stage_block(c, it->bcap, false);
	else
		n = stage_block(c, it->bcap, true);
	if (n)
		c->key = rd_key(c->sev->ev.timestamp, c->order, unord);
	else if (cursor_next(it, c))
		c->key = rd_key(c->ev.timestamp, c->order, unord);
	else
		c->key = RD_KEY_DONE;
}

/* Give back c's staged events: its head becomes the first of them, as a
 * peeked event at pos (same timestamp, same key), for the paths that
 * read one event at a time. */
static void unstage(struct rd_cursor *c)
{
	if (c->sev == c->sev_end)
		return;
	const struct strata_event *ev = &c->sev->ev;
	c->pos = c->map + ev->offset;
	/* format.md §3 reconstruction from itself gives itself */
	c->prev_ts = ev->timestamp;
	c->ev.timestamp = ev->timestamp;
	c->peek = true;
	c->sev = c->sev_end = c->blk;
}

static void unstage_all(struct strata_iter *it)
{
	for (unsigned i = 0; i < it->ncur; i++)
		unstage(&it->cur[i]);
	it->staged = false;
}

/* Staging blocks for every cursor: false when there is no memory (the
 * batches then take the general path). A block of 64 events amortises
 * its refill; many streams get smaller ones, to stay in cache. */
static bool stage_alloc(struct strata_iter *it)
{
	unsigned bcap = 8192 / it->ncur;
	bcap = bcap > 64 ? 64 : bcap < 8 ? 8 : bcap;
	size_t per = (size_t)bcap * sizeof(struct rd_slot);
	char *m = aligned_alloc(64, per * it->ncur);
	if (!m)
		return false;
	for (unsigned i = 0; i < it->ncur; i++) {
		struct rd_cursor *c = &it->cur[i];
		c->blk = (struct rd_slot *)(m + per * i);
		c->sev = c->sev_end = c->blk;
	}
	it->stage_mem = m;
	it->bcap = bcap;
	return true;
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

/* Staged events that may still be merged into o (a division only when
 * values are short: events of the general path took more than fast_nf
 * each). */
static inline unsigned room_of(const struct rd_out *o, const bool values)
{
	unsigned room = o->n - o->k;
	if (values && (uint64_t)room * o->fast_nf > o->vcap - o->nv)
		room = (o->vcap - o->nv) / o->fast_nf;
	return room;
}

/* The merge's uncommon cases, for the winner: no room for its staged
 * head, a peeked head (staged now, same key), a head of the general path
 * (emitted; the cursor advances), the end. False when the batch is done. */
static __attribute__((noinline)) bool
batch_slow(struct strata_iter *it, struct rd_out *o, const bool values,
	   const bool unord)
{
	unsigned w = it->tree[0];
	struct rd_cursor *c = &it->cur[w];
	if (c->sev != c->sev_end)
		return room_of(o, values) != 0;
	if (c->key == RD_KEY_DONE)
		return false;
	if (c->peek) {
		c->peek = false;
		cursor_fill(it, c, unord);
	} else {
		if (o->k >= o->n || (values && o->vcap - o->nv < o->need))
			return false;
		emit(o, &c->ev, values);
		cursor_fill(it, c, unord);
	}
	replay(it, w, c->key);
	return true;
}

/* Where the merge loops write: the batch's next event, first and value
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

/* Staged event s into the batch: the event, then its values decoded from
 * the payload (fields 0 and 1 by the entry's own plan, with no loop: the
 * common case), into the room of fast_nf >= 2 per event that the caller
 * checked (room_of). */
static inline __attribute__((always_inline)) void
put_staged(struct rd_put *p, const struct rd_slot *s, const bool values)
{
	memcpy(p->ev++, &s->ev, sizeof(s->ev));
	if (values) {
		const struct rd_fast *e = s->e;
		const uint8_t *at = s->ev.payload - 8;
		const unsigned nf = e->nf;
		*p->first++ = p->nv;
		if (RD_LIKELY(e->simple)) {
			rd_plan_word(&e->pl[0], at, &p->val[0]);
			rd_plan_word(&e->pl[1], at, &p->val[1]);
		} else {
			put_fields(e, at, p->val);
		}
		p->val += nf;
		p->nv += nf;
	}
}

/* c's staged head was taken: its key from the next staged event, or its
 * next head (cursor_fill) when the block is used up. */
static inline __attribute__((always_inline)) void
cursor_rekey(struct strata_iter *it, struct rd_cursor *c, const bool unord)
{
	if (c->sev == c->sev_end)
		cursor_fill(it, c, unord);
	else
		c->key = rd_key(c->sev->ev.timestamp, c->order, unord);
}

/* The winner w's staged events, while it stays the winner whatever its
 * keys: the other cursors are done, or STRATA_ITER_UNORDERED (the stream
 * order ranks first). A block at a time, no compare per event. */
static inline __attribute__((always_inline)) void
drain1(struct strata_iter *it, struct rd_out *o, unsigned w, const bool values,
       const bool unord)
{
	struct rd_cursor *c = &it->cur[w];
	unsigned n = room_of(o, values), left = (unsigned)(c->sev_end - c->sev);
	struct rd_slot *s = c->sev;
	struct rd_put p = put_begin(o);
	for (unsigned i = n < left ? n : left; i; i--)
		put_staged(&p, s++, values);
	c->sev = s;
	put_end(o, &p);
	cursor_rekey(it, c, unord);
	replay(it, w, c->key);
}

/* One event of the winner (staged), then its matches replayed: the merge
 * of any number of cursors. */
static inline __attribute__((always_inline)) void
step1(struct strata_iter *it, struct rd_out *o, unsigned w, const bool values,
      const bool unord)
{
	struct rd_cursor *c = &it->cur[w];
	struct rd_put p = put_begin(o);
	put_staged(&p, c->sev, values);
	put_end(o, &p);
	c->sev++;
	cursor_rekey(it, c, unord);
	replay(it, w, c->key);
}

/*
 * The merge of two cursors that both have staged events (one process on
 * two CPUs, the common case), with both heads in registers: per event one
 * compare picks the head and the other stays, by a mask, with no branch
 * and no store reloaded on the way from one pick to the next (the
 * loop-carried chain is a load and a compare). It runs n events at a time,
 * n no more than either block holds (so neither ends inside), and goes
 * on through refills while both cursors stage their next events.
 */
static inline __attribute__((always_inline)) void
merge2(struct strata_iter *it, struct rd_out *o, const bool values)
{
	struct rd_cursor *const a = &it->cur[0], *const b = &it->cur[1];
	/* each event takes at most fast_nf values: room for n events stays
	 * room for the rest after n */
	unsigned room = room_of(o, values);
	for (;;) {
		struct rd_slot *sa = a->sev, *sb = b->sev;
		struct rd_slot *const ea = a->sev_end, *const eb = b->sev_end;
		struct rd_put p = put_begin(o);
		for (;;) {
			unsigned n = (unsigned)(ea - sa), nb = (unsigned)(eb - sb);
			n = nb < n ? nb : n;
			n = room < n ? room : n;
			if (!n)
				break;
			room -= n;
			for (; n; n--) {
				/* b first only when strictly earlier: ties go
				 * to the lower stream order, a's; the empty asm
				 * keeps the selects from becoming a
				 * (mispredicted) branch */
				uintptr_t m = -(uintptr_t)(sb->ev.timestamp < sa->ev.timestamp);
				__asm__("" : "+r"(m));
				put_staged(&p, (const struct rd_slot *)(((uintptr_t)sa & ~m) |
									((uintptr_t)sb & m)),
					   values);
				sa = slot_add(sa, sizeof(*sa) & ~m);
				sb = slot_add(sb, sizeof(*sb) & m);
			}
		}
		put_end(o, &p);
		a->sev = sa;
		b->sev = sb;
		if (sa == ea || sb == eb) {
			/* refill the block that ended (or its cursor leaves
			 * the blocks): a cursor's key is its head's */
			cursor_rekey(it, a, false);
			cursor_rekey(it, b, false);
		}
		if (!room || a->sev == a->sev_end || b->sev == b->sev_end)
			break;
	}
	/* keys at the end only; the tree of two: the winner, and the other
	 * leaf as its loser */
	if (a->sev != a->sev_end)
		a->key = rd_key(a->sev->ev.timestamp, a->order, false);
	if (b->sev != b->sev_end)
		b->key = rd_key(b->sev->ev.timestamp, b->order, false);
	unsigned w = b->key < a->key;
	it->tree[0] = w;
	it->tree[1] = w ^ 1;
}

/*
 * The body of strata_iter_read and strata_iter_decode: a merge of
 * blocks. Each cursor decodes its stream ahead into a staging block
 * (stage_block, a tight loop with no merge logic); the staged events are
 * then merged and copied out: two cursors by merge2, more by the loser
 * tree one event at a time (replay: no data-dependent branch), a lone or
 * unordered one a block at a time (drain1). However finely the streams
 * interleave (a thread logs a few events between two of another's), an
 * event costs the same as in a long run. Heads the blocks do not take
 * (packet ends, records, damage, unknown ids, other lengths) go through
 * cursor_next, exactly as strata_iter_next's do (batch_slow); filters
 * with conditions take the general path for every event. Staged events
 * stay staged between calls; the one-event paths give them back first
 * (unstage).
 */
static inline __attribute__((always_inline)) void
iter_blocks(struct strata_iter *it, struct rd_out *o, const bool values,
	    const bool unord, const unsigned width)
{
	struct rd_cursor *const cur = it->cur;
	if (RD_UNLIKELY(!it->started))
		build_merge(it);
	if (it->advance_top) {
		/* strata_iter_next returned the winner's head */
		unsigned w = it->tree[0];
		cursor_fill(it, &cur[w], unord);
		replay(it, w, cur[w].key);
		it->advance_top = false;
	}
	it->staged = true;
	for (;;) {
		unsigned w = it->tree[0];
		struct rd_cursor *c = &cur[w];
		if (RD_UNLIKELY(c->sev == c->sev_end || !room_of(o, values))) {
			if (!batch_slow(it, o, values, unord))
				break;
		} else if (unord || width == 1 ||
			   (width == 2 && cur[w ^ 1].key == RD_KEY_DONE)) {
			drain1(it, o, w, values, unord);
		} else if (width == 2 && cur[w ^ 1].sev != cur[w ^ 1].sev_end) {
			merge2(it, o, values);
		} else {
			step1(it, o, w, values, unord);
		}
	}
}

/* The general path for every event: filters with conditions, internal
 * records, no memory for staging blocks. */
static void iter_general(struct strata_iter *it, struct rd_out *o, const bool values)
{
	while (o->k < o->n && (!values || o->vcap - o->nv >= o->need)) {
		struct rd_cursor *c = iter_step(it);
		if (!c)
			return;
		emit(o, &c->ev, values);
	}
}

/* iter_blocks for the iterator's mode and tree width. */
static inline __attribute__((always_inline)) void
iter_blocks_w(struct strata_iter *it, struct rd_out *o, const bool values)
{
	if (it->unordered)
		iter_blocks(it, o, values, true, 0); /* drain1 only */
	else if (it->width == 2)
		iter_blocks(it, o, values, false, 2);
	else if (it->width == 1)
		iter_blocks(it, o, values, false, 1);
	else
		iter_blocks(it, o, values, false, 0);
}

static void iter_batch(struct strata_iter *it, struct rd_out *o, const bool values)
{
	/* a filter with no condition (the CLI always makes one) keeps the
	 * fast path; conditions added later take effect at once */
	bool fast = it->fast && (!it->f || !it->f->narrowed);
	if (it->staged && !fast)
		unstage_all(it);
	if (!fast || (!it->stage_mem && !stage_alloc(it)))
		iter_general(it, o, values);
	else if (values)
		iter_blocks_w(it, o, true);
	else
		iter_blocks_w(it, o, false);
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
	it->staged = false; /* cursor_seek dropped them */
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
	free(it->stage_mem);
	free(it);
}
