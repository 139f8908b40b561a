/* SPDX-License-Identifier: MIT */
/* Shared helpers of the strata subcommands (see cli.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/compiler.h"
#include "common/numfmt.h"


void cli_err(const char *file, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("strata: ", stderr);
	if (file)
		fprintf(stderr, "%s: ", file);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int parse_list(const char *arg, uint32_t *v, unsigned *n, const char *what)
{
	const char *p = arg;
	while (*p) {
		char *e;
		errno = 0;
		unsigned long x = strtoul(p, &e, 0);
		if (e == p || errno || x > UINT32_MAX || (*e && *e != ',')) {
			cli_err(NULL, "--%s: '%s' is not a number or a comma list", what, arg);
			return -1;
		}
		if (*n >= 64) {
			cli_err(NULL, "--%s: more than 64 values", what);
			return -1;
		}
		v[(*n)++] = x;
		p = *e ? e + 1 : e;
	}
	return 0;
}

int cli_parse_seconds(const char *arg, double *out, const char *what)
{
	char *e;
	errno = 0;
	double v = strtod(arg, &e);
	if (e == arg || *e || errno || !isfinite(v) || v < 0) {
		cli_err(NULL, "--%s: '%s' is not a time in seconds", what, arg);
		return -1;
	}
	*out = v;
	return 0;
}

void cli_json_name(const char *s)
{
	putchar('"');
	for (; s && *s; s++)
		if ((unsigned char)*s >= 0x20 && *s != '"' && *s != '\\')
			putchar(*s);
	putchar('"');
}

int cli_text_json(const char *arg, bool *json)
{
	if (strcmp(arg, "text") && strcmp(arg, "json")) {
		cli_err(NULL, "--format: expected text or json, not '%s'", arg);
		return -1;
	}
	*json = !strcmp(arg, "json");
	return 0;
}

int cli_filter_opt(struct cli_filter_opts *o, int opt, const char *arg)
{
	switch (opt) {
	case OPT_FROM:
		o->has_from = true;
		return cli_parse_seconds(arg, &o->from, "from");
	case OPT_TO:
		o->has_to = true;
		return cli_parse_seconds(arg, &o->to, "to");
	case OPT_CPU:
		return parse_list(arg, o->cpus, &o->ncpus, "cpu");
	case OPT_PID:
		return parse_list(arg, o->pids, &o->npids, "pid");
	case OPT_TID:
		return parse_list(arg, o->tids, &o->ntids, "tid");
	case OPT_EVENT:
		if (o->nevents >= 64) {
			cli_err(NULL, "--event: more than 64 globs");
			return -1;
		}
		o->events[o->nevents++] = arg;
		return 0;
	case OPT_FILTER:
		if (o->nexprs >= 16) {
			cli_err(NULL, "--filter: more than 16 expressions");
			return -1;
		}
		o->exprs[o->nexprs++] = arg;
		return 0;
	case OPT_INTERNAL:
		o->internal = true;
		return 0;
	case OPT_MERGE:
		o->merge = true;
		return 0;
	}
	return -1;
}

static void on_problem(const struct strata_problem *p, void *arg)
{
	struct cli_trace *ct = arg;
	switch (p->kind) {
	case STRATA_PROBLEM_DISCARDED:
		ct->discarded += p->count;
		if (!ct->quiet_lost)
			cli_err(p->file, "%s", p->what);
		return;
	case STRATA_PROBLEM_PACKETS_LOST:
		ct->packets_lost += p->count;
		if (!ct->quiet_lost)
			cli_err(p->file, "%s", p->what);
		return;
	case STRATA_PROBLEM_INDEX:
		cli_err(p->file, "%s", p->what);
		return;
	case STRATA_PROBLEM_METADATA:
	case STRATA_PROBLEM_MISSING:
		/* the trace is incomplete: exit status 2 */
		ct->damaged++;
		cli_err(p->file, "%s", p->what); /* the text names the line */
		return;
	case STRATA_PROBLEM_RECORDING:
		/* named after the refusal (cli_open) */
		if (ct->nrecordings < sizeof(ct->recordings) / sizeof(ct->recordings[0])) {
			char *line = malloc(strlen(p->file) + strlen(p->what) + 3);
			if (line)
				sprintf(line, "%s: %s", p->file, p->what);
			ct->recordings[ct->nrecordings] = line;
		}
		ct->nrecordings++;
		return;
	default:
		ct->damaged++;
		cli_err(p->file, "offset %" PRIu64 ": %s", p->offset, p->what);
	}
}

