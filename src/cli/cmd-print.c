/* SPDX-License-Identifier: MIT */
/* strata print: one line per event, as text, JSON objects or CSV. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "common/compiler.h"

const char cmd_print_usage[] =
	"usage: strata print [OPTIONS] TRACE\n\n"
	"Print one line per event, merged by time: time, CPU, level (K kernel,\n"
	"U user space), pid/tid, event name,\n"
	"and the description rendered from the event's format string (raw\n"
	"name=value fields when it has none).\n\n"
	"  --abs                 wall-clock time (UTC) instead of seconds since start\n"
	"  --format text|json|csv   output format (default text)\n"
	"  --follow              read the trace while it is written: print events\n"
	"                        as they become final, end when the trace is\n"
	"                        complete or on Ctrl-C (not with --from/--to)\n"
	"  --symbols             name the code and data that pointer fields\n"
	"                        (64-bit hex) point at: <field: func+off (file:line)>\n"
	"                        in text and CSV, \"symbols\" in JSON; from the\n"
	"                        state dump's maps and the binaries (not with\n"
	"                        --follow)\n"
	CLI_FILTER_HELP;

enum { OPT_FOLLOW = 1100, OPT_SYMBOLS };

enum fmt { F_TEXT, F_JSON, F_CSV };

/* The description from the batch's values (decoded once, in the batch). */
static void put_desc(struct cli_out *o, const struct strata_event *ev,
		     const struct strata_value *vals, unsigned nv)
{
	char *p = cli_out_reserve(o, 256);
	size_t room = o->cap + 65536 - o->len;
	int n = strata_event_describe_values(ev, vals, nv, p, room);
	if (n < 0) {
		cli_out_str(o, "<damaged payload>");
		return;
	}
	if ((size_t)n < room) {
		o->len += n;
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big)
		return;
	strata_event_describe_values(ev, vals, nv, big, (size_t)n + 1);
	cli_out_mem(o, big, n);
	free(big);
}

/* ---- --symbols: the traced process's code and data behind pointer
 * fields (reader.h, "symbols"), each (pid, address) formatted once ---- */

#define SYM_SLOTS 4096 /* a direct-mapped cache of formatted symbols */

struct sym_slot {
	uint64_t addr;
	uint32_t pid;
	bool used, shown; /* shown: a name worth printing */
	char text[170];
};

struct syms {
	struct strata_symbolizer *sy;
	struct sym_slot *slot;
};

/* A field the reader shows as a 64-bit unsigned hex integer: a pointer
 * (strata-gen's ptr, the kernel's and the lock wrapper's addresses),
 * or a hex u64 that, pointing at no mapping, is never named. */
static bool pointer_field(const struct strata_field_class *f, const struct strata_value *v)
{
	return f->type == STRATA_FIELD_INT && f->bits == 64 && f->base == 16 && !f->is_signed &&
	       v->type == STRATA_VALUE_UINT && v->u;
}

/* addr of pid as "func+off (file:line)", or NULL when no file holds it
 * (a heap or stack address, a kernel one, an id). */
static const char *sym_name(struct syms *sm, uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr ^ (addr >> 17) ^ ((uint64_t)pid * 0x9E3779B97F4A7C15ull)) * 0xff51afd7ed558ccdull;
	struct sym_slot *e = &sm->slot[h >> 52]; /* 12 bits: SYM_SLOTS */
	if (!e->used || e->addr != addr || e->pid != pid) {
		struct strata_symbol sym;
		int st = strata_symbolize(sm->sy, pid, addr, &sym);
		e->addr = addr, e->pid = pid, e->used = true;
		e->shown = st != STRATA_SYM_UNKNOWN && st != STRATA_SYM_MAPPING;
		strata_symbol_format(&sym, addr, e->text, sizeof(e->text));
	}
	return e->shown ? e->text : NULL;
}

/* Text and CSV: " <field: symbol>" for each named pointer field. */
static void put_syms_text(struct cli_out *o, struct syms *sm, const struct strata_event *ev,
			  const struct strata_value *vals, unsigned nv)
{
	for (unsigned i = 0; i < nv; i++) {
		const struct strata_field_class *f = &ev->cls->fields[i];
		const char *name = pointer_field(f, &vals[i]) ? sym_name(sm, ev->pid, vals[i].u) : NULL;
		if (!name)
			continue;
		cli_out_str(o, " <");
		cli_out_str(o, f->name);
		cli_out_str(o, ": ");
		cli_out_str(o, name);
		cli_out_str(o, ">");
	}
}

