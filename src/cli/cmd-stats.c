/* SPDX-License-Identifier: MIT */
/* strata stats: counts and rates per event, per CPU and per thread. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "scan.h"
#include "table.h"

const char cmd_stats_usage[] =
	"usage: strata stats [OPTIONS] TRACE\n\n"
	"Count the events that pass the filters: per event type, per CPU and per\n"
	"thread, with rates (events per second over the selected span), first\n"
	"and last times, and the events lost while recording.\n\n" CLI_FILTER_HELP;

static double rate(uint64_t n, uint64_t span_ns)
{
	return span_ns ? (double)n * 1e9 / (double)span_ns : 0;
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = { CLI_FILTER_OPTIONS, { 0 } };
	struct cli_filter_opts fo = { 0 };
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if (c == '?' || cli_filter_opt(&fo, c, optarg) < 0)
			return 1;
	if (optind != argc - 1) {
		cli_err(NULL, "stats: expected one TRACE directory (see strata stats --help)");
		return 1;
	}
	struct cli_trace ct = { .quiet_lost = true };
	struct scan sc = { .want_names = false };
	if (scan_trace(&sc, &ct, argv[optind], &fo, fo.internal) < 0)
		return 1;
	cli_none_matched(&ct, &fo, sc.total);
	struct strata_trace *t = ct.t;
	struct cli_time tm;
	cli_time_init(&tm, t, false);
	char b1[64], b2[64];
	uint64_t span = sc.total ? cli_time_ns(&tm, sc.last) - cli_time_ns(&tm, sc.first) : 0;
	b1[cli_time_fmt(&tm, sc.first, b1)] = 0;
	b2[cli_time_fmt(&tm, sc.last, b2)] = 0;
	printf("Events:  %" PRIu64 "\n", sc.total);
	printf("First:   %s s\nLast:    %s s\n", sc.total ? b1 : "-", sc.total ? b2 : "-");
	printf("Rate:    %.1f events/s\n", rate(sc.total, span));
	printf("Lost:    %" PRIu64 " events discarded, %" PRIu64
	       " packets lost (in the part read)\n", ct.discarded, ct.packets_lost);

	struct table tb;
	printf("\nPer event\n");
	table_init(&tb, 5, "lrrrr");
	const char *h1[] = { "EVENT", "COUNT", "RATE/s", "FIRST (s)", "LAST (s)" };
	for (unsigned i = 0; i < 5; i++)
		table_cell(&tb, "%s", h1[i]);
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++) {
		const struct strata_event_class *cl = strata_trace_class(t, i);
		uint64_t n, first, last;
		if (!scan_class_sum(&sc, t, i, &n, &first, &last) || !n)
			continue;
		table_cell(&tb, "%s", cl->name);
		table_cell(&tb, "%" PRIu64, n);
		table_cell(&tb, "%.1f", rate(n, span));
		char f1[64], f2[64];
		f1[cli_time_fmt(&tm, first, f1)] = 0;
		f2[cli_time_fmt(&tm, last, f2)] = 0;
		table_cell(&tb, "%s", f1);
		table_cell(&tb, "%s", f2);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);

	const char *h2[] = { "CPU", "COUNT", "RATE/s", "FIRST (s)", "LAST (s)" };
	const char *h3[] = { "PID/TID", "COUNT", "RATE/s", "FIRST (s)", "LAST (s)" };
	for (int pass = 0; pass < 2; pass++) {
		struct scan_map *m = pass ? &sc.threads : &sc.cpus;
		struct scan_slot *v = scan_sorted(m);
		printf("\nPer %s\n", pass ? "thread" : "CPU");
		table_init(&tb, 5, "rrrrr");
		for (unsigned i = 0; i < 5; i++)
			table_cell(&tb, "%s", pass ? h3[i] : h2[i]);
		for (size_t i = 0; v && i < m->n; i++) {
			if (pass)
				table_cell(&tb, "%u/%u", (unsigned)(v[i].key >> 32),
					   (unsigned)v[i].key);
			else
				table_cell(&tb, "%u", (unsigned)v[i].key);
			table_cell(&tb, "%" PRIu64, v[i].count);
			table_cell(&tb, "%.1f", rate(v[i].count, span));
			b1[cli_time_fmt(&tm, v[i].first, b1)] = 0;
			table_cell(&tb, "%s", b1);
			b1[cli_time_fmt(&tm, v[i].last, b1)] = 0;
			table_cell(&tb, "%s", b1);
		}
		table_print(&tb, stdout, "  ");
		table_fini(&tb);
		free(v);
	}
	scan_fini(&sc);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
