/* SPDX-License-Identifier: MIT */
/* Thread names from what the trace says: the state dump, strata:thread_name, the kernel's comm (analysis.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/* Per class: the fields that name a thread, up to two (tid, name) pairs,
 * and whether they are the process's own word (the state dump). */
struct name_fields {
	int f[4];
	bool resolved, own;
};

struct slot {
	bool own;
	char name[16];
};

struct an_names {
	struct strata_trace *t;
	struct name_fields *cls;
	unsigned ncls;
	struct an_tidmap slots;
};

int an_names_create(struct strata_trace *t, struct an_names **out)
{
	struct an_names *n = calloc(1, sizeof(*n));
	*out = NULL;
	if (!n)
		return -ENOMEM;
	n->t = t;
	n->ncls = strata_trace_nclasses(t);
	n->cls = calloc(n->ncls ? n->ncls : 1, sizeof(*n->cls));
	if (!n->cls) {
		an_names_destroy(n);
		return -ENOMEM;
	}
	*out = n;
	return 0;
}

void an_names_destroy(struct an_names *n)
{
	if (!n)
		return;
	free(n->cls);
	an_tidmap_fini(&n->slots);
	free(n);
}

static void resolve(struct name_fields *nf, const struct strata_event_class *c)
{
	nf->resolved = true;
	nf->f[0] = nf->f[1] = nf->f[2] = nf->f[3] = -1;
	if (!strcmp(c->name, "strata:thread_name")) {
		nf->f[0] = strata_event_class_field(c, "tid");
		nf->f[1] = strata_event_class_field(c, "name");
		nf->own = true;
	} else if (!strcmp(c->name, "sched:sched_switch")) {
		nf->f[0] = strata_event_class_field(c, "prev_pid");
		nf->f[1] = strata_event_class_field(c, "prev_comm");
		nf->f[2] = strata_event_class_field(c, "next_pid");
		nf->f[3] = strata_event_class_field(c, "next_comm");
	} else if (!strcmp(c->name, "sched:sched_wakeup") ||
		   !strcmp(c->name, "sched:sched_wakeup_new")) {
		nf->f[0] = strata_event_class_field(c, "pid");
		nf->f[1] = strata_event_class_field(c, "comm");
	} else if (!strcmp(c->name, "sched:sched_process_fork")) {
		nf->f[0] = strata_event_class_field(c, "child_pid");
		nf->f[1] = strata_event_class_field(c, "child_comm");
	}
}

static int take(struct an_names *n, const struct strata_event *ev, int ft, int fn, bool own)
{
	struct strata_value t, v;
	if (ft < 0 || fn < 0 || strata_event_field(ev, (unsigned)ft, &t) < 0 ||
	    strata_event_field(ev, (unsigned)fn, &v) < 0 || v.type != STRATA_VALUE_STRING ||
	    (t.type != STRATA_VALUE_UINT && t.type != STRATA_VALUE_SINT) || !t.u ||
	    t.u > UINT32_MAX)
		return 0;
	if (!v.count || !v.str[0])
		return 0; /* says nothing (a thread gone before the dump read it) */
	bool made;
	struct slot *s = an_tidmap_get(&n->slots, (uint32_t)t.u, sizeof(*s), &made);
	if (!s)
		return -ENOMEM;
	if (s->own && !own)
		return 0; /* the process's own word wins */
	size_t len = strnlen(v.str, v.count < sizeof(s->name) - 1 ? v.count : sizeof(s->name) - 1);
	memcpy(s->name, v.str, len);
	s->name[len] = 0;
	s->own = own;
	return 0;
}

int an_names_feed(struct an_names *n, const struct strata_event *ev)
{
	if (ev->cls->index >= n->ncls)
		return 0;
	struct name_fields *nf = &n->cls[ev->cls->index];
	if (!nf->resolved)
		resolve(nf, ev->cls);
	if (nf->f[0] < 0)
		return 0;
	int ret = take(n, ev, nf->f[0], nf->f[1], nf->own);
	return ret ? ret : take(n, ev, nf->f[2], nf->f[3], nf->own);
}

const char *an_names_get(const struct an_names *n, uint32_t tid)
{
	const struct slot *s = n ? an_tidmap_find(&n->slots, tid) : NULL;
	return s && s->name[0] ? s->name : NULL;
}
