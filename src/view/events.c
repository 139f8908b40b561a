// SPDX-License-Identifier: MIT
/* strata view's api/list, api/event and api/search: the list's pages (by time, anchor or position), one event with a sample's chain, the n-th match of a search (docs/view.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "view.h"
#include "api.h"

/* An event as the list gives it, without its closing brace (api/event
 * adds the chain). */
static void put_event_open(struct vw_model *m, const struct strata_event *ev,
			   struct strata_value *vals, unsigned nvals, struct vw_buf *o)
{
	char desc[512];
	const struct strata_event_class *c = ev->cls;
	vw_printf(o, "{\"ts\":%llu,\"cpu\":%u,\"pid\":%u,\"tid\":%u,\"stream\":%u,"
		  "\"offset\":%llu,\"cls\":%u,\"name\":",
		  (unsigned long long)vw_ns(m, ev->timestamp - m->begin), ev->cpu,
		  ev->pid, ev->tid, ev->stream, (unsigned long long)ev->offset,
		  c->index);
	vw_put_str(o, c->name, strlen(c->name));
	vw_puts(o, ",\"fields\":{");
	int n = c->nfields + 3 <= nvals ? strata_event_fields(ev, vals, nvals) : -EINVAL;
	for (int i = 0, k = 0; i < n; i++) {
		if (c->fields[i].hidden)
			continue;
		vw_puts(o, k++ ? "," : "");
		vw_put_str(o, c->fields[i].name, strlen(c->fields[i].name));
		vw_puts(o, ":");
		vw_put_value(o, &c->fields[i], &vals[i]);
	}
	int d = n >= 0 ? strata_event_describe_values(ev, vals, (unsigned)n, desc,
						     sizeof(desc)) : -1;
	vw_puts(o, "},\"desc\":");
	vw_put_str(o, d >= 0 ? desc : "(damaged)", d >= 0 ? strlen(desc) : 9);
	vw_puts(o, n < 0 ? ",\"damaged\":true" : "");
}

static void put_event(struct vw_model *m, const struct strata_event *ev,
		      struct strata_value *vals, unsigned nvals, struct vw_buf *o)
{
	put_event_open(m, ev, vals, nvals, o);
	vw_puts(o, "}");
}

/* An event the list is paged from (api/list's stream and offset): the
 * one of that stream and offset listed at ns t; off: none. */
struct anchor {
	bool on;
	uint32_t stream;
	uint64_t offset, t;
};

static bool is_anchor(const struct anchor *a, const struct strata_event *ev)
{
	return a->on && ev->stream == a->stream && ev->offset == a->offset;
}

/* Whether ev, read in time order from before tick t, comes before where
 * the list starts: before tick t, or before the anchor (those listed at
 * its ns that precede it). */
static bool ahead(const struct vw_model *m, const struct anchor *a, uint64_t t,
		  const struct strata_event *ev)
{
	if (!a->on)
		return ev->timestamp < t;
	return !is_anchor(a, ev) && vw_ns(m, ev->timestamp - m->begin) <= a->t;
}

/* The last `n` events before tick t (or the anchor): read from ever
 * earlier points (4x the span each time) until they hold n, so a dense
 * trace reads about n events and a sparse one a few passes. */
static size_t before(struct vw_model *m, struct strata_iter *it, uint64_t t,
		     const struct anchor *a, unsigned n, struct strata_event *ring)
{
	uint64_t span = (m->end - m->begin) / 4096 + 1;
	size_t got = 0;
	for (;;) {
		uint64_t from = t - m->begin > span ? t - span : m->begin;
		strata_iter_seek(it, from);
		const struct strata_event *ev;
		got = 0;
		while (strata_iter_next(it, &ev) == 1 && ahead(m, a, t, ev))
			if (ev->id >> 16) /* strata's own records: as the bins */
				ring[got++ % n] = *ev;
		if (got >= n || from == m->begin)
			break;
		span *= 4;
	}
	if (got > n) { /* oldest first */
		size_t k = got % n;
		struct strata_event tmp[n];
		memcpy(tmp, ring + k, (n - k) * sizeof(*ring));
		memcpy(tmp + n - k, ring, k * sizeof(*ring));
		memcpy(ring, tmp, n * sizeof(*ring));
		got = n;
	}
	return got;
}

