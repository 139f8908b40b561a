/* SPDX-License-Identifier: MIT */
/* The follower against a writer that acts between its reads (docs/reader.md,
 * "Following a live trace"): a class declared and used while the first
 * poll opens the trace (the writer acts from inside the reader's read of
 * the metadata, pread() below, so the interleaving is exact), and a
 * CPU's first stream that appears with events the other streams' points
 * had passed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rd.h"
#include "synth.h"

#define PSIZE 16384u

/* What the writer does when the reader has read the metadata once. */
static struct {
	bool armed;
	const char *dir;
	const uint8_t *stream;
	size_t len;
} act;

static void put_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

/* The writer's step: the whole metadata, rewritten and renamed into
 * place as the consumer does (format.md §6), then the packets that use
 * its new class. */
static void writer_act(void)
{
	char tmp[600], path[600];
	snprintf(tmp, sizeof(tmp), "%s/.metadata.tmp", act.dir);
	snprintf(path, sizeof(path), "%s/metadata", act.dir);
	put_file(tmp, synth_metadata, strlen(synth_metadata));
	assert_int_equal(rename(tmp, path), 0);
	snprintf(path, sizeof(path), "%s/cpu0", act.dir);
	put_file(path, act.stream, act.len);
}

/* The reader's pread(): once armed, the first read of a file named
 * metadata is followed by the writer's step. */
ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	static ssize_t (*real)(int, void *, size_t, off_t);
	if (!real)
		real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
	ssize_t got = real(fd, buf, n, off);
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t l = act.armed ? readlink(link, path, sizeof(path) - 1) : -1;
	if (l > 9 && !memcmp(path + l - 9, "/metadata", 9)) {
		act.armed = false;
		writer_act();
	}
	return got;
}

static void on_problem(const struct strata_problem *p, void *arg)
{
	unsigned *n = arg;
	(*n)++;
	fprintf(stderr, "reported: %s\n", p->what);
}

/* A follower of dir counting its problems in *nprob (the options are
 * copied at create). */
static struct strata_follow *follower(const char *dir, unsigned *nprob)
{
	struct strata_open_options oo = { .problem = on_problem, .problem_arg = nprob };
	struct strata_follow *fl;
	assert_int_equal(strata_follow_create(dir, &(struct strata_follow_options){ .open = &oo },
					      &fl), 0);
	return fl;
}

/*
 * cpu0 logs mem:free events, then mem:mark events of a class its writer
 * registers while it records. The first poll opens the trace with the
 * metadata that lacks mem:mark and one packet of mem:free; between its
 * read of the metadata and of the stream, the writer declares mem:mark
 * and writes the rest. Every event of the window is decoded as its
 * class, in the producer's order, nothing is reported, and the finished
 * trace's last window brings the rest.
 */
static void test_follow_open_race(void **state)
{
	(void)state;
	enum { N = 3000, NF = 1000 };
	char ref[] = "/tmp/strata-follow-oref-XXXXXX", live[] = "/tmp/strata-follow-olive-XXXXXX";
	char path[600];
	assert_non_null(mkdtemp(ref));
	assert_non_null(mkdtemp(live));
	struct synth_ev *e = calloc(N, sizeof(*e));
	for (unsigned i = 0; i < N; i++)
		e[i] = (struct synth_ev){ 1000 + 10 * (uint64_t)i, i < NF ? SYNTH_FREE : SYNTH_MARK,
					  0 };
	synth_write(ref, 0, 100, 100, e, N, PSIZE);
	snprintf(path, sizeof(path), "%s/cpu0", ref);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	static uint8_t s[64 * PSIZE];
	size_t len = fread(s, 1, sizeof(s), f);
	fclose(f);
	assert_true(len >= 4 * PSIZE && len < sizeof(s));
	/* the first packet holds mem:free only, the second mem:mark too */
	assert_true(rd_le64(s + 40) < e[NF].ts);

	const char *mark = strstr(synth_metadata, "event { name = \"mem:mark\"");
	assert_non_null(mark);
	snprintf(path, sizeof(path), "%s/metadata", live);
	put_file(path, synth_metadata, (size_t)(mark - synth_metadata));
	snprintf(path, sizeof(path), "%s/.reserve", live);
	put_file(path, "", 0);
	snprintf(path, sizeof(path), "%s/cpu0", live);
	put_file(path, s, PSIZE);
	act = (typeof(act)){ true, live, s, 3 * PSIZE };

	unsigned nprob = 0;
	struct strata_follow *fl = follower(live, &nprob);
	struct strata_trace *t;
	uint64_t from, to;
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	assert_false(act.armed); /* the writer did act during the open */
	assert_int_equal(to, rd_le64(s + 2 * PSIZE + 40));

	struct strata_filter *flt;
	struct strata_iter *it;
	const struct strata_event *ev;
	assert_int_equal(strata_filter_create(t, &flt), 0);
	assert_int_equal(strata_filter_time(flt, from, to - 1), 0);
	assert_int_equal(strata_iter_create(t, &(struct strata_iter_options){ .stream = -1,
					    .filter = flt }, &it), 0);
	unsigned k = 0;
	while (strata_iter_next(it, &ev) > 0) {
		assert_true(k < N);
		const char *want = e[k].kind == SYNTH_FREE ? "mem:free" : "mem:mark";
		if (ev->timestamp != e[k].ts || strcmp(ev->cls->name, want))
			fail_msg("event %u: %s at %llu, the producer logged %s at %llu", k,
				 ev->cls->name, (unsigned long long)ev->timestamp, want,
				 (unsigned long long)e[k].ts);
		k++;
	}
	strata_iter_destroy(it);
	strata_filter_destroy(flt);
	/* all but the event at `to`, which the next window holds */
	unsigned want = 0;
	while (want < N && e[want].ts < to)
		want++;
	if (k != want || nprob)
		fail_msg("%u events in the first window, %u logged before its end; %u reported",
			 k, want, nprob);
	assert_true(k > NF); /* mem:mark events among them */
	strata_follow_destroy(fl);
	free(e);
	synth_rmdir(ref);
	synth_rmdir(live);
}

