// SPDX-License-Identifier: MIT
/* strata view's api/list and api/search: the events around a time, and the n-th match of a search (docs/view.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "api.h"

static void put_event(struct vw_model *m, const struct strata_event *ev,
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
	vw_puts(o, n < 0 ? ",\"damaged\":true}" : "}");
}

/* The last `n` events before tick t: read from ever earlier points (4x
 * the span each time) until they hold n, so a dense trace reads about n
 * events and a sparse one a few passes. */
static size_t before(struct vw_model *m, struct strata_iter *it, uint64_t t,
		     unsigned n, struct strata_event *ring)
{
	uint64_t span = (m->end - m->begin) / 4096 + 1;
	size_t got = 0;
	for (;;) {
		uint64_t from = t - m->begin > span ? t - span : m->begin;
		strata_iter_seek(it, from);
		const struct strata_event *ev;
		got = 0;
		while (strata_iter_next(it, &ev) == 1 && ev->timestamp < t)
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

int vw_api_list(struct vw_model *m, uint64_t t, unsigned nbefore, unsigned nafter,
		const struct vw_filter *q, struct vw_buf *o)
{
	struct strata_filter *f = NULL;
	struct strata_iter *it = NULL;
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
	uint64_t tt = m->begin + vw_ticks(m, t);
	size_t nb = nbefore ? before(m, it, tt, nbefore, ring) : 0;
	vw_printf(o, "{\"t\":%llu,\"before\":%zu,\"events\":[", (unsigned long long)t, nb);
	for (size_t i = 0; i < nb; i++) {
		vw_puts(o, i ? "," : "");
		put_event(m, &ring[i], vals, nvals, o);
	}
	strata_iter_seek(it, tt);
	const struct strata_event *ev;
	for (unsigned i = 0; i < nafter && strata_iter_next(it, &ev) == 1; i++) {
		if (vw_past_end(m, ev->timestamp))
			break;
		vw_puts(o, nb || i ? "," : "");
		put_event(m, ev, vals, nvals, o);
	}
	vw_puts(o, "]}");
out:
	strata_iter_destroy(it);
	strata_filter_destroy(f);
	free(ring);
	free(vals);
	return err;
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
