/* SPDX-License-Identifier: MIT */
/* Opening a trace: its sub-traces' metadata, lookups and streams put
 * together (discover.c, classes.c, stream.c), problems reported, and the
 * trace's accessors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "open.h"

#define MAX_METADATA (64u << 20)

void rd_report(struct strata_trace *t, int kind, const char *file,
	       uint64_t offset, uint64_t count, uint64_t ts, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	t->nproblems++;
	if (!t->problem)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	struct strata_problem p = { kind, file, offset, count, ts, what };
	t->problem(&p, t->problem_arg);
}

/* sub's metadata parsed into sub->meta, its length into sub->meta_len. A
 * followed trace's metadata that does not parse may be half written: not
 * reported (its writer appends to it), -EAGAIN. */
int rd_load_metadata(struct strata_trace *t, struct rd_subtrace *sub)
{
	char *path = rd_path_join(sub->dir, "metadata");
	if (!path)
		return -ENOMEM;
	struct stat st;
	const char *kind;
	int rc = 0, fd = rd_open_regular(path, &st, &kind);
	char *text = NULL;
	if (fd < 0) {
		rd_report(t, STRATA_PROBLEM_METADATA, path, 0, 0, 0, "%s%s; sub-trace skipped",
			  kind ? kind : "cannot read: ",
			  kind ? ", not a regular file" : strerror(-fd));
		rc = -EINVAL;
		goto out;
	}
	if (st.st_size > MAX_METADATA) {
		rd_report(t, STRATA_PROBLEM_METADATA, path, 0, 0, 0,
			  "metadata larger than %u MiB", MAX_METADATA >> 20);
		rc = -EINVAL;
		goto out;
	}
	text = malloc(st.st_size + 1);
	if (!text) {
		rc = -ENOMEM;
		goto out;
	}
	ssize_t got = pread(fd, text, st.st_size, 0);
	if (got < 0)
		got = 0;
	char err[256];
	rc = rd_meta_parse(text, got, &sub->meta, err, sizeof(err));
	if (rc == 0)
		sub->meta_len = (uint64_t)got;
	if (rc == -EINVAL && t->follow) {
		rc = -EAGAIN;
	} else if (rc == -EINVAL) {
		long line = strtol(err + 5, NULL, 10);
		rd_report(t, STRATA_PROBLEM_METADATA, path, line, 0, 0,
			  "%s; sub-trace skipped", err);
	}
out:
	if (fd >= 0)
		close(fd);
	free(text);
	free(path);
	return rc;
}

/* The sub-traces discovery found whose metadata loads, into t->subs (the
 * directories taken from f); -EINVAL when none does. */
static int load_subtraces(struct strata_trace *t, struct rd_found *f)
{
	int rc;
	t->subs = calloc(f->subs.n ? f->subs.n : 1, sizeof(*t->subs));
	if (!t->subs)
		return -ENOMEM;
	for (size_t i = 0; i < f->subs.n; i++) {
		struct rd_subtrace *sub = &t->subs[t->nsubs];
		sub->dir = f->subs.v[i];
		f->subs.v[i] = NULL;
		rc = rd_load_metadata(t, sub);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0) {
			t->not_yet += rc == -EAGAIN;
			free(sub->dir);
			sub->dir = NULL;
			continue;
		}
		t->nsubs++;
	}
	if (!t->nsubs)
		return -EINVAL;
	return 0;
}

/* The trace's class table, all its sub-traces' classes (pub.index), and
 * the most fields of a class, of one the batch path takes; made again
 * when a followed trace learns classes (follow_read.c). */
int rd_trace_classes(struct strata_trace *t)
{
	free(t->classes);
	t->nclasses = t->max_nf = t->fast_nf = 0;
	for (unsigned i = 0; i < t->nsubs; i++)
		t->nclasses += t->subs[i].meta.nclasses;
	t->classes = calloc(t->nclasses ? t->nclasses : 1, sizeof(*t->classes));
	if (!t->classes)
		return -ENOMEM;
	unsigned k = 0;
	for (unsigned i = 0; i < t->nsubs; i++)
		for (unsigned j = 0; j < t->subs[i].meta.nclasses; j++) {
			struct rd_class *c = t->subs[i].meta.classes[j];
			c->pub.index = k;
			t->classes[k++] = &c->pub;
			if (c->pub.nfields > t->max_nf)
				t->max_nf = c->pub.nfields;
			if (c->fast_min != UINT32_MAX && c->pub.nfields > t->fast_nf)
				t->fast_nf = c->pub.nfields;
		}
	t->fast_nf = t->fast_nf < 2 ? 2 : (t->fast_nf + 1) & ~1u;
	return 0;
}

