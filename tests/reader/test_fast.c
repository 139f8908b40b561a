/* SPDX-License-Identifier: MIT */
/* The reader's fast paths: batch reads, unordered iteration, the loser-tree merge, number formatting. */
#define _GNU_SOURCE /* nftw, in synth.h */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rd.h"
#include "synth.h"
#include "batch_check.h"

/* Three streams (a non-power-of-two count: the tree has a sentinel leaf),
 * with timestamps that tie across streams: the merge breaks ties by
 * stream order, and strata_iter_read returns what strata_iter_next does. */
static void test_read_unordered(void **state)
{
	(void)state;
	enum { N = 3000, S = 3 };
	struct synth_ev *e[S];
	for (int s = 0; s < S; s++) {
		e[s] = calloc(N, sizeof(*e[s]));
		for (int i = 0; i < N; i++)
			e[s][i] = (struct synth_ev){ 1000 + 3 * (uint64_t)i + (i % 7 == 0 ? 0 : s),
						     i % 5 ? SYNTH_ALLOC : SYNTH_OPEN, 0 };
	}
	char dir[] = "/tmp/strata-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	for (int s = 0; s < S; s++)
		synth_write(dir, s, 100, 100 + s, e[s], N, 4096);
	struct strata_trace *t;
	assert_int_equal(strata_trace_open(dir, NULL, &t), 0);

	struct strata_iter *it, *it2;
	const struct strata_event *ev;
	struct strata_event *all = calloc(S * N + 1, sizeof(*all));
	assert_int_equal(strata_iter_create(t, NULL, &it), 0);
	unsigned n = 0;
	while (strata_iter_next(it, &ev) > 0) {
		if (n) {
			assert_true(all[n - 1].timestamp <= ev->timestamp);
			if (all[n - 1].timestamp == ev->timestamp)
				assert_true(all[n - 1].stream < ev->stream);
		}
		all[n++] = *ev;
	}
	assert_int_equal(n, S * N);
	strata_iter_destroy(it);

	/* batches of 7, then one next, alternating: the same sequence */
	struct strata_event b[7];
	assert_int_equal(strata_iter_create(t, NULL, &it), 0);
	unsigned k = 0;
	for (;;) {
		int got = strata_iter_read(it, b, 7);
		assert_true(got >= 0 && got <= 7);
		for (int i = 0; i < got; i++, k++) {
			assert_int_equal(b[i].timestamp, all[k].timestamp);
			assert_int_equal(b[i].stream, all[k].stream);
			assert_ptr_equal(b[i].payload, all[k].payload);
			assert_int_equal(b[i].tid, all[k].tid);
		}
		if (got < 7)
			break;
		if (strata_iter_next(it, &ev) == 0)
			break;
		assert_int_equal(ev->offset, all[k].offset);
		k++;
	}
	assert_int_equal(k, S * N);
	assert_int_equal(strata_iter_read(it, b, 7), 0);
	/* a seek, then a batch: lands on the first event >= target */
	assert_int_equal(strata_iter_seek(it, 1000 + 3 * 1500 + 1), 0);
	assert_int_equal(strata_iter_read(it, b, 1), 1);
	assert_true(b[0].timestamp >= 1000 + 3 * 1500 + 1);
	strata_iter_destroy(it);

	/* unordered: stream 0, then 1, then 2, each in its own order */
	struct strata_iter_options io = { .stream = -1, .flags = STRATA_ITER_UNORDERED };
	assert_int_equal(strata_iter_create(t, &io, &it2), 0);
	unsigned seen[S] = { 0 }, last = 0;
	uint64_t prev = 0;
	n = 0;
	while (strata_iter_next(it2, &ev) > 0) {
		assert_true(ev->stream >= last);
		if (ev->stream != last)
			prev = 0;
		last = ev->stream;
		assert_true(ev->timestamp >= prev);
		prev = ev->timestamp;
		seen[ev->stream]++;
		n++;
	}
	assert_int_equal(n, S * N);
	for (int s = 0; s < S; s++)
		assert_int_equal(seen[s], N);
	strata_iter_destroy(it2);

	strata_trace_close(t);
	synth_rmdir(dir);
	free(all);
	for (int s = 0; s < S; s++)
		free(e[s]);
}

