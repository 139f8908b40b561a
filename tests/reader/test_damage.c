/* SPDX-License-Identifier: MIT */
/* Damaged-trace corpus: every readable event comes back, each problem is reported once. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

#include <strata/reader.h>

#include "synth.h"
#include "batch_check.h"

#define PSIZE 4096u
#define NEV 600u /* 4 words each: 125 a packet, 5 packets of 4 KiB per CPU */

struct problems {
	unsigned n, kinds[64];
	uint64_t offsets[64];
	char files[64][256];
};

static void on_problem(const struct strata_problem *p, void *arg)
{
	struct problems *pr = arg;
	if (pr->n < 64) {
		pr->kinds[pr->n] = p->kind;
		pr->offsets[pr->n] = p->offset;
		snprintf(pr->files[pr->n], sizeof(pr->files[0]), "%s", p->file);
	}
	pr->n++;
}

struct run {
	uint64_t *off; /* offsets of the cpu0 events read */
	uint32_t *stream;
	unsigned n;
	struct problems pr;
	int open_rc;
};

static void read_all(const char *dir, struct run *r)
{
	struct strata_open_options oo = { .problem = on_problem, .problem_arg = &r->pr };
	struct strata_trace *t;
	const struct strata_event *ev;
	struct strata_iter *it;
	memset(r, 0, sizeof(*r));
	r->off = calloc(4 * NEV, sizeof(uint64_t));
	r->stream = calloc(4 * NEV, sizeof(uint32_t));
	r->open_rc = strata_trace_open(dir, &oo, &t);
	if (r->open_rc < 0)
		return;
	assert_int_equal(strata_iter_create(t, NULL, &it), 0);
	while (strata_iter_next(it, &ev) > 0) {
		assert_true(r->n < 4 * NEV);
		struct strata_value v[4];
		/* decoding must stay in bounds whatever the bytes say */
		strata_event_fields(ev, v, 4);
		char buf[256];
		strata_event_describe(ev, buf, sizeof(buf));
		r->off[r->n] = ev->offset;
		r->stream[r->n] = ev->stream;
		r->n++;
	}
	strata_iter_destroy(it);
	/* batches see the same events and values, damage included (each
	 * problem is still reported once: packets remember) */
	struct strata_iter_options io = { .stream = -1 };
	batch_check_trace(t, &io);
	strata_trace_close(t);
}

static void free_run(struct run *r)
{
	free(r->off);
	free(r->stream);
}

/* r holds exactly one problem, of kind `kind` */
static void one_problem(const struct run *r, int kind)
{
	assert_int_equal(r->pr.n, 1);
	assert_int_equal(r->pr.kinds[0], kind);
}

static char clean[64];

static void make_clean(void)
{
	struct synth_ev *e = calloc(NEV, sizeof(*e));
	for (unsigned i = 0; i < NEV; i++)
		e[i] = (struct synth_ev){ 100 + 2 * (uint64_t)i, SYNTH_ALLOC, 0 };
	strcpy(clean, "/tmp/strata-damage-XXXXXX");
	assert_non_null(mkdtemp(clean));
	synth_write(clean, 0, 100, 100, e, NEV, PSIZE);
	for (unsigned i = 0; i < NEV; i++)
		e[i].ts++;
	synth_write(clean, 1, 100, 100, e, NEV, PSIZE);
	free(e);
}

/* A fresh copy of the clean trace to damage. */
static void copy_clean(char *dir)
{
	char cmd[256];
	strcpy(dir, "/tmp/strata-damage-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp -r %s/. %s/", clean, dir);
	assert_int_equal(system(cmd), 0);
}

static void poke(const char *dir, uint64_t off, const void *bytes, size_t n)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/cpu0", dir);
	int fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, n, off), (ssize_t)n);
	close(fd);
}

static void poke64(const char *dir, uint64_t off, uint64_t v)
{
	poke(dir, off, &v, 8);
}

