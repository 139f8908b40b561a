/* SPDX-License-Identifier: MIT */
/* Intervals: begin and end events paired by kind, per thread or per key, and their statistics (analysis.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "common/errbuf.h"

/*
 * The pairing rules (docs/cli.md, "strata intervals"):
 *
 * 1. Names. In one subsystem (the part before ':'), an event named
 *    STEM<b> pairs with the event STEM<e> for these suffix pairs, in this
 *    order: _begin/_end, _start/_end, _start/_stop, _start/_done,
 *    _start/_finish, _enter/_exit, _entry/_exit, _acquire/_release,
 *    _lock/_unlock, _wait/_acquire. The kind is named
 *    "sys:STEM<b>..STEM<e>" (work:job_begin..job_end).
 * 2. The DSL's marks. A subsystem's `begin event` and `end event` that rule
 *    1 left unpaired pair when it has exactly one of each.
 * 3. Globs. --begin GLOB --end GLOB make one kind of whatever they match,
 *    instead of rules 1 and 2.
 *
 * An event may end one kind and begin another (lock_acquire ends the wait
 * for a lock and begins holding it).
 */
static const struct {
	const char *b, *e;
} suffixes[] = {
	{ "_begin", "_end" },	  { "_start", "_end" },	 { "_start", "_stop" },
	{ "_start", "_done" },	  { "_start", "_finish" }, { "_enter", "_exit" },
	{ "_entry", "_exit" },	  { "_acquire", "_release" }, { "_lock", "_unlock" },
	{ "_wait", "_acquire" },
};

#define MAXROLES 4
#define MAXDEPTH 256

struct kind {
	char name[160];
	char bname[128], ename[128]; /* full event names; "" with globs */
	uint64_t open, orphan_ends, too_deep;
};

struct role {
	unsigned kind;
	bool end; /* else begin */
	int byf;  /* index of the `by` field, -1 */
};

struct open_begin {
	uint64_t ts;
	uint32_t pid, tid;
};

struct stack {
	unsigned kind;
	uint64_t key;
	uint32_t n, cap;
	struct open_begin *v;
	bool used;
};

struct iv_pairer {
	struct strata_trace *t;
	const char *by;
	struct kind *kinds;
	unsigned nkinds;
	struct role (*roles)[MAXROLES];
	uint8_t *nroles; /* per class */
	unsigned ncls;   /* classes the tables cover: a followed trace
			  * gains classes after the pairer was made */
	struct stack *st;
	size_t cap, n;
};

static bool ends_with(const char *s, const char *suf, size_t *stem)
{
	size_t n = strlen(s), m = strlen(suf);
	if (n <= m || strcmp(s + n - m, suf))
		return false;
	*stem = n - m;
	return true;
}

static int find_class(struct strata_trace *t, const char *name)
{
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++)
		if (!strcmp(strata_trace_class(t, i)->name, name))
			return (int)i;
	return -1;
}

