/* SPDX-License-Identifier: MIT */
/* strata info: what a trace holds — streams, processes, threads, time, counts. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "scan.h"
#include "table.h"

const char cmd_info_usage[] =
	"usage: strata info [--merge] TRACE\n\n"
	"Summarise a trace: size, clock and time span; its processes, streams\n"
	"(one per CPU and process), threads, and the number of events of each\n"
	"type; lost events (discarded by the ring, or whole packets lost).\n"
	"Reads every event once (counting only; no field is decoded).\n\n"
	"  --merge               read a directory of several recordings as one\n";

static void fmt_secs(const struct cli_time *tm, uint64_t ts, char *buf)
{
	buf[cli_time_fmt(tm, ts, buf)] = 0;
}

/* What each sub-trace is: a traced process (ust/), the kernel, or the
 * state dump that strata record and daemon write of the system at start
 * (state/, in the strata process's name): only the first are processes
 * of the trace. */
enum { SUB_PROC, SUB_KERNEL, SUB_STATE };

/* A stream's path relative to the trace directory. */
static const char *rel_path(const char *path, const char *trace)
{
	size_t plen = strlen(trace);

	if (!strncmp(path, trace, plen) && path[plen] == '/')
		return path + plen + 1;
	return path;
}

/* The kind of each sub-trace (NULL when out of memory: all processes),
 * and the number of processes in *nproc. */
static unsigned char *sub_kinds(struct strata_trace *t, const char *trace, unsigned *nproc)
{
	unsigned ns = strata_trace_nstreams(t), nsub = strata_trace_nsubtraces(t);
	unsigned char *kind = calloc(nsub ? nsub : 1, 1);

	for (unsigned i = 0; kind && i < ns; i++) {
		struct strata_stream_info si;
		strata_trace_stream(t, i, &si);
		const char *rp = rel_path(si.path, trace);
		const char *dom = strata_trace_env(t, si.subtrace, "domain");
		if (si.subtrace < nsub)
			kind[si.subtrace] = dom && !strcmp(dom, "kernel") ? SUB_KERNEL
					    : !strncmp(rp, "state/", 6)  ? SUB_STATE
									  : SUB_PROC;
	}
	*nproc = 0;
	for (unsigned s = 0; s < nsub; s++)
		*nproc += !kind || kind[s] == SUB_PROC;
	return kind;
}

/* Processes whose events are not in the trace (they could not join the
 * session, or their sub-trace could not be made; docs/record.md): one
 * line when TRACE/unrecorded names any. */
static void print_unrecorded(const char *trace)
{
	char upath[4200];
	snprintf(upath, sizeof(upath), "%s/unrecorded", trace);
	FILE *uf = fopen(upath, "re");
	if (!uf)
		return;
	unsigned long long np = 0, nev = 0, n;
	char line[256];
	while (fgets(line, sizeof(line), uf))
		if (sscanf(line, "pid %*u (%*[^)]): %llu events", &n) == 1) {
			np++;
			nev += n;
		}
	fclose(uf);
	if (np)
		printf("Not recorded: %llu events of %llu process%s that could "
		       "not be traced (%s says why)\n", nev, np,
		       np == 1 ? "" : "es", upath);
}

/* What the discarded events were lost to: the sub-traces' env `lost_*`
 * (format.md §6), summed, beside `disc`, what the streams' packets count.
 * Nothing when no sub-trace says (a trace of an older strata, a kernel
 * trace). A crashed consumer's metadata may hold less than its packets
 * count: the rest is said to have no recorded cause. */
static void print_loss_causes(struct strata_trace *t, uint64_t disc)
{
	static const struct {
		const char *key, *what;
	} cause[] = {
		{"lost_full", "buffers full"},
		{"lost_busy", "next packet still being written"},
		{"lost_too_big", "event too big"},
		{"lost_nested", "nested too deep"},
		{"lost_no_ring", "no buffer"},
		{"lost_disk", "not written to disk"},
	};
	uint64_t n[sizeof(cause) / sizeof(cause[0])] = {0}, sum = 0;
	bool any = false;

	for (unsigned s = 0; s < strata_trace_nsubtraces(t); s++)
		for (size_t k = 0; k < sizeof(cause) / sizeof(cause[0]); k++) {
			const char *v = strata_trace_env(t, s, cause[k].key);
			if (v) {
				n[k] += strtoull(v, NULL, 10);
				any = true;
			}
		}
	if (!any || !disc)
		return;
	const char *sep = " (";
	for (size_t k = 0; k < sizeof(cause) / sizeof(cause[0]); k++) {
		if (!n[k])
			continue;
		printf("%s%s %" PRIu64, sep, cause[k].what, n[k]);
		sum += n[k];
		sep = ", ";
	}
	if (sum < disc)
		printf("%sno cause recorded %" PRIu64, sep, disc - sum);
	printf(")");
}

