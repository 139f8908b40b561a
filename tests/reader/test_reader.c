/* SPDX-License-Identifier: MIT */
/* Unit tests of libstrata-reader: metadata, timestamps, attribution, filters, seek. */
#define _GNU_SOURCE
#include <errno.h>
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

/* ---- metadata ------------------------------------------------------------ */

static void test_metadata_ok(void **state)
{
	(void)state;
	struct rd_meta m;
	char err[256];
	assert_int_equal(rd_meta_parse(synth_metadata, strlen(synth_metadata), &m, err,
				       sizeof(err)), 0);
	assert_int_equal(m.freq, 1000000000);
	assert_int_equal(m.offset_s, 1700000000);
	assert_string_equal(rd_meta_env(&m, "procname"), "synth");
	/* sorted by id: thread(1), clock(2), mem:alloc(65537), io:open(65538),
	 * mem:free(65539), mem:mark(65540) */
	assert_int_equal(m.nclasses, 6);
	const struct strata_event_class *c = &m.classes[2]->pub;
	assert_string_equal(c->name, "mem:alloc");
	assert_int_equal(c->id, 65537);
	assert_true(c->fixed);
	assert_int_equal(c->nfields, 3);
	assert_int_equal(c->fields[0].offset, 0);
	assert_int_equal(c->fields[1].offset, 8);
	assert_int_equal(c->fields[1].base, 16);
	assert_int_equal(c->fields[2].offset, 16);
	assert_int_equal(c->min_size, 20);
	assert_string_equal(c->format, "alloc %{size} at %{addr:x}");
	assert_int_equal(c->kind, STRATA_KIND_BEGIN);
	c = &m.classes[3]->pub;
	assert_false(c->fixed);
	assert_int_equal(c->fields[1].type, STRATA_FIELD_SEQUENCE);
	assert_true(c->fields[1].text);
	assert_int_equal(c->fields[1].length_field, 0);
	assert_true(c->fields[0].hidden);
	assert_string_equal(c->fields[0].name, "path_len"); /* '_' stripped */
	assert_int_equal(c->fields[2].offset, STRATA_OFFSET_VARIABLE);
	rd_meta_fini(&m);
}

static void expect_meta_error(const char *text, const char *needle, int line)
{
	struct rd_meta m;
	char err[256], want[32];
	int rc = rd_meta_parse(text, strlen(text), &m, err, sizeof(err));
	assert_int_equal(rc, -EINVAL);
	snprintf(want, sizeof(want), "line %d:", line);
	if (strncmp(err, want, strlen(want)) || !strstr(err, needle))
		fail_msg("error '%s' lacks '%s' / '%s'", err, want, needle);
}

static void test_metadata_errors(void **state)
{
	(void)state;
	expect_meta_error("typealias integer { size = 8; } := u8;\nvariant { };", "unexpected", 2);
	expect_meta_error("event {\n name = \"a\";\n id = 1;\n fields := struct { nosuch x; };\n};",
			  "unknown type", 4);
	expect_meta_error("trace { byte_order = be; };", "big-endian", 1);
	expect_meta_error("event { name = \"a\"; };", "without id", 1);
	expect_meta_error("clock { freq = 0; };", "freq", 1);
	expect_meta_error("typealias integer { size = 65; } := x;", "out of range", 1);
	expect_meta_error("/* unterminated", "unterminated comment", 1);
	expect_meta_error("event { name = \"a\"; id = 1; fields := struct {\n"
			  " integer { size = 12; } x; }; };", "byte-aligned", 1);
	expect_meta_error("event { name = \"a\"; id = 1; fields := struct {\n"
			  " integer { size = 8; } x[n]; }; };", "length 'n'", 1);
	expect_meta_error("event { name = \"a\"; id = 1; };\nevent { name = \"b\"; id = 1; };",
			  "two events", 0);
	expect_meta_error("env { a = \"x\n\"; };", "newline in string", 1);
	/* deep nesting is refused, not a stack overflow */
	char deep[4096] = "typealias ";
	for (int i = 0; i < 100; i++)
		strcat(deep, "struct { ");
	expect_meta_error(deep, "nested", 1);
}

