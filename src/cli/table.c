/* SPDX-License-Identifier: MIT */
/* What the report commands share: aligned text tables, durations in units that scale, the lost-events warning, window options. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"
#include "table.h"

void table_init(struct table *t, unsigned ncol, const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncol = ncol;
	t->right = align;
}

void table_cell(struct table *t, const char *fmt, ...)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **c = realloc(t->cells, cap * sizeof(*c));
		if (!c)
			return;
		t->cells = c;
		t->cap = cap;
	}
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&t->cells[t->nrows], fmt, ap) < 0)
		t->cells[t->nrows] = NULL;
	va_end(ap);
	t->nrows++; /* counts cells; rows = nrows / ncol */
}

void table_print(struct table *t, FILE *f, const char *indent)
{
	size_t w[TABLE_MAXCOL] = { 0 };
	for (size_t i = 0; i < t->nrows; i++) {
		size_t l = t->cells[i] ? strlen(t->cells[i]) : 0;
		if (l > w[i % t->ncol])
			w[i % t->ncol] = l;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		unsigned c = i % t->ncol;
		const char *s = t->cells[i] ? t->cells[i] : "";
		if (c == 0)
			fputs(indent, f);
		bool last = c == t->ncol - 1 || i == t->nrows - 1;
		if (t->right[c] == 'r')
			fprintf(f, "%*s", (int)w[c], s);
		else if (last)
			fputs(s, f);
		else
			fprintf(f, "%-*s", (int)w[c], s);
		fputs(last ? "\n" : "  ", f);
	}
}

