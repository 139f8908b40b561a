/* SPDX-License-Identifier: MIT */
/* One pass over a trace counting events per type, CPU, thread and stream. */
#include <stdlib.h>
#include <string.h>

#include "scan.h"

static struct scan_slot *map_get(struct scan_map *m, uint64_t key)
{
	if (m->n * 2 >= m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct scan_slot *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < m->cap; i++)
			if (m->v[i].used) {
				size_t h = (m->v[i].key * 0x9E3779B97F4A7C15ull) >> 20;
				while (v[h & (cap - 1)].used)
					h++;
				v[h & (cap - 1)] = m->v[i];
			}
		free(m->v);
		m->v = v;
		m->cap = cap;
	}
	size_t h = (key * 0x9E3779B97F4A7C15ull) >> 20;
	for (;; h++) {
		struct scan_slot *s = &m->v[h & (m->cap - 1)];
		if (s->used && s->key == key)
			return s;
		if (!s->used) {
			s->used = true;
			s->key = key;
			m->n++;
			return s;
		}
	}
}

static int cmp_slot(const void *a, const void *b)
{
	const struct scan_slot *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

struct scan_slot *scan_sorted(const struct scan_map *m)
{
	struct scan_slot *v = malloc((m->n + 1) * sizeof(*v));
	size_t k = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < m->cap; i++)
		if (m->v[i].used)
			v[k++] = m->v[i];
	qsort(v, k, sizeof(*v), cmp_slot);
	return v;
}

static bool note(struct scan_map *m, uint64_t key, uint64_t ts)
{
	struct scan_slot *s = map_get(m, key);
	if (!s)
		return false;
	if (!s->count++)
		s->first = ts;
	s->last = ts;
	return true;
}

int scan_run(struct scan *s, struct cli_trace *ct, struct strata_iter *it)
{
	memset(s, 0, sizeof(*s));
	s->per_class = calloc(strata_trace_nclasses(ct->t) + 1, sizeof(uint64_t));
	s->per_stream = calloc(strata_trace_nstreams(ct->t) + 1, sizeof(uint64_t));
	s->class_first = calloc(strata_trace_nclasses(ct->t) + 1, sizeof(uint64_t));
	s->class_last = calloc(strata_trace_nclasses(ct->t) + 1, sizeof(uint64_t));
	if (!s->per_class || !s->per_stream || !s->class_first || !s->class_last)
		goto nomem;
	struct cli_progress pg;
	cli_progress_init(&pg, strata_trace_size(ct->t));
	const struct strata_event *ev;
	/* consecutive events mostly share cpu and thread: skip the hash then */
	struct scan_slot *lc = NULL, *lt = NULL;
	while (strata_iter_next(it, &ev) > 0) {
		if (!s->total++)
			s->first = ev->timestamp;
		s->last = ev->timestamp;
		uint32_t ci = ev->cls->index;
		if (!s->per_class[ci]++)
			s->class_first[ci] = ev->timestamp;
		s->class_last[ci] = ev->timestamp;
		s->per_stream[ev->stream]++;
		uint64_t tk = (uint64_t)ev->pid << 32 | ev->tid;
		if (!lc || lc->key != ev->cpu) {
			if (!note(&s->cpus, ev->cpu, ev->timestamp))
				goto nomem;
			lc = map_get(&s->cpus, ev->cpu);
		} else {
			lc->count++;
			lc->last = ev->timestamp;
		}
		if (!lt || lt->key != tk) {
			if (!note(&s->threads, tk, ev->timestamp))
				goto nomem;
			lt = map_get(&s->threads, tk);
		} else {
			lt->count++;
			lt->last = ev->timestamp;
		}
		if (!(s->total & 0xfffff))
			cli_progress_tick(&pg, strata_iter_progress(it));
	}
	cli_progress_done(&pg);
	return 0;
nomem:
	cli_err(ct->path, "out of memory");
	return -1;
}

void scan_fini(struct scan *s)
{
	free(s->per_class);
	free(s->class_first);
	free(s->class_last);
	free(s->per_stream);
	free(s->cpus.v);
	free(s->threads.v);
	memset(s, 0, sizeof(*s));
}
