/* SPDX-License-Identifier: MIT */
/* strata profile: where the CPU time went inside the traced processes, from record --sample (docs/profile.md). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
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
	"symbol counts as its file, [libfoo.so].\n\n"
	"  --by function|module|line  what a row is (default function)\n"
	"  --pid N, --tid N      only these (repeatable, comma lists)\n"
	"  --from SEC, --to SEC  window, seconds since the trace start\n"
	"  --top N               rows shown (default 30; 0: all)\n"
	"  --format text|json|folded  folded: one line per stack, root first,\n"
	"                        then its samples (flamegraph.pl, speedscope)\n";

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
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	if (n < r->nentries)
		printf("  (%zu more: --top 0 shows all)\n", r->nentries - n);
}

static void print_json(const struct prof_result *r)
{
	printf("{\"samples\":%" PRIu64 ",\"kernel\":%" PRIu64 ",\"lost\":%" PRIu64
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
	printf("]}\n");
}

int cmd_profile(int argc, char **argv)
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
	struct cli_filter_opts fo = { 0 };
	enum prof_by by = PROF_BY_FUNCTION;
	long top = 30;
	int format = 0; /* 0 text, 1 json, 2 folded */
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_BY:
			if (!strcmp(optarg, "function")) {
				by = PROF_BY_FUNCTION;
			} else if (!strcmp(optarg, "module")) {
				by = PROF_BY_MODULE;
			} else if (!strcmp(optarg, "line")) {
				by = PROF_BY_LINE;
			} else {
				cli_err(NULL, "profile: --by %s: expected function, module or line",
					optarg);
				return 1;
			}
			break;
		case O_TOP:
			if (report_top(optarg, &top))
				return 1;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "text") || !strcmp(optarg, "json") ||
			    !strcmp(optarg, "folded")) {
				format = optarg[0] == 't' ? 0 : optarg[0] == 'j' ? 1 : 2;
				break;
			}
			cli_err(NULL, "--format: expected text, json or folded, not '%s'", optarg);
			return 1;
		default:
			if (c == '?' || cli_filter_opt(&fo, c, optarg) < 0)
				return 1;
		}
	}
	if (optind != argc - 1) {
		cli_err(NULL, "profile: expected one TRACE directory (see strata profile --help)");
		return 1;
	}
	struct cli_trace ct = { .quiet_lost = true };
	if (cli_open(&ct, argv[optind], &fo) < 0)
		return 1;
	struct strata_iter *it = NULL;
	struct strata_symbolizer *sy = NULL;
	struct prof_result *r = NULL;
	if (strata_symbolizer_create(ct.t, &sy) < 0)
		sy = NULL; /* modules and addresses only */
	int ret = cli_iter(&ct, false, &it);
	if (ret >= 0)
		ret = prof_compute(ct.t, it, sy, by, &r);
	strata_iter_destroy(it);
	if (ret < 0) {
		cli_err(ct.path, "%s", ret == -ENOENT ? "no sample:cpu_clock events: record with "
			"strata record --sample (docs/profile.md)" : strerror(-ret));
		strata_symbolizer_destroy(sy);
		cli_close(&ct);
		return 1;
	}
	if (format == 1) {
		print_json(r);
	} else if (format == 2) {
		for (size_t i = 0; i < r->nstacks; i++)
			printf("%s %" PRIu64 "\n", r->stacks[i].folded, r->stacks[i].count);
	} else {
		print_text(r, (size_t)top);
	}
	if (r->lost)
		cli_err(ct.path, "%" PRIu64 " samples lost (the kernel's buffers overflowed): "
			"the shares are of those kept", r->lost);
	prof_free(r);
	strata_symbolizer_destroy(sy);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
