// SPDX-License-Identifier: MIT
/* strata view --live: the model kept up with a trace still being written, through the reader's follower (docs/view.md, "Live"). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "view.h"

/* How often the follower looks at the files: a poll of a trace that did
 * not grow costs tens of microseconds (reader.md, "Cost"), and the page
 * asks twice a second. */
#define LIVE_POLL_MS 50

/* The first grid: at least this many ticks, and twice the trace so far. */
#define LIVE_GRID_MIN (1ull << 24)

struct vw_live {
	struct strata_follow *f;
	struct vw_model *m;
	pthread_mutex_t *lock;   /* the server's: held while m or its trace
				  * is used or changed */
	const char *path;
	vw_live_done_fn done;
	void *arg;
	pthread_t thread;
	bool running;
	atomic_bool stop;
	uint64_t seq;            /* windows read: api/live */
	uint64_t *sig;           /* each class's class_sig() when the model
				  * last read a window, nsig of them */
	unsigned nsig;
	struct vw_activity *acts; /* the command's rules (the server's) */
	unsigned nacts;
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* What the model keeps of a class: its name (the list's, the statistics')
 * and kind (the intervals'), hashed. */
static uint64_t class_sig(const struct strata_event_class *c)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (const char *p = c ? c->name : ""; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return (h ^ (uint64_t)(c ? c->kind + 1 : 0)) * 0x100000001b3ull;
}

/* Whether the model counted an event of class i (its rows' bins per
 * class: every event has one, a CPU's or a thread's). */
static bool class_read(const struct vw_model *m, unsigned i)
{
	for (unsigned k = 0; k < m->ncpus; k++)
		if (m->cpus[k].cbins && m->cpus[k].cbins[i])
			return true;
	for (size_t k = 0; k < m->threads.n; k++) {
		uint32_t **cb = ((const struct vw_thread *)m->threads.all[k])->cbins;
		if (cb && cb[i])
			return true;
	}
	return false;
}

/*
 * Whether a class the model read events of is another now. A writer may
 * declare an event id before its class's descriptor reaches it (format.md
 * §6: a traced process sends its descriptors a little after its first
 * events): its first events are then read under a raw class, named by its
 * id, without its kind, and renamed and given its kind later. And the
 * trace's class table is numbered across its sub-traces: a class one of
 * them gains moves the others' numbers. Either way what the model counted
 * and paired under that number is not the class's now.
 */
static bool classes_changed(const struct vw_live *l, struct strata_trace *t)
{
	unsigned n = strata_trace_nclasses(t);
	for (unsigned i = 0; i < l->nsig && i < l->m->ncls; i++) {
		/* a class gone (the table can be shorter than at the
		 * last window) has changed too */
		uint64_t now = i < n ? class_sig(strata_trace_class(t, i)) : 0;
		if (now != l->sig[i] && class_read(l->m, i))
			return true;
	}
	return false;
}

/*
 * Whether the rules' pairers are stale: made with the classes their globs
 * matched then, they see no class gained since, nor one described anew
 * (a raw class, named by its id, renamed to what a glob matches). So
 * with rules, any class gained or changed has the model read again
 * (reread()), its rules' pairers made on all: as a program begins, not
 * per poll.
 */
static bool rules_stale(const struct vw_live *l, struct strata_trace *t)
{
	unsigned n = strata_trace_nclasses(t);
	if (!l->nacts)
		return false;
	if (n != l->nsig)
		return true;
	for (unsigned i = 0; i < n; i++)
		if (class_sig(strata_trace_class(t, i)) != l->sig[i])
			return true;
	return false;
}

static int remember_classes(struct vw_live *l, struct strata_trace *t)
{
	unsigned n = strata_trace_nclasses(t);
	uint64_t *s = realloc(l->sig, (n ? n : 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		s[i] = class_sig(strata_trace_class(t, i));
	l->sig = s;
	l->nsig = n;
	return 0;
}

/* The model set up on t, with the rules' pairers made on t's classes now:
 * a rule that matches none yet waits, without a pairer, for a class that
 * it matches (rules_stale()). */
static int live_init(struct vw_live *l, struct strata_trace *t, uint64_t begin, uint64_t grid)
{
	for (unsigned i = 0; i < l->nacts; i++) {
		char why[256];
		iv_pairer_destroy(l->acts[i].pairer);
		l->acts[i].pairer = NULL;
		if (vw_activity_make(t, &l->acts[i], why, sizeof(why)))
			l->acts[i].pairer = NULL;
	}
	int err = vw_model_live_init(l->m, t, l->path, begin, grid, l->acts, l->nacts);
	l->m->cache = "live";
	return err;
}

/* The model made again and read from the trace's start, on the same grid
 * (docs/view.md, "Live"): the one step whose cost grows with the trace,
 * taken when classes_changed() (at most once per class a writer
 * describes late) or, with activity rules, rules_stale() (once per class
 * gained or described): as programs begin. */
static int reread(struct vw_live *l, struct strata_trace *t, uint64_t *from)
{
	struct vw_model *m = l->m;
	const struct vw_problems *problems = m->problems;
	uint64_t begin = m->begin, grid = m->gridlen;
	vw_model_fini(m);
	int err = live_init(l, t, begin, grid);
	m->problems = problems;
	*from = 0;
	return err;
}

/* A stretch of a thread's states, from the breakdown's machines fed as
 * the model reads (feed_one): closed, or still open at the window's end
 * (bd_feed_open), which the next report of it extends or relabels
 * (vw_model_state). */
static void on_state(const struct bd_thread *b, int state, uint64_t from, uint64_t to,
		     void *arg)
{
	struct vw_model *m = arg;
	if (m->bd_err || (m->bd_err = vw_model_state(m, b->tid, state, from, to)))
		return;
	/* a kernel-only thread's pid: the machine's stands for the tid
	 * until the thread's own event names its process, so a later one
	 * replaces it (as the finished model takes the last) */
	struct vw_thread *th = an_tidmap_find(&m->threads, b->tid);
	if (th && (!th->pid || th->pid == th->tid))
		th->pid = b->pid;
}

/* The states' machines on t: made once t has a kernel stream (from the
 * first window, or after a re-read), else told what t has gained. */
static int states_adopt(struct vw_model *m, struct strata_trace *t)
{
	if (m->bd)
		return bd_feed_adopt(m->bd, t);
	int err = bd_feed_create(t, &(struct bd_options){ .from = 0, .to = UINT64_MAX,
				 .on_state = on_state, .arg = m }, &m->bd);
	return err == -ENOENT ? 0 : err;
}

/* A window's events into the model, its grid doubled first as often as
 * the window's end needs: so a grid holds every event, and a doubling,
 * which costs the bins and not the events, comes once per doubling of
 * the trace's span. */
static int read_window(struct vw_live *l, struct strata_trace *t, uint64_t from, uint64_t to)
{
	struct vw_model *m = l->m;
	int err = classes_changed(l, t) || rules_stale(l, t) ? reread(l, t, &from) : 0;
	if (!err)
		err = vw_model_adopt(m, t);
	if (!err)
		err = states_adopt(m, t);
	if (!err)
		err = remember_classes(l, t);
	if (err || to <= from)
		return err;
	/* to: the follower's bound, events at to wait for the next window */
	uint64_t last = to == UINT64_MAX ? strata_trace_end(t) : to - 1;
	while (!err && last > m->begin && last - m->begin >= m->gridlen)
		err = vw_model_double(m);
	if (!err)
		err = vw_model_read(m, from, to);
	if (last > m->end)
		m->end = last;
	/* the states open now drawn to the model's end */
	if (!err && m->bd) {
		bd_feed_open(m->bd, m->end);
		err = m->bd_err;
	}
	if (!err)
		err = vw_model_settle(m);
	l->seq++;
	return err;
}

/* The first readable window: the model set up on it. Returns 1 (the
 * model holds it), 0 (nothing readable yet), STRATA_FOLLOW_DONE + 2 (the
 * trace is finished: open it as any other), or a negative errno. */
static int first_window(struct vw_live *l)
{
	struct strata_trace *t;
	uint64_t from, to;
	int rc = strata_follow_poll(l->f, &t, &from, &to);
	if (rc < 0)
		return rc;
	if (rc == STRATA_FOLLOW_DONE)
		return STRATA_FOLLOW_DONE + 2;
	if (!t || to <= from)
		return 0;
	uint64_t begin = strata_trace_begin(t), grid = LIVE_GRID_MIN;
	uint64_t last = to - 1 > begin ? to - 1 : begin;
	while (grid <= 2 * (last - begin) && grid < UINT64_MAX / 4)
		grid *= 2;
	int err = live_init(l, t, begin, grid);
	if (!err)
		err = remember_classes(l, t);
	if (!err)
		err = read_window(l, t, from, to);
	return err ? err : 1;
}

int vw_live_open(const char *path, const struct strata_open_options *oo, struct vw_model *m,
		 struct vw_activity *acts, unsigned nacts, struct vw_live **out)
{
	struct vw_live *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	*l = (struct vw_live){ .m = m, .path = path, .acts = acts, .nacts = nacts };
	int rc = strata_follow_create(path, &(struct strata_follow_options){ .open = oo },
				      &l->f);
	bool said = false;
	while (!rc) {
		rc = first_window(l);
		if (!rc && !said) {
			fprintf(stderr, "strata view: waiting for %s to be written; "
				"Ctrl-C stops\n", path);
			said = true;
		}
		if (!rc)
			sleep_ms(LIVE_POLL_MS);
	}
	if (rc != 1) {
		vw_live_destroy(l);
		return rc < 0 ? rc : 1;
	}
	*out = l;
	return 0;
}

/* One poll, under the server's lock: STRATA_FOLLOW_LIVE, _DONE or a
 * negative errno. */
static int step(struct vw_live *l)
{
	struct strata_trace *t;
	uint64_t from, to;
	int rc = strata_follow_poll(l->f, &t, &from, &to);
	if (rc < 0 || rc == STRATA_FOLLOW_DONE || !t)
		return rc;
	int err = read_window(l, t, from, to);
	return err ? err : rc;
}

static void *follow(void *arg)
{
	struct vw_live *l = arg;
	int rc = STRATA_FOLLOW_LIVE;
	while (rc == STRATA_FOLLOW_LIVE && !atomic_load_explicit(&l->stop, memory_order_relaxed)) {
		sleep_ms(LIVE_POLL_MS);
		pthread_mutex_lock(l->lock);
		rc = step(l);
		if (rc == STRATA_FOLLOW_DONE) {
			/* the finished trace replaces the follower's: the
			 * model is then the ordinary viewer's */
			rc = l->done(l->arg);
		}
		pthread_mutex_unlock(l->lock);
	}
	if (rc < 0)
		fprintf(stderr, "strata view: following %s stopped: %s; serving what was read\n",
			l->path, strerror(-rc));
	return NULL;
}

int vw_live_start(struct vw_live *l, pthread_mutex_t *lock, vw_live_done_fn done, void *arg)
{
	l->lock = lock;
	l->done = done;
	l->arg = arg;
	int err = pthread_create(&l->thread, NULL, follow, l);
	l->running = !err;
	return -err;
}

uint64_t vw_live_seq(const struct vw_live *l)
{
	return l ? l->seq : 0;
}

void vw_live_destroy(struct vw_live *l)
{
	if (!l)
		return;
	if (l->running) {
		atomic_store_explicit(&l->stop, true, memory_order_relaxed);
		pthread_join(l->thread, NULL);
	}
	strata_follow_destroy(l->f);
	free(l->sig);
	free(l);
}
