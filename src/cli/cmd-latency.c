/* SPDX-License-Identifier: MIT */
/* strata latency: from each BEGIN event to the next END event (per thread or per key), or each task's wait for a CPU. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"
#include "table.h"

const char cmd_latency_usage[] =
	"usage: strata latency --begin EVENT --end EVENT [OPTIONS] TRACE\n"
	"       strata latency --sched [OPTIONS] TRACE\n\n"
	"Pair each BEGIN event with the next END event (globs on event names, e.g.\n"
	"--begin 'irq:irq_handler_entry' --end 'app:packet_done') and report the\n"
	"latencies: count, total, mean, min, median, p99, max, and a log2 histogram;\n"
	"units scale with the values.\n\n"
	"  --same-thread         pair only events of the same thread\n"
	"  --by FIELD            pair only events with the same value of FIELD (a job\n"
	"                        id, a request), whatever their thread\n"
	"  --sched               instead, per task: how long it waited for a CPU after\n"
	"                        each wakeup or preemption (perf sched latency); needs\n"
	"                        strata record -k sched\n"
	"  --top N               --sched: the N tasks with the longest waits (0: all)\n"
	"  --from SEC, --to SEC  window, seconds since the trace start\n"
	"  --format text|json    output format (default text)\n";

static const char bar[] = "##################################################";

static void print_pairs(struct strata_trace *t, const struct lat_options *lo,
			const struct lat_result *r)
{
	char a[40], b[40], c[40], d[40], e[40];
	printf("%s -> %s%s%s%s: %" PRIu64 " pairs, total %s, mean %s\n", lo->begin, lo->end,
	       lo->same_tid ? ", same thread" : "", lo->by ? ", by " : "", lo->by ? lo->by : "",
	       r->n, dur_fmt(r->total, a, sizeof(a)),
	       dur_fmt(r->n ? r->total / r->n : 0, b, sizeof(b)));
	printf("unmatched: %" PRIu64 " begin%s without an end, %" PRIu64
	       " end%s without a begin\n", r->unmatched_begins,
	       r->unmatched_begins == 1 ? "" : "s", r->unmatched_ends,
	       r->unmatched_ends == 1 ? "" : "s");
	if (!r->n)
		return;
	printf("min %s  median %s  p99 %s  max %s\n\n", dur_fmt(r->ns[0], a, sizeof(a)),
	       dur_fmt(lat_quantile(r->ns, r->n, 0.5), b, sizeof(b)),
	       dur_fmt(lat_quantile(r->ns, r->n, 0.99), c, sizeof(c)),
	       dur_fmt(r->ns[r->n - 1], d, sizeof(d)));
	(void)t;
	/* log2 buckets of ns */
	uint64_t hist[65] = { 0 }, top = 0;
	int lo_b = 64, hi_b = 0;
	for (uint64_t i = 0; i < r->n; i++) {
		int k = r->ns[i] ? 64 - __builtin_clzll(r->ns[i]) : 0;
		hist[k]++;
		lo_b = k < lo_b ? k : lo_b;
		hi_b = k > hi_b ? k : hi_b;
	}
	for (int k = lo_b; k <= hi_b; k++)
		top = hist[k] > top ? hist[k] : top;
	struct table tb;
	table_init(&tb, 4, "rrrl");
	table_cell(&tb, "from");
	table_cell(&tb, "to");
	table_cell(&tb, "count");
	table_cell(&tb, "%s", "");
	for (int k = lo_b; k <= hi_b; k++) {
		uint64_t lo_ns = k ? 1ull << (k - 1) : 0, hi_ns = k ? (1ull << k) : 1;
		table_cell(&tb, "%s", dur_fmt(lo_ns, d, sizeof(d)));
		table_cell(&tb, "%s", dur_fmt(hi_ns, e, sizeof(e)));
		table_cell(&tb, "%" PRIu64, hist[k]);
		table_cell(&tb, "|%.*s", (int)(hist[k] * 50 / (top ? top : 1)), bar);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
}

static const char *const cause_names[] = { "wakeup", "preempted", "preempted in kernel" };

