/* SPDX-License-Identifier: MIT */
/* strata switches: the context switches of a thread between two of its events ("why was this lock held so long?"). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"

const char cmd_switches_usage[] =
	"usage: strata switches --from EVENT --to EVENT [OPTIONS] TRACE\n\n"
	"Pair each FROM event of a thread with that thread's next TO event (globs\n"
	"on event names, e.g. --from work:lock_acquire --to work:lock_release),\n"
	"and show, for the longest pairs, the context switches inside them: when\n"
	"the thread left its CPU, in which state (preempted, sleeping, I/O), who\n"
	"ran instead, and when it came back. Needs kernel sched events (strata\n"
	"record -k sched). K42 explained long lock hold times this way.\n\n"
	"  --top N               the N longest pairs (default 10; 0: all)\n"
	"  --format text|json    output format (default text)\n";

static int by_duration(const void *a, const void *b)
{
	const struct in_pair *x = *(const struct in_pair *const *)a;
	const struct in_pair *y = *(const struct in_pair *const *)b;
	uint64_t dx = x->end - x->begin, dy = y->end - y->begin;
	return dx < dy ? 1 : dx > dy ? -1 : (x->begin > y->begin) - (x->begin < y->begin);
}

static const char *state_name(int64_t s)
{
	if (s <= 0 || (s & 0x100) || !(s & 0xff))
		return "preempted";
	if (s & 0x02)
		return "I/O wait (D)";
	if (s & 0x01)
		return "sleeping (S)";
	return "blocked";
}

int cmd_switches(int argc, char **argv)
{
	enum { O_FROM = 3100, O_TO, O_TOP, O_FMT };
	static const struct option opts[] = {
		{ "from", required_argument, NULL, O_FROM },
		{ "to", required_argument, NULL, O_TO },
		{ "top", required_argument, NULL, O_TOP },
		{ "format", required_argument, NULL, O_FMT },
		{ 0 },
	};
	struct in_options io = { 0 };
	long top = 10;
	bool json = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_FROM: io.from = optarg; break;
		case O_TO: io.to = optarg; break;
		case O_TOP: {
			char *end;
			top = strtol(optarg, &end, 10);
			if (end == optarg || *end || top < 0) {
				cli_err(NULL, "--top: '%s' is not a count (0: all)", optarg);
				return 1;
			}
			break;
		}
		case O_FMT:
			if (cli_text_json(optarg, &json))
				return 1;
			break;
		default: return 1;
		}
	}
	if (!io.from || !io.to || optind != argc - 1) {
		cli_err(NULL, "switches: expected --from EVENT --to EVENT TRACE (see strata switches --help)");
		return 1;
	}
	struct cli_trace ct = { .quiet_lost = true };
	if (cli_open(&ct, argv[optind], NULL) < 0)
		return 1;
	struct in_result r;
	int ret = in_compute(ct.t, &io, &r);
	if (ret == -EINVAL || ret == -ENOENT) {
		cli_err(ct.path, ret == -EINVAL ?
			"no event matches --from or --to" :
			"no sched:sched_switch events (record with strata record -k sched)");
		cli_close(&ct);
		return 1;
	}
	if (ret < 0) {
		cli_err(ct.path, "%s", strerror(-ret));
		cli_close(&ct);
		return 1;
	}

	/* The closed pairs, longest first. */
	struct in_pair **v = calloc(r.npairs ? r.npairs : 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; v && i < r.npairs; i++)
		if (r.pairs[i].closed)
			v[n++] = &r.pairs[i];
	if (!v) {
		cli_err(NULL, "switches: out of memory");
		in_fini(&r);
		cli_close(&ct);
		return 1;
	}
	qsort(v, n, sizeof(*v), by_duration);
	size_t show = top && (size_t)top < n ? (size_t)top : n;
	uint64_t t0 = strata_trace_begin(ct.t);
#define NS(ticks) strata_trace_ticks_to_ns(ct.t, (ticks))

	uint64_t with = 0;
	for (size_t i = 0; i < n; i++)
		with += v[i]->switches != 0;
	if (json)
		printf("{\"pairs\":%zu,\"with_switches\":%" PRIu64 ",\"longest\":[", n, with);
	else
		printf("%zu pairs of %s .. %s; %" PRIu64 " with context switches inside.\n"
		       "The %zu longest:\n\n", n, io.from, io.to, with, show);
	for (size_t k = 0; k < show; k++) {
		const struct in_pair *p = v[k];
		size_t pi = (size_t)(p - r.pairs);
		uint64_t d = p->end - p->begin;
		if (json) {
			printf("%s{\"time\":%.9f,\"pid\":%u,\"tid\":%u,\"duration_ns\":%" PRIu64
			       ",\"switches\":%u,\"runnable_ns\":%" PRIu64 ",\"blocked_ns\":%" PRIu64
			       ",\"list\":[", k ? "," : "", (double)NS(p->begin - t0) / 1e9, p->pid,
			       p->tid, NS(d), p->switches, NS(p->runnable), NS(p->blocked));
		} else {
			printf("%12.9f  %u/%u  held %" PRIu64 " ns: %u switch%s, off CPU %" PRIu64
			       " ns runnable + %" PRIu64 " ns blocked, on CPU %" PRIu64 " ns\n",
			       (double)NS(p->begin - t0) / 1e9, p->pid, p->tid, NS(d), p->switches,
			       p->switches == 1 ? "" : "es", NS(p->runnable), NS(p->blocked),
			       NS(d - p->runnable - p->blocked));
		}
		int first = 1;
		for (size_t s = 0; s < r.nsw; s++) {
			const struct in_switch *w = &r.sw[s];
			if (w->pair != pi)
				continue;
			uint64_t back = w->back_at ? w->back_at : p->end;
			if (json) {
				printf("%s{\"out\":%.9f,\"cpu\":%u,\"state\":\"%s\",\"next_tid\":%u,"
				       "\"off_ns\":%" PRIu64 "}", first ? "" : ",",
				       (double)NS(w->out_at - t0) / 1e9, w->cpu,
				       state_name(w->prev_state), w->next_tid, NS(back - w->out_at));
			} else {
				printf("      %12.9f  cpu %-3u %-13s  tid %u ran instead; back after %" PRIu64
				       " ns\n", (double)NS(w->out_at - t0) / 1e9, w->cpu,
				       state_name(w->prev_state), w->next_tid, NS(back - w->out_at));
			}
			first = 0;
		}
		if (json)
			printf("]}");
	}
	if (json)
		printf("]}\n");
#undef NS
	free(v);
	in_fini(&r);
	cli_close(&ct);
	return 0;
}