/* JSON: ,"symbols":{"field":"symbol"...} when a pointer field is named. */
static void put_syms_json(struct cli_out *o, struct syms *sm, const struct strata_event *ev,
			  const struct strata_value *vals, unsigned nv)
{
	bool first = true;
	for (unsigned i = 0; i < nv; i++) {
		const struct strata_field_class *f = &ev->cls->fields[i];
		const char *name = pointer_field(f, &vals[i]) ? sym_name(sm, ev->pid, vals[i].u) : NULL;
		if (!name)
			continue;
		cli_out_str(o, first ? ",\"symbols\":{" : ",");
		first = false;
		cli_out_json_str(o, f->name, strlen(f->name));
		cli_out_mem(o, ":", 1);
		cli_out_json_str(o, name, strlen(name));
	}
	if (!first)
		cli_out_mem(o, "}", 1);
}

static void put_csv_field(struct cli_out *o, const char *s, size_t n)
{
	if (!memchr(s, ',', n) && !memchr(s, '"', n) && !memchr(s, '\n', n)) {
		cli_out_mem(o, s, n);
		return;
	}
	cli_out_mem(o, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			cli_out_mem(o, "\"", 1);
		cli_out_mem(o, s + i, 1);
	}
	cli_out_mem(o, "\"", 1);
}

void cli_json_value(struct cli_out *o, const struct strata_field_class *f,
			   const struct strata_value *v)
{
	char tmp[64];
	switch (v->type) {
	case STRATA_VALUE_UINT:
		if (f->type == STRATA_FIELD_ENUM)
			for (unsigned i = 0; i < f->nmappings; i++)
				if (v->u >= (uint64_t)f->mappings[i].lo &&
				    v->u <= (uint64_t)f->mappings[i].hi) {
					cli_out_json_str(o, f->mappings[i].label,
							 strlen(f->mappings[i].label));
					return;
				}
		cli_out_u64(o, v->u);
		return;
	case STRATA_VALUE_SINT:
		if (v->s < 0) {
			cli_out_mem(o, "-", 1);
			cli_out_u64(o, -(uint64_t)v->s);
		} else {
			cli_out_u64(o, v->u);
		}
		return;
	case STRATA_VALUE_DOUBLE:
		if (v->d != v->d || v->d - v->d != 0) /* NaN, inf: not JSON */
			cli_out_str(o, "null");
		else
			cli_out_mem(o, tmp, snprintf(tmp, sizeof(tmp), "%.17g", v->d));
		return;
	case STRATA_VALUE_STRING:
		cli_out_json_str(o, v->str, v->count);
		return;
	case STRATA_VALUE_ARRAY:
		cli_out_mem(o, "[", 1);
		for (uint32_t i = 0; i < v->count; i++) {
			uint64_t e = strata_value_elem(v, i);
			if (i)
				cli_out_mem(o, ",", 1);
			if (v->elem_signed && (int64_t)e < 0) {
				cli_out_mem(o, "-", 1);
				e = -e;
			}
			cli_out_u64(o, e);
		}
		cli_out_mem(o, "]", 1);
		return;
	}
}

/* 'K' for the streams of a kernel sub-trace (env domain "kernel"), 'U' for
 * user space: the level column of the super-trace (docs/kernel.md). */
static char *stream_levels(struct strata_trace *t)
{
	unsigned n = strata_trace_nstreams(t);
	char *lv = malloc(n + 1);
	for (unsigned i = 0; lv && i < n; i++) {
		struct strata_stream_info si;
		const char *d = NULL;
		if (strata_trace_stream(t, i, &si) == 0)
			d = strata_trace_env(t, si.subtrace, "domain");
		lv[i] = d && !strcmp(d, "kernel") ? 'K' : 'U';
	}
	return lv;
}

/* " [CPU] L PID/TID " of the last event of one stream, ready to copy:
 * formatted once per change of thread in the stream, not per line. */
struct head_cache {
	uint32_t cpu, pid, tid;
	uint32_t n;  /* bytes used in s; 0: empty */
	char s[48];  /* " [" cpu "] L " pid "/" tid " ": at most 38 */
};

