// SPDX-License-Identifier: MIT
/* strata view's filters (docs/view.md, "Filters"): the page's CPUs, threads, name globs and expression, as the reader's filter and a table of classes. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "api.h"

/* fn(glob, arg) for each glob of a comma-separated list, until one
 * returns non-zero (returned). */
static int each_glob(const char *list, int (*fn)(const char *glob, void *arg), void *arg)
{
	char buf[VW_ARG_MAX + 1];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save, *g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
		while (*g == ' ')
			g++;
		int err = fn(g, arg);
		if (err)
			return err;
	}
	return 0;
}

struct class_ok {
	struct vw_model *m;
	bool *ok;
};

static int mark_classes(const char *glob, void *arg)
{
	struct class_ok *c = arg;
	for (unsigned i = 0; i < strata_trace_nclasses(c->m->t); i++) {
		const struct strata_event_class *k = strata_trace_class(c->m->t, i);
		c->ok[i] |= k && !fnmatch(glob, k->name, 0);
	}
	return 0;
}

int vw_class_table(struct vw_model *m, const char *globs, bool **out)
{
	*out = NULL;
	if (!globs)
		return 0;
	unsigned n = strata_trace_nclasses(m->t);
	struct class_ok c = { m, calloc(n ? n : 1, sizeof(bool)) };
	if (!c.ok)
		return -ENOMEM;
	each_glob(globs, mark_classes, &c);
	*out = c.ok;
	return 0;
}

/* One glob of the filter's list into f (OR-ed, reader.h). */
static int add_glob(const char *glob, void *f)
{
	int n = strata_filter_event(f, glob);
	return n < 0 ? n : 0;
}

int vw_bad_expr(struct vw_buf *err, const char *what, const char *msg)
{
	vw_printf(err, "{\"error\":");
	char line[320];
	snprintf(line, sizeof(line), "%s: %s", what, msg);
	vw_put_str(err, line, strlen(line));
	vw_puts(err, "}");
	return 400;
}

static int by_id(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* ids sorted (vw_filter_procs): a process's thousands of threads cost a
 * row, an interval or a flow a dozen compares */
static bool listed(const uint32_t *ids, unsigned n, uint32_t id)
{
	return n && bsearch(&id, ids, n, sizeof(*ids), by_id);
}

int vw_filter_procs(const struct vw_model *m, struct vw_filter *q, const uint32_t *pids,
		    unsigned npids, struct vw_buf *err)
{
	qsort(q->cpus, q->ncpus, sizeof(*q->cpus), by_id);
	qsort(q->tids, q->ntids, sizeof(*q->tids), by_id);
	if (!npids)
		return 0;
	/* the threads named (at most VW_FILTER_IDS) narrow the processes' */
	uint32_t named[VW_FILTER_IDS];
	unsigned nnamed = q->ntids;
	memcpy(named, q->tids, nnamed * sizeof(*named));
	q->ntids = 0;
	/* the page's processes are the summary's: the rows' pids */
	for (unsigned i = 0; i < m->nrows; i++) {
		const struct vw_thread *th = m->rows[i];
		bool in = false;
		for (unsigned k = 0; k < npids && !in; k++)
			in = th->pid == pids[k];
		if (!in || (nnamed && !listed(named, nnamed, th->tid)))
			continue;
		if (q->ntids == VW_FILTER_TIDS) {
			vw_printf(err, "{\"error\":\"pids: the processes have more than %d "
				  "threads; name threads instead\"}", VW_FILTER_TIDS);
			return 400;
		}
		q->tids[q->ntids++] = th->tid;
	}
	qsort(q->tids, q->ntids, sizeof(*q->tids), by_id);
	q->none |= !q->ntids;
	return 0;
}

bool vw_filter_keeps(const struct vw_filter *q, char kind, uint32_t id)
{
	if (q->none)
		return false;
	if (kind == 'c')
		return !q->ncpus || listed(q->cpus, q->ncpus, id);
	return !q->ntids || listed(q->tids, q->ntids, id);
}

void vw_filter_only(struct vw_filter *q, char kind, uint32_t id)
{
	if (!vw_filter_keeps(q, kind, id))
		q->none = true;
	else if (kind == 'c')
		q->cpus[0] = id, q->ncpus = 1;
	else
		q->tids[0] = id, q->ntids = 1;
}

int vw_filter_make(struct vw_model *m, const struct vw_filter *q,
		   struct strata_filter **out, struct vw_buf *err)
{
	*out = NULL;
	if (!q->ncpus && !q->ntids && !q->events && !q->expr)
		return 0;
	struct strata_filter *f;
	char msg[256] = "";
	int e = strata_filter_create(m->t, &f);
	if (e)
		return e;
	for (unsigned i = 0; !e && i < q->ncpus; i++)
		e = strata_filter_cpu(f, q->cpus[i]);
	for (unsigned i = 0; !e && i < q->ntids; i++)
		e = strata_filter_tid(f, q->tids[i]);
	if (!e && q->events)
		e = each_glob(q->events, add_glob, f);
	if (!e && q->expr && (e = strata_filter_expr(f, q->expr, msg, sizeof(msg))) == -EINVAL)
		e = vw_bad_expr(err, "expr", msg);
	if (e) {
		strata_filter_destroy(f);
		return e;
	}
	*out = f;
	return 0;
}