/* strata_iter_next with no filter (cursor_next_fast) returns what the
 * general path (rd_cursor_next: a filter with a condition that passes every
 * event) returns, field for field: n events. */
static void fast_vs_general(const char *dir, unsigned n)
{
	struct strata_trace *t;
	struct strata_filter *f;
	struct strata_iter *fast, *gen;
	const struct strata_event *ev, *ref;
	struct strata_value va[8], vb[8];
	assert_int_equal(strata_trace_open(dir, NULL, &t), 0);
	assert_int_equal(strata_filter_create(t, &f), 0);
	assert_int_equal(strata_filter_time(f, 0, UINT64_MAX), 0);
	struct strata_iter_options io = { .stream = -1, .filter = f };
	assert_int_equal(strata_iter_create(t, NULL, &fast), 0);
	assert_int_equal(strata_iter_create(t, &io, &gen), 0);
	unsigned k = 0;
	while (strata_iter_next(gen, &ref) > 0) {
		assert_int_equal(strata_iter_next(fast, &ev), 1);
		assert_memory_equal(ev, ref, sizeof(*ev));
		int na = strata_event_fields(ev, va, 8), nb = strata_event_fields(ref, vb, 8);
		assert_int_equal(na, nb);
		if (na > 0)
			assert_memory_equal(va, vb, (size_t)na * sizeof(va[0]));
		k++;
	}
	assert_int_equal(strata_iter_next(fast, &ev), 0);
	assert_int_equal(k, n);
	strata_iter_destroy(fast);
	strata_iter_destroy(gen);
	strata_filter_destroy(f);
	strata_trace_close(t);
}

/* Batches (strata_iter_decode, strata_iter_read) against strata_iter_next:
 * S streams (2: the two-cursor merge; 3: the loser tree) of different
 * lengths, with tied timestamps, thread switches, clock records, every
 * class kind (whole words, one field, a generic plan, a sequence, a
 * payload longer than its fields), runs of every length from one event
 * up, across packet ends; merged, unordered, with records, per stream,
 * and through filters (a time range and a narrowing one: the general
 * path). */
static void batch_decode_streams(int S, bool c1)
{
	enum { N = 2500 };
	struct synth_ev *e[3];
	uint64_t x = 7;
	for (int s = 0; s < S; s++) {
		e[s] = calloc(N, sizeof(*e[s]));
		/* stream class 1: across a wrap of its 27-bit timestamps */
		uint64_t ts = c1 ? (1u << 27) - 200000 : 1000;
		for (int i = 0; i < N - 300 * s; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			/* runs: stream s is active in windows of varying length */
			ts += 1 + ((x >> 60) < 2 ? (x >> 40) % 400 : 0) + (i % 11 == 0 ? 0 : 2);
			int k = (int)((x >> 33) % 16);
			int kind = k < 4 ? SYNTH_FREE : k < 6 ? SYNTH_MARK : k < 10 ? SYNTH_ALLOC :
				   k < 11 ? SYNTH_LONG : k < 13 ? SYNTH_OPEN :
				   k < 15 ? SYNTH_THREAD : SYNTH_CLOCK;
			if (i % 997 == 500)
				ts += 1ull << 33; /* a jump only a clock record explains */
			if (i % 997 == 700)
				ts += (1u << 27) - 500; /* stream class 1: still compact */
			if (i % 997 == 500)
				kind = SYNTH_CLOCK;
			e[s][i] = (struct synth_ev){ ts, kind, 200 + (uint32_t)(x % 3) };
		}
	}
	char dir[] = "/tmp/strata-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	for (int s = 0; s < S; s++)
		(c1 ? synth_write1 : synth_write)(dir, s, 100, 100 + s, e[s], N - 300 * s, 4096);
	if (c1) {
		/* every event but the thread records (SYNTH_CLOCK: an event
		 * in the extended form here) */
		unsigned nuser = 0;
		for (int s = 0; s < S; s++)
			for (int i = 0; i < N - 300 * s; i++)
				nuser += e[s][i].kind != SYNTH_THREAD;
		fast_vs_general(dir, nuser);
	}
	batch_check(dir);

	struct strata_trace *t;
	struct strata_filter *f;
	assert_int_equal(strata_trace_open(dir, NULL, &t), 0);
	assert_int_equal(strata_filter_create(t, &f), 0);
	struct strata_iter_options io = { .stream = -1, .filter = f };
	batch_check_trace(t, &io); /* no condition: the fast path */
	assert_int_equal(strata_filter_time(f, 5000, 1ull << 40), 0);
	batch_check_trace(t, &io);
	assert_int_equal(strata_filter_tid(f, 201), 0);
	batch_check_trace(t, &io);
	strata_filter_destroy(f);
	/* a batch of another trace is refused */
	struct strata_trace *t2;
	struct strata_iter *it;
	struct strata_batch *b;
	assert_int_equal(strata_trace_open(dir, NULL, &t2), 0);
	assert_int_equal(strata_batch_alloc(t2, 16, &b), 0);
	assert_int_equal(strata_iter_create(t, NULL, &it), 0);
	assert_int_equal(strata_iter_decode(it, b), -EINVAL);
	strata_batch_free(b);
	assert_int_equal(strata_batch_alloc(t, 0, &b), -EINVAL);
	assert_null(b);
	strata_batch_free(NULL);
	strata_iter_destroy(it);
	strata_trace_close(t2);
	strata_trace_close(t);
	synth_rmdir(dir);
	for (int s = 0; s < S; s++)
		free(e[s]);
}

