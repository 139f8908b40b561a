/* SPDX-License-Identifier: MIT */
/* A sub-trace's streams: listed, opened, mapped and indexed, and those
 * that cannot be read reported. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "open.h"

static char *index_path(const char *dir, const char *name)
{
	char *p = malloc(strlen(dir) + strlen(name) + 12);
	if (p)
		sprintf(p, "%s/index/%s.idx", dir, name);
	return p;
}

static int open_stream(struct strata_trace *t, struct rd_stream *s)
{
	struct stat st;
	const char *kind;
	int fd = rd_open_regular(s->path, &st, &kind), rc = 0;
	if (fd < 0) {
		/* rd_add_streams took a regular file: it changed since */
		rd_report(t, STRATA_PROBLEM_MISSING, s->path, 0, rd_index_packets(s->idxpath), 0,
			  "%s%s; stream skipped", kind ? kind : "cannot open: ",
			  kind ? ", not a regular file" : strerror(-fd));
		return 0;
	}
	s->size = st.st_size;
	if (!s->size) {
		/* a stream with no packet yet is normal, unless its index
		 * lists some */
		uint64_t listed = rd_index_packets(s->idxpath);
		if (listed)
			rd_report(t, STRATA_PROBLEM_MISSING, s->path, 0, listed, 0,
				  "empty file, but its index lists %" PRIu64 " packet%s; "
				  "not read", listed, listed == 1 ? "" : "s");
		goto out;
	}
	void *m = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, 0, 0, 0, "cannot map: %s",
			  strerror(errno));
		s->size = 0;
		goto out;
	}
	s->map = m;
	s->map_len = s->size;
	madvise(m, s->size, MADV_SEQUENTIAL);
	if (s->size < RD_HEADER_SIZE) {
		rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, 0, 0, 0,
			  "file of %" PRIu64 " bytes is shorter than a packet header", s->size);
		goto out;
	}
	s->packet_size = rd_find_packet_size(s, fd);
	if (!s->packet_size) {
		rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, 0, 0, 0,
			  "no valid packet header found; stream skipped");
		goto out;
	}
	rc = rd_load_index(t, s, fd);
	if (rc == -ENOMEM)
		goto out;
	if (rc == 0) {
		/* the entries the stream's totals and time span rest on: the
		 * first and the last (rd_load_index checked that the others lie
		 * in order between them) */
		if (s->npackets && !rd_packet_check(t, s, 0))
			rd_packet_check(t, s, s->npackets - 1);
	} else {
		if ((rc = rd_build_index(t, s, fd, 0)) < 0)
			goto out;
		/* the header pages it touched are not needed until read:
		 * keep resident memory independent of the trace size */
		madvise((void *)s->map, s->size, MADV_DONTNEED);
	}
	rd_stream_totals(s, 0);
out:
	close(fd);
	return rc;
}

static int add_stream(struct strata_trace *t, unsigned subidx, const char *name)
{
	struct rd_subtrace *sub = &t->subs[subidx];
	struct rd_stream *ns = realloc(t->streams, (t->nstreams + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	t->streams = ns;
	struct rd_stream *s = &ns[t->nstreams];
	memset(s, 0, sizeof(*s));
	s->sub = NULL; /* fixed up once t->subs stops moving */
	s->subidx = subidx;
	s->path = rd_path_join(sub->dir, name);
	s->idxpath = index_path(sub->dir, name);
	if (!s->path || !s->idxpath) {
		free(s->path);
		free(s->idxpath);
		return -ENOMEM;
	}
	t->nstreams++;
	s->cpu = rd_stream_name(name) ? (uint32_t)strtoul(name + 3, NULL, 10) : UINT32_MAX;
	s->sclass = sub->meta.sclass;
	int rc = open_stream(t, s);
	if (!rc && s->cpu == UINT32_MAX)
		for (uint64_t k = 0; k < s->npackets; k++)
			if (!(s->packets[k].flags & (RD_PK_BAD | RD_PK_UNCHECKED))) {
				s->cpu = s->packets[k].cpu;
				break;
			}
	return rc;
}

/*
 * A stream that cannot be read (name: not a regular file, or only its
 * index is there): reported when it would hold events, one line each,
 * instead of being passed over (format.md §1: cpu<N> and index/cpu<N>.idx
 * are a stream).
 */
static void missing_stream(struct strata_trace *t, const char *dir, const char *name)
{
	char *p = rd_path_join(dir, name), *idx = index_path(dir, name);
	struct stat st;
	if (t->follow) {
		t->not_yet++; /* its file may come next */
	} else if (p && idx) {
		uint64_t listed = rd_index_packets(idx);
		char lists[64] = "";
		if (listed)
			snprintf(lists, sizeof(lists), " (its index lists %" PRIu64 " packet%s)",
				 listed, listed == 1 ? "" : "s");
		int e = stat(p, &st) < 0 ? errno : 0;
		if (!e)
			rd_report(t, STRATA_PROBLEM_MISSING, p, 0, listed, 0,
				  "%s, not a regular file%s; not read", rd_not_regular(st.st_mode),
				  lists);
		else if (lstat(p, &st) == 0 || listed)
			rd_report(t, STRATA_PROBLEM_MISSING, p, 0, listed, 0,
				  "cannot read: %s%s; not read", strerror(e), lists);
	}
	free(p);
	free(idx);
}

/* Whether sub-trace subidx has stream `name` already (a followed trace's
 * sub-trace read again for its new streams, follow_read.c). */
static bool have_stream(const struct strata_trace *t, unsigned subidx, const char *name)
{
	size_t dl = strlen(t->subs[subidx].dir);
	for (unsigned i = 0; i < t->nstreams; i++) {
		const char *p = t->streams[i].path;
		if (t->streams[i].subidx == subidx && !strncmp(p, t->subs[subidx].dir, dl) &&
		    p[dl] == '/' && !strcmp(p + dl + 1, name))
			return true;
	}
	return false;
}

int rd_add_streams(struct strata_trace *t, unsigned subidx)
{
	const char *dir = t->subs[subidx].dir;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct rd_strlist names = { 0 };
	struct dirent *de;
	int rc = 0;
	while (!rc && (de = readdir(d)))
		if (de->d_name[0] != '.' && strncmp(de->d_name, "metadata", 8) &&
		    strcmp(de->d_name, "index"))
			rc = rd_sl_push(&names, strdup(de->d_name));
	closedir(d);
	/* streams whose index alone is there */
	char *ip = rd_path_join(dir, "index");
	d = ip ? opendir(ip) : NULL;
	free(ip);
	while (!rc && d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n <= 4 || strcmp(de->d_name + n - 4, ".idx"))
			continue;
		de->d_name[n - 4] = 0;
		if (rd_stream_name(de->d_name))
			rc = rd_sl_push(&names, strdup(de->d_name));
	}
	if (d)
		closedir(d);
	if (names.n)
		qsort(names.v, names.n, sizeof(char *), rd_natcmp_p);
	for (size_t i = 0; !rc && i < names.n; i++) {
		if ((i && !strcmp(names.v[i], names.v[i - 1])) ||
		    have_stream(t, subidx, names.v[i]))
			continue;
		char *p = rd_path_join(dir, names.v[i]);
		struct stat st;
		bool reg = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
		free(p);
		if (reg)
			rc = add_stream(t, subidx, names.v[i]);
		else if (rd_stream_name(names.v[i]))
			missing_stream(t, dir, names.v[i]);
	}
	rd_sl_free(&names);
	return rc;
}
