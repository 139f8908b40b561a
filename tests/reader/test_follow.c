/* SPDX-License-Identifier: MIT */
/* Unit tests of the follower (docs/reader.md, "Following a live trace"):
 * a stream file growing packet by packet, a torn tail, the end, late
 * events, streams and event classes that appear while it follows, and
 * hosts moved by a relay's clock offsets. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rd.h"
#include "synth.h"

#define PSIZE 16384u
#define NEV 3000u

struct seen {
	unsigned n, late;
	uint64_t late_count;
	char what[256];
};

static void on_problem(const struct strata_problem *p, void *arg)
{
	struct seen *s = arg;
	if (p->kind == STRATA_PROBLEM_LATE) {
		s->late++;
		s->late_count += p->count;
		return;
	}
	s->n++;
	snprintf(s->what, sizeof(s->what), "%s", p->what);
}

/* A follower of dir whose problems go to *seen (the options are copied
 * at create). */
static struct strata_follow *follower(const char *dir, struct seen *seen)
{
	struct strata_open_options oo = { .problem = on_problem, .problem_arg = seen };
	struct strata_follow_options fo = { .open = &oo };
	struct strata_follow *fl;
	assert_int_equal(strata_follow_create(dir, &fo, &fl), 0);
	return fl;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(*len);
	assert_int_equal(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

static void put_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

/* An empty file DIR/NAME: a writer's marker (.reserve, .live). */
static void touch(const char *dir, const char *name)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	put_file(path, "", 0);
}

/* n marks, at t0, t0 + step, ... */
static void marks(struct synth_ev *e, unsigned n, uint64_t t0, uint64_t step)
{
	for (unsigned i = 0; i < n; i++)
		e[i] = (struct synth_ev){ t0 + step * (uint64_t)i, SYNTH_MARK, 0 };
}

static void put_be64(uint8_t *p, uint64_t v)
{
	v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

/* dir/index/cpu<cpu>.idx for the packets of `s` (format.md §7): the
 * writer's publication of a finished stream */
static void put_index(const char *dir, unsigned cpu, const uint8_t *s, size_t len)
{
	size_t n = len / PSIZE;
	uint8_t *b = calloc(1, 16 + 72 * n);
	uint32_t h[4] = { __builtin_bswap32(0xC1F1DCC1), __builtin_bswap32(1),
			  __builtin_bswap32(1), __builtin_bswap32(72) };
	memcpy(b, h, 16);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *pk = s + i * PSIZE;
		uint8_t *e = b + 16 + 72 * i;
		put_be64(e, i * PSIZE);
		put_be64(e + 8, rd_le64(pk + 56));
		put_be64(e + 16, rd_le64(pk + 48));
		put_be64(e + 24, rd_le64(pk + 32));
		put_be64(e + 32, rd_le64(pk + 40));
		put_be64(e + 40, rd_le64(pk + 72));
		put_be64(e + 56, rd_le64(pk + 24));
		put_be64(e + 64, rd_le64(pk + 64));
	}
	char path[512];
	snprintf(path, sizeof(path), "%s/index", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/index/cpu%u.idx", dir, cpu);
	put_file(path, b, 16 + 72 * n);
	free(b);
}

/* The window's events onto ts[*n..], in order; returns how many. */
static unsigned read_window(struct strata_trace *t, uint64_t from, uint64_t to, uint64_t *ts,
			    unsigned *n)
{
	struct strata_filter *f;
	struct strata_iter *it;
	const struct strata_event *ev;
	struct strata_iter_options io = { .stream = -1 };
	unsigned k = 0;
	if (!t || from == to)
		return 0;
	assert_int_equal(strata_filter_create(t, &f), 0);
	assert_int_equal(strata_filter_time(f, from, to - 1), 0);
	io.filter = f;
	assert_int_equal(strata_iter_create(t, &io, &it), 0);
	while (strata_iter_next(it, &ev) > 0) {
		assert_true(*n < NEV + 16);
		ts[(*n)++] = ev->timestamp;
		k++;
	}
	strata_iter_destroy(it);
	strata_filter_destroy(f);
	return k;
}

/*
 * A stream that grows packet by packet, its last packet torn (its header
 * there, its content not yet): only whole packets are read, the torn one
 * is not reported, the window stops at the last whole packet's end, and
 * once the reserve is gone and the index published the rest comes, each
 * event once and in order.
 */
static void test_follow_growing(void **state)
{
	(void)state;
	char ref[] = "/tmp/strata-follow-refXXXXXX", live[] = "/tmp/strata-follow-liveXXXXXX";
	char path[512];
	assert_non_null(mkdtemp(ref));
	assert_non_null(mkdtemp(live));
	struct synth_ev *evs = calloc(NEV, sizeof(*evs));
	marks(evs, NEV, 1000, 10);
	synth_write(ref, 0, 100, 100, evs, NEV, PSIZE);
	snprintf(path, sizeof(path), "%s/cpu0", ref);
	size_t len;
	uint8_t *s = slurp(path, &len);
	assert_true(len >= 3 * PSIZE);

	snprintf(path, sizeof(path), "%s/metadata", live);
	put_file(path, synth_metadata, strlen(synth_metadata));
	touch(live, ".reserve");
	snprintf(path, sizeof(path), "%s/cpu0", live);
	/* packet 0 whole, packet 1's header and a page of its content */
	put_file(path, s, PSIZE + 4096);

	struct seen seen = { 0 };
	struct strata_follow *fl = follower(live, &seen);
	struct strata_trace *t;
	uint64_t from, to, *ts = calloc(NEV + 16, sizeof(*ts));
	unsigned n = 0;
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_non_null(t);
	assert_int_equal(from, 0);
	assert_int_equal(to, rd_le64(s + 40)); /* packet 0's timestamp_end */
	read_window(t, from, to, ts, &n);
	/* packet 0's events but its last, whose time is its end: a next
	 * packet may begin there */
	assert_true(n > 10);
	assert_int_equal(ts[n - 1] + 10, rd_le64(s + 40));
	if (seen.n)
		fail_msg("torn tail reported: %s", seen.what);

	/* the rest written, then the end: no reserve, the index published */
	put_file(path, s, len);
	snprintf(path, sizeof(path), "%s/.reserve", live);
	unlink(path);
	put_index(live, 0, s, len);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_DONE);
	assert_int_equal(to, UINT64_MAX);
	read_window(t, from, to, ts, &n);
	assert_int_equal(n, NEV);
	for (unsigned i = 0; i < NEV; i++)
		assert_int_equal(ts[i], evs[i].ts);
	assert_int_equal(seen.n, 0);
	assert_int_equal(seen.late, 0);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_DONE);
	assert_int_equal(from, to);
	strata_follow_destroy(fl);
	free(ts);
	free(s);
	free(evs);
	synth_rmdir(ref);
	synth_rmdir(live);
}