static void test_batch_decode(void **state)
{
	(void)state;
	batch_decode_streams(2, false);
	batch_decode_streams(3, false);
}

/* The same in stream class 1 (docs/compact.md): the fast paths read
 * compact headers and take lengths from the class table. */
static void test_batch_decode_compact(void **state)
{
	(void)state;
	batch_decode_streams(1, true);
	batch_decode_streams(2, true);
	batch_decode_streams(3, true);
}

/* A trace of two sub-traces, one of each stream class (a kernel
 * sub-trace beside a compact user one): the merge runs the batch path of
 * each cursor's class. */
static void test_batch_mixed_classes(void **state)
{
	(void)state;
	enum { N = 3000 };
	struct synth_ev *e = calloc(N, sizeof(*e));
	uint64_t ts = 5000;
	for (int i = 0; i < N; i++) {
		ts += 1 + i % 5;
		e[i] = (struct synth_ev){ ts, i % 3 == 0 ? SYNTH_FREE : i % 3 == 1 ? SYNTH_MARK :
						    SYNTH_ALLOC, 0 };
	}
	/* one recording, two processes (format.md §1) */
	char dir[] = "/tmp/strata-test-XXXXXX", u[64], a[80], b[80];
	assert_non_null(mkdtemp(dir));
	snprintf(u, sizeof(u), "%s/ust", dir);
	snprintf(a, sizeof(a), "%s/a", u);
	snprintf(b, sizeof(b), "%s/b", u);
	assert_int_equal(mkdir(u, 0755), 0);
	assert_int_equal(mkdir(a, 0755), 0);
	assert_int_equal(mkdir(b, 0755), 0);
	synth_write(a, 0, 100, 100, e, N, 4096);
	for (int i = 0; i < N; i++)
		e[i].ts += 2; /* interleaved with a's */
	synth_write1(b, 0, 101, 101, e, N, 4096);
	fast_vs_general(dir, 2 * N);
	batch_check(dir);
	synth_rmdir(dir);
	free(e);
}

static const char nums_meta[] =
	"/* CTF 1.8 */\n"
	"trace { major = 1; minor = 8; byte_order = le; };\n"
	"clock { name = \"strata\"; freq = 1000000000; };\n"
	"stream { id = 0; event.header := struct {\n"
	"  integer { size = 32; align = 64; signed = false; } timestamp;\n"
	"  integer { size = 22; align = 1; signed = false; } id; } align(64); };\n"
	"event { name = \"t:nums\"; id = 65537; stream_id = 0;\n"
	"  strata_format = \"a=%{a} b=%{b} c=%{c} d=%{d} e=%{e} x=%{a:x} u=%{b:u}\";\n"
	"  fields := struct { integer { size = 64; align = 64; signed = false; } a;\n"
	"  integer { size = 64; align = 64; signed = true; } b;\n"
	"  integer { size = 64; align = 64; signed = false; base = 16; } c;\n"
	"  integer { size = 32; align = 32; signed = false; } d;\n"
	"  integer { size = 32; align = 32; signed = true; } e; } align(64); };\n"
	"event { name = \"t:raw\"; id = 65538; stream_id = 0;\n"
	"  fields := struct { integer { size = 64; align = 64; signed = true; } s;\n"
	"  integer { size = 64; align = 64; signed = false; base = 16; } h; } align(64); };\n";

