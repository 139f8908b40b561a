/* SPDX-License-Identifier: MIT */
/* strata stats: counts and rates per event, per CPU and per thread. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "scan.h"
#include "table.h"

const char cmd_stats_usage[] =
	"usage: strata stats [OPTIONS] TRACE\n\n"
	"Count the events that pass the filters: per event type, per CPU and per\n"
	"thread, with rates (events per second over the selected span), first\n"
	"and last times, and the events lost while recording.\n\n"
	"  --follow              count a trace while it is written: every\n"
	"                        --every seconds one line (events so far, the\n"
	"                        rate since the last line, events lost so far,\n"
	"                        the three busiest events); the whole table once\n"
	"                        the trace is complete (or on Ctrl-C)\n"
	"  --every S             seconds between --follow's lines (default 1)\n"
	CLI_FILTER_HELP;

enum { OPT_FOLLOW = 1200, OPT_EVERY };

static double rate(uint64_t n, uint64_t span_ns)
{
	return span_ns ? (double)n * 1e9 / (double)span_ns : 0;
}

/* ---- --follow: counts of a trace being written, a line a period ---------- */

/* An event name's counts so far and since the last line. */
struct live_name {
	char *name;
	uint64_t total, since;
};

struct live {
	struct live_name *v;
	size_t n, cap;
	uint32_t *slot;   /* per class index of the trace last seen: v index + 1 */
	unsigned nslots;
	const struct strata_trace *t;
	uint64_t total, since;
};

/* The counts of class c of trace t (by name: the classes of sub-traces
 * that share a vocabulary count together, as in the table). NULL: out of
 * memory. */
static struct live_name *live_of(struct live *lv, const struct strata_trace *t,
				 const struct strata_event_class *c)
{
	unsigned nc = strata_trace_nclasses(t);
	if (lv->t != t || lv->nslots < nc) { /* a new trace, or new classes */
		uint32_t *ns = calloc(nc ? nc : 1, sizeof(*ns));
		if (!ns)
			return NULL;
		free(lv->slot);
		lv->slot = ns;
		lv->nslots = nc;
		lv->t = t;
	}
	if (c->index < lv->nslots && lv->slot[c->index])
		return &lv->v[lv->slot[c->index] - 1];
	size_t i = 0;
	while (i < lv->n && strcmp(lv->v[i].name, c->name))
		i++;
	if (i == lv->n) {
		if (lv->n == lv->cap) {
			size_t cap = lv->cap ? lv->cap * 2 : 64;
			struct live_name *nv = realloc(lv->v, cap * sizeof(*nv));
			if (!nv)
				return NULL;
			lv->v = nv;
			lv->cap = cap;
		}
		if (!(lv->v[i].name = strdup(c->name)))
			return NULL;
		lv->v[i].total = lv->v[i].since = 0;
		lv->n++;
	}
	if (c->index < lv->nslots)
		lv->slot[c->index] = (uint32_t)i + 1;
	return &lv->v[i];
}

/* The window [from, to) of trace t, counted. 0, or -1 after one line. */
static int live_window(struct live *lv, struct cli_trace *ct, const struct cli_filter_opts *fo,
		       struct strata_trace *t, uint64_t from, uint64_t to)
{
	struct strata_iter *it = NULL;
	const struct strata_event *ev;
	int rc = -1;
	if (from == to)
		return 0;
	if (cli_window_iter(ct, fo, t, from, to, &it) < 0)
		goto out;
	while (strata_iter_next(it, &ev) > 0) {
		struct live_name *ln = live_of(lv, t, ev->cls);
		if (!ln) {
			cli_err(ct->path, "out of memory");
			goto out;
		}
		ln->total++;
		ln->since++;
		lv->total++;
		lv->since++;
	}
	rc = 0;
out:
	cli_window_end(ct, it);
	return rc;
}