/* The first tick of bin b (vw_bin's inverse); b == nbins: past the end. */
static uint64_t bin_start(const struct vw_model *m, unsigned b)
{
	unsigned __int128 x = (unsigned __int128)b * m->gridlen + m->nbins - 1;
	return m->begin + (uint64_t)(x / m->nbins);
}

/* Where tick tt lies among the trace's events, from the bins: the events
 * of the bins before its own, and of its own the share that its time
 * gives (the events are not read, so the scroll bar's thumb is placed at
 * a cost of one division). */
static uint64_t index_at(const struct vw_model *m, uint64_t tt)
{
	unsigned b = vw_bin(m, tt);
	uint64_t lo = bin_start(m, b), hi = bin_start(m, b + 1);
	uint64_t n = m->prefix[b + 1] - m->prefix[b];
	if (tt <= lo || hi <= lo)
		return m->prefix[b];
	unsigned __int128 x = (unsigned __int128)n * (tt - lo) / (hi - lo);
	return m->prefix[b] + (uint64_t)(x < n ? x : n);
}

/* The bin that holds the trace's event number `index` (strata's records
 * aside): the last whose prefix is at most index. */
static unsigned bin_of_index(const struct vw_model *m, uint64_t index)
{
	unsigned lo = 0, hi = m->nbins; /* prefix[lo] <= index */
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;
		if (m->prefix[mid] <= index)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The list's start at the trace's event number `index` (the scroll bar's
 * position): the bin that holds it, and in it, without a filter (the
 * bins count what the unfiltered iterator gives), the event that many
 * after the bin's first, so exact; with one, the first event the filter
 * keeps from the bin's start, whose number the bins only bound. A bin
 * of a burst that would take more than VW_EXACT_MAX events of reading
 * is entered at the time its share gives instead (an estimate, as under
 * a filter). That event becomes the anchor *a (at its tick *tt), so that
 * `before` lists the events before it. Returns the number given to the
 * start. */
static uint64_t find_index(struct vw_model *m, struct strata_iter *it, uint64_t index,
			   bool filtered, struct anchor *a, uint64_t *tt)
{
	uint64_t i = index < m->nevents ? index : m->nevents ? m->nevents - 1 : 0;
	unsigned b = bin_of_index(m, i);
	uint64_t skip = filtered ? 0 : i - m->prefix[b], at = filtered ? m->prefix[b] : i;
	const struct strata_event *ev;
	*tt = bin_start(m, b);
	if (skip > VW_EXACT_MAX) {
		uint64_t len = bin_start(m, b + 1) - *tt, n = m->prefix[b + 1] - m->prefix[b];
		*tt += (uint64_t)((unsigned __int128)len * skip / n);
		at = index_at(m, *tt);
		skip = 0;
	}
	a->on = false;
	strata_iter_seek(it, *tt);
	while (strata_iter_next(it, &ev) == 1 && !vw_past_end(m, ev->timestamp)) {
		if (!(ev->id >> 16) || (skip && skip--))
			continue;
		*a = (struct anchor){ .on = true, .stream = ev->stream, .offset = ev->offset,
				      .t = vw_ns(m, ev->timestamp - m->begin) };
		*tt = m->begin + vw_ticks(m, a->t);
		break;
	}
	return at;
}

int vw_api_list_at(struct vw_model *m, const struct vw_list_at *at, const struct vw_filter *q,
		   struct vw_buf *o)
{
	struct strata_filter *f = NULL;
	struct strata_iter *it = NULL;
	unsigned nbefore = at->before, nafter = at->after;
	struct strata_event *ring = calloc(nbefore + 1, sizeof(*ring));
	unsigned nvals = 256 + 3;
	struct strata_value *vals = calloc(nvals, sizeof(*vals));
	int err = ring && vals ? vw_filter_make(m, q, &f, o) : -ENOMEM;
	if (!err)
		err = strata_iter_create(m->t, &(struct strata_iter_options){
			.stream = -1, .filter = f }, &it);
	if (err)
		goto out;
	if (q->none)
		nbefore = nafter = 0;
	uint64_t tt = m->begin + vw_ticks(m, at->t), index;
	struct anchor a = { .on = at->stream >= 0, .stream = (uint32_t)at->stream,
			    .offset = at->offset, .t = at->t };
	if (at->index >= 0)
		index = find_index(m, it, (uint64_t)at->index, f != NULL, &a, &tt);
	else
		index = index_at(m, tt);
	size_t nb = nbefore ? before(m, it, tt, &a, nbefore, ring) : 0;
	vw_printf(o, "{\"t\":%llu,\"before\":%zu,\"index\":%llu,\"total\":%llu,"
		  "\"events\":[", (unsigned long long)(a.on ? a.t : at->t), nb,
		  (unsigned long long)index,
		  (unsigned long long)m->nevents);
	for (size_t i = 0; i < nb; i++) {
		vw_puts(o, i ? "," : "");
		put_event(m, &ring[i], vals, nvals, o);
	}
	strata_iter_seek(it, tt);
	const struct strata_event *ev;
	unsigned i = 0;
	while (i < nafter && strata_iter_next(it, &ev) == 1) {
		if (vw_past_end(m, ev->timestamp))
			break;
		if (!(ev->id >> 16) || ahead(m, &a, tt, ev))
			continue; /* strata's own records (as the bins), or before the start */
		a.on = false; /* found, or passed: listed from here */
		vw_puts(o, nb || i ? "," : "");
		put_event(m, ev, vals, nvals, o);
		i++;
	}
	vw_puts(o, "]}");
out:
	strata_iter_destroy(it);
	strata_filter_destroy(f);
	free(ring);
	free(vals);
	return err;
}

int vw_api_list(struct vw_model *m, uint64_t t, unsigned nbefore, unsigned nafter,
		const struct vw_filter *q, struct vw_buf *o)
{
	return vw_api_list_at(m, &(struct vw_list_at){ .t = t, .index = -1, .stream = -1,
			      .before = nbefore, .after = nafter }, q, o);
}

struct search {
	struct vw_model *m;
	struct strata_iter *it;
	bool *cls;               /* classes the search's globs match, NULL: all */
	unsigned skip;
};

static bool found(const struct search *s, const struct strata_event *ev)
{
	return !s->cls || s->cls[ev->cls->index];
}

/* From t on: the match after `skip` others, and its rank among the
 * matches at its time (1: the first). */
static bool search_next(struct search *s, uint64_t t, struct strata_event *hit,
			unsigned *rank)
{
	const struct strata_event *ev;
	uint64_t at = 0;
	unsigned skip = s->skip, same = 0;
	strata_iter_seek(s->it, t);
	while (strata_iter_next(s->it, &ev) == 1 && !vw_past_end(s->m, ev->timestamp)) {
		if (ev->timestamp < t || !found(s, ev))
			continue;
		same = ev->timestamp == at ? same + 1 : 1;
		at = ev->timestamp;
		if (skip--)
			continue;
		*hit = *ev;
		*rank = same;
		return true;
	}
	return false;
}

/* Before t, going back: the match after `skip` others (from ever earlier
 * points, 4x the span each time, as the list's before()), and its rank
 * among the matches at its time. */
static bool search_prev(struct search *s, uint64_t t, struct strata_event *hit,
			unsigned *rank)
{
	struct vw_model *m = s->m;
	uint64_t span = (m->end - m->begin) / 4096 + 1;
	size_t n = (size_t)s->skip + 1;
	struct strata_event *ring = calloc(n, sizeof(*ring));
	unsigned *ranks = calloc(n, sizeof(*ranks));
	bool ok = false;
	for (uint64_t from = t; ring && ranks && from > m->begin;) {
		from = t - m->begin > span ? t - span : m->begin;
		strata_iter_seek(s->it, from);
		const struct strata_event *ev;
		size_t got = 0;
		unsigned same = 0;
		uint64_t at = 0;
		while (strata_iter_next(s->it, &ev) == 1 && ev->timestamp < t) {
			if (ev->timestamp < from || !found(s, ev))
				continue;
			same = got && ev->timestamp == at ? same + 1 : 1;
			at = ev->timestamp;
			ring[got % n] = *ev;
			ranks[got++ % n] = same;
		}
		/* a pass reads every event at `from` (the seek's time), so
		 * the ranks within it are whole */
		if (got >= n) {
			*hit = ring[(got - n) % n];
			*rank = ranks[(got - n) % n];
			ok = true;
			break;
		}
		span *= 4;
	}
	free(ring);
	free(ranks);
	return ok;
}

int vw_api_search(struct vw_model *m, const struct vw_filter *q, const char *find,
		  const char *where, uint64_t t, int dir, unsigned skip, struct vw_buf *o)
{
	struct search s = { .m = m, .skip = skip };
	struct strata_filter *f = NULL;
	struct strata_iter *it = NULL;
	unsigned ncls = strata_trace_nclasses(m->t), nvals = 256 + 3, nfound = 0;
	struct strata_value *vals = calloc(nvals, sizeof(*vals));
	int err = vals ? vw_class_table(m, find, &s.cls) : -ENOMEM;
	if (!err)
		err = vw_filter_make(m, q, &f, o);
	char msg[256] = "";
	if (!err && where) {
		if (!f)
			err = strata_filter_create(m->t, &f);
		if (!err && (err = strata_filter_expr(f, where, msg, sizeof(msg))) == -EINVAL)
			err = vw_bad_expr(o, "where", msg);
	}
	if (!err)
		err = strata_iter_create(m->t, &(struct strata_iter_options){
			.stream = -1, .filter = f }, &it);
	if (err)
		goto out;
	for (unsigned i = 0; i < ncls; i++)
		nfound += !s.cls || s.cls[i];
	s.it = it;
	uint64_t tt = m->begin + vw_ticks(m, t);
	struct strata_event hit;
	unsigned rank = 0;
	bool ok = nfound && !q->none && (dir > 0 ? search_next(&s, tt, &hit, &rank) :
			     search_prev(&s, tt, &hit, &rank));
	vw_printf(o, "{\"t\":%llu,\"dir\":%d,\"skip\":%u,\"classes\":%u,\"match\":",
		  (unsigned long long)t, dir, skip, nfound);
	if (ok)
		put_event(m, &hit, vals, nvals, o);
	else
		vw_puts(o, "null");
	vw_printf(o, ",\"rank\":%u}", ok ? rank : 0);
out:
	strata_iter_destroy(it);
	strata_filter_destroy(f);
	free(vals);
	free(s.cls);
	return err;
}

/*
 * api/event: one event with a sample's call chain symbolized. The
 * symbolizer reads every process's maps once (reader.h, "symbols") and a
 * frame's file and DWARF on first use, so it is made on the first sample
 * asked about and kept, and each (pid, address) formatted once: a page
 * that clicks through the samples of a hot loop asks for the same few
 * addresses again and again.
 */
#define SYM_CACHE_MAX (1u << 20)          /* formatted frames kept at most */

struct sym_slot {
	uint64_t addr;
	uint32_t pid;
	bool used, leaf;
	char *text;
};

static struct {
	const struct strata_trace *t; /* the trace it was made for */
	uint64_t nevents;             /* ... at that many events (live) */
	struct strata_symbolizer *sy;
	int err;                      /* strata_symbolizer_create's */
	struct sym_slot *slot;
	size_t n, cap;                /* cap: a power of 2, or 0 */
} syms;

static void syms_reset(void)
{
	for (size_t i = 0; i < syms.cap; i++)
		free(syms.slot[i].text);
	free(syms.slot);
	strata_symbolizer_destroy(syms.sy);
	memset(&syms, 0, sizeof(syms));
}

/* The symbolizer of m's trace: made again when the trace is another or,
 * live, has grown (new processes' maps). */
static struct strata_symbolizer *symbolizer(const struct vw_model *m)
{
	if (syms.t != m->t || syms.nevents != m->nevents) {
		syms_reset();
		syms.t = m->t;
		syms.nevents = m->nevents;
		syms.err = strata_symbolizer_create(m->t, &syms.sy);
	}
	return syms.sy;
}

static size_t slot_hash(uint32_t pid, uint64_t addr, bool leaf)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 32 | leaf)) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20);
}

