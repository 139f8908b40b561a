/* SPDX-License-Identifier: MIT */
/* strata profile: where the CPU time went inside the traced processes, from record --sample (docs/profile.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/calls.h"
#include "analysis/profile.h"
#include "cli.h"
#include "table.h"

const char cmd_profile_usage[] =
	"usage: strata profile TRACE [--by function|module|line] [--pid P] [--tid T]\n"
	"                      [--from SEC] [--to SEC] [--top N] [--format text|json|folded]\n\n"
	"Where the CPU time went, from the samples of strata record --sample: per\n"
	"function, the samples where it was running (self) and where it was on\n"
	"the stack (total), as shares of all samples; symbolized through the\n"
	"mapped files' ELF symbols and DWARF. A sample in the kernel is\n"
	"[kernel] under the user stack that entered it; a function with no\n"
	"symbol counts as its file, [libfoo.so].\n"
	"With the function probes of strata record --functions (code built with\n"
	"-finstrument-functions, linked with libstrata-func): per function, its\n"
	"calls, the time inside them (total) and in its own code (self), and\n"
	"the longest call.\n\n"
	"  --by function|module|line  what a row is (default function)\n"
	"  --pid N, --tid N      only these (repeatable, comma lists)\n"
	"  --from SEC, --to SEC  window, seconds since the trace start\n"
	"  --top N               rows shown (default 30; 0: all)\n"
	"  --format text|json|folded  folded: one line per stack, root first,\n"
	"                        then its samples (flamegraph.pl, speedscope)\n";

/* Print a table of `shown` rows out of `all`, and say how many were left. */
static void table_end(struct table *tb, size_t shown, size_t all)
{
	table_print(tb, stdout, "  ");
	table_fini(tb);
	if (shown < all)
		printf("  (%zu more: --top 0 shows all)\n", all - shown);
}

static void print_text(const struct prof_result *r, size_t top)
{
	struct table tb;
	size_t n = top && top < r->nentries ? top : r->nentries;

	printf("%" PRIu64 " samples of %u thread%s", r->samples, r->threads,
	       r->threads == 1 ? "" : "s");
	if (r->hz)
		printf(" at %u per second of CPU time (each %.3f ms)", r->hz, 1000.0 / r->hz);
	printf("; %" PRIu64 " in the kernel; %" PRIu64 " lost.\n\n", r->kernel, r->lost);
	table_init(&tb, 6, "rrrrll");
	table_cell(&tb, "self %%");
	table_cell(&tb, "self");
	table_cell(&tb, "total %%");
	table_cell(&tb, "total");
	table_cell(&tb, "function");
	table_cell(&tb, "module");
	for (size_t i = 0; i < n; i++) {
		const struct prof_entry *e = &r->entries[i];
		double d = r->samples ? (double)r->samples : 1.0;
		table_cell(&tb, "%.1f", 100.0 * (double)e->self / d);
		table_cell(&tb, "%" PRIu64, e->self);
		table_cell(&tb, "%.1f", 100.0 * (double)e->total / d);
		table_cell(&tb, "%" PRIu64, e->total);
		table_cell(&tb, "%s", e->name);
		table_cell(&tb, "%s", e->module[0] ? e->module : "-");
	}
	table_end(&tb, n, r->nentries);
}

