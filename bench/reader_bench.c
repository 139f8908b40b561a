/* SPDX-License-Identifier: MIT */
/* libstrata-reader benchmark: generate a large trace, full-decode rate, seek latency. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <strata/reader.h>

/*
 * usage: reader_bench gen DIR NEVENTS [NCPUS]   write a trace (format.md) of
 *                                               mixed events, 256 KiB packets
 *        reader_bench decode DIR [MODE]          iterate, decode every field;
 *                                               prints events/s (MODE: next,
 *                                               read, unordered or batch, below)
 *        reader_bench seek DIR [N]               N random seeks; mean latency
 */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char meta[] =
	"/* CTF 1.8 */\n"
	"typealias integer { size = 32; align = 32; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 64; signed = false; } := uint64_t;\n"
	"typealias integer { size = 64; align = 64; signed = false; base = 16; } := uint64_hex_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := char_t;\n"
	"trace { major = 1; minor = 8; byte_order = le;\n"
	"  packet.header := struct { uint32_t magic; integer { size = 8; align = 8; signed = false; } uuid[16];\n"
	"  uint32_t stream_id; uint64_t stream_instance_id; }; };\n"
	"env { domain = \"ust\"; tracer_name = \"strata\"; vpid = 1000; procname = \"bench\";\n"
	"  strata_format_65537 = \"alloc %{size} bytes at %{addr:x}\";\n"
	"  strata_format_65539 = \"open %{path} -> %{fd}\"; };\n"
	"clock { name = \"strata\"; uuid = \"0b8a6f3e-6f0e-4c3d-9a53-5e3f3b1c2d4e\";\n"
	"  freq = 1000000000; offset_s = 1700000000; offset = 0; precision = 1; absolute = TRUE; };\n"
	"typealias integer { size = 64; align = 64; signed = false; map = clock.strata.value; } := uint64_clock_t;\n"
	"stream { id = 0; packet.context := struct { uint64_clock_t timestamp_begin;\n"
	"  uint64_clock_t timestamp_end; uint64_t content_size; uint64_t packet_size;\n"
	"  uint64_t packet_seq_num; uint64_t events_discarded; uint32_t cpu_id; uint32_t pid;\n"
	"  uint32_t tid; uint32_t pad; };\n"
	"  event.header := struct {\n"
	"  integer { size = 32; align = 64; signed = false; map = clock.strata.value; } timestamp;\n"
	"  integer { size = 22; align = 1; signed = false; } id; } align(64); };\n"
	"event { name = \"strata:thread\"; id = 1; stream_id = 0;\n"
	"  fields := struct { uint32_t tid; uint32_t pid; } align(64); };\n"
	"event { name = \"mem:alloc\"; id = 65537; stream_id = 0;\n"
	"  fields := struct { uint64_t size; uint64_hex_t addr; } align(64); };\n"
	"event { name = \"mem:free\"; id = 65538; stream_id = 0;\n"
	"  fields := struct { uint64_hex_t addr; } align(64); };\n"
	"event { name = \"io:open\"; id = 65539; stream_id = 0;\n"
	"  fields := struct { uint32_t fd; uint32_t _path_len; char_t path[_path_len]; } align(64); };\n"
	"event { name = \"sched:tick\"; id = 131073; stream_id = 0;\n"
	"  fields := struct { uint32_t cpu; uint32_t prio; uint64_t runtime; uint64_t vruntime; } align(64); };\n";

#define PSIZE (256u << 10)

