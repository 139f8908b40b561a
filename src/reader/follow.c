/* SPDX-License-Identifier: MIT */
/* Following a trace while it is written: the trace kept open and brought
 * up to date at each poll (follow_read.c), and the window of time that
 * every stream has passed (docs/reader.md, "Following a live trace"). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "open.h"

struct strata_follow {
	char *path;
	char *top;        /* path without its trailing slashes */
	struct strata_open_options open;
	strata_problem_fn user_fn;
	void *user_arg;
	struct strata_trace *t;
	uint64_t from;    /* events before it were handed out */
	bool done;
	/* problems already reported: a poll may find them again (another
	 * recording appearing; the last pass, of what was not whole) */
	uint64_t *seen;
	size_t nseen, capseen;
	/* per stream file, the end of its last whole packet at the last poll */
	struct fl_known {
		char *path;
		uint64_t safe;
	} *known;
	size_t nknown, capknown;
};

static uint64_t problem_key(const struct strata_problem *p)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const char *c = p->file ? p->file : ""; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	h = (h ^ (uint64_t)p->kind) * 1099511628211ull;
	return (h ^ p->offset) * 1099511628211ull;
}

/* The user's callback, once per problem over all polls (a linear
 * search: a trace's problems are few, and each is looked up once per
 * poll at most). */
static void follow_problem(const struct strata_problem *p, void *arg)
{
	struct strata_follow *f = arg;
	uint64_t k = problem_key(p);
	for (size_t i = 0; i < f->nseen; i++)
		if (f->seen[i] == k)
			return;
	if (f->nseen == f->capseen) {
		size_t cap = f->capseen ? 2 * f->capseen : 16;
		uint64_t *n = realloc(f->seen, cap * sizeof(*n));
		if (!n)
			return; /* said again next time rather than lost */
		f->seen = n;
		f->capseen = cap;
	}
	f->seen[f->nseen++] = k;
	if (f->user_fn)
		f->user_fn(p, f->user_arg);
}

int strata_follow_create(const char *path, const struct strata_follow_options *opt,
			 struct strata_follow **out)
{
	*out = NULL;
	if (!path)
		return -EINVAL;
	struct strata_follow *f = calloc(1, sizeof(*f));
	size_t tl = strlen(path);
	while (tl > 1 && path[tl - 1] == '/')
		tl--;
	if (!f || !(f->path = strdup(path)) || !(f->top = strndup(path, tl))) {
		if (f)
			free(f->path);
		free(f);
		return -ENOMEM;
	}
	if (opt && opt->open) {
		f->open = *opt->open;
		f->user_fn = opt->open->problem;
		f->user_arg = opt->open->problem_arg;
	}
	f->open.flags |= STRATA_OPEN_FOLLOW;
	f->open.problem = follow_problem;
	f->open.problem_arg = f;
	*out = f;
	return 0;
}

void strata_follow_destroy(struct strata_follow *f)
{
	if (!f)
		return;
	strata_trace_close(f->t);
	for (size_t i = 0; i < f->nknown; i++)
		free(f->known[i].path);
	free(f->known);
	free(f->seen);
	free(f->top);
	free(f->path);
	free(f);
}

static bool file_exists(const char *dir, const char *name)
{
	struct stat st;
	char *p = rd_path_join(dir, name);
	bool r = p && lstat(p, &st) == 0;
	free(p);
	return r;
}

/* A writer's marks on the recording whose root is the first n bytes of
 * dir: a program connected to its guardian (.session), a recorder or
 * daemon writing it (.live), a relay session open on it (.relay-session,
 * relay.md §1). */
static bool being_written(const char *dir, size_t n)
{
	static const char *const marks[] = { ".session", ".live", ".relay-session" };
	char *root = strndup(dir, n);
	bool r = !root; /* no memory: not known to be finished */
	for (unsigned i = 0; root && !r && i < 3; i++)
		r = file_exists(root, marks[i]);
	free(root);
	return r;
}

/* format.md §1, §7: no writer's mark on the trace followed nor on any
 * recording in it (a relay's directory followed as one, with --merge,
 * holds a recording per host), no consumer holding a sub-trace's
 * reserve, every stream's index published. */
static bool trace_complete(const struct strata_follow *f, const struct strata_trace *t)
{
	struct stat st;
	if (!t->nstreams)
		return false; /* not begun: a consumer's first ring is to come */
	if (being_written(f->path, strlen(f->path)))
		return false;
	for (unsigned i = 0; i < t->nsubs; i++) {
		const char *d = t->subs[i].dir;
		if (file_exists(d, ".reserve") ||
		    being_written(d, rd_recording_root(d, strlen(f->top))))
			return false;
	}
	for (unsigned i = 0; i < t->nstreams; i++)
		if (t->streams[i].map_len && stat(t->streams[i].idxpath, &st) < 0)
			return false;
	return true;
}