static void head_fill(struct head_cache *hc, const struct strata_event *ev, char level)
{
	int n = snprintf(hc->s, sizeof(hc->s), " [%03u] %c %u/%u ", ev->cpu, level,
			 ev->pid, ev->tid);
	hc->cpu = ev->cpu;
	hc->pid = ev->pid;
	hc->tid = ev->tid;
	hc->n = (uint32_t)n;
}

/* Event names, each padded to whole 16-byte chunks in one block with 32
 * bytes of slack: copied by two fixed 16-byte moves, no libc call. */
struct names {
	char *text;
	uint32_t *len, *off; /* by class index */
};

static int names_init(struct names *nm, struct strata_trace *t)
{
	unsigned ncls = strata_trace_nclasses(t);
	size_t tot = 0;
	nm->text = NULL;
	nm->off = NULL;
	nm->len = calloc(2 * (size_t)ncls + 1, sizeof(*nm->len));
	if (!nm->len)
		return -1;
	nm->off = nm->len + ncls;
	for (unsigned i = 0; i < ncls; i++) {
		nm->len[i] = (uint32_t)strlen(strata_trace_class(t, i)->name);
		nm->off[i] = (uint32_t)tot;
		tot += (nm->len[i] + 16) & ~(size_t)15;
	}
	nm->text = tot < UINT32_MAX ? calloc(tot + 32, 1) : NULL;
	for (unsigned i = 0; nm->text && i < ncls; i++)
		memcpy(nm->text + nm->off[i], strata_trace_class(t, i)->name, nm->len[i]);
	return nm->text ? 0 : -1;
}

static void names_fini(struct names *nm)
{
	free(nm->len);
	free(nm->text);
}

static inline void copy16(char *d, const char *s)
{
	memcpy(d, s, 16);
}

/* One text line, "TIME [CPU] L PID/TID NAME DESCRIPTION", built in place
 * in the output buffer: one reservation, no call per piece. */
static void put_text(struct cli_out *o, struct cli_time *tm, const struct strata_event *ev,
		     const struct strata_value *vals, unsigned nv, struct head_cache *hc,
		     char level, const struct names *nm, struct syms *sm)
{
	char *p = cli_out_reserve(o, 1024), *q = p;
	q += cli_time_fmt_seq(tm, ev->timestamp, q);
	if (strata_unlikely(!hc->n || hc->pid != ev->pid || hc->tid != ev->tid ||
			    hc->cpu != ev->cpu))
		head_fill(hc, ev, level);
	/* fixed 16-byte moves: a loop of them, or one memcpy of the whole,
	 * becomes rep movs, whose start-up costs more than the line */
	copy16(q, hc->s);
	copy16(q + 16, hc->s + 16);
	copy16(q + 32, hc->s + 32);
	q += hc->n;
	uint32_t ci = ev->cls->index, nl = nm->len[ci];
	if (nl <= 32) {
		const char *s = nm->text + nm->off[ci];
		copy16(q, s);
		copy16(q + 16, s + 16); /* the block has 32 bytes of slack */
		q += nl;
		*q++ = ' ';
		o->len += (size_t)(q - p);
	} else {
		o->len += (size_t)(q - p);
		cli_out_mem(o, ev->cls->name, nl);
		cli_out_mem(o, " ", 1);
	}
	put_desc(o, ev, vals, nv);
	if (strata_unlikely(sm != NULL))
		put_syms_text(o, sm, ev, vals, nv);
	/* put_desc leaves at least the 64 KiB slack past cap */
	o->buf[o->len++] = '\n';
}

