/* SPDX-License-Identifier: MIT */
/* What the report commands share: aligned text tables, durations in units that scale, the lost-events warning, window options. */
#ifndef STRATA_CLI_TABLE_H
#define STRATA_CLI_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TABLE_MAXCOL 16

struct table {
	unsigned ncol;
	const char *right; /* per column 'r' (numbers) or 'l' */
	char **cells;      /* rows * ncol, owned */
	size_t nrows, cap;
};

void table_init(struct table *t, unsigned ncol, const char *align);
/* Append a row of ncol printf-formatted cells: table_row(t, "%s", a, "%u", b) is
 * not possible in C, so cells are added one at a time. */
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void table_print(struct table *t, FILE *f, const char *indent);
void table_fini(struct table *t);

/* ---- durations ----------------------------------------------------------- */

/* One unit for a column or a table: the one in which `max_ns` shows with
 * at most four digits before the point (ns, us, ms, s). */
struct dur_unit {
	const char *name;
	double ns; /* nanoseconds per unit */
};
struct dur_unit dur_unit_for(uint64_t max_ns);
/* ns in unit u with three decimals (none for ns), into buf; returns buf. */
const char *dur_in(struct dur_unit u, uint64_t ns, char *buf, size_t len);
/* One duration scaled on its own, with its unit: "812 ns", "12.300 us",
 * "4.560 ms", "1.234 s"; returns buf (32 bytes are enough). */
const char *dur_fmt(uint64_t ns, char *buf, size_t len);

/* ---- lost events ----------------------------------------------------------- */

struct an_loss;
/* When the trace lost events: one line on stderr ("strata: TRACE:
 * WARNING: ...") and, when text is not NULL, the same words as the first
 * line of the report on it. Nothing when nothing was lost. */
void report_loss(const char *path, const struct an_loss *l, FILE *text);
/* ,"lost":{...} for a JSON report (always written, zeros included). */
void report_loss_json(FILE *f, const struct an_loss *l);

/* ---- window options ------------------------------------------------------- */

struct strata_trace;
/* The tick `sec` seconds after the trace's start. */
uint64_t report_tick(struct strata_trace *t, double sec);
/*
 * --from/--to once named the events of latency and switches: an argument
 * that is no time moves to *begin / *end when those are unset, with a
 * note on stderr; then the times are checked into *from_s / *to_s (-1
 * when not given). 0, or -1 after one error line.
 */
int report_window(const char *cmd, const char *from, const char *to, const char **begin,
		  const char **end, double *from_s, double *to_s);

struct cli_trace;
struct cli_filter_opts;
/*
 * The window of a command that reads the filter options' --from/--to
 * (breakdown, intervals): checked in order, the trace at `path` opened
 * into *ct (its losses left for the report to say), and the times as
 * ticks into *from / *to, each left as it is when not given. 0, or -1
 * after one error line (the trace then not open).
 */
int report_open_window(const char *cmd, const char *path, const struct cli_filter_opts *fo,
		       struct cli_trace *ct, uint64_t *from, uint64_t *to);

/* --top N: a count, 0 for all; 0, or -1 after one error line. */
int report_top(const char *arg, long *out);

/* ---- the options latency and switches share -------------------------------- */

/* --begin/--end (event globs), the window (--from/--to, once --since/
 * --until), then the command's own options, then REPORT_PAIR_OUTPUT:
 * --top, --format text|json. */
enum { OPT_PAIR_BEGIN = 3000, OPT_PAIR_END, OPT_PAIR_FROM, OPT_PAIR_TO,
       OPT_PAIR_TOP, OPT_PAIR_FORMAT, OPT_PAIR_LAST };
#define REPORT_PAIR_OPTIONS                                             \
	{ "begin", required_argument, NULL, OPT_PAIR_BEGIN },           \
	{ "end", required_argument, NULL, OPT_PAIR_END },               \
	{ "from", required_argument, NULL, OPT_PAIR_FROM },             \
	{ "to", required_argument, NULL, OPT_PAIR_TO },                 \
	{ "since", required_argument, NULL, OPT_PAIR_FROM }, /* old */   \
	{ "until", required_argument, NULL, OPT_PAIR_TO }
#define REPORT_PAIR_OUTPUT                                              \
	{ "top", required_argument, NULL, OPT_PAIR_TOP },               \
	{ "format", required_argument, NULL, OPT_PAIR_FORMAT }
struct report_pair_opts {
	const char *begin, *end;  /* the event globs */
	const char *from, *to;    /* the window as given */
	double from_s, to_s;      /* ... in seconds, -1: not given */
	long top;                 /* --top, 0: all (the caller's default) */
	bool json;
};
/* One option of those: 1 taken, 0 not one of them, -1 bad (said). */
int report_pair_opt(struct report_pair_opts *p, int opt, const char *arg);
/* After the options: the window checked (report_window(); with events,
 * --from/--to that are no time name the events). 0, or -1 after one
 * error line. */
int report_pair_check(struct report_pair_opts *p, const char *cmd, bool events);
/* The window in ticks of t into *wfrom / *wto, each where it was given. */
void report_pair_window(const struct report_pair_opts *p, struct strata_trace *t,
			uint64_t *wfrom, uint64_t *wto);

#endif /* STRATA_CLI_TABLE_H */