/* ---- reading synthetic traces --------------------------------------------------- */

struct collected {
	uint64_t ts[64];
	uint32_t tid[64], pid[64], id[64];
	unsigned n;
};

static int collect(struct strata_trace *t, const struct strata_filter *f, unsigned flags,
		   struct collected *c)
{
	struct strata_iter_options io = { .stream = -1, .filter = f, .flags = flags };
	struct strata_iter *it;
	const struct strata_event *ev;
	assert_int_equal(strata_iter_create(t, &io, &it), 0);
	c->n = 0;
	while (strata_iter_next(it, &ev) > 0 && c->n < 64) {
		c->ts[c->n] = ev->timestamp;
		c->tid[c->n] = ev->tid;
		c->pid[c->n] = ev->pid;
		c->id[c->n] = ev->id;
		c->n++;
	}
	strata_iter_destroy(it);
	return c->n;
}

static void test_timestamps(void **state)
{
	(void)state;
	/* base 0xFFFFFFF0 + small steps across the 2^32 boundary, then a jump
	 * carried by a strata:clock record (format.md §3) */
	uint64_t base = 0x1FFFFFFF0ull;
	struct synth_ev evs[] = {
		{ base + 5, SYNTH_ALLOC, 0 },
		{ base + 0x20, SYNTH_ALLOC, 0 },          /* low 32 wraps */
		{ base + 0x20 + (1ull << 31), SYNTH_ALLOC, 0 },
		{ base + (5ull << 32) + 7, SYNTH_CLOCK, 0 }, /* resync */
		{ base + (5ull << 32) + 7, SYNTH_ALLOC, 0 },
		{ base + (5ull << 32) + 9, SYNTH_ALLOC, 0 },
	};
	char dir[] = "/tmp/strata-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	synth_write(dir, 0, 100, 100, evs, 6, 16384);
	struct strata_trace *t;
	assert_int_equal(strata_trace_open(dir, NULL, &t), 0);
	struct collected c;
	assert_int_equal(collect(t, NULL, 0, &c), 5);
	assert_int_equal(c.ts[0], base + 5);
	assert_int_equal(c.ts[1], base + 0x20);
	assert_int_equal(c.ts[2], base + 0x20 + (1ull << 31));
	assert_int_equal(c.ts[3], base + (5ull << 32) + 7);
	assert_int_equal(c.ts[4], base + (5ull << 32) + 9);
	assert_int_equal(strata_trace_nproblems(t), 0);
	strata_trace_close(t);
	synth_rmdir(dir);
}

static void test_attribution(void **state)
{
	(void)state;
	struct synth_ev evs[] = {
		{ 10, SYNTH_ALLOC, 0 },          /* packet context: 100/100 */
		{ 11, SYNTH_THREAD, 101 },
		{ 12, SYNTH_ALLOC, 0 },          /* 101 */
		{ 13, SYNTH_ALLOC, 0 },
		{ 14, SYNTH_THREAD, 102 },
		{ 15, SYNTH_ALLOC, 0 },          /* 102 */
	};
	char dir[] = "/tmp/strata-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	synth_write(dir, 0, 100, 100, evs, 6, 16384);
	struct strata_trace *t;
	assert_int_equal(strata_trace_open(dir, NULL, &t), 0);
	struct collected c;
	assert_int_equal(collect(t, NULL, 0, &c), 4);
	assert_int_equal(c.tid[0], 100);
	assert_int_equal(c.tid[1], 101);
	assert_int_equal(c.tid[2], 101);
	assert_int_equal(c.tid[3], 102);
	assert_int_equal(c.pid[3], 100);
	/* internal records shown on request */
	assert_int_equal(collect(t, NULL, STRATA_ITER_INTERNAL, &c), 6);
	assert_int_equal(c.id[1], 1);
	/* tid filter applies to the attributed thread */
	struct strata_filter *f;
	assert_int_equal(strata_filter_create(t, &f), 0);
	assert_int_equal(strata_filter_tid(f, 101), 0);
	assert_int_equal(collect(t, f, 0, &c), 2);
	strata_filter_destroy(f);
	/* a set of ids, given out of order and repeated, is searched in
	 * halves (filter.c's push_u32): each member found, nothing else */
	static const uint32_t some[] = { 500, 102, 7, 102, 100, 3, 99, 103 };
	assert_int_equal(strata_filter_create(t, &f), 0);
	for (unsigned i = 0; i < sizeof(some) / sizeof(some[0]); i++)
		assert_int_equal(strata_filter_tid(f, some[i]), 0);
	assert_int_equal(collect(t, f, 0, &c), 2);
	assert_int_equal(c.tid[0], 100);
	assert_int_equal(c.tid[1], 102);
	assert_int_equal(strata_filter_tid(f, 101), 0);
	assert_int_equal(collect(t, f, 0, &c), 4);
	strata_filter_destroy(f);
	strata_trace_close(t);
	synth_rmdir(dir);
}

