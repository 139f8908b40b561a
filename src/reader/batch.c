/* SPDX-License-Identifier: MIT */
/* Batches: strata_iter_read and strata_iter_decode, the events of the
 * merge written straight from the packets into flat arrays. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "iter.h"

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
static strata_always_inline void
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
static strata_always_inline const struct rd_fast *
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
static strata_always_inline const struct rd_fast *
fast_at(const struct rd_fast_tab *ft, const uint8_t *at, const uint8_t *end,
	uint64_t w, const bool c1)
{
	uint32_t hi = (uint32_t)(w >> 32);
	const struct rd_fast *e = fast_slot(ft, w, c1);
	if (strata_unlikely((!c1 && e->hi != hi) ||
			    e->size >= (uint64_t)(end - at)))
		return NULL;
	return e;
}

/* The length of the event at header word w, entry e (fast_at took it). */
static strata_always_inline uint64_t
ev_len(uint64_t w, const struct rd_fast *e, const bool c1)
{
	if (c1)
		return 4 + e->size;
	return (w >> 51) & ~(uint64_t)7;
}

/* A cursor's constants while the batch path writes its events: its end of
 * content and the words of struct strata_event that do not change from one
 * event to the next (attribution changes only in rd_cursor_next). */
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

static strata_always_inline struct rd_put
put_begin(const struct rd_out *o)
{
	/* first and val are NULL when no values are asked for: no offset
	 * may be applied to them then (UB; the fuzzer's UBSan says so) */
	return (struct rd_put){ o->ev + o->k, o->first ? o->first + o->k : NULL,
				o->val ? o->val + o->nv : NULL, o->nv };
}

static strata_always_inline void
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
static strata_always_inline void
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
		if (strata_likely(e->simple))
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
static strata_always_inline bool
cursor_peek(struct rd_cursor *c, const bool unord, const bool c1)
{
	const uint8_t *at = c->pos;
	if (strata_unlikely(at >= c->end))
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
 * else by rd_cursor_next (packet ends, records, damage, unknown ids, other
 * lengths), exactly as for strata_iter_next; sets c->key. */
static noinline void
cursor_advance(struct strata_iter *it, struct rd_cursor *c, const bool unord)
{
	c->peek = false;
	if (c->c1 ? cursor_peek(c, unord, true) : cursor_peek(c, unord, false))
		return;
	if (rd_cursor_next(it, c))
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
static strata_always_inline void
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
		if (strata_unlikely(at >= l.end)) {
			gone = true;
			break;
		}
		w = hdr_word(at, c1);
		e = fast_at(&ft, at, l.end, w, c1);
		if (strata_unlikely(!e)) {
			gone = true;
			break;
		}
		ts = hdr_ts(ts, w, c1);
	}
	put_end(o, &p);
	c->pos = at;
	c->prev_ts = ts;
	if (gone)
		cursor_advance(it, c, unord); /* not peekable: rd_cursor_next */
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
static strata_always_inline uint64_t
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
static strata_always_inline void
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
		if (strata_unlikely(c1 ? ne->size >= (uint64_t)(h->l.end - np) :
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

static noinline void merge2_values(struct strata_iter *it, struct rd_out *o)
{
	merge2_direct(it, o, true, false);
}

static noinline void merge2_events(struct strata_iter *it, struct rd_out *o)
{
	merge2_direct(it, o, false, false);
}

static noinline void merge2_values1(struct strata_iter *it, struct rd_out *o)
{
	merge2_direct(it, o, true, true);
}

static noinline void merge2_events1(struct strata_iter *it, struct rd_out *o)
{
	merge2_direct(it, o, false, true);
}

/* drain_direct for c's stream class */
static strata_always_inline void
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
 * or came from rd_cursor_next (the general path: packet starts, events after
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
static strata_always_inline void
iter_direct(struct strata_iter *it, struct rd_out *o, const bool values,
	    const bool unord, const unsigned width)
{
	struct rd_cursor *const cur = it->cur;
	if (strata_unlikely(!it->started))
		rd_build_merge(it);
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
		if (strata_unlikely(c->key == RD_KEY_DONE))
			break;
		if (strata_unlikely(!c->peek)) {
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
static strata_always_inline void
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
	if (!fast || it->shifted)
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