static int by_since(const void *a, const void *b)
{
	const struct live_name *x = a, *y = b;
	return x->since != y->since ? (x->since > y->since ? -1 : 1) : strcmp(x->name, y->name);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One line: seconds since the start, events so far, those since the last
 * line and their rate, events lost so far (the streams' counts), the
 * three busiest events since the last line. */
static void live_line(struct live *lv, struct strata_trace *t, double at_s, double dt_s)
{
	uint64_t lost = 0;
	for (unsigned i = 0; t && i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		if (!strata_trace_stream(t, i, &si))
			lost += si.discarded;
	}
	printf("%7.1f s  %" PRIu64 " events  +%" PRIu64 " (%.1f/s)  lost %" PRIu64, at_s,
	       lv->total, lv->since, dt_s > 0 ? (double)lv->since / dt_s : 0.0, lost);
	qsort(lv->v, lv->n, sizeof(*lv->v), by_since);
	lv->t = NULL; /* the slots name the old order */
	for (size_t i = 0; i < lv->n && i < 3 && lv->v[i].since; i++)
		printf("%s%s %.1f/s", i ? ", " : "  ", lv->v[i].name,
		       dt_s > 0 ? (double)lv->v[i].since / dt_s : 0.0);
	printf("\n");
	fflush(stdout);
	for (size_t i = 0; i < lv->n; i++)
		lv->v[i].since = 0;
	lv->since = 0;
}

static int stats_table(const char *path, const struct cli_filter_opts *fo);

/* strata stats --follow: a line every `every` seconds while the trace is
 * written, then the table of the finished trace (docs/cli.md). */
static int stats_follow(const char *path, const struct cli_filter_opts *fo, double every)
{
	struct cli_trace ct = { .path = path, .quiet_lost = true };
	struct strata_open_options oo;
	struct strata_follow_options fopt = { .open = &oo };
	struct strata_follow *f = NULL;
	struct live lv = { 0 };
	struct strata_trace *t = NULL;
	int rc = 0, st = STRATA_FOLLOW_LIVE;
	uint64_t t0 = mono_ns(), last = t0;

	cli_open_options(&ct, fo, &oo);
	if (strata_follow_create(path, &fopt, &f) < 0) {
		cli_err(path, "out of memory");
		return 1;
	}
	cli_session_signals();
	while (st == STRATA_FOLLOW_LIVE && !cli_got_signal) {
		uint64_t from, to;
		st = strata_follow_poll(f, &t, &from, &to);
		if (st < 0) {
			cli_follow_err(path, st);
			rc = 1;
			break;
		}
		if (t && live_window(&lv, &ct, fo, t, from, to) < 0) {
			rc = 1;
			break;
		}
		uint64_t now = mono_ns();
		if (now - last >= (uint64_t)(every * 1e9) || st != STRATA_FOLLOW_LIVE) {
			live_line(&lv, t, (double)(now - t0) / 1e9, (double)(now - last) / 1e9);
			last = now;
		}
		if (st == STRATA_FOLLOW_LIVE) {
			struct timespec ts = { 0, 10 * 1000000 }; /* as print --follow */
			nanosleep(&ts, NULL);
		}
	}
	strata_follow_destroy(f);
	for (size_t i = 0; i < lv.n; i++)
		free(lv.v[i].name);
	free(lv.v);
	free(lv.slot);
	if (rc)
		return rc;
	/* the whole table, of what is there now (complete, or cut short) */
	printf("\n");
	return stats_table(path, fo);
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "follow", no_argument, NULL, OPT_FOLLOW },
		{ "every", required_argument, NULL, OPT_EVERY },
		CLI_FILTER_OPTIONS,
		{ 0 },
	};
	struct cli_filter_opts fo = { 0 };
	bool follow = false;
	double every = 1.0;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == OPT_FOLLOW) {
			follow = true;
		} else if (c == OPT_EVERY) {
			char *end;
			every = strtod(optarg, &end);
			if (*end || !(every >= 0.05 && every <= 3600)) {
				cli_err(NULL, "--every %s: expected seconds, 0.05 to 3600", optarg);
				return 1;
			}
		} else if (c == '?' || cli_filter_opt(&fo, c, optarg) < 0) {
			return 1;
		}
	}
	if (optind != argc - 1) {
		cli_err(NULL, "stats: expected one TRACE directory (see strata stats --help)");
		return 1;
	}
	if (follow && (fo.has_from || fo.has_to)) {
		cli_err(NULL, "--follow counts the trace as it grows: no --from or --to");
		return 1;
	}
	return follow ? stats_follow(argv[optind], &fo, every) : stats_table(argv[optind], &fo);
}

/* The table of the trace at path, as it is now. */
static int stats_table(const char *path, const struct cli_filter_opts *fo_in)
{
	const struct cli_filter_opts fo = *fo_in;
	struct cli_trace ct = { .quiet_lost = true };
	struct scan sc = { .want_names = false };
	if (scan_trace(&sc, &ct, path, &fo, fo.internal) < 0)
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