/* A directory of several recordings, refused: it and each of them (the
 * first few) named, one line each. */
static void several(struct cli_trace *ct)
{
	const unsigned shown = sizeof(ct->recordings) / sizeof(ct->recordings[0]);
	cli_err(ct->path, "holds %u recordings, not one trace: name one of them, or "
		"read them as one with --merge", ct->nrecordings);
	for (unsigned i = 0; i < ct->nrecordings && i < shown; i++) {
		if (ct->recordings[i])
			cli_err(NULL, "%s", ct->recordings[i]);
		free(ct->recordings[i]);
		ct->recordings[i] = NULL;
	}
	if (ct->nrecordings > shown)
		cli_err(ct->path, "and %u more recordings", ct->nrecordings - shown);
}

void cli_open_options(struct cli_trace *ct, const struct cli_filter_opts *fo,
		      struct strata_open_options *oo)
{
	*oo = (struct strata_open_options){ .problem = on_problem, .problem_arg = ct };
	if (ct->merge || (fo && fo->merge))
		oo->flags |= STRATA_OPEN_MERGE;
}

int cli_open(struct cli_trace *ct, const char *path, const struct cli_filter_opts *fo)
{
	struct strata_open_options oo;
	int rc;
	ct->path = path;
	cli_open_options(ct, fo, &oo);
	rc = strata_trace_open(path, &oo, &ct->t);
	if (rc < 0) {
		if (rc == -ENOENT)
			cli_err(path, "no strata trace here (no directory with a metadata file)");
		else if (rc == -EINVAL)
			cli_err(path, "no readable sub-trace");
		else if (rc == -ENOTUNIQ)
			several(ct);
		else
			cli_err(path, "%s", strerror(-rc));
		return -1;
	}
	return fo ? cli_filter_build(ct, fo, false) : 0;
}

int cli_window_iter(struct cli_trace *ct, const struct cli_filter_opts *fo,
		    struct strata_trace *t, uint64_t from, uint64_t to, struct strata_iter **it)
{
	*it = NULL;
	ct->t = t;
	if (cli_filter_build(ct, fo, true) < 0 || strata_filter_time(ct->f, from, to - 1) < 0 ||
	    cli_iter(ct, fo->internal, it) < 0)
		return -1;
	return 0;
}

void cli_window_end(struct cli_trace *ct, struct strata_iter *it)
{
	strata_iter_destroy(it);
	strata_filter_destroy(ct->f);
	ct->f = NULL;
	ct->t = NULL; /* the follower's */
}

void cli_follow_err(const char *path, int err)
{
	if (err == -ENOTUNIQ)
		cli_err(path, "holds several recordings, not one trace: name one of them, "
			"or follow them as one with --merge");
	else
		cli_err(path, "%s", strerror(-err));
}