static int count_expr(struct strata_trace *t, const char *expr)
{
	struct strata_filter *f;
	struct collected c;
	char err[128];
	assert_int_equal(strata_filter_create(t, &f), 0);
	int rc = strata_filter_expr(f, expr, err, sizeof(err));
	if (rc < 0) {
		strata_filter_destroy(f);
		return rc;
	}
	collect(t, f, 0, &c);
	strata_filter_destroy(f);
	return c.n;
}

static void test_filters(void **state)
{
	(void)state;
	/* SYNTH_ALLOC payload: size = ts * 100, addr = ts, flags = ts & 3;
	 * SYNTH_OPEN: path "/etc/ts<ts % 2>" */
	struct synth_ev evs[] = {
		{ 1, SYNTH_ALLOC, 0 }, { 2, SYNTH_ALLOC, 0 }, { 3, SYNTH_ALLOC, 0 },
		{ 4, SYNTH_ALLOC, 0 }, { 5, SYNTH_OPEN, 0 }, { 6, SYNTH_OPEN, 0 },
		{ 50, SYNTH_ALLOC, 0 }, { 51, SYNTH_ALLOC, 0 },
	};
	char dir[] = "/tmp/strata-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	synth_write(dir, 0, 100, 100, evs, 8, 16384);
	struct strata_trace *t;
	assert_int_equal(strata_trace_open(dir, NULL, &t), 0);
	assert_int_equal(count_expr(t, "size > 300"), 3);
	assert_int_equal(count_expr(t, "size > 300 && flags & 1"), 1);   /* 51 */
	assert_int_equal(count_expr(t, "flags & 1 == 1"), 3);             /* 1, 3, 51 */
	assert_int_equal(count_expr(t, "!(flags & 1)"), 3);              /* 2, 4, 50 */
	assert_int_equal(count_expr(t, "size == 100 || size == 5000"), 2);
	assert_int_equal(count_expr(t, "size >= 200 && size <= 400"), 3);
	assert_int_equal(count_expr(t, "size != 100"), 5);
	assert_int_equal(count_expr(t, "flags | 4 == 7"), 2);             /* 3, 51 */
	assert_int_equal(count_expr(t, "size < -1"), 0);
	assert_int_equal(count_expr(t, "addr == 0x32"), 1);
	assert_int_equal(count_expr(t, "path == \"/etc/ts0\""), 1);
	assert_int_equal(count_expr(t, "path != \"/etc/ts0\""), 1);
	/* a name that is no field of the trace is an error naming it and the
	 * fields there are, not a filter that quietly matches nothing */
	assert_int_equal(count_expr(t, "nosuchfield == 1"), -EINVAL);
	assert_int_equal(count_expr(t, "size > 1 || nosuchfield == 1"), -EINVAL);
	{
		struct strata_filter *f;
		char err[512], small[48];
		assert_int_equal(strata_filter_create(t, &f), 0);
		assert_int_equal(strata_filter_expr(f, "sise > 1", err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "'sise'"));
		assert_non_null(strstr(err, "addr, cpu, delta, fd, flags, path, pid, size, "));
		/* cut where the room ends, still a string */
		assert_int_equal(strata_filter_expr(f, "sise > 1", small, sizeof(small)), -EINVAL);
		assert_true(strlen(small) < sizeof(small));
		strata_filter_destroy(f);
	}
	assert_int_equal(count_expr(t, "tid == 100 && cpu == 0"), 8);
	assert_int_equal(count_expr(t, "(size > 100"), -EINVAL);
	assert_int_equal(count_expr(t, "size >"), -EINVAL);
	assert_int_equal(count_expr(t, ""), -EINVAL);
	assert_int_equal(count_expr(t, "size $ 3"), -EINVAL);
	/* glob and time range */
	struct strata_filter *f;
	struct collected c;
	assert_int_equal(strata_filter_create(t, &f), 0);
	assert_int_equal(strata_filter_event(f, "io:*"), 1);
	assert_int_equal(collect(t, f, 0, &c), 2);
	strata_filter_destroy(f);
	assert_int_equal(strata_filter_create(t, &f), 0);
	assert_int_equal(strata_filter_time(f, 3, 6), 0);
	assert_int_equal(collect(t, f, 0, &c), 4);
	strata_filter_destroy(f);
	/* description rendering */
	struct strata_iter *it;
	const struct strata_event *ev;
	char buf[128];
	assert_int_equal(strata_iter_create(t, NULL, &it), 0);
	assert_int_equal(strata_iter_next(it, &ev), 1);
	strata_event_describe(ev, buf, sizeof(buf));
	assert_string_equal(buf, "alloc 100 at 0x1");
	for (int i = 0; i < 4; i++)
		strata_iter_next(it, &ev);
	strata_event_describe(ev, buf, sizeof(buf));
	assert_string_equal(buf, "path=\"/etc/ts1\" fd=4");
	strata_iter_destroy(it);
	strata_trace_close(t);
	synth_rmdir(dir);
}

