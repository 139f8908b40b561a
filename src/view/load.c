// SPDX-License-Identifier: MIT
/* strata view: the model loaded from the cache, built (and cached in the background), or kept up with a trace still being written (docs/view.md, "The cache", "Live"). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server_int.h"

/* A pairer for each rule; one line naming the rule when it does not fit
 * the trace (a glob matching no event, a class without the field). */
static int make_activities(struct strata_trace *t, struct vw_activity *acts, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		char why[512];
		iv_pairer_destroy(acts[i].pairer); /* a live trace's, at its end */
		acts[i].pairer = NULL;
		if (vw_activity_make(t, &acts[i], why, sizeof(why))) {
			fprintf(stderr, "strata: view: --activity %s: %s\n", acts[i].name, why);
			return -1;
		}
	}
	return 0;
}

/* The writer's thread: the built model is not changed once built, and the
 * request thread only reads it meanwhile; the trace is not touched (the
 * counts it needs were taken at the end of the build). */
static void *write_cache(void *arg)
{
	struct server *s = arg;
	int err = vw_cache_write(&s->m, &s->ps, s->key, s->cache);
	/* release: the file is whole before the request thread, which
	 * acquires this in adopt_cache, maps it */
	atomic_store_explicit(&s->written, err ? err : 1, memory_order_release);
	return NULL;
}

/* Wait for the writer (at exit, or once it said it is done). */
int srv_join_writer(struct server *s)
{
	if (!s->writing)
		return 0;
	pthread_join(s->writer, NULL);
	s->writing = false;
	int w = atomic_load_explicit(&s->written, memory_order_acquire);
	if (w < 0)
		fprintf(stderr, "strata view: cannot write the cache %s: %s; serving without it\n",
			s->cache, strerror(-w));
	else
		fprintf(stderr, "strata view: cache %s written\n", s->cache);
	return w;
}

/* Between two answers, on the request thread: once the cache is written,
 * serve from its mapping (file pages the kernel may drop) and free the
 * built model, so the RSS is that of a cached open. */
void srv_adopt_cache(struct server *s)
{
	if (!s->writing || !atomic_load_explicit(&s->written, memory_order_acquire))
		return;
	if (srv_join_writer(s) < 0) {
		s->m.cache = "off";
		return;
	}
	struct vw_model c;
	if (vw_cache_open(&c, s->m.t, s->m.path, s->m.acts, s->m.nacts, s->key, s->cache, NULL)) {
		s->m.cache = "built"; /* written; served from the model built */
		return;
	}
	c.build_ms = s->m.build_ms;
	c.problems = s->m.problems;
	c.cache = "built";
	vw_model_fini(&s->m);
	s->m = c;
}

/* s->m just built (err: how that went): unless nocache, write it to the
 * cache in the background. A trace whose key changed during the build
 * (still recording) is not cached. */
int srv_cache_built(struct server *s, int err, bool nocache)
{
	s->m.cache = "off";
	if (err || nocache)
		return err;
	if (vw_cache_key(s->t, s->acts, s->nacts) != s->key) {
		fprintf(stderr, "strata view: %s changed while read: not cached\n", s->trace);
		return 0;
	}
	s->ps = *(const struct vw_problems *)s->oo.problem_arg;
	atomic_init(&s->written, 0);
	err = pthread_create(&s->writer, NULL, write_cache, s);
	if (err) {
		fprintf(stderr, "strata view: no thread to write the cache: %s\n", strerror(err));
		return 0;
	}
	s->writing = true;
	s->m.cache = "writing";
	return 0;
}

/* The file a model to be cached is built in (spill.c), in the cache's
 * folder; NULL (the heap) when it will not be cached, or when that
 * folder cannot have one (said once: the build then takes the model's
 * size in memory). */
struct vw_spill *srv_spill(const struct server *s, bool nocache)
{
	if (nocache)
		return NULL;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", s->cache);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	struct vw_spill *sp;
	int err = vw_spill_open(&sp, slash ? dir : ".");
	if (err)
		fprintf(stderr, "strata view: the model is built in memory, not in a file in "
			"%s (%s)\n", slash ? dir : ".",
			err == -EOPNOTSUPP ? "a file system in memory" : strerror(-err));
	return err ? NULL : sp;
}

/* Past VW_RSS_LIMIT, the answers' pages of the model's files are
 * unmapped (they stay in the page cache): the server's RSS does not grow
 * with the trace (docs/view.md, "Memory"). */
void srv_trim(struct server *s)
{
	if (vw_rss() < VW_RSS_LIMIT)
		return;
	if (s->m.map)
		madvise(s->m.map, s->m.map_size, MADV_DONTNEED);
	vw_spill_trim(s->m.spill);
}

/* Build the model and cache it (srv_cache_built); or, when the server
 * serves at once (quick.c), start that build in the background. */