/* A sub-trace's live timer beacon (docs/record.md, "Live reading"): the
 * trace time before which its writer has written every event, or 0. The
 * time and its complement: a torn or foreign record reads as none. */
static uint64_t live_time(const char *dir)
{
	uint64_t rec[2] = {0, 0};
	char *p = rd_path_join(dir, ".live-time");
	struct stat st;
	const char *kind;
	int fd = p ? rd_open_regular(p, &st, &kind) : -1;
	free(p);
	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, rec, sizeof(rec), 0);
	close(fd);
	return n == (ssize_t)sizeof(rec) && rec[1] == ~rec[0] ? rec[0] : 0;
}

/* The end of stream s's last whole packet: it has written everything
 * before it (its next packet begins there). 0: no packet yet. On the
 * trace's time base: moved by its host's clock offset (offset.c), as the
 * events read through the windows are. */
static uint64_t stream_safe(const struct rd_stream *s)
{
	for (uint64_t k = s->npackets; k-- > 0;)
		if (!(s->packets[k].flags & RD_PK_BAD))
			return rd_sub_time(s->sub, s->packets[k].ts_end);
	return 0;
}

static struct fl_known *known_of(struct strata_follow *f, const char *path)
{
	for (size_t i = 0; i < f->nknown; i++)
		if (!strcmp(f->known[i].path, path))
			return &f->known[i];
	if (f->nknown == f->capknown) {
		size_t cap = f->capknown ? 2 * f->capknown : 16;
		struct fl_known *n = realloc(f->known, cap * sizeof(*n));
		if (!n)
			return NULL;
		f->known = n;
		f->capknown = cap;
	}
	char *p = strdup(path);
	if (!p)
		return NULL;
	f->known[f->nknown] = (struct fl_known){ p, 0 };
	return &f->known[f->nknown++];
}

/* Events of stream i in (after, before): none had been written when the
 * windows up to `before` were handed out. */
static uint64_t count_between(struct strata_trace *t, unsigned i, uint64_t after,
			      uint64_t before)
{
	struct strata_filter *flt = NULL;
	struct strata_iter *it = NULL;
	const struct strata_event *ev;
	uint64_t n = 0;
	struct strata_iter_options io = { .stream = (int)i };
	if (strata_filter_create(t, &flt) < 0 ||
	    strata_filter_time(flt, after + 1, before - 1) < 0)
		goto out;
	io.filter = flt;
	if (strata_iter_create(t, &io, &it) < 0)
		goto out;
	strata_iter_seek(it, after + 1);
	while (strata_iter_next(it, &ev) > 0)
		n++;
out:
	strata_iter_destroy(it);
	strata_filter_destroy(flt);
	return n;
}

/*
 * Late events, never passed over in silence: a stream whose last whole
 * packet ended at `safe` when the windows before f->from were handed out
 * had written none of its events between the two; any it shows now came
 * after their window (a writer breaking the rules of docs/reader.md).
 */
static void check_late(struct strata_follow *f, struct strata_trace *t)
{
	for (unsigned i = 0; i < t->nstreams; i++) {
		struct rd_stream *s = &t->streams[i];
		struct fl_known *k = known_of(f, s->path);
		uint64_t safe = stream_safe(s), n;
		if (!k || safe <= k->safe)
			continue;
		if (k->safe + 1 < f->from && (n = count_between(t, i, k->safe, f->from)))
			rd_report(t, STRATA_PROBLEM_LATE, s->path, 0, n, k->safe,
				  "%" PRIu64 " event%s written after the follow had passed "
				  "their time; not shown", n, n == 1 ? "" : "s");
		k->safe = safe;
	}
}

/* Sub-trace `sub` has no stream file that the trace lacks (a CPU's first
 * ring, made since the poll looked): its beacon may cover that one's
 * events too. */
static bool same_streams(const struct strata_trace *t, unsigned sub)
{
	unsigned have = 0, now = 0;
	for (unsigned i = 0; i < t->nstreams; i++)
		have += t->streams[i].subidx == sub;
	DIR *d = opendir(t->subs[sub].dir);
	if (!d)
		return false;
	for (struct dirent *de; (de = readdir(d));)
		now += rd_stream_name(de->d_name);
	closedir(d);
	return now <= have;
}

/* A sub-trace at one poll: its beacon, and whether it may still make a
 * stream that the poll does not see. */
struct fl_sub {
	uint64_t beacon; /* on the trace's time base; 0: none, or not believed */
	bool timed;      /* its writer publishes beacons */
	unsigned nstreams, open; /* its streams, those not ended */
};