static void test_seek_merge(void **state)
{
	(void)state;
	/* two CPUs, 4000 events each in many small packets; interleaved */
	enum { N = 4000 };
	struct synth_ev *a = calloc(N, sizeof(*a)), *b = calloc(N, sizeof(*b));
	for (int i = 0; i < N; i++) {
		a[i] = (struct synth_ev){ 1000 + 10 * (uint64_t)i, SYNTH_ALLOC, 0 };
		b[i] = (struct synth_ev){ 1005 + 10 * (uint64_t)i, SYNTH_ALLOC, 0 };
	}
	char dir[] = "/tmp/strata-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	synth_write(dir, 0, 100, 100, a, N, 4096);
	synth_write(dir, 1, 100, 100, b, N, 4096);
	struct strata_trace *t;
	assert_int_equal(strata_trace_open(dir, NULL, &t), 0);
	struct strata_iter *it;
	const struct strata_event *ev;
	assert_int_equal(strata_iter_create(t, NULL, &it), 0);
	uint64_t prev = 0, n = 0;
	while (strata_iter_next(it, &ev) > 0) {
		assert_true(ev->timestamp > prev);
		assert_int_equal(ev->cpu, (ev->timestamp % 10) == 5);
		prev = ev->timestamp;
		n++;
	}
	assert_int_equal(n, 2 * N);
	for (uint64_t target = 0; target < 1000 + 10 * N + 20; target += 997) {
		assert_int_equal(strata_iter_seek(it, target), 0);
		int rc = strata_iter_next(it, &ev);
		uint64_t want = target <= 1000 ? 1000 : target;
		while (want % 5)
			want++;
		if (want > 1005 + 10 * (N - 1)) {
			assert_int_equal(rc, 0);
		} else {
			assert_int_equal(rc, 1);
			assert_int_equal(ev->timestamp, want);
		}
	}
	strata_iter_destroy(it);
	/* single stream */
	struct strata_iter_options io = { .stream = 1 };
	assert_int_equal(strata_iter_create(t, &io, &it), 0);
	n = 0;
	while (strata_iter_next(it, &ev) > 0)
		n += ev->cpu == 1;
	assert_int_equal(n, N);
	strata_iter_destroy(it);
	strata_trace_close(t);
	synth_rmdir(dir);
	free(a);
	free(b);
}

