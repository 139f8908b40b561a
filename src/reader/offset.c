/* SPDX-License-Identifier: MIT */
/* Several hosts on one time base: each recording's clock-offset file, written by the relay that received it (docs/relay.md §7), read at open and applied as a shift of its sub-traces' timestamps (docs/reader.md, "Several hosts"). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "open.h"

#define OFFSET_FILE "clock-offset" /* RELAY_CLOCK_FILE */
#define OFFSET_MAX 4096            /* bytes read of it: it holds ~300 */
#define OFFSET_LIMIT (INT64_C(1) << 62) /* ns, ~146 years: -offset fits */
/* ppb: twice NTP's own bound on a clock's frequency error (500 ppm); a
 * drift below one part in one keeps the moved times in order */
#define DRIFT_LIMIT 1000000

/* "key value" lines into o; NULL, or what is wrong with the file. */
static const char *parse(char *text, struct rd_offset *o)
{
	bool mono = false, off = false, unc = false, meas = false;

	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char key[32], val[80], *end;
		if (l[0] == '#' || sscanf(l, "%31s %79s", key, val) != 2)
			continue;
		errno = 0;
		long long v = strtoll(val, &end, 10);
		bool num = !errno && *end == 0 && end != val;
		if (!strcmp(key, "clock"))
			mono = !strcmp(val, "CLOCK_MONOTONIC");
		else if (!strcmp(key, "offset_ns") && num && v > -OFFSET_LIMIT &&
			 v < OFFSET_LIMIT)
			o->pub.offset_ns = v, off = true;
		else if (!strcmp(key, "uncertainty_ns") && num && v >= 0)
			o->pub.uncertainty_ns = (uint64_t)v, unc = true;
		else if (!strcmp(key, "measured_ns") && num && v >= 0)
			o->pub.measured_ns = (uint64_t)v, meas = true;
		else if (!strcmp(key, "samples") && num && v >= 0)
			o->pub.samples = (uint64_t)v;
		else if (!strcmp(key, "drift_ppb") && num && v >= -DRIFT_LIMIT &&
			 v <= DRIFT_LIMIT)
			o->pub.drift_ppb = v, o->pub.has_drift = 1;
		else if (!strcmp(key, "drift_ppb"))
			return "drift_ppb beyond 1,000,000 (1000 ppm) either way";
		else if (!strcmp(key, "relay_wall_ns") && num)
			o->wall_ns = v, o->has_wall = true;
		else if (!strcmp(key, "sender"))
			snprintf(o->sender, sizeof(o->sender), "%.64s", val);
	}
	if (!mono)
		return "no \"clock CLOCK_MONOTONIC\" line";
	if (!off || !unc)
		return "no offset_ns (within 2^62 ns) or uncertainty_ns";
	if (o->pub.has_drift && !meas)
		return "a drift_ppb without the measured_ns it runs from";
	return NULL;
}

/* A relay is receiving the recording at root (relay.md §1: its session's
 * marker). */
static bool relay_copy(const char *root)
{
	struct stat st;
	char *p = rd_path_join(root, ".relay-session");
	bool r = p && lstat(p, &st) == 0;
	free(p);
	return r;
}

/* The offset of the recording at root (its first n bytes of dir), read
 * once per recording. NULL when it has none, or a damaged one (reported). */