static int add_kind(struct iv_pairer *p, const char *name, const char *bname, const char *ename)
{
	for (unsigned k = 0; k < p->nkinds; k++)
		if (!strcmp(p->kinds[k].name, name))
			return 0;
	struct kind *n = realloc(p->kinds, (p->nkinds + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	p->kinds = n;
	memset(&n[p->nkinds], 0, sizeof(*n));
	snprintf(n[p->nkinds].name, sizeof(n->name), "%s", name);
	snprintf(n[p->nkinds].bname, sizeof(n->bname), "%s", bname);
	snprintf(n[p->nkinds].ename, sizeof(n->ename), "%s", ename);
	p->nkinds++;
	return 0;
}

/* Rules 1 and 2: kinds from the classes' names and marks. */
static int kinds_from_names(struct iv_pairer *p, const char *filter)
{
	struct strata_trace *t = p->t;
	unsigned nc = strata_trace_nclasses(t);
	char name[300];
	int ret;

	for (unsigned i = 0; i < nc; i++) {
		const char *bn = strata_trace_class(t, i)->name;
		const char *colon = strchr(bn, ':');
		if (!colon || strlen(bn) >= 128)
			continue;
		for (size_t s = 0; s < sizeof(suffixes) / sizeof(suffixes[0]); s++) {
			size_t stem;
			if (!ends_with(colon + 1, suffixes[s].b, &stem))
				continue;
			char en[300];
			snprintf(en, sizeof(en), "%.*s%s", (int)(colon + 1 - bn + stem), bn,
				 suffixes[s].e);
			if (find_class(t, en) < 0)
				continue;
			snprintf(name, sizeof(name), "%s..%s", bn, en + (colon + 1 - bn));
			if (filter && fnmatch(filter, name, 0))
				continue;
			if ((ret = add_kind(p, name, bn, en)))
				return ret;
		}
	}
	/* rule 2: one begin and one end mark left in a subsystem */
	for (unsigned i = 0; i < nc; i++) {
		const struct strata_event_class *b = strata_trace_class(t, i);
		const char *colon = strchr(b->name, ':');
		if (b->kind != STRATA_KIND_BEGIN || !colon || strlen(b->name) >= 128)
			continue;
		size_t sys = (size_t)(colon - b->name) + 1;
		int nb = 0, ne = 0;
		const char *en = NULL;
		bool paired = false;
		for (unsigned j = 0; j < nc; j++) {
			const struct strata_event_class *c = strata_trace_class(t, j);
			if (strncmp(c->name, b->name, sys))
				continue;
			nb += c->kind == STRATA_KIND_BEGIN && strcmp(c->name, b->name);
			if (c->kind == STRATA_KIND_END && (!en || strcmp(en, c->name))) {
				ne++;
				en = c->name;
			}
		}
		for (unsigned k = 0; k < p->nkinds; k++)
			paired |= !strcmp(p->kinds[k].bname, b->name) ||
				  (en && !strcmp(p->kinds[k].ename, en));
		if (nb || ne != 1 || paired || strlen(en) >= 128)
			continue;
		snprintf(name, sizeof(name), "%s..%s", b->name, en + sys);
		if (filter && fnmatch(filter, name, 0))
			continue;
		if ((ret = add_kind(p, name, b->name, en)))
			return ret;
	}
	return 0;
}

static int add_role(struct iv_pairer *p, const struct iv_options *o, unsigned cls,
		    unsigned kind, bool end)
{
	const struct strata_event_class *c = strata_trace_class(p->t, cls);
	if (p->nroles[cls] >= MAXROLES)
		return 0;
	int byf = -1;
	if (o->by && (byf = strata_event_class_field(c, o->by)) < 0) {
		an_err_no_field(o->err, o->errlen, c, o->by);
		return -EINVAL;
	}
	p->roles[cls][p->nroles[cls]++] = (struct role){ .kind = kind, .end = end, .byf = byf };
	return 0;
}

int iv_pairer_create(struct strata_trace *t, const struct iv_options *o, struct iv_pairer **out)
{
	struct iv_pairer *p = calloc(1, sizeof(*p));
	unsigned nc = strata_trace_nclasses(t);
	int ret = -ENOMEM;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->t = t;
	p->by = o->by;
	p->roles = calloc(nc ? nc : 1, sizeof(*p->roles));
	p->nroles = calloc(nc ? nc : 1, 1);
	p->ncls = nc;
	p->cap = 256;
	p->st = calloc(p->cap, sizeof(*p->st));
	if (!p->roles || !p->nroles || !p->st)
		goto fail;
	if (o->begin || o->end) {
		char name[300];
		snprintf(name, sizeof(name), "%s..%s", o->begin ? o->begin : "?", o->end ? o->end : "?");
		if ((ret = add_kind(p, name, "", "")))
			goto fail;
		bool any_b = false, any_e = false;
		for (unsigned i = 0; i < nc && !ret; i++) {
			const char *cn = strata_trace_class(t, i)->name;
			if (o->end && !fnmatch(o->end, cn, 0) && (ret = add_role(p, o, i, 0, true)) == 0)
				any_e = true;
			if (!ret && o->begin && !fnmatch(o->begin, cn, 0) &&
			    (ret = add_role(p, o, i, 0, false)) == 0)
				any_b = true;
		}
		if (ret)
			goto fail;
		if (!any_b || !any_e) {
			errbuf_printf(o->err, o->errlen, "no event matches %s '%s'", any_b ? "--end" : "--begin",
				any_b ? (o->end ? o->end : "") : (o->begin ? o->begin : ""));
			ret = -EINVAL;
			goto fail;
		}
	} else {
		if ((ret = kinds_from_names(p, o->kinds)))
			goto fail;
		for (unsigned k = 0; k < p->nkinds; k++)
			for (unsigned i = 0; i < nc; i++) {
				const char *cn = strata_trace_class(t, i)->name;
				/* ends first: an event that ends one kind and
				 * begins another closes before it opens */
				if (!strcmp(cn, p->kinds[k].ename) && (ret = add_role(p, o, i, k, true)))
					goto fail;
				if (!strcmp(cn, p->kinds[k].bname) && (ret = add_role(p, o, i, k, false)))
					goto fail;
			}
	}
	*out = p;
	return 0;
fail:
	iv_pairer_destroy(p);
	return ret;
}

void iv_pairer_destroy(struct iv_pairer *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->cap; i++)
		free(p->st[i].v);
	free(p->st);
	free(p->kinds);
	free(p->roles);
	free(p->nroles);
	free(p);
}

unsigned iv_pairer_nkinds(const struct iv_pairer *p)
{
	return p->nkinds;
}

const char *iv_pairer_kind(const struct iv_pairer *p, unsigned kind)
{
	return kind < p->nkinds ? p->kinds[kind].name : NULL;
}

void iv_pairer_unmatched(const struct iv_pairer *p, unsigned kind, uint64_t *open,
			 uint64_t *orphan_ends, uint64_t *too_deep)
{
	uint64_t o = 0;
	for (size_t i = 0; i < p->cap; i++)
		if (p->st[i].used && p->st[i].kind == kind)
			o += p->st[i].n;
	*open = o;
	*orphan_ends = p->kinds[kind].orphan_ends;
	*too_deep = p->kinds[kind].too_deep;
}

uint64_t iv_pairer_oldest_open(const struct iv_pairer *p)
{
	uint64_t t = UINT64_MAX;
	/* a key's stack is in time order: its bottom is its oldest */
	for (size_t i = 0; i < p->cap; i++)
		if (p->st[i].used && p->st[i].n && p->st[i].v[0].ts < t)
			t = p->st[i].v[0].ts;
	return t;
}

static struct stack *stack_get(struct iv_pairer *p, unsigned kind, uint64_t key)
{
	if ((p->n + 1) * 2 > p->cap) {
		size_t ncap = p->cap * 2;
		struct stack *ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return NULL;
		for (size_t i = 0; i < p->cap; i++)
			if (p->st[i].used) {
				size_t j = an_mix64(p->st[i].key ^ p->st[i].kind) & (ncap - 1);
				while (ns[j].used)
					j = (j + 1) & (ncap - 1);
				ns[j] = p->st[i];
			}
		free(p->st);
		p->st = ns;
		p->cap = ncap;
	}
	size_t i = an_mix64(key ^ kind) & (p->cap - 1);
	while (p->st[i].used && (p->st[i].kind != kind || p->st[i].key != key))
		i = (i + 1) & (p->cap - 1);
	if (!p->st[i].used) {
		p->st[i].used = true;
		p->st[i].kind = kind;
		p->st[i].key = key;
		p->n++;
	}
	return &p->st[i];
}

int iv_pairer_feed(struct iv_pairer *p, const struct strata_event *ev, iv_fn fn, void *arg)
{
	/* a class newer than the pairer has no role in it */
	unsigned nr = ev->cls->index < p->ncls ? p->nroles[ev->cls->index] : 0;
	for (unsigned r = 0; r < nr; r++) {
		const struct role *rl = &p->roles[ev->cls->index][r];
		uint64_t key = ev->tid;
		if (rl->byf >= 0) {
			struct strata_value v;
			if (strata_event_field(ev, (unsigned)rl->byf, &v) < 0)
				continue; /* damaged: the reader said so */
			key = an_value_key(&v);
		}
		struct stack *s = stack_get(p, rl->kind, key);
		if (!s)
			return -ENOMEM;
		if (rl->end) {
			if (!s->n) {
				p->kinds[rl->kind].orphan_ends++;
				continue;
			}
			const struct open_begin *b = &s->v[--s->n];
			struct iv_interval iv = { .kind = rl->kind, .begin = b->ts,
						  .end = ev->timestamp, .pid = b->pid,
						  .tid = b->tid, .depth = s->n };
			fn(&iv, arg);
			continue;
		}
		if (s->n == MAXDEPTH) {
			p->kinds[rl->kind].too_deep++;
			continue;
		}
		if (s->n == s->cap) {
			uint32_t nc = s->cap ? s->cap * 2 : 4;
			struct open_begin *nv = realloc(s->v, nc * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			s->v = nv;
			s->cap = nc;
		}
		s->v[s->n++] = (struct open_begin){ ev->timestamp, ev->pid, ev->tid };
	}
	return 0;
}

/* ---- statistics -------------------------------------------------------------- */

struct durs {
	unsigned kind;
	uint32_t pid, tid;
	uint64_t *ns;
	size_t n, cap;
};

struct collect {
	struct strata_trace *t;
	struct durs *d;
	size_t n, cap;
	int err;
	/* the last one used: intervals of a thread come in runs */
	size_t last;
};

static void on_interval(const struct iv_interval *iv, void *arg)
{
	struct collect *c = arg;
	struct durs *d = NULL;
	if (c->n && c->d[c->last].kind == iv->kind && c->d[c->last].tid == iv->tid)
		d = &c->d[c->last];
	for (size_t i = 0; !d && i < c->n; i++)
		if (c->d[i].kind == iv->kind && c->d[i].tid == iv->tid)
			d = &c->d[c->last = i];
	if (!d) {
		if (c->n == c->cap) {
			size_t nc = c->cap ? c->cap * 2 : 64;
			struct durs *nd = realloc(c->d, nc * sizeof(*nd));
			if (!nd) {
				c->err = -ENOMEM;
				return;
			}
			c->d = nd;
			c->cap = nc;
		}
		d = &c->d[c->last = c->n++];
		*d = (struct durs){ .kind = iv->kind, .pid = iv->pid, .tid = iv->tid };
	}
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 64;
		uint64_t *nv = realloc(d->ns, nc * sizeof(*nv));
		if (!nv) {
			c->err = -ENOMEM;
			return;
		}
		d->ns = nv;
		d->cap = nc;
	}
	d->ns[d->n++] = strata_trace_ticks_to_ns(c->t, iv->end - iv->begin);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void stats_of(uint64_t *ns, size_t n, struct iv_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	s->count = n;
	for (size_t i = 0; i < n; i++)
		s->total += ns[i];
	s->min = ns[0];
	s->max = ns[n - 1];
	s->p50 = lat_quantile(ns, n, 0.5);
	s->p99 = lat_quantile(ns, n, 0.99);
}

static int cmp_thread(const void *a, const void *b)
{
	const struct iv_thread_stats *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int iv_compute(struct strata_trace *t, const struct iv_options *o, struct iv_result **out)
{
	struct iv_result *r = calloc(1, sizeof(*r));
	struct collect c = { .t = t };
	struct strata_iter *it = NULL;
	uint64_t *all = NULL;
	int ret = -ENOMEM;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	if ((ret = iv_pairer_create(t, o, &r->pairer)) || (ret = an_names_create(t, &r->names)))
		goto out;
	struct strata_iter_options io = { .stream = -1, .flags = STRATA_ITER_INTERNAL };
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto out;
	if (o->from)
		strata_iter_seek(it, o->from);
	const struct strata_event *ev;
	while (!c.err && strata_iter_next(it, &ev) > 0) {
		if (o->to && ev->timestamp > o->to)
			break;
		if ((ret = an_names_feed(r->names, ev)) ||
		    (ret = iv_pairer_feed(r->pairer, ev, on_interval, &c)))
			goto out;
	}
	if ((ret = c.err))
		goto out;
	ret = -ENOMEM;
	r->nkinds = iv_pairer_nkinds(r->pairer);
	if (!(r->kinds = calloc(r->nkinds ? r->nkinds : 1, sizeof(*r->kinds))) ||
	    !(r->threads = calloc(c.n ? c.n : 1, sizeof(*r->threads))))
		goto out;
	size_t total = 0;
	for (size_t i = 0; i < c.n; i++)
		total += c.d[i].n;
	if (!(all = malloc((total ? total : 1) * sizeof(*all))))
		goto out;
	for (unsigned k = 0; k < r->nkinds; k++) {
		struct iv_kind_stats *ks = &r->kinds[k];
		size_t n = 0;
		ks->name = iv_pairer_kind(r->pairer, k);
		iv_pairer_unmatched(r->pairer, k, &ks->open, &ks->orphan_ends, &ks->too_deep);
		for (size_t i = 0; i < c.n; i++)
			if (c.d[i].kind == k) {
				memcpy(all + n, c.d[i].ns, c.d[i].n * sizeof(*all));
				n += c.d[i].n;
			}
		stats_of(all, n, &ks->s);
	}
	for (size_t i = 0; i < c.n; i++) {
		struct iv_thread_stats *ts = &r->threads[r->nthreads++];
		ts->kind = c.d[i].kind;
		ts->pid = c.d[i].pid;
		ts->tid = c.d[i].tid;
		stats_of(c.d[i].ns, c.d[i].n, &ts->s);
	}
	qsort(r->threads, r->nthreads, sizeof(*r->threads), cmp_thread);
	ret = 0;
out:
	strata_iter_destroy(it);
	for (size_t i = 0; i < c.n; i++)
		free(c.d[i].ns);
	free(c.d);
	free(all);
	if (ret) {
		iv_free(r);
		return ret;
	}
	*out = r;
	return 0;
}

void iv_free(struct iv_result *r)
{
	if (!r)
		return;
	free(r->kinds);
	free(r->threads);
	an_names_destroy(r->names);
	iv_pairer_destroy(r->pairer);
	free(r);
}
