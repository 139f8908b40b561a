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
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* A window's events into the model, its grid doubled first as often as
 * the window's end needs: so a grid holds every event, and a doubling,
 * which costs the bins and not the events, comes once per doubling of
 * the trace's span. */
static int read_window(struct vw_live *l, struct strata_trace *t, uint64_t from, uint64_t to)
{
	struct vw_model *m = l->m;
	int err = vw_model_adopt(m, t);
	if (err || to <= from)
		return err;
	/* to: the follower's bound, events at to wait for the next window */
	uint64_t last = to == UINT64_MAX ? strata_trace_end(t) : to - 1;
	while (!err && last > m->begin && last - m->begin >= m->gridlen)
		err = vw_model_double(m);
	if (!err)
		err = vw_model_read(m, from, to);
	if (!err)
		err = vw_model_settle(m);
	if (last > m->end)
		m->end = last;
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
	int err = vw_model_live_init(l->m, t, l->path, begin, grid);
	l->m->cache = "live";
	if (!err)
		err = read_window(l, t, from, to);
	return err ? err : 1;
}

int vw_live_open(const char *path, const struct strata_open_options *oo, struct vw_model *m,
		 struct vw_live **out)
{
	struct vw_live *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	*l = (struct vw_live){ .m = m, .path = path };
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
	free(l);
}