/* Each host's clock offset, as the relay measured it (docs/relay.md §7):
 * what the merge applied, and how far it may be off. */
static void print_offsets(struct strata_trace *t)
{
	unsigned n = strata_trace_noffsets(t);

	for (unsigned i = 0; i < n; i++) {
		struct strata_host_offset o;
		if (strata_trace_offset(t, i, &o))
			continue;
		char drift[48] = "";
		if (o.has_drift)
			snprintf(drift, sizeof(drift), ", drift %+" PRId64 " ppb",
				 o.drift_ppb);
		printf("%s %s (%s): %+.6f s +- %.1f us%s, from %" PRIu64
		       " samples%s\n", i ? "           " : "Offsets:   ",
		       o.sender[0] ? o.sender : "?", o.root, o.offset_ns / 1e9,
		       o.uncertainty_ns / 1e3, drift, o.samples,
		       o.applied ? "" : " (not applied: not a CLOCK_MONOTONIC trace)");
	}
}

/* The lines above the tables: size, clock, span, counts, losses. */
static void print_summary(struct strata_trace *t, const char *trace, const struct scan *sc,
			  unsigned nproc)
{
	struct cli_time rel, wall;
	struct strata_clock_info ci;
	char b1[64], b2[64], b3[64];
	unsigned ns = strata_trace_nstreams(t);
	uint64_t disc = 0, plost = 0;

	cli_time_init(&rel, t, false);
	cli_time_init(&wall, t, true);
	strata_trace_clock(t, &ci);
	for (unsigned i = 0; i < ns; i++) {
		struct strata_stream_info si;
		strata_trace_stream(t, i, &si);
		disc += si.discarded;
		plost += si.packets_lost;
	}
	cli_human_size(strata_trace_size(t), b1, sizeof(b1));
	printf("Trace:      %s\n", trace);
	printf("Size:       %s in %u stream%s, %u process%s\n", b1, ns, ns == 1 ? "" : "s",
	       nproc, nproc == 1 ? "" : "es");
	printf("Clock:      %s, %" PRIu64 " Hz%s%s\n", ci.name, ci.freq,
	       ci.description[0] ? "; " : "", ci.description);
	fmt_secs(&wall, strata_trace_begin(t), b2);
	fmt_secs(&wall, strata_trace_end(t), b3);
	fmt_secs(&rel, strata_trace_end(t), b1);
	printf("Time span:  %s .. %s (%s s)\n", b2, b3, b1);
	printf("Events:     %" PRIu64 " (strata's own records excluded)\n", sc->total);
	printf("Lost:       %" PRIu64 " events discarded", disc);
	print_loss_causes(t, disc);
	printf(", %" PRIu64 " packets lost\n", plost);
	print_unrecorded(trace);
	print_offsets(t);
}

