/* SPDX-License-Identifier: MIT */
/* Latency from one event to the next matching one, per thread or per key (sigmund's reactivity measure). */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "common/errbuf.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t lat_quantile(const uint64_t *sorted, uint64_t n, double p)
{
	if (!n)
		return 0;
	uint64_t i = (uint64_t)ceil(p * (double)n);
	if (i > 0)
		i--;
	return sorted[i < n ? i : n - 1];
}

/* Open pairs by key: open addressing; a closed slot keeps its key. */
struct open_map {
	uint64_t *key, *ts; /* ts 0: no pair open */
	uint8_t *used;
	size_t cap, n;
};

static uint64_t *map_slot(struct open_map *m, uint64_t key)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct open_map g = { .cap = m->cap ? m->cap * 2 : 1024 };
		g.key = malloc(g.cap * sizeof(*g.key));
		g.ts = malloc(g.cap * sizeof(*g.ts));
		g.used = calloc(g.cap, 1);
		if (!g.key || !g.ts || !g.used) {
			free(g.key);
			free(g.ts);
			free(g.used);
			return NULL;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->used[i]) {
				size_t j = an_mix64(m->key[i]) & (g.cap - 1);
				while (g.used[j])
					j = (j + 1) & (g.cap - 1);
				g.used[j] = 1;
				g.key[j] = m->key[i];
				g.ts[j] = m->ts[i];
			}
		g.n = m->n;
		free(m->key);
		free(m->ts);
		free(m->used);
		*m = g;
	}
	size_t i = an_mix64(key) & (m->cap - 1);
	while (m->used[i] && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->used[i]) {
		m->used[i] = 1;
		m->key[i] = key;
		m->ts[i] = 0;
		m->n++;
	}
	return &m->ts[i];
}

int lat_compute(struct strata_trace *t, const struct lat_options *o,
		struct lat_result *out)
{
	unsigned nc = strata_trace_nclasses(t);
	uint8_t *role = calloc(nc ? nc : 1, 1); /* 1 begin, 2 end, 3 both */
	int *byf = calloc(nc ? nc : 1, sizeof(int));
	struct open_map open = { 0 };
	size_t cap = 0;
	struct strata_iter *it = NULL;
	bool any_begin = false, any_end = false;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!role || !byf)
		goto out;
	for (unsigned i = 0; i < nc; i++) {
		const struct strata_event_class *cl = strata_trace_class(t, i);
		if (!fnmatch(o->begin, cl->name, 0))
			role[i] |= 1, any_begin = true;
		if (!fnmatch(o->end, cl->name, 0))
			role[i] |= 2, any_end = true;
		if (role[i] && o->by && (byf[i] = strata_event_class_field(cl, o->by)) < 0) {
			an_err_no_field(o->err, o->errlen, cl, o->by);
			ret = -EINVAL;
			goto out;
		}
	}
	if (!any_begin || !any_end) {
		errbuf_printf(o->err, o->errlen, "no event matches %s '%s'", any_begin ? "--end" : "--begin",
			any_begin ? o->end : o->begin);
		ret = -EINVAL;
		goto out;
	}
	struct strata_iter_options io = { .stream = -1 };
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto out;
	ret = -ENOMEM;
	if (o->wfrom)
		strata_iter_seek(it, o->wfrom);
	const struct strata_event *ev;
	while (strata_iter_next(it, &ev) > 0) {
		if (o->wto && ev->timestamp > o->wto)
			break;
		uint8_t rl = role[ev->cls->index];
		if (!rl)
			continue;
		uint64_t key = o->same_tid ? ev->tid : 0;
		if (o->by) {
			struct strata_value v;
			if (strata_event_field(ev, (unsigned)byf[ev->cls->index], &v) < 0)
				continue; /* damaged: reported by the reader */
			key = an_mix64(key) ^ an_value_key(&v);
		}
		uint64_t *slot = map_slot(&open, key);
		if (!slot)
			goto out;
		/* timestamps are never 0 in a trace; ts + 1 keeps 0 for "none" */
		if (rl & 2) {
			if (*slot) {
				if (out->n == cap) {
					size_t nc2 = cap ? cap * 2 : 1024;
					uint64_t *n = realloc(out->ns, nc2 * sizeof(*n));
					if (!n)
						goto out;
					out->ns = n;
					cap = nc2;
				}
				uint64_t d = strata_trace_ticks_to_ns(t, ev->timestamp + 1 - *slot);
				out->ns[out->n++] = d;
				out->total += d;
				*slot = 0;
			} else if (rl == 2) {
				out->unmatched_ends++;
			}
		}
		if (rl & 1) {
			if (*slot)
				out->unmatched_begins++; /* a second begin before any end */
			*slot = ev->timestamp + 1;
		}
	}
	for (size_t i = 0; i < open.cap; i++)
		out->unmatched_begins += open.used[i] && open.ts[i];
	qsort(out->ns, out->n, sizeof(*out->ns), cmp_u64);
	ret = 0;
out:
	if (ret)
		lat_fini(out);
	strata_iter_destroy(it);
	free(open.key);
	free(open.ts);
	free(open.used);
	free(role);
	free(byf);
	return ret;
}

void lat_fini(struct lat_result *r)
{
	free(r->ns);
	memset(r, 0, sizeof(*r));
}
