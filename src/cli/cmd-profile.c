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
	"                      [--from SEC] [--to SEC] [--top N] [--format text|json|folded]\n"
	"                      [--calls] [--tree] [--min PERCENT]\n\n"
	"Where the CPU time went, from the samples of strata record --sample: per\n"
	"function, the samples where it was running (self) and where it was on\n"
	"the stack (total), as shares of all samples; symbolized through the\n"
	"mapped files' ELF symbols and DWARF. A sample in the kernel is\n"
	"[kernel] under the user stack that entered it; a function with no\n"
	"symbol counts as its file, [libfoo.so].\n"
	"With the function probes of strata record --functions (code built with\n"
	"-finstrument-functions, linked with libstrata-func): per function, its\n"
	"calls, the time inside them (total) and in its own code (self), and\n"
	"the longest call; --tree, the call tree: per path of calls, its calls,\n"
	"total and self time, all threads merged and then each thread.\n"
	"A call entered before the trace (or the window) or never left by its end\n"
	"is closed there and marked [partial].\n\n"
	"  --by function|module|line  what a row is (default function)\n"
	"  --pid N, --tid N      only these (repeatable, comma lists)\n"
	"  --from SEC, --to SEC  window, seconds since the trace start\n"
	"  --top N               rows shown (default 30; 0: all)\n"
	"  --format text|json|folded  folded: one line per stack, root first,\n"
	"                        then its samples (flamegraph.pl, speedscope); of\n"
	"                        the function probes (--calls, or no samples):\n"
	"                        then its self time in ns\n"
	"  --calls               the function probes only, not the samples\n"
	"  --tree                the probes' call tree instead of their table\n"
	"  --min PERCENT         tree: leave out paths under PERCENT of their\n"
	"                        tree's total (default 0)\n";

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
	printf("; %" PRIu64 " in the kernel; %" PRIu64 " lost", r->kernel, r->lost);
	if (r->timer) /* lib/sampler.c: taken in the program, by signals */
		printf("; timer sampler: %" PRIu64 " signals (%.0f per second of CPU "
		       "time), %" PRIu64 " periods unavailable (the signal blocked, or a "
		       "thread's CPU time after its last signal)", r->signals,
		       r->cpu_ns ? (double)r->signals * 1e9 / (double)r->cpu_ns : 0.0,
		       r->unavailable);
	printf(".\n\n");
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

/* ---- the call tree ---------------------------------------------------------- */

#define PARTIAL_MARK "[partial]"

/* Rows indented at most this deep; deeper ones say their depth instead
 * (a recursion 100,000 deep would indent by megabytes). */
#define INDENT_MAX 64

/* The paths below root (their total at least `cut` ns) as rows of tb, a
 * name indented two spaces a level; those left out, counted. A loop, not
 * a recursion: a tree is as deep as the traced program's calls. */
static int tree_rows(struct table *tb, const struct calls_node *root, uint64_t whole,
		     uint64_t cut, size_t *hidden)
{
	struct ct_walk w;
	const struct calls_node *n;
	bool enter;
	char b[2][32];
	int r;

	if (ct_walk_init(&w, root) < 0)
		return -1;
	while ((r = ct_walk_next(&w, &n, &enter)) > 0) {
		if (!enter)
			continue;
		if (n->total_ns < cut || !n->total_ns) {
			(*hidden)++;
			ct_walk_skip(&w);
			continue;
		}
		size_t depth = w.n - 2;
		table_cell(tb, "%" PRIu64, n->calls);
		table_cell(tb, "%s", dur_fmt(n->total_ns, b[0], sizeof(b[0])));
		table_cell(tb, "%s", dur_fmt(n->self_ns, b[1], sizeof(b[1])));
		table_cell(tb, "%.1f", whole ? 100.0 * (double)n->total_ns / (double)whole : 0.0);
		if (depth <= INDENT_MAX)
			table_cell(tb, "%*s%s%s", (int)(2 * depth), "", n->name,
				   n->partial ? " " PARTIAL_MARK : "");
		else
			table_cell(tb, "%*s[%zu] %s%s", 2 * INDENT_MAX, "", depth, n->name,
				   n->partial ? " " PARTIAL_MARK : "");
	}
	ct_walk_fini(&w);
	return r;
}

