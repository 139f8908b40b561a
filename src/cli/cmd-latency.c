/* SPDX-License-Identifier: MIT */
/* strata latency: from each FROM event to the next TO event: min, median, p99, max and a histogram. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"

const char cmd_latency_usage[] =
	"usage: strata latency --from EVENT --to EVENT [OPTIONS] TRACE\n\n"
	"Pair each FROM event with the next TO event (globs on event names, e.g.\n"
	"--from 'irq:irq_handler_entry' --to 'app:packet_done') and report the\n"
	"latencies: count, min, median, p99, max, and a log2 histogram.\n\n"
	"  --same-thread         pair only events of the same thread\n"
	"  --since SEC, --until SEC  window, seconds since the trace start\n"
	"  --format text|json    output format (default text)\n";

static uint64_t pct(const struct lat_result *r, double p)
{
	size_t i = (size_t)ceil(p * (double)r->n) ;
	if (i > 0)
		i--;
	if (i >= r->n)
		i = r->n - 1;
	return r->ns[i];
}

int cmd_latency(int argc, char **argv)
{
	enum { O_FROM = 3000, O_TO, O_SAME, O_SINCE, O_UNTIL, O_FMT, O_HELP };
	static const struct option opts[] = {
		{ "from", required_argument, NULL, O_FROM },
		{ "to", required_argument, NULL, O_TO },
		{ "same-thread", no_argument, NULL, O_SAME },
		{ "since", required_argument, NULL, O_SINCE },
		{ "until", required_argument, NULL, O_UNTIL },
		{ "format", required_argument, NULL, O_FMT },
		{ "help", no_argument, NULL, O_HELP },
		{ 0 },
	};
	struct lat_options lo = { 0 };
	double since = -1, until = -1;
	bool json = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_FROM: lo.from = optarg; break;
		case O_TO: lo.to = optarg; break;
		case O_SAME: lo.same_tid = true; break;
		case O_SINCE:
			if (cli_parse_seconds(optarg, &since, "since"))
				return 1;
			break;
		case O_UNTIL:
			if (cli_parse_seconds(optarg, &until, "until"))
				return 1;
			break;
		case O_FMT:
			if (cli_text_json(optarg, &json))
				return 1;
			break;
		default: return 1;
		}
	}
	if (!lo.from || !lo.to || optind != argc - 1) {
		cli_err(NULL, "latency: expected --from EVENT --to EVENT TRACE (see strata latency --help)");
		return 1;
	}
	struct cli_trace ct = { .quiet_lost = true };
	if (cli_open(&ct, argv[optind], NULL) < 0)
		return 1;
	uint64_t b = strata_trace_begin(ct.t);
	if (since >= 0)
		lo.wfrom = b + strata_trace_ns_to_ticks(ct.t, (uint64_t)llround(since * 1e9));
	if (until >= 0)
		lo.wto = b + strata_trace_ns_to_ticks(ct.t, (uint64_t)llround(until * 1e9));
	struct lat_result r;
	int ret = lat_compute(ct.t, &lo, &r);
	if (ret == -EINVAL) {
		cli_err(ct.path, "no event matches --from '%s' or --to '%s'", lo.from, lo.to);
		cli_close(&ct);
		return 1;
	}
	if (ret < 0) {
		cli_err(ct.path, "%s", strerror(-ret));
		cli_close(&ct);
		return 1;
	}
	if (json) {
		printf("{\"count\":%" PRIu64 ",\"unmatched\":%" PRIu64, r.n, r.unmatched);
		if (r.n)
			printf(",\"min_ns\":%" PRIu64 ",\"median_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
			       ",\"max_ns\":%" PRIu64, r.ns[0], pct(&r, 0.5), pct(&r, 0.99),
			       r.ns[r.n - 1]);
		printf("}\n");
	} else {
		printf("%s -> %s: %" PRIu64 " pairs, %" PRIu64 " unmatched\n", lo.from, lo.to,
		       r.n, r.unmatched);
		if (r.n) {
			printf("min %.3f us  median %.3f us  p99 %.3f us  max %.3f us\n\n",
			       r.ns[0] / 1e3, pct(&r, 0.5) / 1e3, pct(&r, 0.99) / 1e3,
			       r.ns[r.n - 1] / 1e3);
			/* log2 buckets of ns */
			uint64_t hist[65] = { 0 }, top = 0;
			int lo_b = 64, hi_b = 0;
			for (uint64_t i = 0; i < r.n; i++) {
				int k = r.ns[i] ? 64 - __builtin_clzll(r.ns[i]) : 0;
				hist[k]++;
				if (k < lo_b)
					lo_b = k;
				if (k > hi_b)
					hi_b = k;
			}
			for (int k = lo_b; k <= hi_b; k++)
				if (hist[k] > top)
					top = hist[k];
			for (int k = lo_b; k <= hi_b; k++) {
				uint64_t lo_ns = k ? 1ull << (k - 1) : 0, hi_ns = k ? (1ull << k) : 1;
				int bar = (int)(hist[k] * 50 / (top ? top : 1));
				printf("%12.3f - %-12.3f us %8" PRIu64 " |%.*s\n", lo_ns / 1e3,
				       hi_ns / 1e3, hist[k], bar,
				       "##################################################");
			}
		}
	}
	lat_fini(&r);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
