/* SPDX-License-Identifier: MIT */
/* Flat profile, totals and folded stacks from CPU-time samples (sample:cpu_clock), symbolized (docs/profile.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/profile.h"

#define MAX_DEPTH 33               /* the ip and 32 frames (kernel/sample.h) */
#define MAX_WEIGHT 1000000         /* a sample's periods: more is damage */

/* String -> index, open addressing. */
struct smap {
	char **key;
	size_t *val;
	size_t cap, n;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The slot of key (found or free); NULL when out of memory. */
static size_t *smap_get(struct smap *m, const char *key, bool *found)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct smap g = { .cap = m->cap ? m->cap * 2 : 1024 };
		if (!(g.key = calloc(g.cap, sizeof(*g.key))) ||
		    !(g.val = calloc(g.cap, sizeof(*g.val)))) {
			free(g.key);
			return NULL;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->key[i]) {
				size_t j = hash_str(m->key[i]) & (g.cap - 1);
				while (g.key[j])
					j = (j + 1) & (g.cap - 1);
				g.key[j] = m->key[i];
				g.val[j] = m->val[i];
			}
		g.n = m->n;
		free(m->key);
		free(m->val);
		*m = g;
	}
	size_t i = hash_str(key) & (m->cap - 1);
	while (m->key[i] && strcmp(m->key[i], key))
		i = (i + 1) & (m->cap - 1);
	*found = m->key[i] != NULL;
	if (!*found) {
		if (!(m->key[i] = strdup(key)))
			return NULL;
		m->n++;
	}
	return &m->val[i];
}

static void smap_fini(struct smap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->key[i]);
	free(m->key);
	free(m->val);
}

/* (pid, address) -> entry index + 1, open addressing: each address is
 * symbolized once. */
struct amap {
	uint64_t *addr;
	uint32_t *pid;
	size_t *val;
	size_t cap, n;
};

static size_t *amap_get(struct amap *m, uint32_t pid, uint64_t addr)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct amap g = { .cap = m->cap ? m->cap * 2 : 4096 };
		g.addr = calloc(g.cap, sizeof(*g.addr));
		g.pid = calloc(g.cap, sizeof(*g.pid));
		g.val = calloc(g.cap, sizeof(*g.val));
		if (!g.addr || !g.pid || !g.val) {
			free(g.addr);
			free(g.pid);
			free(g.val);
			return NULL;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->val[i]) {
				size_t j = (m->addr[i] * 0x9e3779b97f4a7c15ull ^ m->pid[i]) & (g.cap - 1);
				while (g.val[j])
					j = (j + 1) & (g.cap - 1);
				g.addr[j] = m->addr[i];
				g.pid[j] = m->pid[i];
				g.val[j] = m->val[i];
			}
		g.n = m->n;
		free(m->addr);
		free(m->pid);
		free(m->val);
		*m = g;
	}
	size_t i = (addr * 0x9e3779b97f4a7c15ull ^ pid) & (m->cap - 1);
	while (m->val[i] && (m->addr[i] != addr || m->pid[i] != pid))
		i = (i + 1) & (m->cap - 1);
	if (!m->val[i]) {
		m->addr[i] = addr;
		m->pid[i] = pid;
		m->n++;
	}
	return &m->val[i];
}

struct prof_ctx {
	struct prof_result *r;
	struct strata_symbolizer *sy;
	enum prof_by by;
	struct smap names, stacks;
	struct amap addrs;
	size_t cap_entries, cap_stacks;
	uint64_t *seen;  /* per entry: the sample that last counted its total */
};

/* The entry named `name` (made when new); index, or -1: no memory. */
static long entry_of(struct prof_ctx *c, const char *name, const char *module)
{
	bool found;
	size_t *v = smap_get(&c->names, name, &found);
	if (!v)
		return -1;
	if (found)
		return (long)*v;
	struct prof_result *r = c->r;
	if (r->nentries == c->cap_entries) {
		size_t nc = c->cap_entries ? c->cap_entries * 2 : 256;
		struct prof_entry *e = realloc(r->entries, nc * sizeof(*e));
		uint64_t *sn = realloc(c->seen, nc * sizeof(*sn));
		if (e)
			r->entries = e;
		if (sn)
			c->seen = sn;
		if (!e || !sn)
			return -1;
		c->cap_entries = nc;
	}
	struct prof_entry *e = &r->entries[r->nentries];
	e->name = strdup(name);
	e->module = strdup(module ? module : "");
	e->self = e->total = 0;
	c->seen[r->nentries] = UINT64_MAX;
	if (!e->name || !e->module)
		return -1;
	*v = r->nentries;
	return (long)r->nentries++;
}