/* Problems of kind `kind` reported, and the last one's file. */
struct rec_seen {
	int kind;
	unsigned n;
	char file[256];
};

static void rec_problem(const struct strata_problem *p, void *arg)
{
	struct rec_seen *r = arg;
	if (p->kind == r->kind) {
		r->n++;
		snprintf(r->file, sizeof(r->file), "%s", p->file);
	}
}

/* dir/sub: a one-event sub-trace; its clock's uuid when `uuid` */
static void rec_sub(const char *dir, const char *sub, const char *uuid)
{
	char d[256], cmd[600];
	struct synth_ev ev = { 1, SYNTH_ALLOC, 0 };
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/%s", dir, sub);
	assert_int_equal(system(cmd), 0);
	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	synth_write(d, 0, 100, 100, &ev, 1, 16384);
	if (uuid) {
		snprintf(cmd, sizeof(cmd), "sed -i 's/clock { name = \"strata\";/clock { name = "
			 "\"strata\"; uuid = \"%s\";/' %s/metadata", uuid, d);
		assert_int_equal(system(cmd), 0);
	}
}

/* A trace is one recording (format.md §1): a directory of several is
 * refused, each named, unless STRATA_OPEN_MERGE. */
static void test_recordings(void **state)
{
	(void)state;
	static const char *const boot[] = { "0b8a6f3e-6f0e-4c3d-9a53-5e3f3b1c2d4e",
					    "1c9b7f4f-7f1f-4d4e-8b64-6f4f4c2d3e5f" };
	struct {
		const char *subs[3];
		int b[3];     /* clock uuid: -1 none, else boot[] */
		unsigned n;   /* recordings: 1 opens */
	} cases[] = {
		{ { "ust/pid-1", "ust/pid-2", "kernel" }, { 0, 0, 0 }, 1 },
		{ { "ust/pid-1", "state", NULL }, { -1, 0, 0 }, 1 },
		{ { "a/ust/pid-1", "a/ust/pid-2", NULL }, { 0, 0, 0 }, 1 },
		{ { "a/ust/pid-1", "b/ust/pid-1", NULL }, { 0, 0, 0 }, 2 },
		{ { "a/ust/pid-1", "b/kernel", "c" }, { 0, 0, 0 }, 3 },
		{ { "x", "y", NULL }, { -1, -1, 0 }, 2 },
		/* one layout, two boots: not one timeline */
		{ { "ust/pid-1", "ust/pid-2", NULL }, { 0, 1, 0 }, 2 },
	};
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char dir[] = "/tmp/strata-test-XXXXXX";
		assert_non_null(mkdtemp(dir));
		for (int i = 0; i < 3 && cases[k].subs[i]; i++)
			rec_sub(dir, cases[k].subs[i], cases[k].b[i] < 0 ? NULL : boot[cases[k].b[i]]);
		struct rec_seen seen = { .kind = STRATA_PROBLEM_RECORDING };
		struct strata_open_options oo = { .problem = rec_problem, .problem_arg = &seen };
		struct strata_trace *t = NULL;
		int rc = strata_trace_open(dir, &oo, &t);
		if (cases[k].n == 1) {
			if (rc != 0 || seen.n)
				fail_msg("case %u: %d, %u recordings", k, rc, seen.n);
		} else {
			if (rc != -ENOTUNIQ || seen.n != cases[k].n || t)
				fail_msg("case %u: %d, %u recordings", k, rc, seen.n);
			assert_true(!strncmp(seen.file, dir, strlen(dir)));
			oo.flags = STRATA_OPEN_MERGE;
			assert_int_equal(strata_trace_open(dir, &oo, &t), 0);
		}
		strata_trace_close(t);
		synth_rmdir(dir);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metadata_ok),
		cmocka_unit_test(test_metadata_errors),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_attribution),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_seek_merge),
		cmocka_unit_test(test_recordings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
