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
	struct cli_trace ct = { .quiet_lost = true, .merge = merge };
	struct strata_iter *it = NULL;
	struct scan sc;
	sc.want_names = true;
	if (cli_open(&ct, argv[1], NULL) < 0 || cli_iter(&ct, true, &it) < 0) {
		cli_close(&ct);
		return 1;
	}
	if (scan_run(&sc, &ct, it) < 0) {
		strata_iter_destroy(it);
		cli_close(&ct);
		return 1;
	}
	strata_iter_destroy(it);
	struct strata_trace *t = ct.t;
	struct cli_time rel, wall;
	cli_time_init(&rel, t, false);
	cli_time_init(&wall, t, true);
	struct strata_clock_info ci;
	strata_trace_clock(t, &ci);
	char b1[64], b2[64], b3[64];
	unsigned ns = strata_trace_nstreams(t), nsub = strata_trace_nsubtraces(t);
	uint64_t disc = 0, plost = 0;
	for (unsigned i = 0; i < ns; i++) {
		struct strata_stream_info si;
		strata_trace_stream(t, i, &si);
		disc += si.discarded;
		plost += si.packets_lost;
	}
	/* What each sub-trace is: a traced process (ust/), the kernel, or the
	 * state dump that strata record and daemon write of the system at
	 * start (state/, in the strata process's name): only the first are
	 * processes of the trace. */
	enum { SUB_PROC, SUB_KERNEL, SUB_STATE };
	unsigned char *kind = calloc(nsub ? nsub : 1, 1);
	unsigned nproc = 0;
	size_t plen = strlen(argv[1]);
	for (unsigned i = 0; kind && i < ns; i++) {
		struct strata_stream_info si;
		strata_trace_stream(t, i, &si);
		const char *rp = si.path;
		if (!strncmp(rp, argv[1], plen) && rp[plen] == '/')
			rp += plen + 1;
		const char *dom = strata_trace_env(t, si.subtrace, "domain");
		if (si.subtrace < nsub)
			kind[si.subtrace] = dom && !strcmp(dom, "kernel") ? SUB_KERNEL
					    : !strncmp(rp, "state/", 6)  ? SUB_STATE
									  : SUB_PROC;
	}
	for (unsigned s = 0; s < nsub; s++)
		nproc += !kind || kind[s] == SUB_PROC;
	cli_human_size(strata_trace_size(t), b1, sizeof(b1));
	printf("Trace:      %s\n", argv[1]);
	printf("Size:       %s in %u stream%s, %u process%s\n", b1, ns, ns == 1 ? "" : "s",
	       nproc, nproc == 1 ? "" : "es");
	printf("Clock:      %s, %" PRIu64 " Hz%s%s\n", ci.name, ci.freq,
	       ci.description[0] ? "; " : "", ci.description);
	fmt_secs(&wall, strata_trace_begin(t), b2);
	fmt_secs(&wall, strata_trace_end(t), b3);
	fmt_secs(&rel, strata_trace_end(t), b1);
	printf("Time span:  %s .. %s (%s s)\n", b2, b3, b1);
	printf("Events:     %" PRIu64 " (strata's own records excluded)\n", sc.total);
	printf("Lost:       %" PRIu64 " events discarded, %" PRIu64 " packets lost\n", disc,
	       plost);
	/* processes that could not join a session (docs/record.md) */
	char upath[4200];
	snprintf(upath, sizeof(upath), "%s/unrecorded", argv[1]);
	FILE *uf = fopen(upath, "re");
	if (uf) {
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
			       "not join the session (%s)\n", nev, np,
			       np == 1 ? "" : "es", upath);
	}

	struct table tb;
	printf("\nProcesses\n");
	table_init(&tb, 5, "rlrrr");
	table_cell(&tb, "PID");
	table_cell(&tb, "NAME");
	table_cell(&tb, "STREAMS");
	table_cell(&tb, "THREADS");
	table_cell(&tb, "EVENTS");
	struct scan_slot *th = scan_sorted(&sc.threads);
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
				nev += sc.per_stream[i];
			}
		}
		for (size_t i = 0; th && i < sc.threads.n; i++)
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

	printf("\nStreams\n");
	table_init(&tb, 8, "lrrrrrrr");
	const char *hdr[] = { "FILE", "CPU", "PID", "PACKETS", "PACKET", "SIZE", "EVENTS",
			      "LOST" };
	for (unsigned i = 0; i < 8; i++)
		table_cell(&tb, "%s", hdr[i]);
	for (unsigned i = 0; i < ns; i++) {
		struct strata_stream_info si;
		strata_trace_stream(t, i, &si);
		const char *rel_path = si.path;
		if (!strncmp(rel_path, argv[1], plen) && rel_path[plen] == '/')
			rel_path += plen + 1;
		table_cell(&tb, "%s", rel_path);
		table_cell(&tb, "%u", si.cpu);
		table_cell(&tb, "%u", si.pid);
		table_cell(&tb, "%" PRIu64, si.npackets);
		cli_human_size(si.packet_size, b1, sizeof(b1));
		table_cell(&tb, "%s", b1);
		cli_human_size(si.file_size, b1, sizeof(b1));
		table_cell(&tb, "%s", b1);
		table_cell(&tb, "%" PRIu64, sc.per_stream[i]);
		table_cell(&tb, "%" PRIu64, si.discarded);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);

	printf("\nThreads\n");
	table_init(&tb, 6, "rrlrrr");
	table_cell(&tb, "PID");
	table_cell(&tb, "TID");
	table_cell(&tb, "NAME");
	table_cell(&tb, "EVENTS");
	table_cell(&tb, "FIRST (s)");
	table_cell(&tb, "LAST (s)");
	for (size_t i = 0; th && i < sc.threads.n; i++) {
		table_cell(&tb, "%u", (unsigned)(th[i].key >> 32));
		table_cell(&tb, "%u", (unsigned)th[i].key);
		table_cell(&tb, "%s", scan_thread_name(&sc, (uint32_t)th[i].key));
		table_cell(&tb, "%" PRIu64, th[i].count);
		fmt_secs(&rel, th[i].first, b1);
		table_cell(&tb, "%s", b1);
		fmt_secs(&rel, th[i].last, b1);
		table_cell(&tb, "%s", b1);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	free(th);

	printf("\nEvent types\n");
	table_init(&tb, 3, "lrr");
	table_cell(&tb, "EVENT");
	table_cell(&tb, "ID");
	table_cell(&tb, "COUNT");
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++) {
		/* one row per name: sub-traces share vocabularies */
		const struct strata_event_class *c = strata_trace_class(t, i);
		bool seen = false;
		uint64_t n = 0;
		for (unsigned j = 0; j < strata_trace_nclasses(t); j++)
			if (!strcmp(strata_trace_class(t, j)->name, c->name)) {
				seen |= j < i;
				n += sc.per_class[j];
			}
		if (seen || !n)
			continue;
		table_cell(&tb, "%s", c->name);
		table_cell(&tb, "%u:%u", c->id >> 16, c->id & 0xffff);
		table_cell(&tb, "%" PRIu64, n);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	scan_fini(&sc);
	free(kind);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
