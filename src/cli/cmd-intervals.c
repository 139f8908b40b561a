/* SPDX-License-Identifier: MIT */
/* strata intervals: begin/end events paired by kind, with count, total, mean, min, p50, p99 and max per kind and per thread. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"
#include "table.h"

const char cmd_intervals_usage[] =
	"usage: strata intervals [OPTIONS] TRACE\n\n"
	"Pair begin and end events into intervals and show, per kind and per kind\n"
	"and thread: count, total, mean, min, median (p50), p99 and max; e.g. the\n"
	"total time threads waited for a lock. Kinds come from the event names\n"
	"(X_begin/X_end, X_start/X_end|_stop|_done|_finish, X_enter|_entry/X_exit,\n"
	"X_acquire/X_release, X_lock/X_unlock, X_wait/X_acquire, in one subsystem)\n"
	"and from the DSL's begin/end marks; docs/cli.md has the rules. An end\n"
	"closes the latest open begin of its kind and thread (nested intervals pair\n"
	"inside out).\n\n"
	"  --begin GLOB --end GLOB   one kind of these events instead\n"
	"  --kind GLOB           only the kinds whose name matches (work:*)\n"
	"  --by FIELD            pair by the value of FIELD (a job id), whatever\n"
	"                        thread ends it, instead of per thread\n"
	"  --pid N, --tid N      per-thread rows of these only (repeatable)\n"
	"  --no-threads          per kind only\n"
	"  --from SEC, --to SEC  window, seconds since the trace start: intervals\n"
	"                        that begin and end in it\n"
	"  --format text|json    output format (default text)\n";

static void json_stats(const struct iv_stats *s)
{
	printf("\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64
	       ",\"min_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
	       ",\"max_ns\":%" PRIu64, s->count, s->total, s->count ? s->total / s->count : 0,
	       s->min, s->p50, s->p99, s->max);
}

static void cells_stats(struct table *tb, const struct iv_stats *s)
{
	char b[40];
	table_cell(tb, "%" PRIu64, s->count);
	table_cell(tb, "%s", dur_fmt(s->total, b, sizeof(b)));
	table_cell(tb, "%s", dur_fmt(s->count ? s->total / s->count : 0, b, sizeof(b)));
	table_cell(tb, "%s", dur_fmt(s->min, b, sizeof(b)));
	table_cell(tb, "%s", dur_fmt(s->p50, b, sizeof(b)));
	table_cell(tb, "%s", dur_fmt(s->p99, b, sizeof(b)));
	table_cell(tb, "%s", dur_fmt(s->max, b, sizeof(b)));
}

static void print_text(const struct iv_result *r, const struct iv_options *o,
		       const struct cli_filter_opts *fo, bool threads)
{
	struct table tb;
	printf("Intervals, %s; an end closes the latest open begin of its kind%s.\n\n",
	       o->by ? "paired by the field" : "per thread", o->by ? " and value" : " and thread");
	if (o->by)
		printf("Pairing field: %s\n\n", o->by);
	table_init(&tb, 11, "lrrrrrrrrrr");
	const char *h[] = { "kind", "count", "total", "mean", "min", "p50", "p99", "max",
			    "open at end", "unmatched ends", "too deep" };
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++)
		table_cell(&tb, "%s", h[i]);
	for (unsigned k = 0; k < r->nkinds; k++) {
		const struct iv_kind_stats *ks = &r->kinds[k];
		table_cell(&tb, "%s", ks->name);
		cells_stats(&tb, &ks->s);
		table_cell(&tb, "%" PRIu64, ks->open);
		table_cell(&tb, "%" PRIu64, ks->orphan_ends);
		table_cell(&tb, "%" PRIu64, ks->too_deep);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	if (!r->nkinds)
		printf("  (no kinds: no begin/end pair of events in this trace; --begin and --end "
		       "name them)\n");
	if (threads && r->nthreads) {
		printf("\nPer thread (of the begin event):\n");
		table_init(&tb, 10, "lrlrrrrrrr");
		const char *h2[] = { "kind", "pid/tid", "name", "count", "total", "mean",
				     "min", "p50", "p99", "max" };
		for (size_t i = 0; i < sizeof(h2) / sizeof(h2[0]); i++)
			table_cell(&tb, "%s", h2[i]);
		for (size_t i = 0; i < r->nthreads; i++) {
			const struct iv_thread_stats *th = &r->threads[i];
			if (!cli_wants_thread(fo, th->pid, th->tid))
				continue;
			const char *nm = an_names_get(r->names, th->tid);
			table_cell(&tb, "%s", r->kinds[th->kind].name);
			table_cell(&tb, "%u/%u", th->pid, th->tid);
			table_cell(&tb, "%s", nm ? nm : "?");
			cells_stats(&tb, &th->s);
		}
		table_print(&tb, stdout, "  ");
		table_fini(&tb);
	}
	printf("\n  open at end: begins the window ended before their end; unmatched ends:\n"
	       "  ends with no begin open (it came before the window or the trace); too\n"
	       "  deep: begins dropped past 256 nested in one key\n");
}

static void print_json(const struct iv_result *r, const struct iv_options *o,
		       const struct cli_filter_opts *fo, bool threads, const struct an_loss *loss)
{
	printf("{\"by\":");
	cli_json_name(o->by ? o->by : "thread");
	report_loss_json(stdout, loss);
	printf(",\"kinds\":[");
	for (unsigned k = 0; k < r->nkinds; k++) {
		const struct iv_kind_stats *ks = &r->kinds[k];
		printf("%s\n{\"kind\":", k ? "," : "");
		cli_json_name(ks->name);
		putchar(',');
		json_stats(&ks->s);
		printf(",\"open\":%" PRIu64 ",\"unmatched_ends\":%" PRIu64 ",\"too_deep\":%" PRIu64
		       "}", ks->open, ks->orphan_ends, ks->too_deep);
	}
	printf("],\"threads\":[");
	bool first = true;
	for (size_t i = 0; threads && i < r->nthreads; i++) {
		const struct iv_thread_stats *th = &r->threads[i];
		if (!cli_wants_thread(fo, th->pid, th->tid))
			continue;
		printf("%s\n{\"kind\":", first ? "" : ",");
		cli_json_name(r->kinds[th->kind].name);
		printf(",\"pid\":%u,\"tid\":%u,\"name\":", th->pid, th->tid);
		cli_json_name(an_names_get(r->names, th->tid));
		putchar(',');
		json_stats(&th->s);
		putchar('}');
		first = false;
	}
	printf("]}\n");
}

int cmd_intervals(int argc, char **argv)
{
	enum { O_BEGIN = 3300, O_END, O_KIND, O_BY, O_NOTHREADS };
	static const struct option opts[] = {
		{ "begin", required_argument, NULL, O_BEGIN },
		{ "end", required_argument, NULL, O_END },
		{ "kind", required_argument, NULL, O_KIND },
		{ "by", required_argument, NULL, O_BY },
		{ "no-threads", no_argument, NULL, O_NOTHREADS },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "since", required_argument, NULL, OPT_FROM }, /* the old spellings */
		{ "until", required_argument, NULL, OPT_TO },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	struct iv_options io = { 0 };
	struct cli_filter_opts fo = { 0 };
	bool json = false, threads = true;
	char err[512] = "";
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_BEGIN: io.begin = optarg; break;
		case O_END: io.end = optarg; break;
		case O_KIND: io.kinds = optarg; break;
		case O_BY: io.by = optarg; break;
		case O_NOTHREADS: threads = false; break;
		case OPT_FORMAT:
			if (cli_text_json(optarg, &json))
				return 1;
			break;
		default:
			if (c == '?' || cli_filter_opt(&fo, c, optarg) < 0)
				return 1;
		}
	}
	if (optind != argc - 1) {
		cli_err(NULL, "intervals: expected one TRACE directory (see strata intervals --help)");
		return 1;
	}
	if (!io.begin != !io.end) {
		cli_err(NULL, "intervals: --begin and --end go together (or neither: the kinds "
			"the event names declare)");
		return 1;
	}
	struct cli_trace ct = { 0 };
	if (report_open_window("intervals", argv[optind], &fo, &ct, &io.from, &io.to) < 0)
		return 1;
	io.err = err;
	io.errlen = sizeof(err);
	struct iv_result *r;
	int ret = iv_compute(ct.t, &io, &r);
	if (ret < 0) {
		cli_err(ct.path, "%s", ret == -EINVAL && err[0] ? err : strerror(-ret));
		cli_close(&ct);
		return 1;
	}
	struct an_loss loss;
	an_loss_get(ct.t, &loss);
	report_loss(ct.path, &loss, json ? NULL : stdout);
	if (json)
		print_json(r, &io, &fo, threads, &loss);
	else
		print_text(r, &io, &fo, threads);
	iv_free(r);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
