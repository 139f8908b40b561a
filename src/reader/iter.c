/* SPDX-License-Identifier: MIT */
/* The iterator: the timestamp-ordered merge of its streams' cursors (a
 * loser tree, iter.h), strata_iter_next, seeking, creation. */
#include <errno.h>
#include <stdlib.h>

#include "iter.h"

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

void rd_build_merge(struct strata_iter *it)
{
	for (unsigned i = 0; i < it->ncur; i++) {
		struct rd_cursor *c = &it->cur[i];
		/* a seek leaves the cursor on its first event: keep it */
		bool has = c->pending || rd_cursor_next(it, c);
		c->pending = false;
		c->key = has ? key_of(it, c) : RD_KEY_DONE;
	}
	it->tree[0] = build_tree(it, 1);
	it->started = true;
	it->advance_top = false;
}

int strata_iter_next(struct strata_iter *it, const struct strata_event **ev)
{
	struct rd_cursor *c = iter_step(it);
	if (!c)
		return 0;
	*ev = &c->ev;
	return 1;
}

int strata_iter_seek(struct strata_iter *it, uint64_t ts)
{
	for (unsigned i = 0; i < it->ncur; i++) {
		struct rd_cursor *c = &it->cur[i];
		rd_cursor_seek(it, c, ts);
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
		c->shift = c->sub->shift;
		c->drift = c->sub->drift_ppb != 0;
		it->shifted |= c->shift != 0 || c->drift;
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
