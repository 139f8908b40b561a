/* SPDX-License-Identifier: MIT */
/* What the analyses share: a map of threads by tid, keys from field values, error lines (analysis.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "common/errbuf.h"

static size_t slot_of(uint32_t tid, size_t cap)
{
	return (tid * 2654435761u) & (cap - 1);
}

void *an_tidmap_find(const struct an_tidmap *m, uint32_t tid)
{
	if (!m->cap)
		return NULL;
	for (size_t h = slot_of(tid, m->cap); m->val[h]; h = (h + 1) & (m->cap - 1))
		if (m->key[h] == tid)
			return m->val[h];
	return NULL;
}

static int grow(struct an_tidmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	uint32_t *nk = calloc(ncap, sizeof(*nk));
	void **nv = calloc(ncap, sizeof(*nv));
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->val[i]) {
			size_t j = slot_of(m->key[i], ncap);
			while (nv[j])
				j = (j + 1) & (ncap - 1);
			nk[j] = m->key[i];
			nv[j] = m->val[i];
		}
	free(m->key);
	free(m->val);
	m->key = nk;
	m->val = nv;
	m->cap = ncap;
	return 0;
}

void *an_tidmap_get(struct an_tidmap *m, uint32_t tid, size_t size, bool *made)
{
	void *o = an_tidmap_find(m, tid);
	*made = false;
	if (o)
		return o;
	if ((m->n + 1) * 2 > m->cap && grow(m))
		return NULL;
	if (m->n == m->allcap) {
		size_t nc = m->allcap ? m->allcap * 2 : 64;
		void **na = realloc(m->all, nc * sizeof(*na));
		if (!na)
			return NULL;
		m->all = na;
		m->allcap = nc;
	}
	if (!(o = calloc(1, size)))
		return NULL;
	size_t h = slot_of(tid, m->cap);
	while (m->val[h])
		h = (h + 1) & (m->cap - 1);
	m->key[h] = tid;
	m->val[h] = o;
	m->all[m->n++] = o;
	*made = true;
	return o;
}

void an_tidmap_fini(struct an_tidmap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->all[i]);
	free(m->all);
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

uint64_t an_value_key(const struct strata_value *v)
{
	const uint8_t *b;
	size_t n;
	switch (v->type) {
	case STRATA_VALUE_UINT:
		return v->u;
	case STRATA_VALUE_SINT:
		return (uint64_t)v->s;
	case STRATA_VALUE_DOUBLE: {
		uint64_t u;
		memcpy(&u, &v->d, sizeof(u));
		return u;
	}
	case STRATA_VALUE_STRING:
		b = (const uint8_t *)v->str;
		n = strnlen(v->str, v->count);
		break;
	default:
		b = v->data;
		n = (size_t)v->count * (v->elem_bits / 8);
		break;
	}
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

void an_err_no_field(char *err, size_t errlen, const struct strata_event_class *c,
		     const char *field)
{
	char names[256] = "";
	size_t k = 0;
	for (unsigned f = 0; f < c->nfields && k < sizeof(names); f++)
		k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", f ? ", " : "",
				      c->fields[f].name);
	errbuf_printf(err, errlen, "%s has no field '%s' (its fields: %s)", c->name, field,
	       names[0] ? names : "none");
}

bool an_is_kernel(const struct strata_trace *t, unsigned subtrace)
{
	const char *d = strata_trace_env(t, subtrace, "domain");
	return d && !strcmp(d, "kernel");
}

unsigned an_kernel_streams(const struct strata_trace *t, bool *kernel)
{
	unsigned ncpus = 0;
	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		bool k = strata_trace_stream(t, i, &si) == 0 && an_is_kernel(t, si.subtrace);
		if (kernel)
			kernel[i] = k;
		if (k && si.cpu != UINT32_MAX && si.cpu + 1 > ncpus)
			ncpus = si.cpu + 1;
	}
	return ncpus;
}

static int cmp_tid(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

int an_scope_read(struct strata_trace *t, const bool *kernel, struct an_scope *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		if (!kernel[i] || strata_trace_stream(t, i, &si) < 0)
			continue;
		const char *s = strata_trace_env(t, si.subtrace, "scope_tids");
		if (!s)
			return 0;
		out->scoped = true;
		size_t cap = strlen(s) / 2 + 1; /* "N " per tid at least */
		if (!(out->tids = malloc(cap * sizeof(*out->tids))))
			return -ENOMEM;
		for (char *end; out->n < cap; s = end) {
			unsigned long tid = strtoul(s, &end, 10);
			if (end == s)
				break;
			out->tids[out->n++] = (uint32_t)tid;
		}
		qsort(out->tids, out->n, sizeof(*out->tids), cmp_tid);
		return 0;
	}
	return 0;
}

bool an_scope_has(const struct an_scope *sc, uint32_t tid)
{
	return sc->n && bsearch(&tid, sc->tids, sc->n, sizeof(tid), cmp_tid);
}