/*
 * A stream that appears with events older than the windows handed out
 * (a writer slower than it said): they are counted as late, once, not
 * passed over in silence.
 */
static void test_follow_late(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata-follow-lateXXXXXX";
	assert_non_null(mkdtemp(dir));
	struct synth_ev a[40], b[5];
	marks(a, 40, 1000, 100);
	marks(b, 5, 1050, 100);
	synth_write(dir, 0, 100, 100, a, 40, 4096);
	touch(dir, ".reserve");

	struct seen seen = { 0 };
	struct strata_follow *fl = follower(dir, &seen);
	struct strata_trace *t;
	uint64_t from, to;
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_true(to > b[4].ts); /* cpu0's packets passed cpu1's events */
	synth_write(dir, 1, 100, 101, b, 5, 4096);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(seen.late, 1);
	assert_int_equal(seen.late_count, 5);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(seen.late, 1); /* said once */
	strata_follow_destroy(fl);
	synth_rmdir(dir);
}

/*
 * A sub-trace being created: its stream there before its metadata (the
 * relay's CREATE may come first). Not reported while the trace is live,
 * and nothing is handed out until it can be read; then it is.
 */
static void test_follow_no_metadata_yet(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata-follow-metaXXXXXX", sub[600], path[700];
	assert_non_null(mkdtemp(dir));
	struct synth_ev a[40];
	marks(a, 40, 1000, 100);
	snprintf(sub, sizeof(sub), "%s/ust", dir);
	mkdir(sub, 0700);
	snprintf(sub, sizeof(sub), "%s/ust/pid-100", dir);
	mkdir(sub, 0700);
	synth_write(sub, 0, 100, 100, a, 40, 4096);
	snprintf(path, sizeof(path), "%s/metadata", sub);
	unlink(path);
	touch(dir, ".live");

	struct seen seen = { 0 };
	struct strata_follow *fl = follower(dir, &seen);
	struct strata_trace *t;
	uint64_t from, to;
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(to, 0);
	if (seen.n)
		fail_msg("reported while being created: %s", seen.what);
	snprintf(path, sizeof(path), "%s/metadata", sub);
	put_file(path, synth_metadata, strlen(synth_metadata));
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(to, a[39].ts);
	assert_int_equal(seen.n + seen.late, 0);
	strata_follow_destroy(fl);
	synth_rmdir(dir);
}