void rd_trace_clock(struct strata_trace *t)
{
	t->freq = t->subs[0].meta.freq;
	t->offset_s = t->subs[0].meta.offset_s;
	t->offset = t->subs[0].meta.offset;
	t->clock_name = t->subs[0].meta.clock_name ? t->subs[0].meta.clock_name : "";
	t->clock_desc = t->subs[0].meta.clock_desc ? t->subs[0].meta.clock_desc : "";
}

void rd_trace_sizes(struct strata_trace *t)
{
	t->total_size = 0;
	for (unsigned i = 0; i < t->nstreams; i++) {
		struct rd_stream *s = &t->streams[i];
		s->sub = &t->subs[s->subidx];
		t->total_size += s->size;
	}
}

int strata_trace_open(const char *path, const struct strata_open_options *opt,
		      struct strata_trace **out)
{
	struct strata_trace *t = calloc(1, sizeof(*t));
	struct rd_found f = { 0 };
	char *top = NULL;
	bool merge = opt && (opt->flags & STRATA_OPEN_MERGE);
	int rc;
	*out = NULL;
	if (!t)
		return -ENOMEM;
	if (opt) {
		t->problem = opt->problem;
		t->problem_arg = opt->problem_arg;
		t->follow = opt->flags & STRATA_OPEN_FOLLOW;
	}
	struct stat st;
	if (stat(path, &st) < 0) {
		rc = -errno;
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		rc = -ENOTDIR;
		goto fail;
	}
	/* without its trailing slashes: the paths found below it are
	 * reported as the user wrote them */
	size_t tl = strlen(path);
	while (tl > 1 && path[tl - 1] == '/')
		tl--;
	if (!(top = strndup(path, tl))) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = rd_find_subtraces(top, 0, &f)) < 0)
		goto fail;
	if (!f.subs.n && !f.broken.n) {
		rc = -ENOENT;
		goto fail;
	}
	if (!merge && (rc = rd_one_recording(t, &f, tl)) < 0)
		goto fail;
	for (size_t i = 0; i < f.broken.n; i++) {
		if (t->follow) {
			t->not_yet++; /* its metadata may come next */
			continue;
		}
		rd_report(t, STRATA_PROBLEM_METADATA, f.broken.v[i], 0, 0, 0, "%s", f.why.v[i]);
	}
	if ((rc = load_subtraces(t, &f)) < 0)
		goto fail;
	if (!merge && (rc = rd_one_clock(t)) < 0)
		goto fail;
	for (unsigned i = 0; i < t->nsubs; i++) {
		struct rd_subtrace *sub = &t->subs[i];
		if ((rc = rd_build_lookup(sub)) < 0 || (rc = rd_build_fast(sub)) < 0)
			goto fail;
		const char *vpid = rd_meta_env(&sub->meta, "vpid");
		sub->vpid = vpid ? (uint32_t)strtoul(vpid, NULL, 10) : 0;
		if ((rc = rd_add_streams(t, i)) < 0)
			goto fail;
	}
	/* class table, clock, time span */
	if ((rc = rd_trace_classes(t)) < 0)
		goto fail;
	rd_trace_clock(t);
	rd_trace_sizes(t);
	if ((rc = rd_load_offsets(t, tl)) < 0)
		goto fail;
	rd_trace_span(t);
	rc = 0;
	*out = t;
	t = NULL;
fail:
	rd_sl_free(&f.subs);
	rd_sl_free(&f.broken);
	rd_sl_free(&f.why);
	free(top);
	strata_trace_close(t);
	return rc;
}