/*
 * The end of the window: the earliest point that some stream may still
 * write an event before. A host's clock offset (offset.c), which its
 * relay refines as it measures (relay.md §7), is read at each poll until
 * its recording holds a whole packet or a beacon: then kept, since the
 * windows put its events on the time base it gives. A stream whose index
 * is published has ended; any other has written everything before its
 * last whole packet's end (the next one begins there), and everything
 * before its sub-trace's live timer beacon, which covers its quiet CPUs
 * too. A stream not seen yet (a CPU's first ring, its file not made when
 * the poll looks) may hold events before the others' points: a sub-trace
 * whose writer publishes beacons, and which may still make one, is taken
 * as written up to its beacon only, which covers every ring it has.
 */
static uint64_t follow_horizon(const struct strata_follow *f, struct strata_trace *t)
{
	struct stat st;
	uint64_t h = UINT64_MAX;
	if (t->not_yet)
		return 0; /* a part not readable yet may hold anything */
	struct fl_sub *sub = calloc(t->nsubs + 1, sizeof(*sub));
	if (!sub)
		return 0; /* nothing is known: the next poll tries again */
	for (unsigned i = 0; i < t->nsubs; i++) {
		sub[i].beacon = live_time(t->subs[i].dir);
		sub[i].timed = sub[i].beacon != 0;
		if (sub[i].beacon && !same_streams(t, i))
			sub[i].beacon = 0;
		if (sub[i].beacon) {
			sub[i].beacon = rd_sub_time(&t->subs[i], sub[i].beacon);
			rd_offset_keep(t, t->subs[i].dir, strlen(f->top));
		}
	}
	for (unsigned i = 0; i < t->nstreams; i++) {
		const struct rd_stream *s = &t->streams[i];
		struct fl_sub *b = &sub[s->subidx];
		b->nstreams++;
		if (s->map_len && stat(s->idxpath, &st) == 0)
			continue;
		b->open++;
		uint64_t safe = stream_safe(s);
		if (safe)
			rd_offset_keep(t, s->sub->dir, strlen(f->top));
		/* the beacon was written after the packets it covers: only
		 * a stream that has not grown since the poll read it holds
		 * them */
		if (safe < b->beacon && stat(s->path, &st) == 0 &&
		    (uint64_t)st.st_size == s->map_len)
			safe = b->beacon;
		if (safe < h)
			h = safe;
	}
	for (unsigned i = 0; i < t->nsubs; i++)
		if (sub[i].timed && (sub[i].open || !sub[i].nstreams) && sub[i].beacon < h)
			h = sub[i].beacon;
	free(sub);
	return h == UINT64_MAX ? 0 : h; /* no stream yet: nothing is known */
}

/*
 * The trace as it is now: opened at the first poll that finds one, then
 * brought up to date in place, each poll reading only what is new
 * (follow_read.c).
 *
 * An open reads each sub-trace's metadata before its streams: packets
 * written in between may hold events of classes the metadata read does
 * not declare (dropped as unknown ids, or read as the writer's raw
 * placeholder), and a window handed out is never handed out again. So
 * the first poll brings the trace up to date at once, as every later one
 * does: the streams, then the metadata again where it changed, which then
 * declares every class of the packets read (docs/reader.md, "Following a
 * live trace").
 */
static int follow_read(struct strata_follow *f)
{
	bool merge = f->open.flags & STRATA_OPEN_MERGE;
	if (f->t)
		return rd_trace_refresh(f->t, f->top, merge);
	int rc = strata_trace_open(f->path, &f->open, &f->t);
	if (rc == -ENOENT || rc == -EINVAL)
		return 1; /* not there, or nothing readable, yet */
	return rc < 0 ? rc : rd_trace_refresh(f->t, f->top, merge);
}

int strata_follow_poll(struct strata_follow *f, struct strata_trace **t, uint64_t *from,
		       uint64_t *to)
{
	*t = NULL;
	*from = *to = f->from;
	if (f->done)
		return STRATA_FOLLOW_DONE;
	int rc = follow_read(f);
	if (rc)
		return rc < 0 ? rc : STRATA_FOLLOW_LIVE;
	bool complete = trace_complete(f, f->t);
	if (complete) {
		/* it completed while this poll read it, perhaps after some
		 * stream was read: once more, now of the finished files,
		 * reporting what is missing now */
		f->t->follow = false;
		if ((rc = follow_read(f)) < 0)
			return rc;
		f->done = true;
	}
	*t = f->t;
	check_late(f, f->t);
	uint64_t h = complete ? UINT64_MAX : follow_horizon(f, f->t);
	if (h > f->from) {
		*to = h;
		f->from = h;
	}
	return complete ? STRATA_FOLLOW_DONE : STRATA_FOLLOW_LIVE;
}