/*
 * A quiet CPU and the live timer's beacon (docs/record.md, "Live
 * reading"): cpu1 wrote its last packet long ago, cpu0 goes on. Without a
 * beacon the window stops at cpu1's end; with one (time T, then its
 * complement) it runs to T; a torn one is not believed.
 */
static void test_follow_beacon(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata-follow-beaconXXXXXX", path[512];
	assert_non_null(mkdtemp(dir));
	struct synth_ev a[40], b[2];
	marks(a, 40, 1000, 100);
	marks(b, 2, 1050, 100);
	synth_write(dir, 0, 100, 100, a, 40, 4096);
	synth_write(dir, 1, 100, 101, b, 2, 4096);
	touch(dir, ".reserve");

	struct seen seen = { 0 };
	struct strata_follow *fl = follower(dir, &seen);
	struct strata_trace *t;
	uint64_t from, to;
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(to, b[1].ts); /* cpu1's last packet's end */
	uint64_t rec[2] = { 3000, ~(uint64_t)3000 };
	snprintf(path, sizeof(path), "%s/.live-time", dir);
	rec[1] ^= 1; /* torn */
	put_file(path, rec, sizeof(rec));
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(from, to);
	rec[1] ^= 1;
	put_file(path, rec, sizeof(rec));
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(from, b[1].ts);
	assert_int_equal(to, 3000);
	assert_int_equal(seen.n + seen.late, 0);
	strata_follow_destroy(fl);
	synth_rmdir(dir);
}

/* Nothing reported, nothing late. */
static void assert_quiet(const struct seen *seen)
{
	if (seen->n)
		fail_msg("reported: %s", seen->what);
	assert_int_equal(seen->late, 0);
}

/* One delivered event: its time, stream's CPU, and class name's tail. */
struct got {
	uint64_t ts;
	uint32_t cpu;
	char kind; /* 'f' mem:free, 'm' mem:mark, '?' else */
};

/* The window's events onto g[*n..], in order (read_window, with the CPU
 * and class of each). */
static void read_events(struct strata_trace *t, uint64_t from, uint64_t to, struct got *g,
			unsigned *n, unsigned max)
{
	struct strata_filter *f;
	struct strata_iter *it;
	const struct strata_event *ev;
	struct strata_iter_options io = { .stream = -1 };
	if (!t || from == to)
		return;
	assert_int_equal(strata_filter_create(t, &f), 0);
	assert_int_equal(strata_filter_time(f, from, to - 1), 0);
	io.filter = f;
	assert_int_equal(strata_iter_create(t, &io, &it), 0);
	while (strata_iter_next(it, &ev) > 0) {
		assert_true(*n < max);
		const char *nm = ev->cls ? ev->cls->name : "";
		g[(*n)++] = (struct got){ ev->timestamp, ev->cpu,
					  !strcmp(nm, "mem:free") ? 'f' :
					  !strcmp(nm, "mem:mark") ? 'm' : '?' };
	}
	strata_iter_destroy(it);
	strata_filter_destroy(f);
}

/* synth_metadata cut before its last class (mem:mark), or that class
 * alone: a writer registering it while it records appends it. */