bool prof_symbolize_frame(struct strata_symbolizer *sy, uint32_t pid, uint64_t pc, bool leaf,
			  struct strata_symbol *sym)
{
	memset(sym, 0, sizeof(*sym));
	sym->status = STRATA_SYM_UNKNOWN;
	if (!sy || pc >= PROF_KERNEL_HALF)
		return false;
	if (leaf)
		strata_symbolize(sy, pid, pc, sym);
	else
		strata_symbolize_return(sy, pid, pc, sym);
	return true;
}

/* The entry of return address / ip `pc` of process pid. A return
 * address's call is the byte before it (leaf: the ip itself). */
static long entry_at(struct prof_ctx *c, uint32_t pid, uint64_t pc, bool leaf)
{
	size_t *v = amap_get(&c->addrs, pid, pc);
	if (!v)
		return -1;
	if (*v)
		return (long)*v - 1;
	char name[600];
	const char *module = "";
	struct strata_symbol sym;
	if (pc >= PROF_KERNEL_HALF) {
		snprintf(name, sizeof(name), "[kernel]");
	} else {
		prof_symbolize_frame(c->sy, pid, pc, leaf, &sym);
		module = sym.module ? sym.module : "";
		if (c->by == PROF_BY_MODULE)
			snprintf(name, sizeof(name), "%s", sym.module ? sym.module : "[unknown]");
		else if (sym.status != STRATA_SYM_FUNCTION && sym.module && sym.module[0] == '[')
			snprintf(name, sizeof(name), "%s", sym.module); /* [vdso], [heap] */
		else if (sym.status != STRATA_SYM_FUNCTION)
			/* no symbol: the module, so that its samples add up */
			snprintf(name, sizeof(name), "[%s]", sym.module ? sym.module : "unknown");
		else if (c->by == PROF_BY_LINE && sym.file)
			snprintf(name, sizeof(name), "%s (%s:%d)", sym.function,
				 strrchr(sym.file, '/') ? strrchr(sym.file, '/') + 1 : sym.file, sym.line);
		else
			snprintf(name, sizeof(name), "%s", sym.function);
	}
	long e = entry_of(c, name, module);
	if (e >= 0)
		*v = (size_t)e + 1;
	return e;
}

static int add_stack(struct prof_ctx *c, const long *ent, unsigned n, uint64_t w)
{
	char folded[8192];
	size_t len = 0;
	for (unsigned i = n; i-- > 0 && len < sizeof(folded) - 1;) /* root first */
		len += (size_t)snprintf(folded + len, sizeof(folded) - len, "%s%s",
					len ? ";" : "", c->r->entries[ent[i]].name);
	if (len >= sizeof(folded))
		len = sizeof(folded) - 1;
	folded[len] = 0;
	bool found;
	size_t *v = smap_get(&c->stacks, folded, &found);
	if (!v)
		return -ENOMEM;
	struct prof_result *r = c->r;
	if (!found) {
		if (r->nstacks == c->cap_stacks) {
			size_t nc = c->cap_stacks ? c->cap_stacks * 2 : 256;
			struct prof_stack *s = realloc(r->stacks, nc * sizeof(*s));
			if (!s)
				return -ENOMEM;
			r->stacks = s;
			c->cap_stacks = nc;
		}
		if (!(r->stacks[r->nstacks].folded = strdup(folded)))
			return -ENOMEM;
		r->stacks[r->nstacks].count = 0;
		*v = r->nstacks++;
	}
	r->stacks[*v].count += w;
	return 0;
}

/*
 * One sample: its stack, leaf first, into entries; self, totals, stack.
 * A sample of the timer sampler has a weight (f[3]): the periods of CPU
 * time it stands for, more than one where the kernel's tick fired the
 * timer late (lib/sampler.c); the perf path's have none, each is one.
 */
static int on_sample(struct prof_ctx *c, const struct strata_event *ev, const int *f)
{
	struct strata_value ip, n, fr, wv = { .u = 1 };
	if (strata_event_field(ev, (unsigned)f[0], &ip) < 0 ||
	    strata_event_field(ev, (unsigned)f[1], &n) < 0 ||
	    strata_event_field(ev, (unsigned)f[2], &fr) < 0 || fr.type != STRATA_VALUE_ARRAY ||
	    (f[3] >= 0 && strata_event_field(ev, (unsigned)f[3], &wv) < 0))
		return 0; /* damaged: skipped */
	long ent[MAX_DEPTH];
	unsigned depth = 0;
	uint64_t w = wv.u >= 1 && wv.u <= MAX_WEIGHT ? wv.u : 1;
	uint64_t sample = c->r->signals++;
	c->r->samples += w;
	if (ip.u >= PROF_KERNEL_HALF)
		c->r->kernel += w;
	if ((ent[depth++] = entry_at(c, ev->pid, ip.u, true)) < 0)
		return -ENOMEM;
	for (uint64_t i = 0; i < n.u && i < fr.count && depth < MAX_DEPTH; i++)
		if ((ent[depth++] = entry_at(c, ev->pid, strata_value_elem(&fr, (uint32_t)i), false)) < 0)
			return -ENOMEM;
	c->r->entries[ent[0]].self += w;
	for (unsigned i = 0; i < depth; i++) /* recursion counts once */
		if (c->seen[ent[i]] != sample) {
			c->seen[ent[i]] = sample;
			c->r->entries[ent[i]].total += w;
		}
	return add_stack(c, ent, depth, w);
}

