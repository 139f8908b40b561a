// SPDX-License-Identifier: MIT
/* strata view: the model's second pass, thread names and the breakdown's states, on a thread and trace handle of its own (docs/view.md, "Speed"). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "view.h"

/*
 * The model's own pass reads the events through the reader's batch path
 * (strata_iter_read), which leaves strata's own records out; those
 * records (the names of strata:thread_name) and the breakdown's machine
 * are read here, meanwhile, on a second handle of the same trace (a
 * handle belongs to one thread: reader.h), in one merged pass: the
 * breakdown's (bd_compute), which hands the records over on its way
 * (bd_options.on_record); a trace with no kernel stream has no states,
 * and its records are read by themselves. What this thread makes is its
 * own (the records, stretches and pids below) until vw_states_join,
 * after which the model takes it in as the one-thread build did: the
 * records' names fed as a merged pass would (feed_records), the
 * stretches replayed in the order bd_compute reported them.
 */

struct vw_stretch {
	uint32_t tid;
	int32_t state;
	uint64_t from, to;
};

/* A record copied (its payload stays valid until the trace's close),
 * and where it was read. */
struct vw_record {
	struct strata_event ev;
	size_t seq;
};

struct vw_states {
	struct strata_trace *t; /* ours, or the model's when run inline */
	bool own_t;
	struct vw_record *rec;
	size_t nrec, reccap;
	struct vw_stretch *st;
	size_t n, cap;
	uint32_t (*pids)[2];    /* tid, pid of each thread bd_compute saw */
	size_t npids;
	int err, bd_err;
	pthread_t thread;
	bool running;
	struct vw_progress *pg; /* the build's (its stop), or NULL */
	uint64_t seen;          /* events take_record was given */
};

static void on_state(const struct bd_thread *b, int state, uint64_t from, uint64_t to,
		     void *arg)
{
	struct vw_states *s = arg;
	if (s->err)
		return;
	struct vw_stretch *p = vw_grow(s->st, &s->cap, s->n, sizeof(*p));
	if (!p) {
		s->err = -ENOMEM;
		return;
	}
	s->st = p;
	s->st[s->n++] = (struct vw_stretch){ b->tid, state, from, to };
}

/* A record kept (the others are not ours); NULL from bd_compute every
 * 4096 events, to look at the stop. */
static int take_record(void *arg, const struct strata_event *ev)
{
	struct vw_states *s = arg;
	/* Ctrl-C during a build served at once (quick.c): this pass stops,
	 * as the model's pass does */
	if (s->pg && (!ev || !(++s->seen & 4095)) &&
	    atomic_load_explicit(&s->pg->stop, memory_order_relaxed))
		return s->err = -ECANCELED;
	if (!ev || ev->id >> 16)
		return 0;
	struct vw_record *p = vw_grow(s->rec, &s->reccap, s->nrec, sizeof(*p));
	if (!p)
		return s->err = -ENOMEM;
	s->rec = p;
	s->rec[s->nrec] = (struct vw_record){ *ev, s->nrec };
	s->nrec++;
	return 0;
}

/* strata's own records (the thread names they carry), stream after
 * stream, when the breakdown's pass did not read them: no merge, as the
 * model's pass needs none of them. */
static int read_records(struct vw_states *s)
{
	struct strata_iter *it;
	int err = strata_iter_create(s->t, &(struct strata_iter_options){ .stream = -1,
				     .flags = STRATA_ITER_INTERNAL | STRATA_ITER_UNORDERED },
				     &it);
	if (!err)
		err = vw_iter_each(it, take_record, s);
	strata_iter_destroy(it);
	return err;
}

/* The merged order (reader.h: by timestamp, ties to the lower stream),
 * read order within a stream. */