static struct sym_slot *slot_find(uint32_t pid, uint64_t addr, bool leaf)
{
	for (size_t i = slot_hash(pid, addr, leaf) & (syms.cap - 1);;
	     i = (i + 1) & (syms.cap - 1)) {
		struct sym_slot *s = &syms.slot[i];
		if (!s->used || (s->addr == addr && s->pid == pid && s->leaf == leaf))
			return s;
	}
}

/* Room for one more slot (at most half full); false when out of memory
 * or at SYM_CACHE_MAX, and the frame is then formatted uncached. */
static bool slots_room(void)
{
	if (syms.n >= SYM_CACHE_MAX)
		return false;
	if ((syms.n + 1) * 2 <= syms.cap)
		return true;
	size_t cap = syms.cap ? syms.cap * 2 : 1024;
	struct sym_slot *old = syms.slot, *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return false;
	size_t ocap = syms.cap;
	syms.slot = slot;
	syms.cap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].used)
			*slot_find(old[i].pid, old[i].addr, old[i].leaf) = old[i];
	free(old);
	return true;
}

/* Frame addr of process pid as "function+0xoff (file:line)", the module
 * and offset without a symbol (strata_symbol_format); the interrupted ip
 * (leaf) as itself, a return address as the call before it. */
static void put_frame(const struct vw_model *m, uint32_t pid, uint64_t addr, bool leaf,
		      struct vw_buf *o)
{
	char buf[600];
	const char *text = buf;
	struct strata_symbolizer *sy = symbolizer(m);
	struct sym_slot *s = NULL;
	if (addr >= PROF_KERNEL_HALF) {
		text = "[kernel]";
	} else if (syms.cap && (s = slot_find(pid, addr, leaf))->used) {
		text = s->text;
	} else {
		struct strata_symbol sym;
		prof_symbolize_frame(sy, pid, addr, leaf, &sym);
		strata_symbol_format(&sym, addr, buf, sizeof(buf));
		char *copy = slots_room() ? strdup(buf) : NULL;
		if (copy) {
			s = slot_find(pid, addr, leaf);
			*s = (struct sym_slot){ .addr = addr, .pid = pid, .used = true,
						.leaf = leaf, .text = copy };
			syms.n++;
		}
	}
	vw_printf(o, "{\"addr\":\"0x%llx\",\"frame\":", (unsigned long long)addr);
	vw_put_str(o, text, strlen(text));
	vw_puts(o, "}");
}

