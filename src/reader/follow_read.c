/* SPDX-License-Identifier: MIT */
/* A followed trace brought up to date in place: its streams' new whole
 * packets, new streams and sub-traces, and metadata that grew, so that a
 * poll reads what is new and nothing else (docs/reader.md, "Following a
 * live trace", "Cost"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "open.h"

/*
 * Stream s's file as it is now: the part it grew by mapped, and its new
 * whole packets indexed (rd_extend_index resumes where the last scan
 * stopped: at a packet not yet whole, or a zero-filled tail). A file that
 * shrank or went away is left as it was read: its packets were whole.
 */
static int grow_stream(struct strata_trace *t, struct rd_stream *s)
{
	struct stat st;
	const char *kind;
	int rc = 0, fd = rd_open_regular(s->path, &st, &kind);
	if (fd < 0)
		return 0;
	uint64_t size = (uint64_t)st.st_size, k0 = s->npackets, from = s->size;
	/* the last pass reads an unchanged tail again: what was not whole
	 * then is reported now */
	if (size < s->size || (size == s->size && t->follow))
		goto out;
	if (size > s->map_len) {
		/* mapped anew, not mremap()ed: the cursors' madvise() of
		 * parts of the old mapping split it, which mremap refuses
		 * (EFAULT); no cursor outlives a poll */
		void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			goto out; /* the next poll tries again */
		if (s->map)
			munmap((void *)s->map, s->map_len);
		s->map = m;
		s->map_len = size;
	}
	if (!s->packet_size) {
		/* empty when it was opened: its first header decides */
		s->size = size;
		if (size < RD_HEADER_SIZE || !(s->packet_size = rd_find_packet_size(s, fd))) {
			s->size = 0;
			goto out;
		}
		s->size = from = 0;
	}
	rc = rd_extend_index(t, s, fd, size);
	rd_stream_totals(s, k0);
	/* the header pages read are not needed until the events are:
	 * resident memory independent of the trace's length */
	from &= ~(uint64_t)4095;
	if (size > from)
		madvise((void *)(s->map + from), size - from, MADV_DONTNEED);
	for (uint64_t k = k0; s->cpu == UINT32_MAX && k < s->npackets; k++)
		if (!(s->packets[k].flags & RD_PK_BAD))
			s->cpu = s->packets[k].cpu; /* no cpu<N> name: its packets' */
out:
	close(fd);
	return rc;
}

static void lookups_free(struct rd_subtrace *sub)
{
	for (unsigned mj = 0; mj < 64; mj++) {
		free(sub->by_major[mj]);
		sub->by_major[mj] = NULL;
		sub->nminor[mj] = 0;
	}
	free(sub->fast);
	sub->fast = NULL;
}

static int lookups_build(struct rd_subtrace *sub)
{
	int rc = rd_build_lookup(sub);
	if (!rc)
		rc = rd_build_fast(sub);
	const char *vpid = rd_meta_env(&sub->meta, "vpid");
	sub->vpid = vpid ? (uint32_t)strtoul(vpid, NULL, 10) : 0;
	return rc;
}

/*
 * A sub-trace's metadata that grew since it was parsed: its writer
 * appended event classes (registered while recording), which the events
 * of the packets already read may use. Parsed again whole (it is small
 * beside the streams); a half-written append does not parse, and waits
 * for the next poll. 1: new classes, 0: none, -ENOMEM.
 */
static int metadata_grown(struct strata_trace *t, struct rd_subtrace *sub)
{
	struct stat st;
	char *p = rd_path_join(sub->dir, "metadata");
	int rc = p && stat(p, &st) == 0 && (uint64_t)st.st_size != sub->meta_len;
	free(p);
	if (!rc)
		return 0;
	struct rd_subtrace nsub = { .dir = sub->dir };
	rc = rd_load_metadata(t, &nsub);
	if (rc == -EAGAIN)
		t->not_yet++; /* holds the window: its classes may be used */
	if (rc < 0)
		return rc == -ENOMEM ? rc : 0;
	lookups_free(sub);
	rd_meta_fini(&sub->meta);
	sub->meta = nsub.meta;
	sub->meta_len = nsub.meta_len;
	return lookups_build(sub) < 0 ? -ENOMEM : 1;
}