static size_t meta_before_mark(void)
{
	const char *m = strstr(synth_metadata, "event { name = \"mem:mark\"");
	assert_non_null(m);
	return (size_t)(m - synth_metadata);
}

/*
 * A trace that grows a stream and an event class while it is followed:
 * cpu0 logs mem:free events, then mem:mark events of a class its writer
 * appends to the metadata (half of the append first: it does not parse,
 * and holds the window); cpu1 appears with mem:mark events. Every event
 * comes once, decoded as its class, in time order, and per CPU exactly
 * the producer's sequence; nothing is reported or late.
 */
static void test_follow_new_stream_and_class(void **state)
{
	(void)state;
	enum { N0 = 3000, NF = 1500, N1 = 1500 };
	char ref[] = "/tmp/strata-follow-nrefXXXXXX", live[] = "/tmp/strata-follow-nliveXXXXXX";
	char p0[512], p1[512], pm[512];
	assert_non_null(mkdtemp(ref));
	assert_non_null(mkdtemp(live));
	struct synth_ev *e0 = calloc(N0, sizeof(*e0)), *e1 = calloc(N1, sizeof(*e1));
	marks(e0, N0, 1000, 10);
	for (unsigned i = 0; i < NF; i++)
		e0[i].kind = SYNTH_FREE;
	/* cpu1 begins after cpu0's first two packets (the first window),
	 * between cpu0's events */
	marks(e1, N1, 1000 + 10 * 1400 + 5, 10);
	synth_write(ref, 0, 100, 100, e0, N0, PSIZE);
	synth_write(ref, 1, 100, 101, e1, N1, PSIZE);
	size_t l0, l1;
	snprintf(p0, sizeof(p0), "%s/cpu0", ref);
	uint8_t *s0 = slurp(p0, &l0);
	snprintf(p1, sizeof(p1), "%s/cpu1", ref);
	uint8_t *s1 = slurp(p1, &l1);
	assert_true(l0 >= 4 * PSIZE && l1 >= 2 * PSIZE);
	assert_int_equal(rd_le64(s0 + PSIZE + 40) < e1[0].ts, 1); /* as planned */

	/* mem:free alone: two whole packets of cpu0, and the metadata
	 * without mem:mark */
	size_t cut = meta_before_mark(), mlen = strlen(synth_metadata);
	snprintf(pm, sizeof(pm), "%s/metadata", live);
	put_file(pm, synth_metadata, cut);
	touch(live, ".reserve");
	snprintf(p0, sizeof(p0), "%s/cpu0", live);
	snprintf(p1, sizeof(p1), "%s/cpu1", live);
	put_file(p0, s0, 2 * PSIZE);

	struct seen seen = { 0 };
	struct strata_follow *fl = follower(live, &seen);
	struct strata_trace *t;
	uint64_t from, to;
	unsigned n = 0, max = N0 + N1 + 16;
	struct got *g = calloc(max, sizeof(*g));
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(to, rd_le64(s0 + PSIZE + 40));
	read_events(t, from, to, g, &n, max);
	assert_int_equal(n, 2 * 678 - 1); /* all but the one at `to` */

	/* half of mem:mark's declaration appended, and packets using it:
	 * the window waits for the class */
	put_file(pm, synth_metadata, cut + (mlen - cut) / 2);
	put_file(p0, s0, 4 * PSIZE);
	put_file(p1, s1, PSIZE + 100); /* its second packet torn */
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(from, to);
	read_events(t, from, to, g, &n, max);
	if (seen.n)
		fail_msg("a half-written metadata reported: %s", seen.what);

	/* the whole declaration: the events of cpu0's four packets and of
	 * cpu1's first */
	put_file(pm, synth_metadata, mlen);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_true(to > from);
	read_events(t, from, to, g, &n, max);

	/* the end: all written, the reserve gone, the indexes published */
	put_file(p0, s0, l0);
	put_file(p1, s1, l1);
	put_index(live, 0, s0, l0);
	put_index(live, 1, s1, l1);
	snprintf(pm, sizeof(pm), "%s/.reserve", live);
	unlink(pm);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_DONE);
	read_events(t, from, to, g, &n, max);

	if (n != N0 + N1)
		fail_msg("%u events delivered; the producer logged %u", n, N0 + N1);
	unsigned k0 = 0, k1 = 0;
	for (unsigned i = 0; i < n; i++) {
		if (i)
			assert_true(g[i].ts >= g[i - 1].ts);
		const struct synth_ev *e = g[i].cpu ? &e1[k1++] : &e0[k0++];
		assert_true(g[i].cpu <= 1);
		assert_int_equal(g[i].ts, e->ts);
		assert_int_equal(g[i].kind, e->kind == SYNTH_FREE ? 'f' : 'm');
	}
	assert_int_equal(k0, N0);
	assert_int_equal(k1, N1);
	assert_quiet(&seen);
	strata_follow_destroy(fl);
	free(g);
	free(s0);
	free(s1);
	free(e0);
	free(e1);
	synth_rmdir(ref);
	synth_rmdir(live);
}

