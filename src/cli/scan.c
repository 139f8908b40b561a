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

/* One event of `key` at ts: counted, and its slot's time range widened
 * (streams are counted one after the other, scan_trace(): not in time
 * order). The slot, or NULL (out of memory). */
static struct scan_slot *note(struct scan_map *m, uint64_t key, uint64_t ts)
{
	struct scan_slot *s = map_get(m, key);
	if (!s)
		return NULL;
	if (!s->count++ || ts < s->first)
		s->first = ts;
	if (ts > s->last)
		s->last = ts;
	return s;
}

/* The slot of `key`, or NULL; nothing inserted. */
static const struct scan_slot *map_find(const struct scan_map *m, uint64_t key)
{
	for (size_t h = (key * 0x9E3779B97F4A7C15ull) >> 20; m->cap; h++) {
		const struct scan_slot *s = &m->v[h & (m->cap - 1)];
		if (!s->used)
			break;
		if (s->key == key)
			return s;
	}
	return NULL;
}

const char *scan_thread_name(const struct scan *s, uint32_t tid)
{
	const struct scan_slot *n = map_find(&s->names, tid);
	return n ? n->name : "";
}

/* Field indexes of the classes that name threads, per class index:
 * [0] tid, [1] its name, [2] and [3] a second pair (sched_switch's next). */
static int (*name_fields(const struct strata_trace *t))[4]
{
	unsigned nc = strata_trace_nclasses(t);
	int (*f)[4] = malloc((nc + 1) * sizeof(*f));
	if (!f)
		return NULL;
	for (unsigned i = 0; i < nc; i++) {
		const struct strata_event_class *c = strata_trace_class(t, i);
		f[i][0] = f[i][1] = f[i][2] = f[i][3] = -1;
		if (!strcmp(c->name, "strata:thread_name")) {
			f[i][0] = strata_event_class_field(c, "tid");
			f[i][1] = strata_event_class_field(c, "name");
		} else if (!strcmp(c->name, "sched:sched_switch")) {
			f[i][0] = strata_event_class_field(c, "prev_pid");
			f[i][1] = strata_event_class_field(c, "prev_comm");
			f[i][2] = strata_event_class_field(c, "next_pid");
			f[i][3] = strata_event_class_field(c, "next_comm");
		}
	}
	return f;
}

/* A thread's name from event ev (fields ft, its tid, and fn): the
 * process's own (the state dump's, `dump`) wins over the kernel's
 * sched_switch comm, and among comms the latest (a thread renamed), by
 * timestamp, since streams are read one after the other. */
static int take_name(struct scan *s, const struct strata_event *ev, int ft, int fn,
		     bool dump)
{
	struct strata_value t, n;
	if (ft < 0 || fn < 0 || strata_event_field(ev, (unsigned)ft, &t) < 0 ||
	    strata_event_field(ev, (unsigned)fn, &n) < 0 ||
	    n.type != STRATA_VALUE_STRING || !t.u || t.u > UINT32_MAX)
		return 0;
	if (!n.count || !n.str[0])
		return 0; /* says nothing (a thread gone before the dump read it) */
	struct scan_slot *sl = map_get(&s->names, t.u);
	if (!sl)
		return -1;
	if ((sl->from_dump && !dump) || /* the process's own word wins */
	    (sl->name[0] && sl->from_dump == dump && ev->timestamp < sl->name_ts))
		return 0;
	sl->name_ts = ev->timestamp;
	size_t len = strnlen(n.str, n.count < sizeof(sl->name) - 1 ? n.count
								    : sizeof(sl->name) - 1);
	memcpy(sl->name, n.str, len);
	sl->name[len] = 0;
	sl->from_dump = dump;
	return 0;
}

/* Event ev counted into s (the thread names from it when nf). 0 or -1
 * (out of memory). `lc` and `lt`: the CPU and thread slots of the last
 * event, NULL at first (consecutive events mostly share both: no hash
 * then), updated. */
static int scan_event(struct scan *s, int (*nf)[4], const struct strata_event *ev,
		      struct scan_slot **lc, struct scan_slot **lt)
{
	uint64_t ts = ev->timestamp;

	if (nf && nf[ev->cls->index][0] >= 0) {
		const int *f = nf[ev->cls->index];
		bool dump = f[2] < 0;
		if (take_name(s, ev, f[0], f[1], dump) < 0 ||
		    take_name(s, ev, f[2], f[3], dump) < 0)
			return -1;
	}
	if (!(ev->id >> 16)) /* strata's own records: not counted */
		return 0;
	if (!s->total++ || ts < s->first)
		s->first = ts;
	if (ts > s->last)
		s->last = ts;
	uint32_t ci = ev->cls->index;
	if (!s->per_class[ci]++ || ts < s->class_first[ci])
		s->class_first[ci] = ts;
	if (ts > s->class_last[ci])
		s->class_last[ci] = ts;
	s->per_stream[ev->stream]++;
	uint64_t tk = (uint64_t)ev->pid << 32 | ev->tid;
	if (*lc && (*lc)->key == ev->cpu) {
		(*lc)->count++;
		if (ts > (*lc)->last)
			(*lc)->last = ts;
		if (ts < (*lc)->first)
			(*lc)->first = ts;
	} else if (!(*lc = note(&s->cpus, ev->cpu, ts))) {
		return -1;
	}
	/* the CPU's slot may have moved: the thread map is another */
	if (*lt && (*lt)->key == tk) {
		(*lt)->count++;
		if (ts > (*lt)->last)
			(*lt)->last = ts;
		if (ts < (*lt)->first)
			(*lt)->first = ts;
	} else if (!(*lt = note(&s->threads, tk, ts))) {
		return -1;
	}
	return 0;
}