void table_fini(struct table *t)
{
	for (size_t i = 0; i < t->nrows; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

/* ---- durations ----------------------------------------------------------- */

struct dur_unit dur_unit_for(uint64_t max_ns)
{
	if (max_ns < 10000)
		return (struct dur_unit){ "ns", 1 };
	if (max_ns < 10000000)
		return (struct dur_unit){ "us", 1e3 };
	if (max_ns < UINT64_C(10000000000))
		return (struct dur_unit){ "ms", 1e6 };
	return (struct dur_unit){ "s", 1e9 };
}

const char *dur_in(struct dur_unit u, uint64_t ns, char *buf, size_t len)
{
	if (u.ns == 1)
		snprintf(buf, len, "%" PRIu64, ns);
	else
		snprintf(buf, len, "%.3f", (double)ns / u.ns);
	return buf;
}

const char *dur_fmt(uint64_t ns, char *buf, size_t len)
{
	/* alone, three digits before the point at most */
	struct dur_unit u = ns < 1000 ? (struct dur_unit){ "ns", 1 } :
			    ns < 1000000 ? (struct dur_unit){ "us", 1e3 } :
			    ns < 1000000000 ? (struct dur_unit){ "ms", 1e6 } :
					      (struct dur_unit){ "s", 1e9 };
	char v[32];
	snprintf(buf, len, "%s %s", dur_in(u, ns, v, sizeof(v)), u.name);
	return buf;
}

/* ---- lost events ----------------------------------------------------------- */

static void loss_words(const struct an_loss *l, char *buf, size_t len)
{
	size_t n = 0;
#define ADD(...) (n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__))
	ADD("this trace lost ");
	bool any = false;
	if (l->kernel_events || l->kernel_packets) {
		ADD("%" PRIu64 " kernel events", l->kernel_events);
		if (l->kernel_packets)
			ADD(" and %" PRIu64 " kernel packets", l->kernel_packets);
		ADD(" (%u stream%s)", l->kernel_streams, l->kernel_streams == 1 ? "" : "s");
		any = true;
	}
	if (l->user_events || l->user_packets) {
		ADD("%s%" PRIu64 " user events", any ? ", and " : "", l->user_events);
		if (l->user_packets)
			ADD(" and %" PRIu64 " user packets", l->user_packets);
		ADD(" (%u stream%s)", l->user_streams, l->user_streams == 1 ? "" : "s");
	}
	ADD(": the counts, times and states below miss what they did "
	    "(strata info shows where)");
#undef ADD
}

void report_loss(const char *path, const struct an_loss *l, FILE *text)
{
	char w[512];
	if (!an_loss_any(l))
		return;
	loss_words(l, w, sizeof(w));
	fflush(stdout);
	fprintf(stderr, "strata: %s: WARNING: %s\n", path, w);
	if (text)
		fprintf(text, "WARNING: %s\n\n", w);
}

void report_loss_json(FILE *f, const struct an_loss *l)
{
	fprintf(f, ",\"lost\":{\"kernel_events\":%" PRIu64 ",\"kernel_packets\":%" PRIu64
		",\"user_events\":%" PRIu64 ",\"user_packets\":%" PRIu64 "}",
		l->kernel_events, l->kernel_packets, l->user_events, l->user_packets);
}

/* ---- window options ------------------------------------------------------- */

uint64_t report_tick(struct strata_trace *t, double sec)
{
	return strata_trace_begin(t) + strata_trace_ns_to_ticks(t, (uint64_t)llround(sec * 1e9));
}

static bool is_seconds(const char *s)
{
	char *e;
	double v = strtod(s, &e);
	return e != s && !*e && isfinite(v) && v >= 0;
}

int report_window(const char *cmd, const char *from, const char *to, const char **begin,
		  const char **end, double *from_s, double *to_s)
{
	*from_s = *to_s = -1;
	if (from && !is_seconds(from) && begin && !*begin) {
		*begin = from;
		from = NULL;
		fprintf(stderr, "strata: %s: --from EVENT is now --begin EVENT (--from/--to "
			"give the window, in seconds, as in every command)\n", cmd);
	}
	if (to && !is_seconds(to) && end && !*end) {
		*end = to;
		to = NULL;
		fprintf(stderr, "strata: %s: --to EVENT is now --end EVENT\n", cmd);
	}
	if ((from && cli_parse_seconds(from, from_s, "from")) ||
	    (to && cli_parse_seconds(to, to_s, "to")))
		return -1;
	if (*from_s >= 0 && *to_s >= 0 && *from_s > *to_s) {
		cli_err(NULL, "%s: --from %g is after --to %g", cmd, *from_s, *to_s);
		return -1;
	}
	return 0;
}

int report_open_window(const char *cmd, const char *path, const struct cli_filter_opts *fo,
		       struct cli_trace *ct, uint64_t *from, uint64_t *to)
{
	if (fo->has_from && fo->has_to && fo->from > fo->to) {
		cli_err(NULL, "%s: --from %g is after --to %g", cmd, fo->from, fo->to);
		return -1;
	}
	ct->quiet_lost = true;
	if (cli_open(ct, path, NULL) < 0)
		return -1;
	if (fo->has_from)
		*from = report_tick(ct->t, fo->from);
	if (fo->has_to)
		*to = report_tick(ct->t, fo->to);
	return 0;
}

int report_top(const char *arg, long *out)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (end == arg || *end || v < 0) {
		cli_err(NULL, "--top: '%s' is not a count (0: all)", arg);
		return -1;
	}
	*out = v;
	return 0;
}

int report_pair_opt(struct report_pair_opts *p, int opt, const char *arg)
{
	switch (opt) {
	case OPT_PAIR_BEGIN: p->begin = arg; return 1;
	case OPT_PAIR_END: p->end = arg; return 1;
	case OPT_PAIR_FROM: p->from = arg; return 1;
	case OPT_PAIR_TO: p->to = arg; return 1;
	case OPT_PAIR_TOP: return report_top(arg, &p->top) ? -1 : 1;
	case OPT_PAIR_FORMAT: return cli_text_json(arg, &p->json) ? -1 : 1;
	}
	return 0;
}

int report_pair_check(struct report_pair_opts *p, const char *cmd, bool events)
{
	return report_window(cmd, p->from, p->to, events ? &p->begin : NULL,
			     events ? &p->end : NULL, &p->from_s, &p->to_s);
}

void report_pair_window(const struct report_pair_opts *p, struct strata_trace *t,
			uint64_t *wfrom, uint64_t *wto)
{
	if (p->from_s >= 0)
		*wfrom = report_tick(t, p->from_s);
	if (p->to_s >= 0)
		*wto = report_tick(t, p->to_s);
}