static void put_json(struct cli_out *o, const struct cli_time *tm,
		     const struct strata_event *ev, const struct strata_value *vals,
		     unsigned nv, char level, struct syms *sm)
{
	char tb[64];
	cli_out_str(o, "{\"time\":");
	cli_out_mem(o, tb, cli_time_fmt(tm, ev->timestamp, tb));
	cli_out_str(o, level == 'K' ? ",\"level\":\"K\"" : ",\"level\":\"U\"");
	cli_out_str(o, ",\"ts\":");
	cli_out_u64(o, ev->timestamp);
	cli_out_str(o, ",\"cpu\":");
	cli_out_u64(o, ev->cpu);
	cli_out_str(o, ",\"pid\":");
	cli_out_u64(o, ev->pid);
	cli_out_str(o, ",\"tid\":");
	cli_out_u64(o, ev->tid);
	cli_out_str(o, ",\"event\":");
	cli_out_json_str(o, ev->cls->name, strlen(ev->cls->name));
	cli_out_str(o, ",\"fields\":{");
	bool first = true;
	for (unsigned i = 0; i < nv; i++) {
		const struct strata_field_class *f = &ev->cls->fields[i];
		if (f->hidden)
			continue;
		if (!first)
			cli_out_mem(o, ",", 1);
		first = false;
		cli_out_json_str(o, f->name, strlen(f->name));
		cli_out_mem(o, ":", 1);
		cli_json_value(o, f, &vals[i]);
	}
	cli_out_str(o, "}");
	if (sm)
		put_syms_json(o, sm, ev, vals, nv);
	cli_out_str(o, "}\n");
}

/* A CSV line: the description quoted when it needs it. */
static void put_csv(struct cli_out *o, const struct cli_time *tm,
		    const struct strata_event *ev, const struct strata_value *vals,
		    unsigned nv, char level, struct syms *sm)
{
	char *p = cli_out_reserve(o, 512);
	size_t k = cli_time_fmt(tm, ev->timestamp, p);

	p[k++] = ',';
	o->len += k;
	cli_out_u64(o, ev->cpu);
	cli_out_mem(o, level == 'K' ? ",K," : ",U,", 3);
	cli_out_u64(o, ev->pid);
	cli_out_mem(o, ",", 1);
	cli_out_u64(o, ev->tid);
	cli_out_mem(o, ",", 1);
	put_csv_field(o, ev->cls->name, strlen(ev->cls->name));
	cli_out_mem(o, ",", 1);
	size_t at = o->len;
	put_desc(o, ev, vals, nv);
	if (sm)
		put_syms_text(o, sm, ev, vals, nv);
	/* quote the description in place if it needs it */
	if (memchr(o->buf + at, ',', o->len - at) ||
	    memchr(o->buf + at, '"', o->len - at)) {
		size_t dn = o->len - at;
		char *d = malloc(dn);
		if (d) {
			memcpy(d, o->buf + at, dn);
			o->len = at;
			put_csv_field(o, d, dn);
			free(d);
		}
	}
	cli_out_mem(o, "\n", 1);
}

struct print_opts {
	struct cli_filter_opts fo;
	bool abs, follow, symbols;
	enum fmt fmt;
	const char *trace;
};

/* The command line into *po: 0, or -1 after one error line. */
static int print_parse(int argc, char **argv, struct print_opts *po)
{
	static const struct option opts[] = {
		{ "abs", no_argument, NULL, OPT_ABS },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "follow", no_argument, NULL, OPT_FOLLOW },
		{ "symbols", no_argument, NULL, OPT_SYMBOLS },
		CLI_FILTER_OPTIONS,
		{ 0 },
	};
	int c;

	memset(po, 0, sizeof(*po));
	po->fmt = F_TEXT;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == OPT_ABS)
			po->abs = true;
		else if (c == OPT_FOLLOW)
			po->follow = true;
		else if (c == OPT_SYMBOLS)
			po->symbols = true;
		else if (c == OPT_FORMAT) {
			if (!strcmp(optarg, "text"))
				po->fmt = F_TEXT;
			else if (!strcmp(optarg, "json"))
				po->fmt = F_JSON;
			else if (!strcmp(optarg, "csv"))
				po->fmt = F_CSV;
			else {
				cli_err(NULL, "--format: expected text, json or csv, not '%s'",
					optarg);
				return -1;
			}
		} else if (c == '?' || cli_filter_opt(&po->fo, c, optarg) < 0) {
			return -1;
		}
	}
	if (optind != argc - 1) {
		cli_err(NULL, "print: expected one TRACE directory (see strata print --help)");
		return -1;
	}
	if (po->fmt == F_JSON && po->abs) {
		cli_err(NULL, "--abs is for text and CSV; JSON carries \"ts\" (raw clock)");
		return -1;
	}
	if (po->follow && (po->fo.has_from || po->fo.has_to)) {
		cli_err(NULL, "--follow reads the trace as it grows: no --from or --to");
		return -1;
	}
	if (po->follow && po->symbols) {
		/* the maps of a trace being written are not all there yet */
		cli_err(NULL, "--symbols names what a finished trace points at: not with --follow");
		return -1;
	}
	po->trace = argv[optind];
	return 0;
}