/* A relay's copy of host `h` (docs/relay.md §7) under relay/: its
 * recording root relay/h/rec, with its sub-trace ust/pid-100 written
 * from `evs` on the clock of that host, and the relay's session marker. */
static void relay_host(const char *relay, const char *h, const struct synth_ev *evs,
		       unsigned n, char *root, size_t rlen)
{
	char sub[640], path[800];
	snprintf(root, rlen, "%s/%s", relay, h);
	mkdir(root, 0700);
	snprintf(root, rlen, "%s/%s/rec", relay, h);
	mkdir(root, 0700);
	snprintf(sub, sizeof(sub), "%s/ust", root);
	mkdir(sub, 0700);
	snprintf(sub, sizeof(sub), "%s/ust/pid-100", root);
	mkdir(sub, 0700);
	synth_write(sub, 0, 100, 100, evs, n, PSIZE);
	/* a CLOCK_MONOTONIC trace: the clock the offsets are of */
	snprintf(path, sizeof(path), "%s/metadata", sub);
	size_t ml;
	uint8_t *m = slurp(path, &ml);
	const char *at = strstr((char *)m, "clock { name = \"strata\"; ");
	assert_non_null(at);
	size_t k = (size_t)(at - (char *)m) + 25;
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(m, 1, k, f);
	fputs("description = \"CLOCK_MONOTONIC\"; ", f);
	fwrite(m + k, 1, ml - k, f);
	fclose(f);
	free(m);
	touch(root, ".relay-session");
	touch(sub, ".reserve");
}

/* The relay's sessions of hosts a and b over: no marker, no reserve. */
static void relay_hosts_done(const char *ra, const char *rb)
{
	const char *roots[2] = { ra, rb };
	char path[800];

	for (unsigned i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/.relay-session", roots[i]);
		unlink(path);
		snprintf(path, sizeof(path), "%s/ust/pid-100/.reserve", roots[i]);
		unlink(path);
	}
}

static void put_offset(const char *root, int64_t off)
{
	char path[800], text[256];
	snprintf(path, sizeof(path), "%s/clock-offset", root);
	int n = snprintf(text, sizeof(text),
			 "clock CLOCK_MONOTONIC\noffset_ns %lld\nuncertainty_ns 8000\n"
			 "samples 20\nsender h\n", (long long)off);
	put_file(path, text, (size_t)n);
}

/*
 * Two hosts of a relay's copy, followed as one (STRATA_OPEN_MERGE), each
 * moved by its clock offset (docs/relay.md §7): host a's clock 1 ms
 * ahead of the relay's, host b's 5 µs behind, their events interleaved
 * on the relay's clock. A host whose offset is not written yet holds the
 * window; one whose offset the relay refines before its first packet is
 * moved by the refined one. Every event comes once, on the relay's time,
 * in its order: the ground truth, both hosts' events merged.
 */