/* The function probes' table: most total time first. */
static void print_calls_text(const struct calls_result *r, size_t top)
{
	struct table tb;
	size_t n = top && top < r->nentries ? top : r->nentries;
	char b[4][32];

	printf("%" PRIu64 " function calls of %u thread%s (func:call_entry/exit), at most %u "
	       "deep; %" PRIu64 " left without their exit (closed at an outer exit), %" PRIu64
	       " open at the end, %" PRIu64 " exits of calls entered before, %" PRIu64
	       " not logged (deeper than STRATA_FUNCTIONS_DEPTH, or excluded).\n\n",
	       r->calls, r->threads, r->threads == 1 ? "" : "s", r->max_depth,
	       r->unwound, r->open, r->stray, r->skipped);
	table_init(&tb, 7, "rrrrrll");
	table_cell(&tb, "calls");
	table_cell(&tb, "total");
	table_cell(&tb, "self");
	table_cell(&tb, "longest");
	table_cell(&tb, "deepest");
	table_cell(&tb, "function");
	table_cell(&tb, "module");
	for (size_t i = 0; i < n; i++) {
		const struct calls_entry *e = &r->entries[i];
		table_cell(&tb, "%" PRIu64, e->calls);
		table_cell(&tb, "%s", dur_fmt(e->total_ns, b[0], sizeof(b[0])));
		table_cell(&tb, "%s", dur_fmt(e->self_ns, b[1], sizeof(b[1])));
		table_cell(&tb, "%s", dur_fmt(e->max_ns, b[2], sizeof(b[2])));
		table_cell(&tb, "%u", e->max_depth);
		table_cell(&tb, "%s", e->name);
		table_cell(&tb, "%s", e->module[0] ? e->module : "-");
	}
	table_end(&tb, n, r->nentries);
}

static void print_calls_json(const struct calls_result *r)
{
	printf("\"calls\":{\"calls\":%" PRIu64 ",\"threads\":%u,\"max_depth\":%u,"
	       "\"unwound\":%" PRIu64 ",\"open\":%" PRIu64 ",\"stray\":%" PRIu64
	       ",\"skipped\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"functions\":[", r->calls,
	       r->threads, r->max_depth, r->unwound, r->open, r->stray, r->skipped, r->lost);
	for (size_t i = 0; i < r->nentries; i++) {
		const struct calls_entry *e = &r->entries[i];
		printf("%s\n{\"name\":", i ? "," : "");
		cli_json_name(e->name);
		printf(",\"module\":");
		cli_json_name(e->module);
		printf(",\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64
		       ",\"max_ns\":%" PRIu64 ",\"unwound\":%" PRIu64 ",\"max_depth\":%u}",
		       e->calls, e->total_ns, e->self_ns, e->max_ns, e->unwound, e->max_depth);
	}
	printf("]}");
}

/* The samples' part of the JSON object (its members, no braces). */
static void print_json(const struct prof_result *r)
{
	printf("\"samples\":%" PRIu64 ",\"kernel\":%" PRIu64 ",\"lost\":%" PRIu64
	       ",\"threads\":%u,\"hz\":%u,\"functions\":[", r->samples, r->kernel, r->lost,
	       r->threads, r->hz);
	for (size_t i = 0; i < r->nentries; i++) {
		printf("%s\n{\"name\":", i ? "," : "");
		cli_json_name(r->entries[i].name);
		printf(",\"module\":");
		cli_json_name(r->entries[i].module);
		printf(",\"self\":%" PRIu64 ",\"total\":%" PRIu64 "}", r->entries[i].self,
		       r->entries[i].total);
	}
	printf("],\"stacks\":[");
	for (size_t i = 0; i < r->nstacks; i++) {
		printf("%s\n{\"folded\":", i ? "," : "");
		cli_json_name(r->stacks[i].folded);
		printf(",\"samples\":%" PRIu64 "}", r->stacks[i].count);
	}
	printf("]");
}

struct profile_opts {
	struct cli_filter_opts fo;
	enum prof_by by;
	long top;
	int format; /* 0 text, 1 json, 2 folded */
};

/* The options into *po; 0, or -1 after saying why. */
static int profile_parse(int argc, char **argv, struct profile_opts *po)
{
	enum { O_BY = 3500, O_TOP };
	static const struct option opts[] = {
		{ "by", required_argument, NULL, O_BY },
		{ "top", required_argument, NULL, O_TOP },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_BY:
			if (!strcmp(optarg, "function")) {
				po->by = PROF_BY_FUNCTION;
			} else if (!strcmp(optarg, "module")) {
				po->by = PROF_BY_MODULE;
			} else if (!strcmp(optarg, "line")) {
				po->by = PROF_BY_LINE;
			} else {
				cli_err(NULL, "profile: --by %s: expected function, module or line",
					optarg);
				return -1;
			}
			break;
		case O_TOP:
			if (report_top(optarg, &po->top))
				return -1;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "text") || !strcmp(optarg, "json") ||
			    !strcmp(optarg, "folded")) {
				po->format = optarg[0] == 't' ? 0 : optarg[0] == 'j' ? 1 : 2;
				break;
			}
			cli_err(NULL, "--format: expected text, json or folded, not '%s'", optarg);
			return -1;
		default:
			if (c == '?' || cli_filter_opt(&po->fo, c, optarg) < 0)
				return -1;
		}
	}
	if (optind != argc - 1) {
		cli_err(NULL, "profile: expected one TRACE directory (see strata profile --help)");
		return -1;
	}
	return 0;
}