/* What the listing of one trace keeps: the time format, a batch of
 * decoded events, and per stream its level and its last thread's head. */
struct printer {
	enum fmt fmt;
	struct cli_time tm;
	struct strata_batch *batch;
	char *levels;
	struct head_cache *hc;
	struct names nm;
	struct syms syms, *sm; /* --symbols: &syms, else NULL */
};

/* 0, -1 when out of memory, -2 after an error line; printer_fini()
 * either way. */
static int printer_init(struct printer *pr, struct strata_trace *t,
			const struct print_opts *po)
{
	int nm_rc;

	memset(pr, 0, sizeof(*pr));
	pr->fmt = po->fmt;
	cli_time_init(&pr->tm, t, po->abs);
	/* events come in batches with their fields decoded: no call per
	 * event to iterate or to decode */
	strata_batch_alloc(t, 1024, &pr->batch);
	pr->levels = stream_levels(t);
	pr->hc = calloc(strata_trace_nstreams(t) + 1, sizeof(*pr->hc));
	nm_rc = names_init(&pr->nm, t);
	if (!pr->batch || !pr->levels || !pr->hc || nm_rc < 0)
		return -1;
	if (po->symbols) {
		int e = strata_symbolizer_create(t, &pr->syms.sy);
		if (e == -ENOTSUP) {
			cli_err(NULL, "--symbols: this strata was built without elfutils' libdw");
			return -2;
		}
		pr->syms.slot = calloc(SYM_SLOTS, sizeof(*pr->syms.slot));
		if (e < 0 || !pr->syms.slot)
			return -1;
		pr->sm = &pr->syms;
	}
	return 0;
}

static void printer_fini(struct printer *pr)
{
	free(pr->levels);
	free(pr->hc);
	names_fini(&pr->nm);
	strata_batch_free(pr->batch);
	strata_symbolizer_destroy(pr->syms.sy);
	free(pr->syms.slot);
}

/* Every event of `it` onto `out`, a batch at a time: how many. */
static uint64_t print_events(struct printer *pr, struct strata_iter *it,
			     struct cli_out *out, struct cli_progress *pg)
{
	struct strata_batch *batch = pr->batch;
	uint64_t nev = 0;
	int nb;

	while ((nb = strata_iter_decode(it, batch)) > 0) {
		if (pg)
			cli_progress_tick(pg, strata_iter_progress(it));
		nev += (uint64_t)nb;
		for (int bi = 0; bi < nb; bi++) {
			const struct strata_event *ev = &batch->events[bi];
			const struct strata_value *vals = &batch->values[batch->first[bi]];
			unsigned nv = batch->first[bi + 1] - batch->first[bi];
			char level = pr->levels[ev->stream];

			if (pr->fmt == F_TEXT)
				put_text(out, &pr->tm, ev, vals, nv, &pr->hc[ev->stream],
					 level, &pr->nm, pr->sm);
			else if (pr->fmt == F_JSON)
				put_json(out, &pr->tm, ev, vals, nv, level, pr->sm);
			else
				put_csv(out, &pr->tm, ev, vals, nv, level, pr->sm);
		}
	}
	return nev;
}

/* The end of a listing: the exit status (rc, else 2 for damaged input,
 * 1 for a write error), the output flushed, the trace closed. */
static int print_finish(struct cli_trace *ct, struct cli_out *out, int rc)
{
	if (!rc)
		rc = cli_status(ct);
	if (cli_out_fini(out) < 0) {
		cli_err("<stdout>", "write error");
		rc = 1;
	}
	cli_close(ct);
	return rc;
}

/* --follow: one window of the follower, [from, to), from the trace t as
 * the last poll found it. The time base (*tm) is that of the first poll
 * that found packets, so times since the start stay put as the trace
 * grows. */