static bool have_sub(const struct strata_trace *t, const char *dir)
{
	for (unsigned i = 0; i < t->nsubs; i++)
		if (!strcmp(t->subs[i].dir, dir))
			return true;
	return false;
}

/* A sub-trace that appeared (a fork child, a program joining, a relay's
 * copy gaining a host), taking dir. 1: added, 0: not readable yet. */
static int add_sub(struct strata_trace *t, char *dir)
{
	struct rd_subtrace *ns = realloc(t->subs, (t->nsubs + 1) * sizeof(*ns));
	if (!ns) {
		free(dir);
		return -ENOMEM;
	}
	t->subs = ns; /* streams' s->sub fixed by rd_trace_sizes */
	struct rd_subtrace *sub = &ns[t->nsubs];
	memset(sub, 0, sizeof(*sub));
	sub->dir = dir;
	int rc = rd_load_metadata(t, sub);
	if (rc < 0) {
		t->not_yet += rc == -EAGAIN;
		free(dir);
		return rc == -ENOMEM ? rc : 0;
	}
	t->nsubs++;
	if (lookups_build(sub) < 0)
		return -ENOMEM;
	return (rc = rd_add_streams(t, t->nsubs - 1)) < 0 ? rc : 1;
}

/* New sub-traces under top; those without metadata yet counted (a
 * follower waits for them) or, on the last pass, reported. */
static int new_subs(struct strata_trace *t, const char *top, bool merge, bool *changed)
{
	struct rd_found f = { 0 };
	int rc = rd_find_subtraces(top, 0, &f);
	if (rc < 0)
		goto out;
	if (!merge && (rc = rd_one_recording(t, &f, strlen(top))) < 0)
		goto out;
	for (size_t i = 0; i < f.broken.n; i++) {
		if (t->follow)
			t->not_yet++;
		else
			rd_report(t, STRATA_PROBLEM_METADATA, f.broken.v[i], 0, 0, 0, "%s",
				  f.why.v[i]);
	}
	for (size_t i = 0; i < f.subs.n && rc >= 0; i++) {
		if (have_sub(t, f.subs.v[i]))
			continue;
		rc = add_sub(t, f.subs.v[i]);
		f.subs.v[i] = NULL;
		*changed |= rc > 0;
	}
out:
	rd_sl_free(&f.subs);
	rd_sl_free(&f.broken);
	rd_sl_free(&f.why);
	return rc < 0 ? rc : 0;
}

int rd_trace_refresh(struct strata_trace *t, const char *top, bool merge)
{
	unsigned nsubs = t->nsubs;
	bool changed = false;
	int rc = 0;

	t->not_yet = 0;
	/* the streams first, then the metadata: a class is appended to
	 * the metadata before its first event is written, so the metadata
	 * read after the packets knows every class they use */
	for (unsigned i = 0; i < t->nstreams && !rc; i++)
		rc = grow_stream(t, &t->streams[i]);
	for (unsigned i = 0; i < nsubs && !rc; i++)
		rc = rd_add_streams(t, i);
	if (!rc)
		rc = new_subs(t, top, merge, &changed);
	for (unsigned i = 0; i < t->nsubs && rc >= 0; i++)
		if ((rc = metadata_grown(t, &t->subs[i])) > 0)
			changed = true;
	if (rc < 0)
		return rc;
	if (changed && ((!merge && (rc = rd_one_clock(t)) < 0) ||
			(rc = rd_trace_classes(t)) < 0))
		return rc;
	rd_trace_clock(t);
	rd_trace_sizes(t);
	if ((rc = rd_load_offsets(t, strlen(top))) < 0)
		return rc;
	rd_trace_span(t);
	return 0;
}