static int build_and_cache(struct server *s, struct strata_trace *t, const char *trace,
			   struct vw_activity *acts, unsigned nacts, bool nocache)
{
	if (s->early)
		return srv_quick_start(s, nocache);
	return srv_cache_built(s, vw_model_build(&s->m, t, trace, s->oo.flags, acts, nacts, NULL,
						 srv_spill(s, nocache)),
			       nocache);
}

/* The model from the cache when it is this trace's as it is now, else
 * built (and cached unless nocache). */
static int load_model(struct server *s, struct strata_trace *t, const char *trace,
		      struct vw_activity *acts, unsigned nacts, struct vw_problems *ps,
		      bool nocache)
{
	if (nocache)
		return build_and_cache(s, t, trace, acts, nacts, true);
	int err = vw_cache_path(trace, acts, nacts, s->cache, sizeof(s->cache));
	if (err) {
		fprintf(stderr, "strata view: no cache folder (%s): serving without a cache; "
			"set XDG_CACHE_HOME to a writable folder\n",
			strerror(-err));
		return build_and_cache(s, t, trace, acts, nacts, true);
	}
	s->key = vw_cache_key(t, acts, nacts);
	err = vw_cache_open(&s->m, t, trace, acts, nacts, s->key, s->cache, ps);
	if (!err) {
		s->m.cache = "used";
		fprintf(stderr, "strata view: cache %s used\n", s->cache);
		return 0;
	}
	if (err != -ENOENT)
		fprintf(stderr, "strata view: cache %s %s: rebuilt\n", s->cache,
			err == -ESTALE ? "is of another state of the trace" :
			err == -ENOMEM ? "did not fit in memory" : "is damaged");
	return build_and_cache(s, t, trace, acts, nacts, false);
}

/* Whether a writer's mark is on the trace (format.md §1): a recorder or
 * daemon writing it, a program connected to its guardian, a relay
 * session. Opened without --live, it is shown as it is now and not
 * cached (view.md, "Live"). */
static bool being_written(const char *trace)
{
	static const char *const marks[] = { ".live", ".session", ".relay-session" };
	char p[PATH_MAX];
	for (unsigned i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (snprintf(p, sizeof(p), "%s/%s", trace, marks[i]) < (int)sizeof(p) &&
		    !access(p, F_OK))
			return true;
	return false;
}

/* The trace opened whole and its model loaded (from the cache, else
 * built): what `strata view` without --live does, and --live once the
 * recording ended. */
int srv_open_whole(struct server *s)
{
	int err = strata_trace_open(s->trace, &s->oo, &s->t);
	if (err) {
		fprintf(stderr, "strata: %s: cannot open the trace: %s\n", s->trace,
			strerror(-err));
		return err;
	}
	if (make_activities(s->t, s->acts, s->nacts))
		return -EINVAL;
	bool partial = being_written(s->trace);
	s->early = s->early && !partial; /* partial: shown as it is, at once */
	if (partial)
		fprintf(stderr, "strata view: %s is still being written: showing what is there "
			"now, not cached; strata view --live follows it\n", s->trace);
	err = load_model(s, s->t, s->trace, s->acts, s->nacts, s->oo.problem_arg,
			 s->nocache || partial);
	s->m.problems = s->oo.problem_arg;
	s->m.partial = partial;
	if (err)
		fprintf(stderr, "strata: %s: reading the trace: %s\n", s->trace, strerror(-err));
	return err;
}

/* The follower saw the recording end (live.c, under the lock): the
 * finished trace, opened as any other, replaces the live model. Its
 * problems were said while following: counted afresh, said once more. */
int srv_live_done(void *arg)
{
	struct server *s = arg;
	static struct vw_problems whole;
	struct vw_model live = s->m;
	s->m = (struct vw_model){ 0 };
	s->oo.problem_arg = &whole;
	int err = srv_open_whole(s);
	if (err) {
		vw_model_fini(&s->m);
		strata_trace_close(s->t);
		s->t = NULL;
		s->m = live;
		s->m.live = false;
		return err;
	}
	vw_model_fini(&live);
	fprintf(stderr, "strata view: %s is finished: %llu events\n", s->trace,
		(unsigned long long)s->m.nevents);
	return 0;
}

/* --live: the model kept up with the trace, or 1 when it is finished
 * (then opened whole). */
int srv_open_live(struct server *s)
{
	int err = vw_live_open(s->trace, &s->oo, &s->m, s->acts, s->nacts, &s->live);
	if (err < 0)
		fprintf(stderr, "strata: %s: cannot follow the trace: %s\n", s->trace,
			strerror(-err));
	else if (err)
		fprintf(stderr, "strata view: %s is not being written: shown as it is\n",
			s->trace);
	s->m.problems = s->oo.problem_arg;
	return err;
}