int cli_filter_build(struct cli_trace *ct, const struct cli_filter_opts *fo, bool live)
{
	const char *path = ct->path;
	int rc;

	if ((rc = strata_filter_create(ct->t, &ct->f)) < 0)
		goto nomem;
	struct strata_clock_info ci;
	strata_trace_clock(ct->t, &ci);
	uint64_t b = strata_trace_begin(ct->t);
	if (fo->has_from || fo->has_to) {
		uint64_t from = fo->has_from ? b + strata_trace_ns_to_ticks(ct->t,
						 (uint64_t)llround(fo->from * 1e9)) : 0;
		uint64_t to = fo->has_to ? b + strata_trace_ns_to_ticks(ct->t,
						 (uint64_t)llround(fo->to * 1e9)) : UINT64_MAX;
		if (from > to) {
			cli_err(NULL, "--from is after --to");
			return -1;
		}
		/* a window past the end matches nothing for sure: a mistake,
		 * said as one (a window with no event in it is an answer,
		 * cli_none_matched) */
		uint64_t e = strata_trace_end(ct->t);
		if (fo->has_from && from > e) {
			cli_err(path, "--from %g s is after the trace's end (%.9f s)", fo->from,
				(double)strata_trace_ticks_to_ns(ct->t, e - b) / 1e9);
			return -1;
		}
		strata_filter_time(ct->f, from, to);
	}
	for (unsigned i = 0; i < fo->ncpus; i++)
		if (strata_filter_cpu(ct->f, fo->cpus[i]) < 0)
			goto nomem;
	for (unsigned i = 0; i < fo->npids; i++)
		if (strata_filter_pid(ct->f, fo->pids[i]) < 0)
			goto nomem;
	for (unsigned i = 0; i < fo->ntids; i++)
		if (strata_filter_tid(ct->f, fo->tids[i]) < 0)
			goto nomem;
	for (unsigned i = 0; i < fo->nevents; i++) {
		rc = strata_filter_event(ct->f, fo->events[i]);
		if (rc < 0)
			goto nomem;
		if (rc == 0 && !live) /* live: its events may come later */
			cli_err(path, "--event %s matches no event of this trace",
				fo->events[i]);
	}
	for (unsigned i = 0; i < fo->nexprs; i++) {
		char err[4096];
		rc = strata_filter_expr(ct->f, fo->exprs[i], err, sizeof(err));
		if (rc == -ENOMEM)
			goto nomem;
		if (rc < 0) {
			cli_err(NULL, "--filter '%s': %s", fo->exprs[i], err);
			return -1;
		}
	}
	return 0;
nomem:
	cli_err(path, "out of memory");
	return -1;
}

int cli_iter(struct cli_trace *ct, bool internal, struct strata_iter **it)
{
	struct strata_iter_options io = { .stream = -1, .filter = ct->f,
					  .flags = internal ? STRATA_ITER_INTERNAL : 0 };
	int rc = strata_iter_create(ct->t, &io, it);
	if (rc < 0) {
		cli_err(ct->path, "%s", strerror(-rc));
		return -1;
	}
	return 0;
}

void cli_close(struct cli_trace *ct)
{
	for (unsigned i = 0; i < sizeof(ct->recordings) / sizeof(ct->recordings[0]); i++) {
		free(ct->recordings[i]);
		ct->recordings[i] = NULL;
	}
	strata_filter_destroy(ct->f);
	strata_trace_close(ct->t);
	ct->f = NULL;
	ct->t = NULL;
}

int cli_status(const struct cli_trace *ct)
{
	return ct->damaged ? 2 : 0;
}

void cli_none_matched(const struct cli_trace *ct, const struct cli_filter_opts *fo,
		      uint64_t n)
{
	const struct {
		bool on;
		const char *name;
	} given[] = {
		{ fo && (fo->has_from || fo->has_to), "the time window" },
		{ fo && fo->ncpus, "--cpu" },
		{ fo && fo->npids, "--pid" },
		{ fo && fo->ntids, "--tid" },
		{ fo && fo->nevents, "--event" },
		{ fo && fo->nexprs, "--filter" },
	};
	char what[128] = "";
	size_t k = 0;
	if (n)
		return;
	for (unsigned i = 0; i < sizeof(given) / sizeof(given[0]); i++)
		if (given[i].on)
			k += (size_t)snprintf(what + k, sizeof(what) - k, "%s%s", k ? ", " : "",
					      given[i].name);
	if (k)
		cli_err(ct->path, "no event matches %s", what);
}

/* ---- progress ----------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

void cli_progress_init(struct cli_progress *p, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = isatty(2) && total;
	p->total = total;
	p->t0_ns = p->last_ns = now_ns();
}

void cli_progress_tick(struct cli_progress *p, uint64_t done)
{
	if (!p->on)
		return;
	uint64_t t = now_ns();
	if (t - p->t0_ns < 1000000000u || t - p->last_ns < 200000000u)
		return;
	p->last_ns = t;
	p->shown = true;
	fprintf(stderr, "\r%3u%%", (unsigned)(done * 100 / p->total));
}

void cli_progress_done(struct cli_progress *p)
{
	if (p->shown)
		fputs("\r    \r", stderr);
}

/* ---- output ------------------------------------------------------------------ */