static void test_follow_offsets(void **state)
{
	(void)state;
	enum { N = 2500 };
	const int64_t off_a = 1000000, off_b = -5000;
	char dir[] = "/tmp/strata-follow-relayXXXXXX", ra[600], rb[600], path[800];
	assert_non_null(mkdtemp(dir));
	struct synth_ev *a = calloc(N, sizeof(*a)), *b = calloc(N, sizeof(*b));
	uint64_t *truth = calloc(2 * N, sizeof(*truth));
	/* relay times: a at 10000 + 20i, b at 10010 + 20i */
	for (unsigned i = 0; i < N; i++) {
		truth[2 * i] = 10000 + 20 * (uint64_t)i;
		truth[2 * i + 1] = 10010 + 20 * (uint64_t)i;
		a[i] = (struct synth_ev){ truth[2 * i] + off_a, SYNTH_MARK, 0 };
		b[i] = (struct synth_ev){ truth[2 * i + 1] + off_b, SYNTH_MARK, 0 };
	}
	relay_host(dir, "a", a, N, ra, sizeof(ra));
	relay_host(dir, "b", b, N, rb, sizeof(rb));
	/* b: one whole packet, its offset not measured yet; a: no packet
	 * yet, a first rough offset (the relay refines it as it measures) */
	size_t la, lb;
	char pa[800];
	snprintf(pa, sizeof(pa), "%s/ust/pid-100/cpu0", ra);
	uint8_t *sa = slurp(pa, &la);
	put_file(pa, sa, 0);
	snprintf(path, sizeof(path), "%s/ust/pid-100/cpu0", rb);
	uint8_t *sb = slurp(path, &lb);
	put_file(path, sb, PSIZE);
	assert_true(la >= 2 * PSIZE && lb >= 2 * PSIZE);
	put_offset(ra, off_a + 777);

	struct seen seen = { 0 };
	struct strata_open_options oo = { .flags = STRATA_OPEN_MERGE, .problem = on_problem,
					  .problem_arg = &seen };
	struct strata_follow_options fo = { .open = &oo };
	struct strata_follow *fl;
	assert_int_equal(strata_follow_create(dir, &fo, &fl), 0);
	struct strata_trace *t;
	uint64_t from, to;
	unsigned n = 0;
	struct got *g = calloc(2 * N + 16, sizeof(*g));
	/* nothing is handed out: a has no packet, b no offset */
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_non_null(t);
	assert_int_equal(from, to);
	/* b's offset alone still holds the window: a has no packet yet */
	put_offset(rb, off_b);
	put_file(pa, sa, PSIZE - 100);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(from, to);

	/* a's offset refined, then its packet: the window ends at the
	 * earlier of the two packets' ends on the relay's clock (a's; b's
	 * ends 10 ns later), a moved by its refined offset */
	put_offset(ra, off_a);
	put_file(pa, sa, PSIZE);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_int_equal(to, rd_le64(sa + 40) - off_a);
	read_events(t, from, to, g, &n, 2 * N + 16);
	assert_true(n > 1000);

	/* the end: the relay's sessions over, the indexes published */
	put_file(path, sb, lb);
	snprintf(path, sizeof(path), "%s/ust/pid-100", rb);
	put_index(path, 0, sb, lb);
	put_file(pa, sa, la);
	snprintf(path, sizeof(path), "%s/ust/pid-100", ra);
	put_index(path, 0, sa, la);
	relay_hosts_done(ra, rb);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_DONE);
	read_events(t, from, to, g, &n, 2 * N + 16);
	assert_int_equal(n, 2 * N);
	for (unsigned i = 0; i < 2 * N; i++)
		if (g[i].ts != truth[i])
			fail_msg("event %u at %" PRIu64 ", not %" PRIu64 " (relay's time)", i,
				 g[i].ts, truth[i]);
	assert_quiet(&seen);
	strata_follow_destroy(fl);
	free(g);
	free(truth);
	free(sa);
	free(sb);
	free(a);
	free(b);
	synth_rmdir(dir);
}

/* A relay's clock-offset with the sender's drift (docs/relay.md §7). */
static void put_offset_drift(const char *root, int64_t off, uint64_t measured,
			     long long drift)
{
	char path[800], text[256];
	snprintf(path, sizeof(path), "%s/clock-offset", root);
	int n = snprintf(text, sizeof(text),
			 "clock CLOCK_MONOTONIC\noffset_ns %lld\nuncertainty_ns 8000\n"
			 "measured_ns %llu\ndrift_ppb %lld\nsamples 20\nsender h\n",
			 (long long)off, (unsigned long long)measured, drift);
	put_file(path, text, (size_t)n);
}