/* The timer sampler's totals of one thread (lib/sampler.c): its rate and
 * the samples its blocked signal kept from it. */
static void on_thread_totals(struct prof_result *r, const struct strata_event *ev)
{
	const struct strata_event_class *cls = ev->cls;
	struct strata_value v;
	int f;

	r->timer = true;
	if ((f = strata_event_class_field(cls, "hz")) >= 0 &&
	    strata_event_field(ev, (unsigned)f, &v) == 0)
		r->hz = (unsigned)v.u;
	if ((f = strata_event_class_field(cls, "unavailable")) >= 0 &&
	    strata_event_field(ev, (unsigned)f, &v) == 0)
		r->unavailable += v.u;
	if ((f = strata_event_class_field(cls, "cpu_ns")) >= 0 &&
	    strata_event_field(ev, (unsigned)f, &v) == 0)
		r->cpu_ns += v.u;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct prof_entry *x = a, *y = b;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_stack(const void *a, const void *b)
{
	const struct prof_stack *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->folded, y->folded);
}

int prof_compute(struct strata_trace *t, struct strata_iter *it, struct strata_symbolizer *sy,
		 enum prof_by by, struct prof_result **out)
{
	struct prof_ctx c = { .sy = sy, .by = by };
	struct an_tidmap threads = { 0 };
	const struct strata_event_class *cls = NULL;
	const struct strata_event *ev;
	int f[4] = { -1, -1, -1, -1 }, ret = -ENOMEM;
	bool any = false;

	*out = NULL;
	if (!(c.r = calloc(1, sizeof(*c.r))))
		return -ENOMEM;
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++)
		any |= !strcmp(strata_trace_class(t, i)->name, "sample:cpu_clock");
	if (!any) {
		ret = -ENOENT;
		goto out;
	}
	for (unsigned i = 0; i < strata_trace_nsubtraces(t); i++) {
		const char *hz = strata_trace_env(t, i, "sample_hz");
		if (hz)
			c.r->hz = (unsigned)strtoul(hz, NULL, 10);
	}
	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		if (strata_trace_stream(t, i, &si) == 0 && strata_trace_env(t, si.subtrace, "sample_hz"))
			c.r->lost += si.discarded;
	}
	while (strata_iter_next(it, &ev) > 0) {
		if (!strcmp(ev->cls->name, "sample:thread")) {
			on_thread_totals(c.r, ev);
			continue;
		}
		if (strcmp(ev->cls->name, "sample:cpu_clock"))
			continue;
		if (ev->cls != cls) {
			cls = ev->cls;
			f[0] = strata_event_class_field(cls, "ip");
			f[1] = strata_event_class_field(cls, "n");
			f[2] = strata_event_class_field(cls, "frames");
			f[3] = strata_event_class_field(cls, "weight");
		}
		if (f[0] < 0 || f[1] < 0 || f[2] < 0)
			continue;
		bool made;
		if (!an_tidmap_get(&threads, ev->tid, 1, &made) || on_sample(&c, ev, f) < 0)
			goto out;
	}
	c.r->threads = (unsigned)threads.n;
	qsort(c.r->entries, c.r->nentries, sizeof(*c.r->entries), cmp_entry);
	qsort(c.r->stacks, c.r->nstacks, sizeof(*c.r->stacks), cmp_stack);
	*out = c.r;
	c.r = NULL;
	ret = 0;
out:
	prof_free(c.r);
	smap_fini(&c.names);
	smap_fini(&c.stacks);
	free(c.addrs.addr);
	free(c.addrs.pid);
	free(c.addrs.val);
	free(c.seen);
	an_tidmap_fini(&threads);
	return ret;
}

void prof_free(struct prof_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nentries; i++) {
		free(r->entries[i].name);
		free(r->entries[i].module);
	}
	for (size_t i = 0; i < r->nstacks; i++)
		free(r->stacks[i].folded);
	free(r->entries);
	free(r->stacks);
	free(r);
}