static int gen(const char *dir, uint64_t n, unsigned ncpus)
{
	char p[4096];
	snprintf(p, sizeof(p), "mkdir -p '%s/ust/pid-1000'", dir);
	if (system(p))
		return 1;
	snprintf(p, sizeof(p), "%s/ust/pid-1000/metadata", dir);
	FILE *m = fopen(p, "w");
	if (!m)
		return 1;
	fputs(meta, m);
	fclose(m);
	uint8_t *pk = malloc(PSIZE);
	uint64_t per = n / ncpus, x = 88172645463325252ull;
	for (unsigned cpu = 0; cpu < ncpus; cpu++) {
		snprintf(p, sizeof(p), "%s/ust/pid-1000/cpu%u", dir, cpu);
		FILE *f = fopen(p, "w");
		if (!f)
			return 1;
		uint64_t ts = 1000 + cpu, seq = 0, i = 0;
		while (i < per) {
			memset(pk, 0, PSIZE);
			size_t off = 96;
			uint64_t tb = ts;
			uint32_t tid = 1000 + cpu;
			while (i < per && off + 64 <= PSIZE) {
				uint64_t *w = (uint64_t *)(pk + off);
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				ts += 1 + (x & 63) * ncpus; /* distinct per CPU: ts % ncpus == cpu */
				ts += (cpu + ncpus - ts % ncpus) % ncpus;
				unsigned k = x >> 60;
				uint32_t lo = (uint32_t)ts;
				if (k == 0) { /* thread switch record, then an alloc */
					tid = 1000 + cpu + 16 * (unsigned)((x >> 40) & 3);
					w[0] = lo | (uint64_t)1 << 32 | (uint64_t)2 << 54;
					w[1] = tid | (uint64_t)1000 << 32;
					w += 2;
					off += 16;
					k = 1;
				}
				if (k < 7) {
					w[0] = lo | (uint64_t)0x10001 << 32 | (uint64_t)3 << 54;
					w[1] = x & 0xffff;
					w[2] = x;
					off += 24;
				} else if (k < 11) {
					w[0] = lo | (uint64_t)0x10002 << 32 | (uint64_t)2 << 54;
					w[1] = x;
					off += 16;
				} else if (k < 12) {
					w[0] = lo | (uint64_t)0x10003 << 32 | (uint64_t)4 << 54;
					w[1] = (x & 255) | (uint64_t)16 << 32;
					memcpy(&w[2], "/etc/passwd\0\0\0\0\0", 16);
					off += 32;
				} else {
					w[0] = lo | (uint64_t)0x20001 << 32 | (uint64_t)4 << 54;
					w[1] = cpu | (x & 0xff00000000ull);
					w[2] = x >> 3;
					w[3] = x >> 5;
					off += 32;
				}
				i++;
			}
			uint32_t hdr32[2] = { 0xC1FC1FC1, 0 };
			memcpy(pk, hdr32, 4);
			uint64_t h[8] = { (uint64_t)1000 << 32 | cpu, tb, ts, off * 8, (uint64_t)PSIZE * 8,
					  seq++, 0, 0 };
			memcpy(pk + 24, h, 56);
			uint32_t c3[3] = { cpu, 1000, 1000 + cpu };
			memcpy(pk + 80, c3, 12);
			if (fwrite(pk, 1, PSIZE, f) != PSIZE)
				return 1;
		}
		fclose(f);
	}
	free(pk);
	printf("wrote %" PRIu64 " events on %u CPUs to %s\n", per * ncpus, ncpus, dir);
	return 0;
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read every field of ev; strings and arrays count their length (their
 * address changes from run to run). */
static inline void fold(const struct strata_event *ev, struct strata_value *v,
			uint64_t *sum, uint64_t *nf)
{
	int k = strata_event_fields(ev, v, 8);
	for (int i = 0; i < k; i++)
		*sum += v[i].type >= STRATA_VALUE_STRING ? v[i].count : v[i].u;
	*nf += k > 0 ? k : 0;
}

/* Read every field of a batch: the same sum as fold() over its events;
 * the values must be exactly those of the events' classes. */
static int fold_batch(const struct strata_batch *b, uint64_t *sum, uint64_t *nf)
{
	uint64_t want = 0, s = 0;
	const struct strata_value *v = b->values;
	uint32_t nv = b->first[b->n] - b->first[0];
	for (unsigned i = 0; i < b->n; i++)
		want += b->events[i].cls->nfields;
	for (uint32_t j = 0; j < nv; j++)
		s += v[j].type >= STRATA_VALUE_STRING ? v[j].count : v[j].u;
	*sum += s;
	*nf += nv;
	return want == nv ? 0 : -1;
}

/*
 * Full decode: open, iterate, read every field of every event.
 *   next       merged by time, one strata_iter_next call per event
 *   read       merged by time, strata_iter_read batches of 256
 *   batch      merged by time, strata_iter_decode: events with their
 *              fields decoded, batches of 1024
 *   unordered  the same with STRATA_ITER_UNORDERED (stream after stream)
 */
static int decode(const char *dir, const char *mode)
{
	struct strata_trace *t;
	struct strata_iter *it;
	const struct strata_event *ev;
	static struct strata_event evs[256];
	struct strata_value v[8];
	struct strata_iter_options io = { .stream = -1 };
	int m = !strcmp(mode, "next") ? 0 : !strcmp(mode, "read") ? 1 :
		!strcmp(mode, "unordered") ? 2 : !strcmp(mode, "batch") ? 3 : -1;
	if (m < 0) {
		fprintf(stderr, "reader_bench: decode mode: next, read, unordered or batch\n");
		return 1;
	}
	if (m == 2)
		io.flags = STRATA_ITER_UNORDERED;
	double t0 = now(), c0 = cpu_now();
	if (strata_trace_open(dir, NULL, &t) < 0 || strata_iter_create(t, &io, &it) < 0) {
		fprintf(stderr, "reader_bench: %s: cannot open\n", dir);
		return 1;
	}
	uint64_t n = 0, sum = 0, nf = 0;
	if (m == 0) {
		while (strata_iter_next(it, &ev) > 0) {
			fold(ev, v, &sum, &nf);
			n++;
		}
	} else if (m >= 2) {
		struct strata_batch *b;
		int k;
		if (strata_batch_alloc(t, 1024, &b) < 0)
			return fprintf(stderr, "reader_bench: out of memory\n"), 1;
		while ((k = strata_iter_decode(it, b)) > 0) {
			if (fold_batch(b, &sum, &nf) < 0)
				return fprintf(stderr, "reader_bench: a batch lacks values\n"), 1;
			n += k;
		}
		strata_batch_free(b);
	} else {
		int k;
		while ((k = strata_iter_read(it, evs, 256)) > 0) {
			for (int i = 0; i < k; i++)
				fold(&evs[i], v, &sum, &nf);
			n += k;
		}
	}
	double dt = now() - t0, dc = cpu_now() - c0;
	printf("decode-%s: %" PRIu64 " events, %" PRIu64 " fields in %.3f s (cpu %.3f s): "
	       "%.1f M events/s (checksum %" PRIx64 ", problems %" PRIu64 ")\n",
	       mode, n, nf, dt, dc, n / dt / 1e6, sum, strata_trace_nproblems(t));
	strata_iter_destroy(it);
	strata_trace_close(t);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* N seeks to uniformly random times, each followed by reading the event
 * found (checked to be at or after the target). */
static int seek(const char *dir, unsigned n)
{
	struct strata_trace *t;
	struct strata_iter *it;
	const struct strata_event *ev;
	if (!n || strata_trace_open(dir, NULL, &t) < 0 || strata_iter_create(t, NULL, &it) < 0)
		return 1;
	double *lat = calloc(n, sizeof(*lat));
	if (!lat)
		return 1;
	uint64_t b = strata_trace_begin(t), e = strata_trace_end(t), x = 12345;
	double t0 = now();
	for (unsigned i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t target = b + x % (e - b + 1);
		double s = now();
		strata_iter_seek(it, target);
		if (strata_iter_next(it, &ev) > 0 && ev->timestamp < target)
			return fprintf(stderr, "reader_bench: seek landed before its target\n"), 1;
		lat[i] = now() - s;
	}
	double dt = now() - t0;
	qsort(lat, n, sizeof(*lat), cmp_double);
	printf("seek: %u random seeks in %.1f GB, mean %.1f us, median %.1f us, p99 %.1f us, "
	       "worst %.1f us\n", n, strata_trace_size(t) / 1e9, dt / n * 1e6, lat[n / 2] * 1e6,
	       lat[n - 1 - n / 100] * 1e6, lat[n - 1] * 1e6);
	free(lat);
	strata_iter_destroy(it);
	strata_trace_close(t);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "gen"))
		return gen(argv[2], strtoull(argv[3], NULL, 0), argc > 4 ? atoi(argv[4]) : 4);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "decode"))
		return decode(argv[2], argc == 4 ? argv[3] : "next");
	if (argc >= 3 && !strcmp(argv[1], "seek"))
		return seek(argv[2], argc > 3 ? atoi(argv[3]) : 1000);
	fprintf(stderr, "usage: reader_bench gen DIR NEVENTS [NCPUS] | decode DIR [next|read|unordered|batch] |"
		" seek DIR [N]\n");
	return 2;
}