static struct rd_offset *offset_of(struct strata_trace *t, const char *dir,
				   size_t n, int *rc)
{
	for (unsigned i = 0; i < t->noffs; i++)
		if (strlen(t->offs[i].root) == n && !strncmp(t->offs[i].root, dir, n))
			return t->offs[i].pub.root ? &t->offs[i] : NULL;
	struct rd_offset *g = realloc(t->offs, (t->noffs + 1) * sizeof(*g));
	if (!g) {
		*rc = -ENOMEM;
		return NULL;
	}
	t->offs = g;
	struct rd_offset *o = &t->offs[t->noffs];
	memset(o, 0, sizeof(*o));
	if (!(o->root = strndup(dir, n))) {
		*rc = -ENOMEM;
		return NULL;
	}
	t->noffs++;
	char *path = rd_path_join(o->root, OFFSET_FILE), text[OFFSET_MAX + 1];
	struct stat st;
	const char *kind, *why = NULL;
	int fd = path ? rd_open_regular(path, &st, &kind) : -1;
	if (fd < 0 && t->follow && relay_copy(o->root)) {
		/* a relay's copy being received: its first offset is moments
		 * away (relay.md §7, "When"), and a follower that handed out
		 * its events unmoved could not move the later ones */
		t->not_yet++;
		free(o->root);
		t->noffs--;
		free(path);
		return NULL;
	}
	if (fd < 0) {
		free(path);
		return NULL; /* none: not a relay's copy (o->pub.root NULL) */
	}
	ssize_t got = read(fd, text, OFFSET_MAX);
	close(fd);
	text[got > 0 ? got : 0] = 0;
	if (got < 0 || (why = parse(text, o))) {
		rd_report(t, STRATA_PROBLEM_METADATA, path, 0, 0, 0,
			  "%s; this host's clock offset is not applied",
			  why ? why : "unreadable");
		free(path);
		return NULL;
	}
	free(path);
	o->pub.root = o->root; /* marks it read; sender set when handed out */
	return o;
}

/* A follower's offsets that it has not kept: read again, as the relay
 * refines them (relay.md §7, "The estimate"). */
static void drop_unkept(struct strata_trace *t)
{
	unsigned k = 0;
	for (unsigned i = 0; i < t->noffs; i++) {
		if (t->offs[i].kept)
			t->offs[k++] = t->offs[i];
		else
			free(t->offs[i].root);
	}
	t->noffs = k;
}

void rd_offset_keep(struct strata_trace *t, const char *dir, size_t top)
{
	size_t n = rd_recording_root(dir, top);
	for (unsigned i = 0; i < t->noffs; i++)
		if (strlen(t->offs[i].root) == n && !strncmp(t->offs[i].root, dir, n))
			t->offs[i].kept = true;
}

int rd_load_offsets(struct strata_trace *t, size_t top)
{
	int rc = 0;
	const struct rd_offset *wall = NULL;

	if (t->follow)
		drop_unkept(t);

	for (unsigned i = 0; i < t->nsubs && !rc; i++) {
		struct rd_subtrace *sub = &t->subs[i];
		struct rd_offset *o =
			offset_of(t, sub->dir, rd_recording_root(sub->dir, top), &rc);
		const char *d = sub->meta.clock_desc;
		/* the offset is of CLOCK_MONOTONIC */
		if (!o || sub->meta.freq != 1000000000u || !d ||
		    strncmp(d, "CLOCK_MONOTONIC", 15))
			continue;
		sub->shift = -o->pub.offset_ns;
		/* offset(t) = offset_ns + drift (t - measured), t on the
		 * relay's clock, which is measured_ns + offset_ns on the
		 * sender's (relay.md §7) */
		sub->drift_ppb = o->pub.has_drift ? o->pub.drift_ppb : 0;
		sub->pivot = o->pub.measured_ns + (uint64_t)o->pub.offset_ns;
		o->pub.applied = 1;
		if (o->has_wall && !wall)
			wall = o;
	}
	/* the times are the relay's: so is the wall clock they show, never
	 * a sender's (format.md §5, offset_s) */
	if (wall && t->freq == 1000000000u) {
		t->offset_s = wall->wall_ns / 1000000000;
		t->offset = wall->wall_ns % 1000000000;
		if (t->offset < 0) {
			t->offset += 1000000000;
			t->offset_s--;
		}
	}
	return rc;
}

void rd_offsets_free(struct strata_trace *t)
{
	for (unsigned i = 0; i < t->noffs; i++)
		free(t->offs[i].root);
	free(t->offs);
}

unsigned strata_trace_noffsets(const struct strata_trace *t)
{
	unsigned n = 0;
	for (unsigned i = 0; i < t->noffs; i++)
		n += t->offs[i].pub.root != NULL;
	return n;
}

int strata_trace_offset(const struct strata_trace *t, unsigned i,
			struct strata_host_offset *out)
{
	for (unsigned k = 0; k < t->noffs; k++) {
		if (!t->offs[k].pub.root)
			continue;
		if (!i--) {
			*out = t->offs[k].pub;
			out->sender = t->offs[k].sender; /* offs moves while opening */
			return 0;
		}
	}
	return -EINVAL;
}