static void print_processes(struct strata_trace *t, const struct scan *sc,
			    const struct scan_slot *th, const unsigned char *kind)
{
	unsigned ns = strata_trace_nstreams(t), nsub = strata_trace_nsubtraces(t);
	struct table tb;

	printf("\nProcesses\n");
	table_init(&tb, 5, "rlrrr");
	table_cell(&tb, "PID");
	table_cell(&tb, "NAME");
	table_cell(&tb, "STREAMS");
	table_cell(&tb, "THREADS");
	table_cell(&tb, "EVENTS");
	for (unsigned s = 0; s < nsub; s++) {
		const char *vp = strata_trace_env(t, s, "vpid");
		const char *pn = strata_trace_env(t, s, "procname");
		uint32_t pid = vp ? (uint32_t)strtoul(vp, NULL, 10) : 0;
		unsigned nstr = 0, nth = 0;
		uint64_t nev = 0;
		for (unsigned i = 0; i < ns; i++) {
			struct strata_stream_info si;
			strata_trace_stream(t, i, &si);
			if (si.subtrace == s) {
				nstr++;
				nev += sc->per_stream[i];
			}
		}
		for (size_t i = 0; th && i < sc->threads.n; i++)
			nth += th[i].key >> 32 == pid;
		table_cell(&tb, "%u", pid);
		if (kind && kind[s] == SUB_STATE)
			table_cell(&tb, "(state dump by %s)", pn ? pn : "strata");
		else if (kind && kind[s] == SUB_KERNEL)
			table_cell(&tb, "(kernel)");
		else
			table_cell(&tb, "%s", pn ? pn : "");
		table_cell(&tb, "%u", nstr);
		table_cell(&tb, "%u", nth);
		table_cell(&tb, "%" PRIu64, nev);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
}

static void print_streams(struct strata_trace *t, const char *trace, const struct scan *sc)
{
	const char *hdr[] = { "FILE", "CPU", "PID", "PACKETS", "PACKET", "SIZE", "EVENTS",
			      "LOST" };
	struct table tb;
	char b1[64];

	printf("\nStreams\n");
	table_init(&tb, 8, "lrrrrrrr");
	for (unsigned i = 0; i < 8; i++)
		table_cell(&tb, "%s", hdr[i]);
	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		strata_trace_stream(t, i, &si);
		table_cell(&tb, "%s", rel_path(si.path, trace));
		table_cell(&tb, "%u", si.cpu);
		table_cell(&tb, "%u", si.pid);
		table_cell(&tb, "%" PRIu64, si.npackets);
		cli_human_size(si.packet_size, b1, sizeof(b1));
		table_cell(&tb, "%s", b1);
		cli_human_size(si.file_size, b1, sizeof(b1));
		table_cell(&tb, "%s", b1);
		table_cell(&tb, "%" PRIu64, sc->per_stream[i]);
		table_cell(&tb, "%" PRIu64, si.discarded);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
}

static void print_threads(struct strata_trace *t, const struct scan *sc,
			  const struct scan_slot *th)
{
	struct cli_time rel;
	struct table tb;
	char b1[64];

	cli_time_init(&rel, t, false);
	printf("\nThreads\n");
	table_init(&tb, 6, "rrlrrr");
	table_cell(&tb, "PID");
	table_cell(&tb, "TID");
	table_cell(&tb, "NAME");
	table_cell(&tb, "EVENTS");
	table_cell(&tb, "FIRST (s)");
	table_cell(&tb, "LAST (s)");
	for (size_t i = 0; th && i < sc->threads.n; i++) {
		table_cell(&tb, "%u", (unsigned)(th[i].key >> 32));
		table_cell(&tb, "%u", (unsigned)th[i].key);
		table_cell(&tb, "%s", scan_thread_name(sc, (uint32_t)th[i].key));
		table_cell(&tb, "%" PRIu64, th[i].count);
		fmt_secs(&rel, th[i].first, b1);
		table_cell(&tb, "%s", b1);
		fmt_secs(&rel, th[i].last, b1);
		table_cell(&tb, "%s", b1);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
}

struct type_row {
	const struct strata_event_class *c;
	uint64_t n;
};

/* by name, then id: the same order for the same trace every time */
static int type_row_cmp(const void *a, const void *b)
{
	const struct type_row *x = a, *y = b;
	int d = strcmp(x->c->name, y->c->name);
	return d ? d : (x->c->id > y->c->id) - (x->c->id < y->c->id);
}

static void print_event_types(struct strata_trace *t, const struct scan *sc)
{
	unsigned ncls = strata_trace_nclasses(t), nr = 0;
	struct type_row *rows = calloc(ncls + 1, sizeof(*rows));
	struct table tb;

	if (!rows) {
		cli_err(NULL, "out of memory");
		return;
	}
	for (unsigned i = 0; i < ncls; i++) {
		/* one row per name: sub-traces share vocabularies */
		uint64_t n, first, last;
		if (!scan_class_sum(sc, t, i, &n, &first, &last) || !n)
			continue;
		rows[nr].c = strata_trace_class(t, i);
		rows[nr++].n = n;
	}
	qsort(rows, nr, sizeof(*rows), type_row_cmp);
	printf("\nEvent types\n");
	table_init(&tb, 3, "lrr");
	table_cell(&tb, "EVENT");
	table_cell(&tb, "ID");
	table_cell(&tb, "COUNT");
	for (unsigned i = 0; i < nr; i++) {
		table_cell(&tb, "%s", rows[i].c->name);
		table_cell(&tb, "%u:%u", rows[i].c->id >> 16, rows[i].c->id & 0xffff);
		table_cell(&tb, "%" PRIu64, rows[i].n);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	free(rows);
}

int cmd_info(int argc, char **argv)
{
	bool merge = argc == 3 && !strcmp(argv[1], "--merge");
	if (merge) {
		argv++;
		argc--;
	}
	if (argc != 2 || argv[1][0] == '-') {
		cli_err(NULL, "info: expected one TRACE directory (see strata info --help)");
		return 1;
	}
	const char *trace = argv[1];
	struct cli_trace ct = { .quiet_lost = true, .merge = merge };
	struct scan sc;
	sc.want_names = true;
	if (scan_trace(&sc, &ct, trace, NULL, true) < 0)
		return 1;

	unsigned nproc;
	unsigned char *kind = sub_kinds(ct.t, trace, &nproc);
	struct scan_slot *th = scan_sorted(&sc.threads);
	print_summary(ct.t, trace, &sc, nproc);
	print_processes(ct.t, &sc, th, kind);
	print_streams(ct.t, trace, &sc);
	print_threads(ct.t, &sc, th);
	print_event_types(ct.t, &sc);
	free(th);
	scan_fini(&sc);
	free(kind);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
