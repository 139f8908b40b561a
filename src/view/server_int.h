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
/* Wait for the cache's writer: what it returned (0 when none ran). */
int srv_join_writer(struct server *s);

#endif /* STRATA_VIEW_SERVER_INT_H */