static int scan_alloc(struct scan *s, struct strata_trace *t, int (**nf)[4])
{
	bool want_names = s->want_names;

	memset(s, 0, sizeof(*s));
	*nf = want_names ? name_fields(t) : NULL;
	s->per_class = calloc(strata_trace_nclasses(t) + 1, sizeof(uint64_t));
	s->per_stream = calloc(strata_trace_nstreams(t) + 1, sizeof(uint64_t));
	s->class_first = calloc(strata_trace_nclasses(t) + 1, sizeof(uint64_t));
	s->class_last = calloc(strata_trace_nclasses(t) + 1, sizeof(uint64_t));
	return (want_names && !*nf) || !s->per_class || !s->per_stream ||
			       !s->class_first || !s->class_last
		       ? -1
		       : 0;
}

int scan_run(struct scan *s, struct cli_trace *ct, struct strata_iter *it)
{
	int (*nf)[4];
	struct cli_progress pg;
	const struct strata_event *ev;
	struct scan_slot *lc = NULL, *lt = NULL;

	if (scan_alloc(s, ct->t, &nf) < 0)
		goto nomem;
	cli_progress_init(&pg, strata_trace_size(ct->t));
	while (strata_iter_next(it, &ev) > 0) {
		if (scan_event(s, nf, ev, &lc, &lt) < 0)
			goto nomem;
		if (!(s->total & 0xfffff))
			cli_progress_tick(&pg, strata_iter_progress(it));
	}
	cli_progress_done(&pg);
	free(nf);
	return 0;
nomem:
	free(nf);
	cli_err(ct->path, "out of memory");
	return -1;
}

/*
 * Counting needs no time order: the streams are read one after the other
 * (STRATA_ITER_UNORDERED), a batch of events at a time (strata_iter_read),
 * and the merge of every stream by timestamp that an ordered iterator
 * does per event is skipped (issue 23: `strata stats` at the reader's
 * speed). The counts and time ranges are the same: scan_event() widens
 * ranges either way.
 */
static int scan_streams(struct scan *s, struct cli_trace *ct, bool internal)
{
	enum { BATCH = 4096 };
	struct strata_event *evs = malloc(BATCH * sizeof(*evs));
	struct strata_iter_options io = {
		.stream = -1, .filter = ct->f,
		.flags = STRATA_ITER_UNORDERED | (internal ? STRATA_ITER_INTERNAL : 0)};
	struct strata_iter *it = NULL;
	struct scan_slot *lc = NULL, *lt = NULL;
	struct cli_progress pg;
	int (*nf)[4] = NULL, n, rc = -1;

	if (!evs || scan_alloc(s, ct->t, &nf) < 0) {
		cli_err(ct->path, "out of memory");
		goto out;
	}
	if ((n = strata_iter_create(ct->t, &io, &it)) < 0) {
		cli_err(ct->path, "%s", strerror(-n));
		goto out;
	}
	cli_progress_init(&pg, strata_trace_size(ct->t));
	while ((n = strata_iter_read(it, evs, BATCH)) > 0) {
		for (int k = 0; k < n; k++)
			if (scan_event(s, nf, &evs[k], &lc, &lt) < 0) {
				cli_err(ct->path, "out of memory");
				goto out;
			}
		cli_progress_tick(&pg, strata_iter_progress(it));
	}
	cli_progress_done(&pg);
	rc = 0;
out:
	strata_iter_destroy(it);
	free(nf);
	free(evs);
	return rc;
}

void scan_fini(struct scan *s)
{
	free(s->per_class);
	free(s->class_first);
	free(s->class_last);
	free(s->per_stream);
	free(s->cpus.v);
	free(s->threads.v);
	free(s->names.v);
	memset(s, 0, sizeof(*s));
}

int scan_trace(struct scan *s, struct cli_trace *ct, const char *path,
	       const struct cli_filter_opts *fo, bool internal)
{
	if (cli_open(ct, path, fo) < 0 || scan_streams(s, ct, internal) < 0) {
		cli_close(ct);
		return -1;
	}
	return 0;
}

bool scan_class_sum(const struct scan *s, struct strata_trace *t, unsigned i,
		    uint64_t *n, uint64_t *first, uint64_t *last)
{
	const char *name = strata_trace_class(t, i)->name;
	bool seen = false;

	*n = *last = 0;
	*first = UINT64_MAX;
	for (unsigned j = 0; j < strata_trace_nclasses(t); j++)
		if (!strcmp(strata_trace_class(t, j)->name, name)) {
			seen |= j < i;
			*n += s->per_class[j];
			if (s->per_class[j] && s->class_first[j] < *first)
				*first = s->class_first[j];
			if (s->per_class[j] && s->class_last[j] > *last)
				*last = s->class_last[j];
		}
	return !seen;
}