/* The run must hold exactly the clean events except cpu0's in [lo, hi). */
static void expect_all_but(const struct run *clean_run, const struct run *r, uint64_t lo,
			   uint64_t hi)
{
	unsigned want = 0;
	for (unsigned i = 0; i < clean_run->n; i++)
		want += !(clean_run->stream[i] == 0 && clean_run->off[i] >= lo &&
			  clean_run->off[i] < hi);
	assert_int_equal(r->n, want);
	for (unsigned i = 0; i < r->n; i++)
		assert_false(r->stream[i] == 0 && r->off[i] >= lo && r->off[i] < hi);
}

static struct run base;

static int setup(void **state)
{
	(void)state;
	make_clean();
	read_all(clean, &base);
	assert_int_equal(base.n, 2 * NEV);
	assert_int_equal(base.pr.n, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free_run(&base);
	synth_rmdir(clean);
	return 0;
}

static void test_truncated(void **state)
{
	(void)state;
	char dir[64], p[256];
	struct run r;
	copy_clean(dir);
	snprintf(p, sizeof(p), "%s/cpu0", dir);
	uint64_t cut = 2 * PSIZE + 1000; /* inside packet 2's events */
	assert_int_equal(truncate(p, cut), 0);
	read_all(dir, &r);
	/* events wholly before the cut stay readable */
	unsigned want = 0;
	for (unsigned i = 0; i < base.n; i++)
		want += base.stream[i] != 0 || base.off[i] + 32 <= cut;
	assert_int_equal(r.n, want);
	one_problem(&r, STRATA_PROBLEM_DAMAGED);
	assert_int_equal(r.pr.offsets[0], cut);
	assert_string_equal(r.pr.files[0], p);
	free_run(&r);
	/* cut inside a packet header */
	assert_int_equal(truncate(p, 2 * PSIZE + 50), 0);
	read_all(dir, &r);
	expect_all_but(&base, &r, 2 * PSIZE, UINT64_MAX);
	assert_int_equal(r.pr.n, 1);
	assert_int_equal(r.pr.offsets[0], 2 * PSIZE);
	free_run(&r);
	/* shorter than one header */
	assert_int_equal(truncate(p, 40), 0);
	read_all(dir, &r);
	expect_all_but(&base, &r, 0, UINT64_MAX);
	assert_int_equal(r.pr.n, 1);
	free_run(&r);
	synth_rmdir(dir);
}

static void test_bad_headers(void **state)
{
	(void)state;
	static const struct { uint64_t at; uint64_t v; const char *what; } cases[] = {
		{ PSIZE + 0, 0xdeadbeef, "bad magic" },
		{ PSIZE + 56, 12345 * 8, "impossible packet_size" },
		{ PSIZE + 56, (uint64_t)PSIZE * 16, "other packet_size" },
		{ PSIZE + 48, (uint64_t)PSIZE * 8 + 64, "content_size > packet_size" },
		{ PSIZE + 48, 8, "content_size < header" },
		{ PSIZE + 48, 1001, "content_size not in words" },
		{ PSIZE + 40, 1, "timestamp_end < timestamp_begin" },
	};
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char dir[64];
		struct run r;
		copy_clean(dir);
		if (cases[k].at % PSIZE == 0)
			poke(dir, cases[k].at, &cases[k].v, 4);
		else
			poke64(dir, cases[k].at, cases[k].v);
		read_all(dir, &r);
		expect_all_but(&base, &r, PSIZE, 2 * PSIZE);
		if (r.pr.n != 1 || r.pr.offsets[0] != PSIZE)
			fail_msg("%s: %u problems, first at %llu", cases[k].what, r.pr.n,
				 (unsigned long long)r.pr.offsets[0]);
		free_run(&r);
		synth_rmdir(dir);
	}
}