int cli_out_init(struct cli_out *o, FILE *f)
{
	o->f = f;
	o->cap = 1 << 20;
	o->len = 0;
	o->failed = false;
	o->buf = malloc(o->cap + 65536);
	return o->buf ? 0 : -1;
}

void cli_out_flush(struct cli_out *o)
{
	if (o->len && !o->failed && fwrite(o->buf, 1, o->len, o->f) != o->len)
		o->failed = true;
	o->len = 0;
}

int cli_out_fini(struct cli_out *o)
{
	cli_out_flush(o);
	int rc = (o->failed || fflush(o->f) || ferror(o->f)) ? -1 : 0;
	free(o->buf);
	o->buf = NULL;
	return rc;
}

void cli_out_mem(struct cli_out *o, const char *s, size_t n)
{
	if (n <= 16 && o->len + n <= o->cap) {
		/* short pieces of a line: no libc call */
		fmt_copy_small(o->buf + o->len, s, n);
		o->len += n;
		return;
	}
	while (n) {
		if (o->len == o->cap)
			cli_out_flush(o);
		size_t k = o->cap - o->len < n ? o->cap - o->len : n;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
	}
}

void cli_out_str(struct cli_out *o, const char *s)
{
	cli_out_mem(o, s, strlen(s));
}

void cli_out_u64(struct cli_out *o, uint64_t v)
{
	unsigned n = numfmt_dec_len(v);
	if (o->len + n > o->cap)
		cli_out_flush(o);
	numfmt_dec_put(o->buf + o->len, v, n);
	o->len += n;
}

void cli_out_json_str(struct cli_out *o, const char *s, size_t n)
{
	cli_out_mem(o, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			cli_out_mem(o, e, 2);
		} else if (c < 0x20 || c == 0x7f) {
			char e[8];
			snprintf(e, sizeof(e), "\\u%04x", c);
			cli_out_mem(o, e, 6);
		} else {
			size_t j = i;
			while (j < n && s[j] != '"' && s[j] != '\\' &&
			       (unsigned char)s[j] >= 0x20 && s[j] != 0x7f)
				j++;
			cli_out_mem(o, s + i, j - i);
			i = j - 1;
		}
	}
	cli_out_mem(o, "\"", 1);
}

/* ---- time ---------------------------------------------------------------------- */

void cli_time_init(struct cli_time *ct, struct strata_trace *t, bool abs)
{
	struct strata_clock_info ci;
	strata_trace_clock(t, &ci);
	ct->freq = ci.freq ? ci.freq : 1000000000;
	ct->offset_s = ci.offset_s;
	ct->offset = ci.offset;
	ct->begin = strata_trace_begin(t);
	ct->abs = abs;
	ct->sec_lo = 0;
	ct->sec_len = 0;
	/* m = ceil(2^(63+l) / d), l = ceil(log2 d): floor(x / d) ==
	 * (x * m) >> (63 + l) for every x < 2^63 (Granlund & Montgomery 1994,
	 * th. 4.2), provided m fits 64 bits. Also needs rem * 1e9 < 2^63. */
	uint64_t d = ct->freq;
	unsigned l = 64 - (unsigned)__builtin_clzll(d - 1 ? d - 1 : 1);
	if (d == 1)
		l = 0;
	unsigned __int128 m = (((unsigned __int128)1 << (63 + l)) + d - 1) / d;
	ct->div_ok = d > 1 && m <= UINT64_MAX && d < UINT64_C(9200000000);
	ct->div_m = (uint64_t)m;
	ct->div_shift = 63 + l;
}

static inline uint64_t div_freq(const struct cli_time *ct, uint64_t x)
{
	if (ct->div_ok && !(x >> 63))
		return (uint64_t)(((unsigned __int128)x * ct->div_m) >> ct->div_shift);
	return x / ct->freq;
}

/* Nanoseconds of rem < freq ticks (the part of a second). */
static inline uint32_t rem_ns(const struct cli_time *ct, uint64_t rem)
{
	if (ct->freq == 1000000000)
		return (uint32_t)rem;
	if (ct->div_ok)
		return (uint32_t)div_freq(ct, rem * 1000000000u);
	return (uint32_t)((unsigned __int128)rem * 1000000000u / ct->freq);
}