/* One tree under its title line: total % of root's total. */
static void print_tree(const char *title, const struct calls_node *root, double min_pct)
{
	struct table tb;
	size_t hidden = 0;
	uint64_t cut = (uint64_t)((double)root->total_ns * min_pct / 100.0);
	char b[32];

	printf("%s: %s inside probed calls\n", title, dur_fmt(root->total_ns, b, sizeof(b)));
	table_init(&tb, 5, "rrrrl");
	table_cell(&tb, "calls");
	table_cell(&tb, "total");
	table_cell(&tb, "self");
	table_cell(&tb, "total %%");
	table_cell(&tb, "function");
	if (tree_rows(&tb, root, root->total_ns, cut, &hidden) < 0)
		cli_err(NULL, "profile: out of memory: the call tree is cut short");
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	if (hidden)
		printf("  (%zu path%s under %g%% left out, with their callees)\n", hidden,
		       hidden == 1 ? "" : "s", min_pct);
}

static void print_calls_tree(const struct calls_result *r, double min_pct)
{
	char title[96];

	printf("Call tree of %" PRIu64 " function calls in %u thread%s (func:call_entry/exit).",
	       r->calls + r->partial, r->threads, r->threads == 1 ? "" : "s");
	if (r->partial)
		printf(" " PARTIAL_MARK ": %" PRIu64 " call%s not seen whole (entered before the "
		       "trace or the window, closed from the thread's first event; or never left, "
		       "closed at its end; or left by a longjmp, closed at an outer call's exit).",
		       r->partial, r->partial == 1 ? "" : "s");
	printf("\n\n");
	if (r->nthread > 1) {
		struct calls_node all = r->tree;
		all.total_ns = 0;
		for (size_t i = 0; i < all.nchild; i++)
			all.total_ns += all.child[i].total_ns;
		print_tree("All threads", &all, min_pct);
	}
	for (size_t i = 0; i < r->nthread; i++) {
		const struct calls_thread *t = &r->thread[i];
		char b[32];
		snprintf(title, sizeof(title), "%sThread %u (pid %u), %s from its first event to its last",
			 r->nthread > 1 || i ? "\n" : "", t->tid, t->pid,
			 dur_fmt(t->span_ns, b, sizeof(b)));
		print_tree(title, &t->root, min_pct);
	}
}

/* root's paths, one line each with its self time in ns: names joined by
 * ';' in prefix (cap bytes); a path longer is left out with its callees
 * (theirs are longer still), counted in *cut. A loop, not a recursion. */
static int print_folded(const struct calls_node *root, char *prefix, size_t cap, size_t *cut)
{
	struct ct_walk w;
	const struct calls_node *n;
	bool enter;
	size_t *len = NULL, nlen = 0; /* len[k]: the prefix's length at depth k */
	int r;

	if (ct_walk_init(&w, root) < 0)
		return -1;
	while ((r = ct_walk_next(&w, &n, &enter)) > 0) {
		if (!enter || n == root)
			continue;
		size_t d = w.n - 2, at = d ? len[d - 1] : 0;
		if (d >= nlen) {
			size_t *v = realloc(len, (nlen = nlen ? 2 * nlen : 64) * sizeof(*v));
			if (!v) {
				r = -1;
				break;
			}
			len = v;
		}
		int wr = snprintf(prefix + at, cap - at, "%s%s%s", d ? ";" : "", n->name,
				  n->partial ? PARTIAL_MARK : "");
		if (wr < 0 || (size_t)wr >= cap - at) {
			prefix[at] = 0;
			(*cut)++;
			ct_walk_skip(&w);
			continue;
		}
		len[d] = at + (size_t)wr;
		if (n->self_ns)
			printf("%s %" PRIu64 "\n", prefix, n->self_ns);
	}
	free(len);
	ct_walk_fini(&w);
	return r;
}

/* A tree as nested JSON objects; a loop, not a recursion. */
static int print_tree_json(const struct calls_node *root)
{
	struct ct_walk w;
	const struct calls_node *n = root;
	bool enter = true;
	int r = 1;

	if (ct_walk_init(&w, root) < 0)
		return -1;
	do {
		if (!enter) {
			printf("]}");
			continue;
		}
		/* not its parent's first child: a comma */
		printf("%s{\"name\":", w.n > 1 && w.st[w.n - 2].next > 1 ? "," : "");
		cli_json_name(n->name ? n->name : "");
		printf(",\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64
		       ",\"partial\":%s,\"children\":[", n->calls, n->total_ns, n->self_ns,
		       n->partial ? "true" : "false");
	} while ((r = ct_walk_next(&w, &n, &enter)) > 0);
	ct_walk_fini(&w);
	return r;
}