static void test_bad_events(void **state)
{
	(void)state;
	char dir[64];
	struct run r;
	uint64_t ev5 = 96 + 5 * 32; /* sixth event of packet 0 */
	/* length 0: the rest of packet 0 is skipped */
	copy_clean(dir);
	poke64(dir, ev5, 100 + 10);
	read_all(dir, &r);
	expect_all_but(&base, &r, ev5, PSIZE);
	assert_int_equal(r.pr.n, 1);
	assert_int_equal(r.pr.offsets[0], ev5);
	free_run(&r);
	synth_rmdir(dir);
	/* length running past content_size */
	copy_clean(dir);
	poke64(dir, ev5, 110 | (uint64_t)0x10001 << 32 | (uint64_t)1000 << 54);
	read_all(dir, &r);
	expect_all_but(&base, &r, ev5, PSIZE);
	assert_int_equal(r.pr.n, 1);
	free_run(&r);
	synth_rmdir(dir);
	/* unknown id: that event is skipped, reported once */
	copy_clean(dir);
	poke64(dir, ev5, 110 | (uint64_t)0x70009 << 32 | (uint64_t)4 << 54);
	poke64(dir, ev5 + 32, 112 | (uint64_t)0x70009 << 32 | (uint64_t)4 << 54);
	read_all(dir, &r);
	expect_all_but(&base, &r, ev5, ev5 + 64);
	assert_int_equal(r.pr.n, 1);
	free_run(&r);
	synth_rmdir(dir);
	/* short payload for its class: the following words read as headers
	 * are garbage; decoding stays in bounds (read_all decodes all) */
	copy_clean(dir);
	poke64(dir, ev5, 110 | (uint64_t)0x10001 << 32 | (uint64_t)2 << 54);
	read_all(dir, &r);
	assert_true(r.n <= base.n + 8);
	free_run(&r);
	synth_rmdir(dir);
}

/*
 * Stream class 1 (docs/compact.md): a compact event's length comes from
 * its class, so an event that does not fit, id 0, a compact id with no
 * class or an extended header of an impossible length ends the packet's
 * readable part, reported once; read_all's batches (the class 1 batch
 * paths, two streams: the two-cursor merge) see exactly what
 * strata_iter_next sees.
 */
static void test_compact_damage(void **state)
{
	(void)state;
	enum { N1 = 400 }; /* mem:alloc, 28 bytes: 142 a packet */
	const uint64_t ev5 = 96 + 5 * 28;
	struct synth_ev *e = calloc(N1, sizeof(*e));
	char c1[64], cmd[256];
	for (unsigned i = 0; i < N1; i++)
		e[i] = (struct synth_ev){ 100 + 2 * (uint64_t)i, SYNTH_ALLOC, 0 };
	strcpy(c1, "/tmp/strata-damage-XXXXXX");
	assert_non_null(mkdtemp(c1));
	synth_write1(c1, 0, 100, 100, e, N1, PSIZE);
	for (unsigned i = 0; i < N1; i++)
		e[i].ts++;
	synth_write1(c1, 1, 100, 100, e, N1, PSIZE);
	free(e);
	struct run cl;
	read_all(c1, &cl);
	assert_int_equal(cl.n, 2 * N1);
	assert_int_equal(cl.pr.n, 0);
	static const struct { uint64_t at; uint64_t v; unsigned n; const char *what; } cases[] = {
		/* content_size 4 bytes short of event 5's end */
		{ 48, (ev5 + 24) * 8, 8, "event past content_size" },
		{ ev5, 0, 4, "compact id 0" },
		{ ev5, 20 | 110u << 5, 4, "compact id with no class" },
		{ ev5, 31 | 1000u << 5, 4, "extended length past content" },
		{ ev5, 31 | 2u << 5, 4, "extended length below its header" },
		{ ev5, 31 | 5u << 5, 4, "extended payload not in words" },
	};
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char dir[64];
		struct run r;
		strcpy(dir, "/tmp/strata-damage-XXXXXX");
		assert_non_null(mkdtemp(dir));
		snprintf(cmd, sizeof(cmd), "cp -r %s/. %s/", c1, dir);
		assert_int_equal(system(cmd), 0);
		poke(dir, cases[k].at, &cases[k].v, cases[k].n);
		read_all(dir, &r);
		expect_all_but(&cl, &r, ev5, PSIZE);
		if (r.pr.n != 1 || r.pr.offsets[0] != ev5 ||
		    r.pr.kinds[0] != STRATA_PROBLEM_DAMAGED)
			fail_msg("%s: %u problems, first at %llu", cases[k].what, r.pr.n,
				 (unsigned long long)r.pr.offsets[0]);
		free_run(&r);
		synth_rmdir(dir);
	}
	free_run(&cl);
	synth_rmdir(c1);
}