static inline void ticks_split(const struct cli_time *ct, uint64_t ticks, uint64_t *s,
			       uint32_t *ns)
{
	uint64_t freq = ct->freq;
	uint64_t sec = freq == 1000000000 ? ticks / 1000000000 : div_freq(ct, ticks);
	*s = sec;
	*ns = rem_ns(ct, ticks - sec * freq);
}

/* ns < 1e9 as exactly nine digits at buf: two short chains of two-digit
 * lookups rather than one of nine divisions */
static inline void put_ns9(char *buf, uint32_t ns)
{
	uint32_t hi = ns / 100000, lo = ns % 100000; /* 4 + 5 digits */
	memcpy(buf, numfmt_dig2 + 2 * (hi / 100), 2);
	memcpy(buf + 2, numfmt_dig2 + 2 * (hi % 100), 2);
	buf[4] = (char)('0' + lo / 10000);
	lo %= 10000;
	memcpy(buf + 5, numfmt_dig2 + 2 * (lo / 100), 2);
	memcpy(buf + 7, numfmt_dig2 + 2 * (lo % 100), 2);
}

uint64_t cli_time_ns(const struct cli_time *ct, uint64_t ts)
{
	uint64_t s;
	uint32_t ns;
	ticks_split(ct, ts > ct->begin ? ts - ct->begin : 0, &s, &ns);
	return s * 1000000000u + ns;
}

size_t cli_time_fmt(const struct cli_time *ct, uint64_t ts, char *buf)
{
	uint64_t s;
	uint32_t ns;
	if (ct->abs) {
		/* wall clock: offset_s + (offset + ts) / freq */
		uint64_t ticks = ts + (uint64_t)ct->offset;
		ticks_split(ct, ticks, &s, &ns);
		s += ct->offset_s;
		time_t tt = (time_t)s;
		struct tm tm;
		gmtime_r(&tt, &tm);
		size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
		buf[n++] = '.';
		for (int i = 8; i >= 0; i--) {
			buf[n + i] = '0' + ns % 10;
			ns /= 10;
		}
		n += 9;
		buf[n++] = 'Z';
		return n;
	}
	ticks_split(ct, ts > ct->begin ? ts - ct->begin : 0, &s, &ns);
	size_t n;
	if (s < 10) {
		buf[0] = (char)('0' + s);
		n = 1;
	} else {
		char tmp[24], *e = tmp + sizeof(tmp), *p = e;
		do {
			*--p = '0' + s % 10;
			s /= 10;
		} while (s);
		n = e - p;
		memcpy(buf, p, n);
	}
	buf[n++] = '.';
	put_ns9(buf + n, ns);
	return n + 9;
}

size_t cli_time_fmt_seq(struct cli_time *ct, uint64_t ts, char *buf)
{
	uint64_t ticks = ct->abs ? ts + (uint64_t)ct->offset : ts > ct->begin ? ts - ct->begin : 0;
	if (strata_unlikely(ticks - ct->sec_lo >= ct->freq || !ct->sec_len)) {
		/* a new second: its text from cli_time_fmt, up to the '.' */
		char tmp[64];
		size_t n = cli_time_fmt(ct, ts, tmp);
		char *dot = memchr(tmp, '.', n);
		uint64_t s;
		uint32_t ns;
		ticks_split(ct, ticks, &s, &ns);
		if (!dot || (size_t)(dot - tmp) >= sizeof(ct->sec_txt) - 16) {
			memcpy(buf, tmp, n);
			ct->sec_len = 0;
			return n;
		}
		ct->sec_len = (uint32_t)(dot + 1 - tmp);
		memcpy(ct->sec_txt, tmp, ct->sec_len);
		ct->sec_lo = s * ct->freq; /* what ticks_split took off */
		(void)ns;
	}
	uint32_t n = ct->sec_len;
	memcpy(buf, ct->sec_txt, sizeof(ct->sec_txt) - 16 + 8); /* whole: no call */
	put_ns9(buf + n, rem_ns(ct, ticks - ct->sec_lo));
	n += 9;
	buf[n] = 'Z';
	return n + ct->abs;
}

void cli_human_size(uint64_t bytes, char *buf, size_t n)
{
	static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = bytes;
	unsigned i = 0;
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, n, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, n, "%.1f %s", v, u[i]);
}
