// SPDX-License-Identifier: MIT
/* strata view's server state, shared by the command and HTTP side (server.c) and the model's loading (load.c). */
#ifndef STRATA_VIEW_SERVER_INT_H
#define STRATA_VIEW_SERVER_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "view.h"

#define TOKEN_HEX 32 /* 128 random bits */

struct server {
	struct vw_model m;
	/* Held by the request thread while it answers and by the live
	 * follower's thread while it extends m (live.c): the model and its
	 * trace belong to one thread at a time. */
	pthread_mutex_t lock;
	struct vw_live *live;    /* NULL: not following */
	struct strata_trace *t;  /* the trace opened whole, or NULL */
	const char *trace;
	struct vw_activity *acts;
	unsigned nacts;
	bool nocache;
	struct strata_open_options oo;
	char token[TOKEN_HEX + 1];
	unsigned port;
	/* The cache written by a thread of its own after a build (docs/view.md,
	 * "The cache"), so that the first open's first paint does not wait for
	 * a write of the model's size. */
	pthread_t writer;
	bool writing;            /* the writer was started and not joined */
	atomic_int written;      /* 0: writing; 1: written; else -errno */
	uint64_t key;
	struct vw_problems ps;   /* what the writer writes: the reader's
				  * problems as they were after the build */
	char cache[PATH_MAX];
	/* Serving at once while the model is built (quick.c, docs/view.md,
	 * "Serve at once"): the packets' overview answers meanwhile; the
	 * builder's thread swaps the model in under the lock and clears
	 * `building`, read under the lock. */
	bool early;              /* serve before the model is ready */
	bool building;
	int build_err;           /* the background build failed: 0 or -errno */
	struct vw_quick *quick;  /* the packets' overview, or NULL */
	struct vw_progress progress;
	pthread_t builder;
	bool builder_started;
	bool build_nocache;
};

/* ---- load.c: the model, from the cache, a build or the follower --------- */

/* The trace opened whole and its model loaded: 0 or a negative errno. */
int srv_open_whole(struct server *s);
/* --live: the model kept up with the trace; 1 when it is finished (then
 * to be opened whole), or a negative errno. */
int srv_open_live(struct server *s);
/* The follower saw the recording end (vw_live_done_fn). */
int srv_live_done(void *arg);
/* Between two answers: serve from the cache once the writer wrote it. */
void srv_adopt_cache(struct server *s);
/* After an answer: the model's file pages unmapped when the RSS is high. */
void srv_trim(struct server *s);
/* The file to build a model in when it is to be cached, or NULL. */
struct vw_spill *srv_spill(const struct server *s, bool nocache);
/* Wait for the cache's writer: what it returned (0 when none ran). */
int srv_join_writer(struct server *s);
/* After a build of s->m (err: its result): the cache written in the
 * background unless nocache. Returns err. */
int srv_cache_built(struct server *s, int err, bool nocache);

/* ---- quick.c: serve at once, build behind ----------------------------- */

/* The packets' overview made (milliseconds) and the model's build started
 * on a thread of its own: 0 or a negative errno. */
int srv_quick_start(struct server *s, bool nocache);
/* Stop a build under way and wait for its thread (at exit); then free
 * the overview. */
void srv_quick_stop(struct server *s);
/* The API's answer while the model is built (under the lock): the
 * summary and overview from the packets, 503 for the rest. Returns the
 * HTTP status; the body in out. */
unsigned srv_quick_api(struct server *s, const char *what, unsigned w, struct vw_buf *out);
/* api/overview: the packets' density (any time). Returns 200, or 404
 * when there is none (a live trace). */
unsigned vw_quick_overview(const struct vw_quick *q, unsigned w, struct vw_buf *out);

#endif /* STRATA_VIEW_SERVER_INT_H */
