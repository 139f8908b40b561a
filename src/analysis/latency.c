/* SPDX-License-Identifier: MIT */
/* Latency from one event to the next matching one (sigmund's reactivity measure). */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct open_pair {
	uint32_t tid;
	uint64_t ts;
};

int lat_compute(struct strata_trace *t, const struct lat_options *o,
		struct lat_result *out)
{
	unsigned nc = strata_trace_nclasses(t);
	uint8_t *role = calloc(nc ? nc : 1, 1); /* 1 from, 2 to, 3 both */
	struct open_pair *open = NULL;
	size_t nopen = 0, capopen = 0, cap = 0;
	struct strata_iter *it = NULL;
	bool any_from = false, any_to = false;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!role)
		return -ENOMEM;
	for (unsigned i = 0; i < nc; i++) {
		const char *nm = strata_trace_class(t, i)->name;
		if (!fnmatch(o->from, nm, 0)) {
			role[i] |= 1;
			any_from = true;
		}
		if (!fnmatch(o->to, nm, 0)) {
			role[i] |= 2;
			any_to = true;
		}
	}
	if (!any_from || !any_to) {
		ret = -EINVAL;
		goto out;
	}
	struct strata_iter_options io = { .stream = -1 };
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto out;
	if (o->wfrom)
		strata_iter_seek(it, o->wfrom);
	const struct strata_event *ev;
	while (strata_iter_next(it, &ev) > 0) {
		if (o->wto && ev->timestamp > o->wto)
			break;
		uint8_t rl = role[ev->cls->index];
		if (!rl)
			continue;
		uint32_t key = o->same_tid ? ev->tid : 0;
		if (rl & 2) {
			for (size_t i = 0; i < nopen; i++)
				if (open[i].tid == key) {
					if (out->n == cap) {
						size_t nc2 = cap ? cap * 2 : 1024;
						uint64_t *n = realloc(out->ns, nc2 * sizeof(*n));
						if (!n)
							goto nomem;
						out->ns = n;
						cap = nc2;
					}
					uint64_t d = ev->timestamp - open[i].ts;
					out->ns[out->n++] = strata_trace_ticks_to_ns(t, d);
					open[i] = open[--nopen];
					break;
				}
		}
		if (rl & 1) {
			size_t i;
			for (i = 0; i < nopen && open[i].tid != key; i++)
				;
			if (i < nopen) {
				out->unmatched++; /* a second `from` before any `to` */
			} else {
				if (nopen == capopen) {
					size_t n2 = capopen ? capopen * 2 : 64;
					struct open_pair *np = realloc(open, n2 * sizeof(*np));
					if (!np)
						goto nomem;
					open = np;
					capopen = n2;
				}
				i = nopen++;
				open[i].tid = key;
			}
			open[i].ts = ev->timestamp;
		}
	}
	out->unmatched += nopen;
	qsort(out->ns, out->n, sizeof(*out->ns), cmp_u64);
	ret = 0;
	goto out;
nomem:
	ret = -ENOMEM;
	lat_fini(out);
out:
	strata_iter_destroy(it);
	free(open);
	free(role);
	return ret;
}

void lat_fini(struct lat_result *r)
{
	free(r->ns);
	r->ns = NULL;
	r->n = 0;
}
