/* SPDX-License-Identifier: MIT */
/* strata switches: the context switches of a thread between two of its events ("why was this lock held so long?"). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"
#include "table.h"

const char cmd_switches_usage[] =
	"usage: strata switches --begin EVENT --end EVENT [OPTIONS] TRACE\n\n"
	"Pair each BEGIN event of a thread with that thread's next END event (globs\n"
	"on event names, e.g. --begin work:lock_acquire --end work:lock_release),\n"
	"and show, for the longest pairs, the context switches inside them: when\n"
	"the thread left its CPU, in which state (preempted, sleeping, I/O), who\n"
	"ran instead, and when it came back. Needs kernel sched events (strata\n"
	"record -k sched). K42 explained long lock hold times this way.\n\n"
	"  --top N               the N longest pairs (default 10; 0: all)\n"
	"  --from SEC, --to SEC  pairs that begin in this window, seconds since the\n"
	"                        trace start\n"
	"  --format text|json    output format (default text)\n";

static int by_duration(const void *a, const void *b)
{
	const struct inside_pair *x = *(const struct inside_pair *const *)a;
	const struct inside_pair *y = *(const struct inside_pair *const *)b;
	uint64_t dx = x->end - x->begin, dy = y->end - y->begin;
	return dx < dy ? 1 : dx > dy ? -1 : (x->begin > y->begin) - (x->begin < y->begin);
}

/* A name for JSON: without quotes, backslashes and control bytes. */
static const char *json_safe(const char *s, char *buf, size_t n)
{
	size_t k = 0;
	for (; s && *s && k + 1 < n; s++)
		if ((unsigned char)*s >= 0x20 && *s != '"' && *s != '\\')
			buf[k++] = *s;
	buf[k] = 0;
	return buf;
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

/* "tid 123 (name)", or "tid 123" */
static const char *who(const struct inside_result *r, uint32_t tid, char *buf, size_t n)
{
	const char *nm = an_names_get(r->names, tid);
	if (!tid)
		snprintf(buf, n, "idle");
	else if (nm)
		snprintf(buf, n, "%s (tid %u)", nm, tid);
	else
		snprintf(buf, n, "tid %u", tid);
	return buf;
}

/* The options into *p: 0, or -1 (exit status 1) after saying why. */
static int switches_parse(int argc, char **argv, struct report_pair_opts *p)
{
	static const struct option opts[] = {
		REPORT_PAIR_OPTIONS,
		REPORT_PAIR_OUTPUT,
		{ 0 },
	};
	int c;

	p->top = 10;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if (report_pair_opt(p, c, optarg) <= 0)
			return -1;
	if (report_pair_check(p, "switches", true))
		return -1;
	if (!p->begin || !p->end || optind != argc - 1) {
		cli_err(NULL, "switches: expected --begin EVENT --end EVENT TRACE (see strata switches --help)");
		return -1;
	}
	return 0;
}

#define NS(ticks) strata_trace_ticks_to_ns(t, (ticks))
/* One pair, the k-th shown, and the switches inside it: a line each, or
 * a JSON object with its list. */
static void put_pair(struct strata_trace *t, const struct inside_result *r,
		     const struct inside_pair *p, size_t k, uint64_t t0, bool json)
{
	size_t pi = (size_t)(p - r->pairs);
	uint64_t d = p->end - p->begin;
	char d0[40], d1[40], d2[40], d3[40], nb[64];

	if (json) {
		printf("%s{\"time\":%.9f,\"pid\":%u,\"tid\":%u,\"name\":\"%s\",\"duration_ns\":%" PRIu64
		       ",\"switches\":%u,\"runnable_ns\":%" PRIu64 ",\"blocked_ns\":%" PRIu64
		       ",\"list\":[", k ? "," : "", (double)NS(p->begin - t0) / 1e9, p->pid,
		       p->tid, json_safe(an_names_get(r->names, p->tid), nb, sizeof(nb)), NS(d),
		       p->switches, NS(p->runnable), NS(p->blocked));
	} else {
		printf("%12.9f  %s: held %s: %u switch%s, off CPU %s runnable + %s blocked, "
		       "on CPU %s\n", (double)NS(p->begin - t0) / 1e9,
		       who(r, p->tid, nb, sizeof(nb)), dur_fmt(NS(d), d0, sizeof(d0)),
		       p->switches, p->switches == 1 ? "" : "es",
		       dur_fmt(NS(p->runnable), d1, sizeof(d1)),
		       dur_fmt(NS(p->blocked), d2, sizeof(d2)),
		       dur_fmt(NS(d - p->runnable - p->blocked), d3, sizeof(d3)));
	}
	int first = 1;
	for (size_t s = 0; s < r->nsw; s++) {
		const struct inside_switch *w = &r->sw[s];
		if (w->pair != pi)
			continue;
		uint64_t back = w->back_at ? w->back_at : p->end;
		char st[8];
		if (json) {
			printf("%s{\"out\":%.9f,\"cpu\":%u,\"state\":\"%s\",\"prev_state\":\"%s\","
			       "\"next_tid\":%u,\"next_name\":\"%s\",\"off_ns\":%" PRIu64 "}",
			       first ? "" : ",", (double)NS(w->out_at - t0) / 1e9, w->cpu,
			       state_name(w->prev_state), bd_state_letters(w->prev_state, st),
			       w->next_tid,
			       json_safe(an_names_get(r->names, w->next_tid), nb, sizeof(nb)),
			       NS(back - w->out_at));
		} else {
			printf("      %12.9f  cpu %-3u %-13s  %s ran instead; back after %s\n",
			       (double)NS(w->out_at - t0) / 1e9, w->cpu,
			       state_name(w->prev_state), who(r, w->next_tid, nb, sizeof(nb)),
			       dur_fmt(NS(back - w->out_at), d0, sizeof(d0)));
		}
		first = 0;
	}
	if (json)
		printf("]}");
}
#undef NS

int cmd_switches(int argc, char **argv)
{
	struct report_pair_opts po = { 0 };
	struct inside_options io = { 0 };
	long top;
	bool json;

	if (switches_parse(argc, argv, &po) < 0)
		return 1;
	io.from = po.begin;
	io.to = po.end;
	top = po.top;
	json = po.json;
	struct cli_trace ct = { .quiet_lost = true };
	if (cli_open(&ct, argv[optind], NULL) < 0)
		return 1;
	uint64_t t0 = strata_trace_begin(ct.t);
	report_pair_window(&po, ct.t, &io.wfrom, &io.wto);
	struct inside_result r;
	int ret = inside_compute(ct.t, &io, &r);
	if (ret == -EINVAL || ret == -ENOENT) {
		if (ret == -EINVAL)
			cli_err(ct.path, "no event matches --begin '%s' or --end '%s' (strata "
				"info lists the event types)", io.from, io.to);
		else
			cli_err(ct.path, "no sched:sched_switch event: switches needs the "
				"kernel's scheduling events (record with strata record -k sched)");
		cli_close(&ct);
		return 1;
	}
	if (ret < 0) {
		cli_err(ct.path, "%s", strerror(-ret));
		cli_close(&ct);
		return 1;
	}

	/* The closed pairs, longest first. */
	struct inside_pair **v = calloc(r.npairs ? r.npairs : 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; v && i < r.npairs; i++)
		if (r.pairs[i].closed)
			v[n++] = &r.pairs[i];
	if (!v) {
		cli_err(NULL, "switches: out of memory");
		inside_fini(&r);
		cli_close(&ct);
		return 1;
	}
	qsort(v, n, sizeof(*v), by_duration);
	size_t show = top && (size_t)top < n ? (size_t)top : n;
	struct an_loss loss;
	an_loss_get(ct.t, &loss);
	report_loss(ct.path, &loss, json ? NULL : stdout);

	uint64_t with = 0;
	for (size_t i = 0; i < n; i++)
		with += v[i]->switches != 0;
	if (json) {
		printf("{\"pairs\":%zu,\"with_switches\":%" PRIu64, n, with);
		report_loss_json(stdout, &loss);
		printf(",\"longest\":[");
	} else
		printf("%zu pairs of %s .. %s; %" PRIu64 " with context switches inside.\n"
		       "The %zu longest:\n\n", n, io.from, io.to, with, show);
	for (size_t k = 0; k < show; k++)
		put_pair(ct.t, &r, v[k], k, t0, json);
	if (json)
		printf("]}\n");
	free(v);
	inside_fini(&r);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