/* The samples (*r) and the function probes (*calls) of ct, each NULL
 * when the trace has none; 0, or a negative errno (-ENOENT: neither). */
static int profile_compute(struct cli_trace *ct, struct strata_symbolizer *sy,
			   enum prof_by by, struct prof_result **r,
			   struct calls_result **calls)
{
	struct strata_iter *it = NULL;
	/* the samples, then the function probes: each pass its own iterator */
	int ret = cli_iter(ct, false, &it);
	if (ret >= 0)
		ret = prof_compute(ct->t, it, sy, by, r);
	strata_iter_destroy(it);
	it = NULL;
	if (ret < 0 && ret != -ENOENT)
		return ret;
	int rc = cli_iter(ct, false, &it);
	rc = rc < 0 ? rc : calls_compute(ct->t, it, sy, calls);
	strata_iter_destroy(it);
	return ret >= 0 && rc == -ENOENT ? 0 : rc;
}

static void profile_report(const struct profile_opts *po, const struct cli_trace *ct,
			   const struct prof_result *r, const struct calls_result *calls)
{
	if (po->format == 1) {
		printf("{");
		if (r)
			print_json(r);
		if (calls) {
			printf("%s", r ? "," : "");
			print_calls_json(calls);
		}
		printf("}\n");
	} else if (po->format == 2) {
		if (!r)
			cli_err(ct->path, "folded stacks come from samples (record --sample); "
				"this trace has function probes only");
		for (size_t i = 0; r && i < r->nstacks; i++)
			printf("%s %" PRIu64 "\n", r->stacks[i].folded, r->stacks[i].count);
	} else {
		if (r)
			print_text(r, (size_t)po->top);
		if (r && calls)
			printf("\n");
		if (calls)
			print_calls_text(calls, (size_t)po->top);
	}
	if (r && r->lost)
		cli_err(ct->path, "%" PRIu64 " samples lost (the kernel's buffers overflowed): "
			"the shares are of those kept", r->lost);
	if (calls && calls->lost)
		cli_err(ct->path, "%" PRIu64 " events lost while recording: the calls they held "
			"show as left without their exit, or not at all", calls->lost);
}

int cmd_profile(int argc, char **argv)
{
	struct profile_opts po = { .by = PROF_BY_FUNCTION, .top = 30 };
	struct cli_trace ct = { .quiet_lost = true };
	struct strata_symbolizer *sy = NULL;
	struct prof_result *r = NULL;
	struct calls_result *calls = NULL;

	if (profile_parse(argc, argv, &po) < 0 || cli_open(&ct, argv[optind], &po.fo) < 0)
		return 1;
	if (strata_symbolizer_create(ct.t, &sy) < 0)
		sy = NULL; /* modules and addresses only */
	int ret = profile_compute(&ct, sy, po.by, &r, &calls);
	if (ret < 0)
		cli_err(ct.path, "%s", ret == -ENOENT ? "no sample:cpu_clock nor func:call_entry "
			"events: record with strata record --sample, or --functions for code "
			"built with -finstrument-functions (docs/profile.md)" : strerror(-ret));
	else
		profile_report(&po, &ct, r, calls);
	prof_free(r);
	calls_free(calls);
	strata_symbolizer_destroy(sy);
	int rc = ret < 0 ? 1 : cli_status(&ct);
	cli_close(&ct);
	return rc;
}