/* Every digit count and sign edge renders as printf would. */
static void test_describe_numbers(void **state)
{
	(void)state;
	struct rd_meta m;
	char err[256];
	memset(&m, 0, sizeof(m));
	assert_int_equal(rd_meta_parse(nums_meta, sizeof(nums_meta) - 1, &m, err, sizeof(err)), 0);
	const struct rd_class *nums = NULL, *raw = NULL;
	for (unsigned i = 0; i < m.nclasses; i++) {
		if (m.classes[i]->pub.id == 65537)
			nums = m.classes[i];
		if (m.classes[i]->pub.id == 65538)
			raw = m.classes[i];
	}
	assert_non_null(nums);
	assert_non_null(raw);
	uint64_t vals[64];
	unsigned nv = 0;
	vals[nv++] = 0;
	for (uint64_t p = 1; p && nv < 60; p *= 10) {
		vals[nv++] = p - 1;
		vals[nv++] = p;
		if (p > UINT64_MAX / 10)
			break;
	}
	vals[nv++] = UINT64_MAX;
	vals[nv++] = (uint64_t)INT64_MIN;
	vals[nv++] = (uint64_t)INT64_MAX;
	for (unsigned i = 0; i < nv; i++) {
		uint64_t v = vals[i];
		uint64_t w[4] = { v, v, v, (uint64_t)(uint32_t)v | (uint64_t)(uint32_t)v << 32 };
		struct strata_event ev = { .cls = &nums->pub, .payload = (const uint8_t *)w,
					   .size = sizeof(w) };
		char got[256], want[256];
		int n = strata_event_describe(&ev, got, sizeof(got));
		snprintf(want, sizeof(want),
			 "a=%" PRIu64 " b=%" PRId64 " c=0x%" PRIx64 " d=%" PRIu32 " e=%" PRId32
			 " x=0x%" PRIx64 " u=%" PRIu64,
			 v, (int64_t)v, v, (uint32_t)v, (int32_t)(uint32_t)v, v, v);
		assert_string_equal(got, want);
		assert_int_equal(n, (int)strlen(want));
		/* truncated output: same length reported, NUL-terminated */
		char small[9];
		assert_int_equal(strata_event_describe(&ev, small, sizeof(small)), n);
		assert_int_equal(strlen(small), 8);
		assert_memory_equal(small, want, 8);
		struct strata_event re = { .cls = &raw->pub, .payload = (const uint8_t *)w,
					   .size = 16 };
		strata_event_describe(&re, got, sizeof(got));
		snprintf(want, sizeof(want), "s=%" PRId64 " h=0x%" PRIx64, (int64_t)v, v);
		assert_string_equal(got, want);
		/* the padded plan writes only zeros past the fields */
		struct strata_value sv[8];
		memset(sv, 0xa5, sizeof(sv));
		assert_int_equal(strata_event_fields(&ev, sv, 8), 5);
		assert_int_equal(sv[0].u, v);
		assert_int_equal(sv[1].s, (int64_t)v);
		assert_int_equal(sv[4].s, (int32_t)(uint32_t)v);
		assert_int_equal(sv[4].type, STRATA_VALUE_SINT);
		struct strata_value one[5];
		assert_int_equal(strata_event_fields(&ev, one, 5), 5);
		assert_int_equal(one[3].u, (uint32_t)v);
	}
	rd_meta_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_unordered),
		cmocka_unit_test(test_batch_decode),
		cmocka_unit_test(test_batch_decode_compact),
		cmocka_unit_test(test_batch_mixed_classes),
		cmocka_unit_test(test_describe_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