static int cmp_record(const void *a, const void *b)
{
	const struct vw_record *x = a, *y = b;
	if (x->ev.timestamp != y->ev.timestamp)
		return x->ev.timestamp < y->ev.timestamp ? -1 : 1;
	if (x->ev.stream != y->ev.stream)
		return x->ev.stream < y->ev.stream ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * The records' names, after the pass fed the events' (the kernel's
 * comm). A name from a record (the process's own word) wins over one
 * from an event whatever their order, and among each kind the last
 * wins (analysis/names.c), so feeding the records last, in merged order,
 * names every thread as one merged pass did. (A damaged stream whose
 * records are out of time order could name a thread differently: its
 * merged order depends on the other streams' events.)
 */
static int feed_records(struct vw_states *s, struct vw_model *m)
{
	qsort(s->rec, s->nrec, sizeof(*s->rec), cmp_record);
	int err = 0;
	for (size_t i = 0; i < s->nrec && !err; i++)
		err = an_names_feed(m->names, &s->rec[i].ev);
	return err;
}

/* The breakdown's pass, which takes the records on its way (its
 * on_record): one pass over the trace, not one for each. */
static int read_bd(struct vw_states *s)
{
	struct bd_result *r;
	int err = bd_compute(s->t, &(struct bd_options){ .from = 0, .to = UINT64_MAX,
			     .on_state = on_state, .on_record = take_record, .arg = s }, &r);
	if (err)
		return err;
	s->pids = malloc((r->nthreads ? r->nthreads : 1) * sizeof(*s->pids));
	if (!s->pids)
		err = -ENOMEM;
	for (unsigned i = 0; !err && i < r->nthreads; i++) {
		s->pids[i][0] = r->threads[i].tid;
		s->pids[i][1] = r->threads[i].pid;
	}
	s->npids = err ? 0 : r->nthreads;
	bd_free(r);
	return err;
}

static void *run(void *arg)
{
	struct vw_states *s = arg;
	/* no kernel stream: no states (bd_compute would say -ENOENT before
	 * its pass), the records alone; else they come with its pass. Its
	 * other -ENOENT (no sched_switch) comes after the pass; another
	 * error may have come before it or in it: the records are then read
	 * again by themselves. */
	if (!an_kernel_streams(s->t, NULL)) {
		s->bd_err = -ENOENT;
		s->err = read_records(s);
	} else if ((s->bd_err = read_bd(s)) && s->bd_err != -ENOENT && !s->err) {
		s->nrec = 0;
		s->err = read_records(s);
	}
	return NULL;
}

int vw_states_start(struct vw_model *m, unsigned open_flags, struct vw_states **out)
{
	struct vw_states *s = calloc(1, sizeof(*s));
	*out = s;
	if (!s)
		return -ENOMEM;
	s->pg = m->progress;
	/* problems are the model's handle's to report: this one only counts */
	if (m->path && !strata_trace_open(m->path, &(struct strata_open_options){
					  .flags = open_flags }, &s->t) &&
	    strata_trace_nclasses(s->t) == strata_trace_nclasses(m->t) &&
	    strata_trace_nstreams(s->t) == strata_trace_nstreams(m->t)) {
		s->own_t = true;
		s->running = !pthread_create(&s->thread, NULL, run, s);
		if (s->running)
			return 0;
	}
	/* no second handle or thread: the same work, after the model's pass */
	strata_trace_close(s->t);
	s->t = m->t;
	s->own_t = false;
	return 0;
}

int vw_states_join(struct vw_states *s, struct vw_model *m)
{
	if (!s)
		return 0;
	if (s->running)
		pthread_join(s->thread, NULL);
	else
		run(s);
	int err = s->err;
	if (!err)
		err = feed_records(s, m);
	if (!err && m->have_sched && s->bd_err != -ENOENT)
		err = s->bd_err;
	for (size_t i = 0; !err && m->have_sched && i < s->n; i++)
		err = vw_model_state(m, s->st[i].tid, s->st[i].state, s->st[i].from, s->st[i].to);
	for (size_t i = 0; !err && m->have_sched && i < s->npids; i++) {
		struct vw_thread *th = an_tidmap_find(&m->threads, s->pids[i][0]);
		if (th && !th->pid)
			th->pid = s->pids[i][1]; /* a kernel-only thread's */
	}
	if (s->own_t)
		strata_trace_close(s->t);
	free(s->rec);
	free(s->st);
	free(s->pids);
	free(s);
	return err;
}