/* A sender's time for relay time t: offset and drift since `measured`
 * (the relay's clock), to the nearest ns. */
static uint64_t sender_time(uint64_t t, int64_t off, uint64_t measured, int64_t drift)
{
	__int128 d = (__int128)(int64_t)(t - measured) * drift;
	return t + (uint64_t)off +
	       (uint64_t)(int64_t)((d + (d < 0 ? -500000000 : 500000000)) / 1000000000);
}

/*
 * Two hosts whose clocks drift against the relay's, 50 ppm fast and
 * 20 ppm slow (far beyond a real clock's, to be seen in a short trace),
 * each moved by its offset at every time, not one constant: opened as
 * one (STRATA_OPEN_MERGE), every event is at its relay time to the ns,
 * before and after the time the offset was measured, and in order. A
 * drift beyond 1000 ppm is refused with the file, reported, not applied.
 */
static void test_open_drift(void **state)
{
	(void)state;
	enum { N = 400 };
	const int64_t off_a = 1000000, off_b = -5000, d_a = 50000, d_b = -20000;
	const uint64_t m = 50000000; /* measured, on the relay's clock */
	char dir[] = "/tmp/strata-driftXXXXXX", ra[600], rb[600];
	assert_non_null(mkdtemp(dir));
	struct synth_ev a[N], b[N];
	uint64_t truth[2 * N];
	/* relay times around m: a's every 100 us, b's 30 us after each */
	for (unsigned i = 0; i < N; i++) {
		uint64_t t = m - 20000000 + 100000 * (uint64_t)i;
		truth[2 * i] = t;
		truth[2 * i + 1] = t + 30000;
		a[i] = (struct synth_ev){ sender_time(t, off_a, m, d_a), SYNTH_MARK, 0 };
		b[i] = (struct synth_ev){ sender_time(t + 30000, off_b, m, d_b), SYNTH_MARK, 0 };
	}
	relay_host(dir, "a", a, N, ra, sizeof(ra));
	relay_host(dir, "b", b, N, rb, sizeof(rb));
	relay_hosts_done(ra, rb);
	put_offset_drift(ra, off_a, m, d_a);
	put_offset_drift(rb, off_b, m, d_b);

	struct seen seen = { 0 };
	struct strata_open_options oo = { .flags = STRATA_OPEN_MERGE, .problem = on_problem,
					  .problem_arg = &seen };
	struct strata_trace *t;
	struct got g[2 * N + 1];
	unsigned n = 0;
	assert_int_equal(strata_trace_open(dir, &oo, &t), 0);
	read_events(t, 0, UINT64_MAX, g, &n, 2 * N + 1);
	assert_int_equal(n, 2 * N);
	for (unsigned i = 0; i < 2 * N; i++)
		if (g[i].ts != truth[i])
			fail_msg("event %u at %" PRIu64 ", not %" PRIu64 " (relay's time; "
				 "%" PRId64 " ns off)", i, g[i].ts, truth[i],
				 (int64_t)(g[i].ts - truth[i]));
	struct strata_host_offset ho;
	assert_int_equal(strata_trace_noffsets(t), 2);
	assert_int_equal(strata_trace_offset(t, 0, &ho), 0);
	assert_true(ho.applied && ho.has_drift);
	assert_quiet(&seen);
	strata_trace_close(t);

	/* 1000.001 ppm: the file is refused, reported, not applied */
	put_offset_drift(rb, off_b, m, 1000001);
	assert_int_equal(strata_trace_open(dir, &oo, &t), 0);
	n = 0;
	read_events(t, 0, UINT64_MAX, g, &n, 2 * N + 1);
	assert_int_equal(n, 2 * N);
	assert_true(seen.n > 0);
	assert_non_null(strstr(seen.what, "drift_ppb"));
	strata_trace_close(t);
	synth_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_follow_growing),
		cmocka_unit_test(test_follow_late),
		cmocka_unit_test(test_follow_no_metadata_yet),
		cmocka_unit_test(test_follow_beacon),
		cmocka_unit_test(test_follow_new_stream_and_class),
		cmocka_unit_test(test_follow_offsets),
		cmocka_unit_test(test_open_drift),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