static int print_window(const struct print_opts *po, struct cli_trace *ct,
			struct strata_trace *t, uint64_t from, uint64_t to,
			struct cli_time *tm, bool *have_tm, struct cli_out *out,
			uint64_t *nev)
{
	struct strata_iter *it = NULL;
	struct printer pr;
	int rc = -1;

	if (!*have_tm && strata_trace_end(t)) {
		cli_time_init(tm, t, po->abs);
		*have_tm = true;
	}
	if (!*have_tm || from == to)
		return 0; /* no packet yet: nothing in any window */
	if (cli_window_iter(ct, &po->fo, t, from, to, &it) < 0)
		goto out;
	if (printer_init(&pr, t, po) < 0) {
		cli_err(ct->path, "out of memory");
	} else {
		pr.tm = *tm;
		*nev += print_events(&pr, it, out, NULL);
		*tm = pr.tm;
		rc = 0;
	}
	printer_fini(&pr);
out:
	cli_window_end(ct, it);
	return rc;
}

/* strata print --follow: poll, print the window, flush, sleep a little;
 * until the trace is complete or a signal (docs/reader.md, "Following a
 * live trace"). */
static int print_follow(const struct print_opts *po)
{
	struct cli_trace ct = { .path = po->trace };
	struct strata_open_options oo;
	struct strata_follow_options fo = { .open = &oo };
	struct strata_follow *f = NULL;
	struct cli_time tm;
	struct cli_out out;
	bool have_tm = false, said_waiting = false;
	uint64_t nev = 0;
	int rc = 0, st = STRATA_FOLLOW_LIVE;

	cli_open_options(&ct, &po->fo, &oo);
	if (strata_follow_create(po->trace, &fo, &f) < 0 || cli_out_init(&out, stdout) < 0) {
		cli_err(po->trace, "out of memory");
		strata_follow_destroy(f);
		return 1;
	}
	cli_session_signals();
	if (po->fmt == F_CSV)
		cli_out_str(&out, "time,cpu,level,pid,tid,event,description\n");
	while (st == STRATA_FOLLOW_LIVE && !cli_got_signal) {
		struct strata_trace *t;
		uint64_t from, to;
		st = strata_follow_poll(f, &t, &from, &to);
		if (st < 0) {
			cli_follow_err(po->trace, st);
			rc = 1;
			break;
		}
		if (!t && !said_waiting) {
			/* a mistyped path would otherwise wait in silence */
			cli_err(po->trace, "no trace here yet; waiting for one (Ctrl-C to stop)");
			said_waiting = true;
		}
		if (t && print_window(po, &ct, t, from, to, &tm, &have_tm, &out, &nev) < 0) {
			rc = 1;
			break;
		}
		cli_out_flush(&out);
		fflush(stdout); /* each window seen as it is printed */
		if (st == STRATA_FOLLOW_LIVE) {
			/* 10 ms: a tenth of the target delay (docs/reader.md,
			 * "Following a live trace"); a poll reads only what
			 * was written since the last one */
			struct timespec ts = { 0, 10 * 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	strata_follow_destroy(f);
	if (!rc)
		cli_none_matched(&ct, &po->fo, nev);
	return print_finish(&ct, &out, rc);
}

int cmd_print(int argc, char **argv)
{
	struct print_opts po;
	struct cli_trace ct = { 0 };
	struct strata_iter *it = NULL;
	struct cli_progress pg;
	struct printer pr;
	struct cli_out out;
	int rc = 0;

	if (print_parse(argc, argv, &po) < 0)
		return 1;
	if (po.follow)
		return print_follow(&po);
	if (cli_open(&ct, po.trace, &po.fo) < 0 ||
	    cli_iter(&ct, po.fo.internal, &it) < 0 ||
	    cli_out_init(&out, stdout) < 0) {
		strata_iter_destroy(it);
		cli_close(&ct);
		return 1;
	}
	cli_progress_init(&pg, strata_trace_size(ct.t));
	int pe = printer_init(&pr, ct.t, &po);
	if (pe < 0) {
		if (pe == -1)
			cli_err(ct.path, "out of memory");
		rc = 1;
	}
	if (po.fmt == F_CSV)
		cli_out_str(&out, "time,cpu,level,pid,tid,event,description\n");
	uint64_t nev = rc ? 0 : print_events(&pr, it, &out, &pg);
	cli_progress_done(&pg);
	if (!rc)
		cli_none_matched(&ct, &po.fo, nev);
	printer_fini(&pr);
	strata_iter_destroy(it);
	return print_finish(&ct, &out, rc);
}