static void print_sched(struct strata_trace *t, const struct sl_result *r, long top,
			bool json, const struct an_loss *loss)
{
	uint64_t t0 = strata_trace_begin(t), maxrun = 0, maxd = 0;
	unsigned n = top && (unsigned long)top < r->ntasks ? (unsigned)top : r->ntasks;
#define NS(x) strata_trace_ticks_to_ns(t, (x))
	if (json) {
		printf("{\"wakeup_event\":\"sched_wakeup\"");
		report_loss_json(stdout, loss);
		printf(",\"tasks\":[");
		for (unsigned i = 0; i < n; i++) {
			const struct sl_task *k = &r->tasks[i];
			printf("%s\n{\"pid\":%u,\"tid\":%u,\"comm\":", i ? "," : "", k->pid, k->tid);
			cli_json_name(k->comm);
			printf(",\"runtime_ns\":%" PRIu64 ",\"waits\":%" PRIu64
			       ",\"total_ns\":%" PRIu64 ",\"avg_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
			       ",\"max_at\":%.9f,\"wakeups\":%" PRIu64 ",\"preemptions\":%" PRIu64
			       ",\"kernel_preempted\":%" PRIu64 ",\"kernel_preempted_ns\":%" PRIu64
			       ",\"inferred\":%" PRIu64 ",\"inferred_ns\":%" PRIu64
			       ",\"max_cause\":\"%s\",\"max_inferred\":%s,\"unknown\":%" PRIu64
			       ",\"outside_scope\":%s}",
			       NS(k->runtime), k->delays, NS(k->total),
			       k->delays ? NS(k->total) / k->delays : 0, NS(k->max),
			       (double)NS(k->max_at > t0 ? k->max_at - t0 : 0) / 1e9, k->wakeups,
			       k->preemptions, k->kpreempted, NS(k->kpreempted_total), k->inferred,
			       NS(k->inferred_total), cause_names[k->max_cause],
			       k->max_inferred ? "true" : "false", k->unknown,
			       k->outside ? "true" : "false");
		}
		printf("]}\n");
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		maxrun = NS(r->tasks[i].runtime) > maxrun ? NS(r->tasks[i].runtime) : maxrun;
		maxd = NS(r->tasks[i].max) > maxd ? NS(r->tasks[i].max) : maxd;
	}
	struct dur_unit ur = dur_unit_for(maxrun), ud = dur_unit_for(maxd);
	char b[40];
	printf("Scheduling latency: each task's waits for a CPU, from its wakeup (sched_wakeup)\n"
	       "or its preemption to its switch in (as perf sched latency); longest first.\n\n");
	struct table tb;
	table_init(&tb, 12, "rlrrrrrlrrrr");
	table_cell(&tb, "pid/tid");
	table_cell(&tb, "comm");
	table_cell(&tb, "runtime (%s)", ur.name);
	table_cell(&tb, "waits");
	table_cell(&tb, "average (%s)", ud.name);
	table_cell(&tb, "max (%s)", ud.name);
	table_cell(&tb, "max began (s)");
	table_cell(&tb, "max after");
	table_cell(&tb, "woken");
	table_cell(&tb, "preempted");
	table_cell(&tb, "in kernel");
	table_cell(&tb, "unknown");
	for (unsigned i = 0; i < n; i++) {
		const struct sl_task *k = &r->tasks[i];
		table_cell(&tb, "%u/%u", k->pid, k->tid);
		table_cell(&tb, "%s%s", k->comm[0] ? k->comm : "?", k->outside ? " *" : "");
		table_cell(&tb, "%s", dur_in(ur, NS(k->runtime), b, sizeof(b)));
		table_cell(&tb, "%" PRIu64, k->delays);
		table_cell(&tb, "%s", dur_in(ud, k->delays ? NS(k->total) / k->delays : 0, b,
					      sizeof(b)));
		table_cell(&tb, "%s", dur_in(ud, NS(k->max), b, sizeof(b)));
		if (k->delays) {
			table_cell(&tb, "%.6f", (double)NS(k->max_at > t0 ? k->max_at - t0 : 0) / 1e9);
			table_cell(&tb, "%s%s", cause_names[k->max_cause],
				   k->max_inferred ? " (end inferred)" : "");
		} else {
			table_cell(&tb, "-");
			table_cell(&tb, "-");
		}
		table_cell(&tb, "%" PRIu64, k->wakeups);
		table_cell(&tb, "%" PRIu64, k->preemptions);
		table_cell(&tb, "%" PRIu64, k->kpreempted);
		table_cell(&tb, "%" PRIu64, k->unknown);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	if (n < r->ntasks)
		printf("  ... and %u more tasks (--top 0 shows all)\n", r->ntasks - n);
	printf("\n  waits: the waits counted; woken, preempted: how they began (in kernel: of\n"
	       "  the preemptions, those in kernel mode, prev_state R+); end inferred: a\n"
	       "  switch out of idle the kernel does not record (docs/kernel.md); unknown:\n"
	       "  waits whose switch in the trace lacks (outside record -k's scope, or\n"
	       "  lost), not counted. *: outside the recorded tree (record -k COMMAND):\n"
	       "  it may have run unrecorded during a wait, so its waits are upper bounds.\n");
#undef NS
}

/* What the command line asks for. */
struct latency_opts {
	struct report_pair_opts p;
	struct lat_options lo;
	bool sched;
};

/* The options into *lt: 0, or -1 (exit status 1) after saying why. */
static int latency_parse(int argc, char **argv, struct latency_opts *lt)
{
	enum { O_SAME = OPT_PAIR_LAST, O_HELP, O_BY, O_SCHED };
	static const struct option opts[] = {
		REPORT_PAIR_OPTIONS,
		{ "same-thread", no_argument, NULL, O_SAME },
		{ "by", required_argument, NULL, O_BY },
		{ "sched", no_argument, NULL, O_SCHED },
		REPORT_PAIR_OUTPUT,
		{ "help", no_argument, NULL, O_HELP },
		{ 0 },
	};
	int c, taken;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if ((taken = report_pair_opt(&lt->p, c, optarg))) {
			if (taken < 0)
				return -1;
			continue;
		}
		switch (c) {
		case O_SAME: lt->lo.same_tid = true; break;
		case O_BY: lt->lo.by = optarg; break;
		case O_SCHED: lt->sched = true; break;
		default: return -1;
		}
	}
	if (report_pair_check(&lt->p, "latency", !lt->sched))
		return -1;
	lt->lo.begin = lt->p.begin;
	lt->lo.end = lt->p.end;
	if (optind != argc - 1 || (!lt->sched && (!lt->lo.begin || !lt->lo.end))) {
		cli_err(NULL, "latency: expected --begin EVENT --end EVENT TRACE, or --sched "
			"TRACE (see strata latency --help)");
		return -1;
	}
	return 0;
}