static void print_calls_json(const struct calls_result *r, bool tree)
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
	printf("]");
	if (tree) {
		printf(",\"partial\":%" PRIu64 ",\"tree\":", r->partial);
		print_tree_json(&r->tree);
		printf(",\"thread_trees\":[");
		for (size_t i = 0; i < r->nthread; i++) {
			const struct calls_thread *t = &r->thread[i];
			printf("%s\n{\"pid\":%u,\"tid\":%u,\"covered_ns\":%" PRIu64
			       ",\"span_ns\":%" PRIu64 ",\"tree\":", i ? "," : "", t->pid, t->tid,
			       t->covered_ns, t->span_ns);
			print_tree_json(&t->root);
			printf("}");
		}
		printf("]");
	}
	printf("}");
}

/* The samples' part of the JSON object (its members, no braces). */
static void print_json(const struct prof_result *r)
{
	printf("\"samples\":%" PRIu64 ",\"kernel\":%" PRIu64 ",\"lost\":%" PRIu64
	       ",\"unavailable\":%" PRIu64 ",\"signals\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
	       ",\"sampler\":\"%s\",\"threads\":%u,\"hz\":%u,\"functions\":[", r->samples,
	       r->kernel, r->lost, r->unavailable, r->signals, r->cpu_ns,
	       r->timer ? "timer" : "perf", r->threads, r->hz);
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
	bool calls_only, tree;
	double min_pct;
};

/* The options into *po; 0, or -1 after saying why. */
static int profile_parse(int argc, char **argv, struct profile_opts *po)
{
	enum { O_BY = 3500, O_TOP, O_CALLS, O_TREE, O_MIN };
	static const struct option opts[] = {
		{ "by", required_argument, NULL, O_BY },
		{ "top", required_argument, NULL, O_TOP },
		{ "calls", no_argument, NULL, O_CALLS },
		{ "tree", no_argument, NULL, O_TREE },
		{ "min", required_argument, NULL, O_MIN },
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
		case O_CALLS:
			po->calls_only = true;
			break;
		case O_TREE:
			po->tree = true;
			break;
		case O_MIN: {
			char *end;
			po->min_pct = strtod(optarg, &end);
			if (end == optarg || *end || !(po->min_pct >= 0 && po->min_pct <= 100)) {
				cli_err(NULL, "profile: --min %s: expected a percentage, 0 to 100",
					optarg);
				return -1;
			}
			break;
		}
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
			   enum prof_by by, bool calls_only, struct prof_result **r,
			   struct calls_result **calls)
{
	struct strata_iter *it = NULL;
	/* the samples, then the function probes: each pass its own iterator */
	int ret = calls_only ? -ENOENT : cli_iter(ct, false, &it);
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
			print_calls_json(calls, po->tree);
		}
		printf("}\n");
	} else if (po->format == 2 && !r) {
		char prefix[8192] = "";
		size_t cut = 0;
		if (print_folded(&calls->tree, prefix, sizeof(prefix), &cut) < 0)
			cli_err(ct->path, "out of memory: folded stacks cut short");
		if (cut)
			cli_err(ct->path, "%zu stack%s longer than %zu bytes left out, with their "
				"callees", cut, cut == 1 ? "" : "s", sizeof(prefix));
		if (calls->partial)
			cli_err(ct->path, "%" PRIu64 " calls not seen whole: their frames end "
				"in " PARTIAL_MARK, calls->partial);
	} else if (po->format == 2) {
		for (size_t i = 0; i < r->nstacks; i++)
			printf("%s %" PRIu64 "\n", r->stacks[i].folded, r->stacks[i].count);
	} else {
		if (r)
			print_text(r, (size_t)po->top);
		if (r && calls)
			printf("\n");
		if (calls && po->tree)
			print_calls_tree(calls, po->min_pct);
		else if (calls)
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
	int ret = profile_compute(&ct, sy, po.by, po.calls_only, &r, &calls);
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