void strata_trace_close(struct strata_trace *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->nstreams; i++) {
		struct rd_stream *s = &t->streams[i];
		if (s->map)
			munmap((void *)s->map, s->map_len);
		free(s->packets);
		free(s->path);
		free(s->idxpath);
	}
	free(t->streams);
	rd_offsets_free(t);
	for (unsigned i = 0; i < t->nsubs; i++) {
		for (unsigned mj = 0; mj < 64; mj++)
			free(t->subs[i].by_major[mj]);
		free(t->subs[i].fast);
		rd_meta_fini(&t->subs[i].meta);
		free(t->subs[i].dir);
	}
	free(t->subs);
	free(t->classes);
	free(t);
}

/* ---- accessors ---------------------------------------------------------------- */

unsigned strata_trace_nstreams(const struct strata_trace *t)
{
	return t->nstreams;
}

int strata_trace_stream(const struct strata_trace *t, unsigned i,
			struct strata_stream_info *o)
{
	if (i >= t->nstreams)
		return -EINVAL;
	const struct rd_stream *s = &t->streams[i];
	const char *pn = rd_meta_env(&s->sub->meta, "procname");
	uint64_t good = 0;
	for (uint64_t p = 0; p < s->npackets; p++)
		good += !(s->packets[p].flags & RD_PK_BAD);
	*o = (struct strata_stream_info){
		.path = s->path, .trace_dir = s->sub->dir, .cpu = s->cpu,
		.pid = s->sub->vpid, .procname = pn ? pn : "", .file_size = s->size,
		.packet_size = s->packet_size, .npackets = good,
		.begin = rd_sub_time(s->sub, s->begin),
		.end = rd_sub_time(s->sub, s->end), .discarded = s->discarded,
		.packets_lost = s->packets_lost, .subtrace = s->subidx,
	};
	return 0;
}

int strata_trace_packet(const struct strata_trace *t, unsigned stream, uint64_t i,
			struct strata_packet_info *o)
{
	if (stream >= t->nstreams || i >= t->streams[stream].npackets)
		return -EINVAL;
	const struct rd_stream *s = &t->streams[stream];
	const struct rd_packet *p = &s->packets[i];
	if ((p->flags & RD_PK_BAD) || !p->content)
		return -ENODATA;
	*o = (struct strata_packet_info){
		.begin = rd_sub_time(s->sub, p->ts_begin), .end = rd_sub_time(s->sub, p->ts_end),
		.content = p->content, .discarded = p->discarded, .seq = p->seq,
	};
	return 0;
}

unsigned strata_trace_nsubtraces(const struct strata_trace *t)
{
	return t->nsubs;
}

const char *strata_trace_env(const struct strata_trace *t, unsigned sub,
			     const char *key)
{
	return sub < t->nsubs ? rd_meta_env(&t->subs[sub].meta, key) : NULL;
}

unsigned strata_trace_nclasses(const struct strata_trace *t)
{
	return t->nclasses;
}

const struct strata_event_class *strata_trace_class(const struct strata_trace *t,
						    unsigned index)
{
	return index < t->nclasses ? t->classes[index] : NULL;
}

void strata_trace_clock(const struct strata_trace *t, struct strata_clock_info *o)
{
	o->name = t->clock_name;
	o->description = t->clock_desc;
	o->freq = t->freq;
	o->offset_s = t->offset_s;
	o->offset = t->offset;
}

uint64_t strata_trace_begin(const struct strata_trace *t)
{
	return t->begin;
}

uint64_t strata_trace_end(const struct strata_trace *t)
{
	return t->end;
}

uint64_t strata_trace_size(const struct strata_trace *t)
{
	return t->total_size;
}

uint64_t strata_trace_nproblems(const struct strata_trace *t)
{
	return t->nproblems;
}

uint64_t strata_trace_ticks_to_ns(const struct strata_trace *t, uint64_t ticks)
{
	if (t->freq == 1000000000)
		return ticks;
	return (uint64_t)((unsigned __int128)ticks * 1000000000u / t->freq);
}

uint64_t strata_trace_ns_to_ticks(const struct strata_trace *t, uint64_t ns)
{
	if (t->freq == 1000000000)
		return ns;
	unsigned __int128 v = (unsigned __int128)ns * t->freq / 1000000000u;
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

int64_t strata_trace_wall_ns(const struct strata_trace *t, uint64_t ts)
{
	__int128 ticks = (__int128)ts + t->offset;
	__int128 ns = ticks * 1000000000 / (__int128)t->freq;
	return (int64_t)((__int128)t->offset_s * 1000000000 + ns);
}