/* The events of [from, to), counted; their times onto ts[*n..]. */
static unsigned count_window(struct strata_trace *t, uint64_t from, uint64_t to, uint64_t *ts,
			     unsigned *n, unsigned max)
{
	struct strata_filter *flt;
	struct strata_iter *it;
	const struct strata_event *ev;
	unsigned k = 0;
	if (to <= from)
		return 0;
	assert_int_equal(strata_filter_create(t, &flt), 0);
	assert_int_equal(strata_filter_time(flt, from, to - 1), 0);
	assert_int_equal(strata_iter_create(t, &(struct strata_iter_options){ .stream = -1,
					    .filter = flt }, &it), 0);
	for (; strata_iter_next(it, &ev) > 0; k++) {
		assert_true(*n < max);
		ts[(*n)++] = ev->timestamp;
	}
	strata_iter_destroy(it);
	strata_filter_destroy(flt);
	return k;
}

/* The live timer's beacon, time T then its complement (record.md, "Live
 * reading"). */
static void put_beacon(const char *dir, uint64_t t)
{
	char path[600];
	uint64_t rec[2] = { t, ~t };
	snprintf(path, sizeof(path), "%s/.live-time", dir);
	put_file(path, rec, sizeof(rec));
}

/*
 * A CPU's first ring, not yet a file when the follower looks, with events
 * earlier than the other stream's last packet end: cpu0 has written up to
 * 4900, the writer's beacon says 2000, and cpu1's file, made after the
 * first poll, holds events at 2450 and 2550. The beacon covers every ring
 * of its writer, and nothing else covers a stream not seen, so the window
 * stops at it: every event comes once, in order, none late.
 */
static void test_follow_unseen_stream(void **state)
{
	(void)state;
	char dir[] = "/tmp/strata-follow-unseen-XXXXXX", path[600];
	assert_non_null(mkdtemp(dir));
	struct synth_ev a[40], b[2];
	for (unsigned i = 0; i < 40; i++)
		a[i] = (struct synth_ev){ 1000 + 100 * (uint64_t)i, SYNTH_MARK, 0 };
	b[0] = (struct synth_ev){ 2450, SYNTH_MARK, 0 };
	b[1] = (struct synth_ev){ 2550, SYNTH_MARK, 0 };
	synth_write(dir, 0, 100, 100, a, 40, 4096);
	snprintf(path, sizeof(path), "%s/.reserve", dir);
	put_file(path, "", 0);
	put_beacon(dir, 2000);

	unsigned nprob = 0, n = 0;
	uint64_t ts[64];
	struct strata_follow *fl = follower(dir, &nprob);
	struct strata_trace *t;
	uint64_t from, to;
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	count_window(t, from, to, ts, &n, 64);

	synth_write(dir, 1, 100, 101, b, 2, 4096); /* the new ring's packet */
	put_beacon(dir, 6000);
	assert_int_equal(strata_follow_poll(fl, &t, &from, &to), STRATA_FOLLOW_LIVE);
	count_window(t, from, to, ts, &n, 64);
	/* all written before 6000, which the beacon now covers */
	if (n != 42 || nprob || to != 6000)
		fail_msg("%u events delivered of 42, %u reported (late ones among them), "
			 "the window up to %llu", n, nprob, (unsigned long long)to);
	for (unsigned i = 1; i < n; i++)
		assert_true(ts[i] >= ts[i - 1]);
	strata_follow_destroy(fl);
	synth_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_follow_open_race),
		cmocka_unit_test(test_follow_unseen_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