/* A sample's chain (docs/profile.md: ip, n, frames[], the ip's caller
 * first), leaf first, as "chain":[...]; nothing for other events. */
static void put_chain(const struct vw_model *m, const struct strata_event *ev,
		      struct vw_buf *o)
{
	const struct strata_event_class *c = ev->cls;
	int fip = strata_event_class_field(c, "ip"), fn = strata_event_class_field(c, "n");
	int ffr = strata_event_class_field(c, "frames");
	struct strata_value ip, n, fr;
	if (strncmp(c->name, "sample:", 7) || fip < 0 || fn < 0 || ffr < 0 ||
	    strata_event_field(ev, (unsigned)fip, &ip) < 0 ||
	    strata_event_field(ev, (unsigned)fn, &n) < 0 ||
	    strata_event_field(ev, (unsigned)ffr, &fr) < 0 || fr.type != STRATA_VALUE_ARRAY)
		return;
	vw_puts(o, ",\"chain\":[");
	put_frame(m, ev->pid, ip.u, true, o);
	for (uint64_t i = 0; i < n.u && i < fr.count; i++) {
		vw_puts(o, ",");
		put_frame(m, ev->pid, strata_value_elem(&fr, (uint32_t)i), false, o);
	}
	vw_puts(o, "]");
	if (syms.err) { /* said once per answer: the frames are addresses */
		const char *why = syms.err == -ENOTSUP ? "this strata was built without libdw" :
				  strerror(-syms.err);
		vw_puts(o, ",\"symbols\":");
		vw_put_str(o, why, strlen(why));
	}
}