static void test_garbage_metadata(void **state)
{
	(void)state;
	char dir[64], p[256];
	struct run r;
	copy_clean(dir);
	snprintf(p, sizeof(p), "%s/metadata", dir);
	FILE *f = fopen(p, "a");
	fputs("\nevent { name = \"x\"; id = 9; fields := struct { float y; }; };\n", f);
	fclose(f);
	read_all(dir, &r);
	assert_int_equal(r.open_rc, -EINVAL);
	one_problem(&r, STRATA_PROBLEM_METADATA);
	assert_string_equal(r.pr.files[0], p);
	assert_true(r.pr.offsets[0] > 20); /* the line of the bad event */
	free_run(&r);
	/* binary garbage */
	f = fopen(p, "w");
	for (int i = 0; i < 4096; i++)
		fputc((i * 7919) & 0xff, f);
	fclose(f);
	read_all(dir, &r);
	assert_int_equal(r.open_rc, -EINVAL);
	assert_int_equal(r.pr.n, 1);
	free_run(&r);
	synth_rmdir(dir);
}

static void test_bad_index(void **state)
{
	(void)state;
	char dir[64], p[256];
	struct run r;
	copy_clean(dir);
	snprintf(p, sizeof(p), "%s/index", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/index/cpu0.idx", dir);
	FILE *f = fopen(p, "w");
	fputs("not an index at all, not at all", f);
	fclose(f);
	read_all(dir, &r);
	expect_all_but(&base, &r, 0, 0);
	one_problem(&r, STRATA_PROBLEM_INDEX);
	free_run(&r);
	synth_rmdir(dir);
}

/* ---- the reader never gives a confident wrong answer (issue 24.12-15) ---- */

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* dir/index/cpu<cpu>.idx for the stream's packets, as writers make it
 * (format.md §7), then lie(entry, i) on each entry: NULL for none. */
static void write_index(const char *dir, unsigned cpu, void (*lie)(uint64_t *e, unsigned i))
{
	char p[256];
	snprintf(p, sizeof(p), "%s/index", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/cpu%u", dir, cpu);
	FILE *in = fopen(p, "r");
	snprintf(p, sizeof(p), "%s/index/cpu%u.idx", dir, cpu);
	FILE *out = fopen(p, "w");
	assert_non_null(in);
	assert_non_null(out);
	uint8_t hdr[16] = { 0xC1, 0xF1, 0xDC, 0xC1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 72 };
	fwrite(hdr, 1, 16, out);
	uint8_t pk[PSIZE];
	for (unsigned i = 0; fread(pk, 1, PSIZE, in) == PSIZE; i++) {
		uint64_t e[9], w;
		e[0] = (uint64_t)i * PSIZE;
		e[1] = (uint64_t)PSIZE * 8;
		memcpy(&e[2], pk + 48, 8);
		memcpy(&e[3], pk + 32, 8);
		memcpy(&e[4], pk + 40, 8);
		memcpy(&e[5], pk + 72, 8);
		e[6] = 0;
		memcpy(&e[7], pk + 24, 8);
		memcpy(&e[8], pk + 64, 8);
		if (lie)
			lie(e, i);
		for (int k = 0; k < 9; k++) {
			uint8_t b[8];
			w = e[k];
			put_be64(b, w);
			fwrite(b, 1, 8, out);
		}
	}
	fclose(in);
	fclose(out);
}

static void lie_discarded(uint64_t *e, unsigned i)
{
	(void)i;
	e[5] = 12345;
}

static void lie_times(uint64_t *e, unsigned i)
{
	(void)i;
	e[3] = e[4] = 0;
}

static void lie_content(uint64_t *e, unsigned i)
{
	(void)i;
	e[2] = 256 * 8;
}

/* the middle packet: in order with the others, caught when entered */
static void lie_middle_end(uint64_t *e, unsigned i)
{
	if (i == 2)
		e[4] -= 10;
}

static void lie_middle_begin(uint64_t *e, unsigned i)
{
	if (i == 2)
		e[3] -= 1;
}

/* An index is a cache: one that lies is said once (STRATA_PROBLEM_INDEX)
 * and rebuilt from the packets; every event is read, the stream's totals
 * are its packets', and a seek lands where it would with no index. */
static void test_index_lies(void **state)
{
	(void)state;
	static void (*const lies[])(uint64_t *, unsigned) = {
		NULL, lie_discarded, lie_times, lie_content, lie_middle_end, lie_middle_begin,
	};
	for (unsigned k = 0; k < sizeof(lies) / sizeof(lies[0]); k++) {
		char dir[64];
		struct run r;
		copy_clean(dir);
		write_index(dir, 0, lies[k]);
		read_all(dir, &r);
		expect_all_but(&base, &r, 0, 0);
		if (r.pr.n != (k ? 1u : 0u) || (k && r.pr.kinds[0] != STRATA_PROBLEM_INDEX))
			fail_msg("lie %u: %u problems, the first of kind %u", k, r.pr.n, r.pr.kinds[0]);
		free_run(&r);
		/* totals and a seek into packet 2 (ts 100 + 2 * 250 = 600) */
		struct problems pr = { 0 };
		struct strata_open_options oo = { .problem = on_problem, .problem_arg = &pr };
		struct strata_trace *t;
		struct strata_stream_info si;
		struct strata_iter *it;
		const struct strata_event *ev;
		struct strata_iter_options io = { .stream = 0 };
		assert_int_equal(strata_trace_open(dir, &oo, &t), 0);
		assert_int_equal(strata_trace_stream(t, 0, &si), 0);
		assert_int_equal(si.discarded, 0);
		assert_int_equal(si.begin, 100);
		assert_int_equal(strata_trace_begin(t), 100);
		assert_int_equal(strata_iter_create(t, &io, &it), 0);
		assert_int_equal(strata_iter_seek(it, 599), 0);
		assert_int_equal(strata_iter_next(it, &ev), 1);
		assert_int_equal(ev->timestamp, 600);
		strata_iter_destroy(it);
		strata_trace_close(t);
		synth_rmdir(dir);
	}
}

/* strata_trace_packet gives each packet as its header says, reading no
 * event; a packet whose header was rejected is -ENODATA, one past the
 * last (or of no stream) -EINVAL. */
static void test_packet_info(void **state)
{
	(void)state;
	char dir[64];
	copy_clean(dir);
	uint32_t bad = 0xdeadbeef;
	poke(dir, PSIZE, &bad, 4); /* packet 1's magic */
	struct problems pr = { 0 };
	struct strata_open_options oo = { .problem = on_problem, .problem_arg = &pr };
	struct strata_trace *t;
	struct strata_packet_info p;
	assert_int_equal(strata_trace_open(dir, &oo, &t), 0);
	uint64_t seq = 0, n = 0;
	for (uint64_t i = 0;; i++) {
		int rc = strata_trace_packet(t, 0, i, &p);
		if (rc == -EINVAL)
			break;
		if (i == 1) {
			assert_int_equal(rc, -ENODATA);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(p.begin, 100 + 250 * i);
		assert_true(p.end >= p.begin && p.end < 100 + 250 * (i + 1));
		assert_true(p.content > 96 && p.content <= PSIZE);
		assert_true(i == 0 || p.seq > seq);
		assert_int_equal(p.discarded, 0);
		seq = p.seq;
		n++;
	}
	struct strata_stream_info si;
	assert_int_equal(strata_trace_stream(t, 0, &si), 0);
	assert_int_equal(n, si.npackets);
	assert_int_equal(strata_trace_packet(t, strata_trace_nstreams(t), 0, &p), -EINVAL);
	strata_trace_close(t);
	synth_rmdir(dir);
}

/* Files of a trace that are not regular files are never read (a FIFO
 * would block), and a stream that its index lists but that cannot be
 * read is reported (STRATA_PROBLEM_MISSING, count: the packets listed). */
static void test_not_regular(void **state)
{
	(void)state;
	char dir[64], p[256], q[256];
	struct run r;
	/* the index a FIFO: rebuilt */
	copy_clean(dir);
	snprintf(p, sizeof(p), "%s/index", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/index/cpu0.idx", dir);
	assert_int_equal(mkfifo(p, 0644), 0);
	read_all(dir, &r);
	expect_all_but(&base, &r, 0, 0);
	one_problem(&r, STRATA_PROBLEM_INDEX);
	free_run(&r);
	synth_rmdir(dir);
	/* the stream a FIFO, a link to /dev/zero, missing: the index lists it */
	for (int k = 0; k < 3; k++) {
		copy_clean(dir);
		write_index(dir, 0, NULL);
		snprintf(p, sizeof(p), "%s/cpu0", dir);
		assert_int_equal(unlink(p), 0);
		if (k == 0)
			assert_int_equal(mkfifo(p, 0644), 0);
		else if (k == 1)
			assert_int_equal(symlink("/dev/zero", p), 0);
		struct problems pr = { 0 };
		struct strata_open_options oo = { .problem = on_problem, .problem_arg = &pr };
		struct strata_trace *t;
		assert_int_equal(strata_trace_open(dir, &oo, &t), 0);
		assert_int_equal(pr.n, 1);
		assert_int_equal(pr.kinds[0], STRATA_PROBLEM_MISSING);
		assert_string_equal(pr.files[0], p);
		strata_trace_close(t);
		synth_rmdir(dir);
	}
	/* the metadata a FIFO: the sub-trace is reported, nothing is read */
	copy_clean(dir);
	snprintf(p, sizeof(p), "%s/metadata", dir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkfifo(p, 0644), 0);
	read_all(dir, &r);
	assert_int_equal(r.open_rc, -EINVAL);
	one_problem(&r, STRATA_PROBLEM_METADATA);
	free_run(&r);
	/* no metadata at all beside the streams: said, not passed over */
	assert_int_equal(unlink(p), 0);
	snprintf(q, sizeof(q), "%s/metadata.tmp", dir);
	fclose(fopen(q, "w"));
	read_all(dir, &r);
	assert_int_equal(r.open_rc, -EINVAL);
	one_problem(&r, STRATA_PROBLEM_METADATA);
	assert_string_equal(r.pr.files[0], dir);
	free_run(&r);
	synth_rmdir(dir);
}

/* A zero-filled tail, sparse or written, is one problem with its extent
 * (not one per packet), and costs no reading when it is a hole. */
static void test_zero_tail(void **state)
{
	(void)state;
	char dir[64], p[256];
	struct run r;
	copy_clean(dir);
	snprintf(p, sizeof(p), "%s/cpu0", dir);
	/* 4 GiB of hole: 2^20 packets of 4 KiB */
	assert_int_equal(truncate(p, 5 * PSIZE + (4ull << 30)), 0);
	read_all(dir, &r);
	expect_all_but(&base, &r, 0, 0);
	one_problem(&r, STRATA_PROBLEM_DAMAGED);
	assert_int_equal(r.pr.offsets[0], 5 * PSIZE);
	free_run(&r);
	/* written zeros between packets 1 and 2 */
	FILE *f = fopen(p, "r");
	uint8_t *b = calloc(1, 5 * PSIZE + 64 * PSIZE);
	assert_int_equal(fread(b, 1, 5 * PSIZE, f), 5 * PSIZE);
	fclose(f);
	memmove(b + 66 * PSIZE, b + 2 * PSIZE, 3 * PSIZE);
	memset(b + 2 * PSIZE, 0, 64 * PSIZE);
	f = fopen(p, "w");
	fwrite(b, 1, 69 * PSIZE, f);
	fclose(f);
	free(b);
	read_all(dir, &r);
	expect_all_but(&base, &r, 0, 0);
	assert_int_equal(r.pr.n, 1);
	assert_int_equal(r.pr.offsets[0], 2 * PSIZE);
	free_run(&r);
	synth_rmdir(dir);
}

/* Time going back in a stream (babeltrace2 refuses it) is said once per
 * stream, at the offset where it goes back; the events are read as
 * written. Stream class 0: a strata:clock record; 1: an extended header. */
static void test_time_back(void **state)
{
	(void)state;
	for (unsigned sclass = 0; sclass < 2; sclass++) {
		struct synth_ev e[61];
		char dir[] = "/tmp/strata-damage-XXXXXX";
		assert_non_null(mkdtemp(dir));
		unsigned n = 0;
		for (unsigned i = 0; i < 30; i++)
			e[n++] = (struct synth_ev){ 1000 + 10 * i, SYNTH_ALLOC, 0 };
		/* 1100 after 1290: a clock record, or a mem:alloc with its full
		 * timestamp (synth.h) */
		e[n++] = (struct synth_ev){ 1100, SYNTH_CLOCK, 0 };
		for (unsigned i = 0; i < 30; i++)
			e[n++] = (struct synth_ev){ 1102 + 10 * i, SYNTH_ALLOC, 0 };
		(sclass ? synth_write1 : synth_write)(dir, 0, 100, 100, e, n, PSIZE);
		struct problems pr = { 0 };
		struct strata_open_options oo = { .problem = on_problem, .problem_arg = &pr };
		struct strata_trace *t;
		struct strata_iter *it;
		const struct strata_event *ev;
		assert_int_equal(strata_trace_open(dir, &oo, &t), 0);
		assert_int_equal(strata_iter_create(t, NULL, &it), 0);
		uint64_t ts[61];
		unsigned got = 0;
		while (strata_iter_next(it, &ev) > 0 && got < 61)
			ts[got++] = ev->timestamp;
		strata_iter_destroy(it);
		/* the clock record is strata's own (hidden); the extended
		 * mem:alloc is an event */
		assert_int_equal(got, sclass ? 61 : 60);
		assert_int_equal(ts[29], 1290);
		assert_int_equal(ts[30], sclass ? 1100 : 1102);
		assert_int_equal(pr.n, 1);
		assert_int_equal(pr.kinds[0], STRATA_PROBLEM_DAMAGED);
		assert_int_equal(pr.offsets[0], 96 + 30 * (sclass ? 28 : 32));
		/* once per stream: batches read it again, say nothing more */
		struct strata_iter_options io = { .stream = -1 };
		batch_check_trace(t, &io);
		assert_int_equal(pr.n, 1);
		strata_trace_close(t);
		synth_rmdir(dir);
	}
}

/* Random bit flips and byte smashes: the reader must terminate, stay in
 * bounds (run this under ASan) and return no more events than exist. */
static void test_bit_flips(void **state)
{
	(void)state;
	char dir[64], p[256];
	copy_clean(dir);
	snprintf(p, sizeof(p), "%s/cpu0", dir);
	FILE *f = fopen(p, "r");
	uint8_t *orig = malloc(3 * PSIZE);
	assert_int_equal(fread(orig, 1, 3 * PSIZE, f), 3 * PSIZE);
	fclose(f);
	uint64_t seed = 42;
	for (int iter = 0; iter < 300; iter++) {
		uint8_t *b = malloc(3 * PSIZE);
		memcpy(b, orig, 3 * PSIZE);
		int nflip = 1 + iter % 16;
		for (int k = 0; k < nflip; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t at = (seed >> 33) % (3 * PSIZE);
			/* bias towards headers, where damage matters most */
			if (k & 1)
				at = (at % 3) * PSIZE + (seed >> 20) % 96;
			b[at] ^= 1u << ((seed >> 13) & 7);
		}
		f = fopen(p, "w");
		fwrite(b, 1, 3 * PSIZE, f);
		fclose(f);
		struct run r;
		read_all(dir, &r);
		assert_true(r.n <= 2 * NEV + 3 * PSIZE / 8);
		free_run(&r);
		free(b);
	}
	free(orig);
	synth_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_bad_events),
		cmocka_unit_test(test_compact_damage),
		cmocka_unit_test(test_garbage_metadata),
		cmocka_unit_test(test_bad_index),
		cmocka_unit_test(test_index_lies),
		cmocka_unit_test(test_packet_info),
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_zero_tail),
		cmocka_unit_test(test_time_back),
		cmocka_unit_test(test_bit_flips),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