int cmd_latency(int argc, char **argv)
{
	struct latency_opts lt = { 0 };
	struct lat_options lo;
	bool json, sched;
	long top;
	char err[512] = "";

	if (latency_parse(argc, argv, &lt) < 0)
		return 1;
	lo = lt.lo;
	json = lt.p.json;
	sched = lt.sched;
	top = lt.p.top;
	struct cli_trace ct = { .quiet_lost = true };
	if (cli_open(&ct, argv[optind], NULL) < 0)
		return 1;
	report_pair_window(&lt.p, ct.t, &lo.wfrom, &lo.wto);
	struct an_loss loss;
	an_loss_get(ct.t, &loss);

	if (sched) {
		struct sl_result sr;
		int ret = sl_compute(ct.t, lo.wfrom, lo.wto, &sr);
		if (ret < 0) {
			cli_err(ct.path, "%s", ret == -ENOENT ?
				"no sched:sched_switch event: --sched needs the kernel's "
				"scheduling events (record with strata record -k sched)" :
				strerror(-ret));
			cli_close(&ct);
			return 1;
		}
		report_loss(ct.path, &loss, json ? NULL : stdout);
		print_sched(ct.t, &sr, top, json, &loss);
		sl_fini(&sr);
		int rc = cli_status(&ct);
		cli_close(&ct);
		return rc;
	}

	lo.err = err;
	lo.errlen = sizeof(err);
	struct lat_result r;
	int ret = lat_compute(ct.t, &lo, &r);
	if (ret < 0) {
		cli_err(ct.path, "%s", ret == -EINVAL && err[0] ? err : strerror(-ret));
		cli_close(&ct);
		return 1;
	}
	report_loss(ct.path, &loss, json ? NULL : stdout);
	if (json) {
		printf("{\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"unmatched\":%" PRIu64
		       ",\"unmatched_begins\":%" PRIu64 ",\"unmatched_ends\":%" PRIu64,
		       r.n, r.total, r.unmatched_begins + r.unmatched_ends, r.unmatched_begins,
		       r.unmatched_ends);
		if (r.n)
			printf(",\"mean_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64 ",\"median_ns\":%" PRIu64
			       ",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64, r.total / r.n, r.ns[0],
			       lat_quantile(r.ns, r.n, 0.5), lat_quantile(r.ns, r.n, 0.99),
			       r.ns[r.n - 1]);
		report_loss_json(stdout, &loss);
		printf("}\n");
	} else {
		print_pairs(ct.t, &lo, &r);
	}
	lat_fini(&r);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