int vw_api_event(struct vw_model *m, uint64_t t, uint32_t stream, uint64_t offset,
		 struct vw_buf *o)
{
	struct strata_iter *it = NULL;
	unsigned nvals = 256 + 3;
	struct strata_value *vals = calloc(nvals, sizeof(*vals));
	if (stream >= strata_trace_nstreams(m->t)) {
		free(vals);
		vw_printf(o, "{\"error\":\"stream: %u streams in this trace\"}",
			  strata_trace_nstreams(m->t));
		return 400;
	}
	int err = vals ? strata_iter_create(m->t, &(struct strata_iter_options){
			.stream = (int)stream }, &it) : -ENOMEM;
	if (err)
		goto out;
	/* the events listed at ns t are those of its ticks: a seek there and
	 * a read of that stream's events at t */
	strata_iter_seek(it, m->begin + vw_ticks(m, t));
	const struct strata_event *ev;
	err = 404;
	while (strata_iter_next(it, &ev) == 1 && vw_ns(m, ev->timestamp - m->begin) <= t &&
	       !vw_past_end(m, ev->timestamp)) {
		if (ev->offset != offset)
			continue;
		put_event_open(m, ev, vals, nvals, o);
		put_chain(m, ev, o);
		vw_puts(o, "}");
		err = 0;
		break;
	}
	if (err == 404)
		vw_puts(o, "{\"error\":\"no event of that stream and offset at that time\"}");
out:
	strata_iter_destroy(it);
	free(vals);
	return err;
}
