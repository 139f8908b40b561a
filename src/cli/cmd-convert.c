/* SPDX-License-Identifier: MIT */
/* strata convert: stream a trace into Chrome trace-event JSON or a Paje file. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "scan.h"

const char cmd_convert_usage[] =
	"usage: strata convert [OPTIONS] TRACE -F chrome|paje -o OUT\n\n"
	"Convert a trace, streaming (memory grows with the number of threads,\n"
	"not of events):\n"
	"  chrome  Chrome trace-event JSON (open it in ui.perfetto.dev or\n"
	"          chrome://tracing): events with strata_kind \"begin\"/\"end\" become\n"
	"          B/E slices, all others instant events; processes and threads\n"
	"          named as the trace names them; fields in \"args\" (pointers and\n"
	"          hex fields as \"0x...\" strings, integers beyond 2^53 as strings);\n"
	"          kernel scheduling as per-CPU tracks and thread states (Running,\n"
	"          Runnable, Sleeping, Uninterruptible), as systrace text.\n"
	"  paje    Paje trace (pajeng, ViTE): %EventDef header with the field\n"
	"          names of strict readers, containers per process and thread,\n"
	"          begin/end as push/pop of states, the other events as Paje\n"
	"          events, kernel scheduling as per-CPU and per-thread states.\n"
	"          Times in seconds since the trace start.\n"
	"With --from/--to, intervals that cross the window's edges are cut there:\n"
	"every begin has its end in the output.\n\n"
	"  -F, --format FORMAT   chrome or paje (required)\n"
	"  -o, --output FILE     where to write ('-' for stdout; required)\n" CLI_FILTER_HELP;

/* ---- threads, processes and CPUs of the output ---------------------------- */

/*
 * One entry per thread (key pid << 32 | tid), per process (pid << 32 |
 * KEY_ALL), per tid (KEY_ALL << 32 | tid: `pid` says its process, for
 * sched_switch's next_pid) and per CPU (KEY_CPU << 32 | cpu). An
 * open-addressing table: memory grows with threads, not events.
 */
#define KEY_ALL 0xffffffffu
#define KEY_CPU 0xfffffffeu

struct cthread {
	uint64_t key;    /* + 1; 0: an empty slot */
	uint32_t depth;  /* intervals begun and not ended in the output */
	uint32_t pid;    /* tid entries: the thread's process */
	uint8_t shown;   /* named (chrome), container created (paje) */
	uint8_t sched;   /* paje: the thread state set last (enum tstate) */
	/* the intervals open when the window starts, outermost first: begin
	 * classes (from the events before it), below them (paje) end classes
	 * met in it whose begin is not in the trace at all */
	uint32_t nstk, capstk, *stk;
};

struct ctab {
	struct cthread *v;
	size_t cap, n;
};

static size_t ctab_hash(uint64_t key)
{
	return (size_t)(key * 0x9E3779B97F4A7C15ull >> 17);
}

/* The entry of `key`, added when absent; NULL when out of memory. */
static struct cthread *ctab_get(struct ctab *t, uint64_t key)
{
	key++;
	if (t->n * 2 >= t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct cthread *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->v[i].key)
				continue;
			size_t h = ctab_hash(t->v[i].key);
			while (v[h & (cap - 1)].key)
				h++;
			v[h & (cap - 1)] = t->v[i];
		}
		free(t->v);
		t->v = v;
		t->cap = cap;
	}
	for (size_t h = ctab_hash(key);; h++) {
		struct cthread *e = &t->v[h & (t->cap - 1)];
		if (e->key == key)
			return e;
		if (!e->key) {
			e->key = key;
			t->n++;
			return e;
		}
	}
}

static struct cthread *ctab_find(const struct ctab *t, uint64_t key)
{
	key++;
	for (size_t h = ctab_hash(key); t->cap; h++) {
		struct cthread *e = &t->v[h & (t->cap - 1)];
		if (!e->key)
			return NULL;
		if (e->key == key)
			return e;
	}
	return NULL;
}

static void ctab_fini(struct ctab *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->v[i].stk);
	free(t->v);
}

/* Class `c` on e's stack of open intervals: on top, or at the bottom. */
static int stk_push(struct cthread *e, uint32_t c, bool bottom)
{
	if (e->nstk == e->capstk) {
		uint32_t cap = e->capstk ? e->capstk * 2 : 4;
		uint32_t *v = realloc(e->stk, cap * sizeof(*v));
		if (!v)
			return -1;
		e->stk = v;
		e->capstk = cap;
	}
	if (bottom)
		memmove(e->stk + 1, e->stk, e->nstk * sizeof(*e->stk));
	e->stk[bottom ? 0 : e->nstk] = c;
	e->nstk++;
	return 0;
}

/* The keys of the threads with intervals open at the window's start (a
 * copy: the table may grow while they are written). NULL: no memory. */
static uint64_t *open_threads(const struct ctab *t, size_t *n)
{
	uint64_t *keys = calloc(t->n + 1, sizeof(*keys));

	*n = 0;
	for (size_t i = 0; keys && i < t->cap; i++)
		if (t->v[i].key && t->v[i].nstk)
			keys[(*n)++] = t->v[i].key - 1;
	return keys;
}

/* ---- event classes ---------------------------------------------------------- */

/* What an event becomes: kernel scheduling only on a kernel stream. */
enum ckind { CK_POINT, CK_BEGIN, CK_END, CK_SWITCH, CK_WAKEUP, CK_WAKING };

/* Field indexes of the scheduling classes (docs/kernel.md). */
enum { SW_PREV_COMM, SW_PREV_PID, SW_PREV_PRIO, SW_PREV_STATE, SW_NEXT_COMM,
       SW_NEXT_PID, SW_NEXT_PRIO, SW_NFIELDS };
enum { WK_COMM, WK_PID, WK_PRIO, WK_TARGET_CPU, WK_NFIELDS };

struct cclass {
	uint8_t kind;  /* enum ckind */
	int f[SW_NFIELDS];
	/* CK_END: the begin class of the same interval, by name
	 * (x_end/x_begin...), or NULL: a slice cut at the window's start
	 * takes its name */
	const struct strata_event_class *begin;
};

/* The begin class paired with end class `e` by the usual suffixes. */
static const struct strata_event_class *begin_of(struct strata_trace *t,
						 const struct strata_event_class *e)
{
	static const char *const pairs[][2] = {
		{ "end", "begin" }, { "exit", "enter" }, { "stop", "start" },
		{ "release", "acquire" }, { "out", "in" },
	};
	size_t n = strlen(e->name);
	char want[256];

	for (size_t p = 0; p < sizeof(pairs) / sizeof(pairs[0]); p++) {
		size_t sl = strlen(pairs[p][0]);
		if (n <= sl || strcmp(e->name + n - sl, pairs[p][0]) ||
		    n - sl + strlen(pairs[p][1]) >= sizeof(want))
			continue;
		snprintf(want, sizeof(want), "%.*s%s", (int)(n - sl), e->name, pairs[p][1]);
		for (unsigned i = 0; i < strata_trace_nclasses(t); i++) {
			const struct strata_event_class *c = strata_trace_class(t, i);
			if (c->kind == STRATA_KIND_BEGIN && !strcmp(c->name, want))
				return c;
		}
	}
	return NULL;
}

static bool take_fields(const struct strata_event_class *c, int *f,
			const char *const *names, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if ((f[i] = strata_event_class_field(c, names[i])) < 0)
			return false;
	return true;
}

static struct cclass *classes(struct strata_trace *t)
{
	static const char *const sw[SW_NFIELDS] = {
		"prev_comm", "prev_pid", "prev_prio", "prev_state",
		"next_comm", "next_pid", "next_prio",
	};
	static const char *const wk[WK_NFIELDS] = { "comm", "pid", "prio", "target_cpu" };
	unsigned n = strata_trace_nclasses(t);
	struct cclass *cc = calloc(n + 1, sizeof(*cc));

	for (unsigned i = 0; cc && i < n; i++) {
		const struct strata_event_class *c = strata_trace_class(t, i);
		cc[i].kind = c->kind == STRATA_KIND_BEGIN ? CK_BEGIN :
			     c->kind == STRATA_KIND_END ? CK_END : CK_POINT;
		if (c->kind == STRATA_KIND_END)
			cc[i].begin = begin_of(t, c);
		if (!strcmp(c->name, "sched:sched_switch") &&
		    take_fields(c, cc[i].f, sw, SW_NFIELDS))
			cc[i].kind = CK_SWITCH;
		else if ((!strcmp(c->name, "sched:sched_wakeup") ||
			  !strcmp(c->name, "sched:sched_wakeup_new")) &&
			 take_fields(c, cc[i].f, wk, WK_NFIELDS))
			cc[i].kind = CK_WAKEUP;
		else if (!strcmp(c->name, "sched:sched_waking") &&
			 take_fields(c, cc[i].f, wk, WK_NFIELDS))
			cc[i].kind = CK_WAKING;
	}
	return cc;
}

/* ---- the conversion ----------------------------------------------------------- */

struct conv {
	struct cli_out *o;
	struct strata_trace *t;
	struct cli_time tm;
	struct scan names;       /* thread names (scan.h) */
	struct ctab th;
	struct cclass *cc;       /* by class index */
	bool *kstream;           /* by stream index: a kernel sub-trace's */
	bool has_waking;         /* the trace declares sched_waking */
	uint64_t from, to;       /* the window (ticks), --from/--to */
	uint64_t start_ns, end_ns; /* the same since the trace start */
	bool intervals;          /* the trace declares begin/end classes */
	bool replay;             /* ... and the window starts after the trace */
	struct strata_value *vals;
	unsigned nvals;
	FILE *sys;               /* chrome: systrace lines, JSON-escaped */
	uint64_t nsys;
};

static uint64_t ival(const struct strata_event *ev, int idx)
{
	struct strata_value v;
	if (idx < 0 || strata_event_field(ev, (unsigned)idx, &v) < 0 ||
	    (v.type != STRATA_VALUE_UINT && v.type != STRATA_VALUE_SINT))
		return 0;
	return v.u;
}

/* A kernel comm as one systrace word: no blank, quote, backslash or '='. */
static void comm_of(const struct strata_event *ev, int idx, char out[17])
{
	struct strata_value v;
	size_t n = 0;

	if (idx >= 0 && strata_event_field(ev, (unsigned)idx, &v) == 0 &&
	    v.type == STRATA_VALUE_STRING)
		for (; n < v.count && n < 16 && v.str[n]; n++) {
			unsigned char c = (unsigned char)v.str[n];
			out[n] = c <= ' ' || c >= 0x7f || c == '"' || c == '\\' ||
					 c == '=' ? '_' : (char)c;
		}
	if (!n)
		out[n++] = '?';
	out[n] = 0;
}

/* sched_switch prev_state as the kernel prints it (TASK_REPORT bits;
 * 0x100: preempted), which is what systrace readers parse. */
static void state_letters(uint64_t s, char out[24])
{
	static const char letters[] = "SDTtXZPI";
	size_t n = 0;

	if (!(s & 0xff)) {
		strcpy(out, s & 0x100 ? "R+" : "R");
		return;
	}
	for (unsigned b = 0; b < 8; b++)
		if (s & 1u << b) {
			if (n)
				out[n++] = '|';
			out[n++] = letters[b];
		}
	out[n] = 0;
}

static const char *names_of(const struct conv *cv, uint32_t tid)
{
	return scan_thread_name(&cv->names, tid);
}

/* The name of process `pid`: its sub-trace's procname, else its main
 * thread's name; "" when unknown. */
static const char *procname(const struct conv *cv, uint32_t pid)
{
	for (unsigned s = 0; s < strata_trace_nsubtraces(cv->t); s++) {
		const char *vp = strata_trace_env(cv->t, s, "vpid");
		const char *pn = strata_trace_env(cv->t, s, "procname");
		if (vp && pn && *pn && (uint32_t)strtoul(vp, NULL, 10) == pid)
			return pn;
	}
	return names_of(cv, pid);
}

static void us(struct cli_out *o, uint64_t ns)
{
	char b[8];
	cli_out_u64(o, ns / 1000);
	b[0] = '.';
	b[1] = (char)('0' + ns % 1000 / 100);
	b[2] = (char)('0' + ns % 100 / 10);
	b[3] = (char)('0' + ns % 10);
	cli_out_mem(o, b, 4);
}

static void secs(struct cli_out *o, uint64_t ns)
{
	char b[12];
	cli_out_u64(o, ns / 1000000000);
	b[0] = '.';
	uint32_t r = (uint32_t)(ns % 1000000000);
	for (int i = 9; i >= 1; i--) {
		b[i] = (char)('0' + r % 10);
		r /= 10;
	}
	cli_out_mem(o, b, 10);
}

/* The name of an interval open at the window's start, from its class:
 * a begin class, or an end class met without its begin. */
static const char *open_name(const struct conv *cv, uint32_t c)
{
	const struct cclass *k = &cv->cc[c];
	return k->begin ? k->begin->name : strata_trace_class(cv->t, c)->name;
}

/* An event before the window: the intervals it opens or closes there. */
static int replay_event(struct conv *cv, const struct strata_event *ev)
{
	int k = cv->cc[ev->cls->index].kind;
	struct cthread *e;

	if (k != CK_BEGIN && k != CK_END)
		return 0;
	if (!(e = ctab_get(&cv->th, (uint64_t)ev->pid << 32 | ev->tid)))
		return -1;
	if (k == CK_BEGIN)
		return stk_push(e, ev->cls->index, false);
	if (e->nstk)
		e->nstk--;
	return 0;
}

/*
 * Go to the window's start: with `replay`, read the events before it for
 * the intervals that cross it (they begin at the window's edge), else
 * seek there. Returns what strata_iter_next gave for the first event at
 * or after the start (in *ev), or -1.
 */
static int to_window(struct conv *cv, struct strata_iter *it, const struct strata_event **ev,
		     bool replay)
{
	int r;

	if (!replay)
		strata_iter_seek(it, cv->from);
	while ((r = strata_iter_next(it, ev)) > 0 && (*ev)->timestamp < cv->from)
		if (replay_event(cv, *ev) < 0)
			return -1;
	return r;
}

/* ---- Chrome trace-event JSON ------------------------------------------------------ */

#define JSON_SAFE_INT (UINT64_C(1) << 53) /* JavaScript's exact integers */

/* An integer field's value: a number when JavaScript holds it exactly,
 * a decimal string when it does not, a "0x..." string when the field is
 * hexadecimal (ptr, and u64 declared with :x). */
static void chrome_int(struct cli_out *o, uint64_t u, bool neg, bool hex)
{
	char b[32];
	uint64_t mag = neg ? -u : u;

	if (hex)
		cli_out_mem(o, b, (size_t)snprintf(b, sizeof(b), "\"0x%" PRIx64 "\"", u));
	else if (mag > JSON_SAFE_INT)
		cli_out_mem(o, b, (size_t)snprintf(b, sizeof(b), neg ? "\"-%" PRIu64 "\""
								     : "\"%" PRIu64 "\"", mag));
	else {
		if (neg)
			cli_out_mem(o, "-", 1);
		cli_out_u64(o, mag);
	}
}

static void chrome_value(struct cli_out *o, const struct strata_field_class *f,
			 const struct strata_value *v)
{
	bool hex = f->base == 16;

	if (f->type == STRATA_FIELD_ENUM || v->type == STRATA_VALUE_DOUBLE ||
	    v->type == STRATA_VALUE_STRING) {
		cli_json_value(o, f, v); /* labels, text, null for NaN */
	} else if (v->type == STRATA_VALUE_ARRAY) {
		cli_out_mem(o, "[", 1);
		for (uint32_t i = 0; i < v->count; i++) {
			uint64_t e = strata_value_elem(v, i);
			if (i)
				cli_out_mem(o, ",", 1);
			chrome_int(o, e, v->elem_signed && (int64_t)e < 0, hex);
		}
		cli_out_mem(o, "]", 1);
	} else {
		chrome_int(o, v->u, v->type == STRATA_VALUE_SINT && v->s < 0, hex);
	}
}

static void chrome_head(struct cli_out *o, const char *name, size_t n, const char *ph,
			uint64_t ns, uint32_t pid, uint32_t tid)
{
	cli_out_str(o, ",\n{\"name\":");
	cli_out_json_str(o, name, n);
	cli_out_str(o, ",\"ph\":\"");
	cli_out_str(o, ph);
	cli_out_str(o, ph[0] == 'i' ? "\",\"s\":\"t\",\"ts\":" : "\",\"ts\":");
	us(o, ns);
	cli_out_str(o, ",\"pid\":");
	cli_out_u64(o, pid);
	cli_out_str(o, ",\"tid\":");
	cli_out_u64(o, tid);
}

static void chrome_event(struct conv *cv, const struct strata_event *ev, uint64_t ns,
			 const char *ph)
{
	struct cli_out *o = cv->o;
	const struct strata_event_class *c = ev->cls;
	const char *colon = strchr(c->name, ':');

	chrome_head(o, c->name, strlen(c->name), ph, ns, ev->pid, ev->tid);
	cli_out_str(o, ",\"cat\":");
	cli_out_json_str(o, c->name, colon ? (size_t)(colon - c->name) : strlen(c->name));
	cli_out_str(o, ",\"args\":{\"cpu\":");
	cli_out_u64(o, ev->cpu);
	int n = strata_event_fields(ev, cv->vals, cv->nvals);
	for (int i = 0; i < n; i++) {
		const struct strata_field_class *f = &c->fields[i];
		if (f->hidden)
			continue;
		cli_out_mem(o, ",", 1);
		cli_out_json_str(o, f->name, strlen(f->name));
		cli_out_mem(o, ":", 1);
		chrome_value(o, f, &cv->vals[i]);
	}
	cli_out_str(o, "}}");
}

/* A slice cut at the window's (or the trace's) edge: `ph` B at its
 * start, E at its end. */
static void chrome_cut(const struct conv *cv, const char *name, const char *ph, uint64_t ns,
		       uint32_t pid, uint32_t tid)
{
	struct cli_out *o = cv->o;

	chrome_head(o, name, strlen(name), ph, ns, pid, tid);
	cli_out_str(o, ",\"args\":{\"cut\":\"");
	cli_out_str(o, ph[0] == 'B' ? "began before the " : "ends after the ");
	cli_out_str(o, (ph[0] == 'B' ? cv->from : cv->to != UINT64_MAX) ? "window\"}}"
									: "trace\"}}");
}

static void chrome_name(struct cli_out *o, const char *what, uint32_t pid, uint32_t tid,
			const char *name)
{
	cli_out_str(o, ",\n{\"name\":\"");
	cli_out_str(o, what);
	cli_out_str(o, "\",\"ph\":\"M\",\"pid\":");
	cli_out_u64(o, pid);
	cli_out_str(o, ",\"tid\":");
	cli_out_u64(o, tid);
	cli_out_str(o, ",\"args\":{\"name\":");
	cli_out_json_str(o, name, strlen(name));
	cli_out_str(o, "}}");
}

/* The entry of a thread (or, tid KEY_ALL, a process), named the first
 * time it appears; NULL when out of memory. */
static struct cthread *chrome_named(struct conv *cv, uint32_t pid, uint32_t tid)
{
	bool proc = tid == KEY_ALL;
	struct cthread *e = ctab_get(&cv->th, (uint64_t)pid << 32 | tid);

	if (e && !e->shown) {
		const char *nm = proc ? procname(cv, pid) : names_of(cv, tid);
		e->shown = 1;
		if (*nm)
			chrome_name(cv->o, proc ? "process_name" : "thread_name", pid,
				    proc ? 0 : tid, nm);
	}
	return e;
}

/* A thread's entry, it and its process named; -1: out of memory. */
static int chrome_thread(struct conv *cv, uint32_t pid, uint32_t tid, struct cthread **out)
{
	if (!chrome_named(cv, pid, KEY_ALL))
		return -1;
	*out = chrome_named(cv, pid, tid);
	return *out ? 0 : -1;
}

/*
 * Kernel scheduling as the systrace text that Perfetto and
 * chrome://tracing read from "systemTraceEvents": per-CPU tracks from
 * sched_switch, thread states (Running, Runnable, Sleeping,
 * Uninterruptible) from sched_switch's prev_state and the wakeups. Times
 * in seconds on the JSON events' own origin.
 */
static void systrace(struct conv *cv, const struct strata_event *ev, uint64_t ns)
{
	const struct cclass *k = &cv->cc[ev->cls->index];
	char task[17], comm[17], next[17], st[24];
	const char *cur = names_of(cv, ev->tid);

	if (k->kind == CK_SWITCH)
		comm_of(ev, k->f[SW_PREV_COMM], task);
	else /* ftrace's names for the idle task and for one it does not know */
		snprintf(task, sizeof(task), "%s", !ev->tid ? "<idle>" : *cur ? cur : "<...>");
	for (char *p = task; *p; p++)
		if (*p == ' ' || *p == '"' || *p == '\\')
			*p = '_';
	fprintf(cv->sys, "%16s-%-5" PRIu32 " (%5" PRIu32 ") [%03" PRIu32 "] .... %" PRIu64
		".%09" PRIu64 ": ", task, ev->tid, ev->pid, ev->cpu, ns / 1000000000,
		ns % 1000000000);
	if (k->kind == CK_SWITCH) {
		comm_of(ev, k->f[SW_NEXT_COMM], next);
		state_letters(ival(ev, k->f[SW_PREV_STATE]), st);
		fprintf(cv->sys, "sched_switch: prev_comm=%s prev_pid=%" PRId64
			" prev_prio=%" PRId64 " prev_state=%s ==> next_comm=%s next_pid=%"
			PRId64 " next_prio=%" PRId64 "\\n", task,
			(int64_t)ival(ev, k->f[SW_PREV_PID]),
			(int64_t)ival(ev, k->f[SW_PREV_PRIO]), st, next,
			(int64_t)ival(ev, k->f[SW_NEXT_PID]),
			(int64_t)ival(ev, k->f[SW_NEXT_PRIO]));
	} else {
		/* Perfetto takes Runnable from sched_waking only: a trace
		 * without it gives its wakeups under that name */
		const char *what = k->kind == CK_WAKING || !cv->has_waking ? "sched_waking"
									  : "sched_wakeup";
		comm_of(ev, k->f[WK_COMM], comm);
		fprintf(cv->sys, "%s: comm=%s pid=%" PRId64 " prio=%" PRId64
			" target_cpu=%03" PRIu64 "\\n", what, comm,
			(int64_t)ival(ev, k->f[WK_PID]), (int64_t)ival(ev, k->f[WK_PRIO]),
			ival(ev, k->f[WK_TARGET_CPU]));
	}
	cv->nsys++;
}

/* Slices open at the window's start begin there. */
static int chrome_open(struct conv *cv)
{
	size_t n;
	uint64_t *keys = open_threads(&cv->th, &n);

	if (!keys)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint32_t pid = (uint32_t)(keys[i] >> 32), tid = (uint32_t)keys[i];
		struct cthread *e;
		if (chrome_thread(cv, pid, tid, &e) < 0) {
			free(keys);
			return -1;
		}
		for (uint32_t j = 0; j < e->nstk; j++)
			chrome_cut(cv, open_name(cv, e->stk[j]), "B", cv->start_ns, pid, tid);
		e->depth = e->nstk;
	}
	free(keys);
	return 0;
}

static int chrome_run(struct conv *cv, struct strata_iter *it, struct cli_progress *pg)
{
	struct cli_out *o = cv->o;
	const struct strata_event *ev;
	uint64_t n = 0;
	int r;

	cli_out_str(o, "{\"traceEvents\":[\n"
		       "{\"name\":\"strata\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
		       "\"args\":{\"name\":\"strata trace\"}}");
	if ((r = to_window(cv, it, &ev, cv->replay)) < 0 || chrome_open(cv) < 0)
		return -1;
	for (; r > 0 && ev->timestamp <= cv->to; r = strata_iter_next(it, &ev)) {
		uint64_t ns = cli_time_ns(&cv->tm, ev->timestamp);
		const struct cclass *k = &cv->cc[ev->cls->index];
		struct cthread *e;

		if (!(++n & 0xffff))
			cli_progress_tick(pg, strata_iter_progress(it));
		if (k->kind >= CK_SWITCH && cv->kstream[ev->stream]) {
			systrace(cv, ev, ns);
			continue;
		}
		if (chrome_thread(cv, ev->pid, ev->tid, &e) < 0)
			return -1;
		if (k->kind == CK_BEGIN) {
			e->depth++;
			chrome_event(cv, ev, ns, "B");
		} else if (k->kind == CK_END) {
			if (e->depth)
				e->depth--;
			else /* begun before the trace */
				chrome_cut(cv, open_name(cv, ev->cls->index), "B", cv->start_ns,
					   ev->pid, ev->tid);
			chrome_event(cv, ev, ns, "E");
		} else {
			chrome_event(cv, ev, ns, "i");
		}
	}
	if (r < 0)
		return -1;
	/* slices still open end with the window (or the trace) */
	for (size_t i = 0; i < cv->th.cap; i++) {
		struct cthread *e = &cv->th.v[i];
		uint64_t key = e->key - 1;
		for (; e->key && e->depth; e->depth--)
			chrome_cut(cv, "", "E", cv->end_ns, (uint32_t)(key >> 32), (uint32_t)key);
	}
	cli_out_str(o, "\n]");
	if (cv->nsys) {
		char buf[65536];
		size_t got;
		cli_out_str(o, ",\n\"systemTraceEvents\":\"# tracer: nop\\n#\\n"
			       "#           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  "
			       "FUNCTION\\n");
		rewind(cv->sys);
		while ((got = fread(buf, 1, sizeof(buf), cv->sys)) > 0)
			cli_out_mem(o, buf, got);
		if (ferror(cv->sys)) {
			cli_err(NULL, "temporary file: read error");
			return -1;
		}
		cli_out_str(o, "\"");
	}
	/* last: older JSON readers (Perfetto's before 2021) stop at a key
	 * they do not know */
	cli_out_str(o, ",\n\"displayTimeUnit\":\"ns\"}\n");
	return 0;
}

/* ---- Paje --------------------------------------------------------------------- */

/* The definitions pajeng reads in strict mode (no -n). */
static const char paje_header[] =
	"%EventDef PajeDefineContainerType 1\n%       Alias string\n"
	"%       Type string\n%       Name string\n%EndEventDef\n"
	"%EventDef PajeDefineStateType 3\n%       Alias string\n"
	"%       Type string\n%       Name string\n%EndEventDef\n"
	"%EventDef PajeDefineEventType 4\n%       Alias string\n"
	"%       Type string\n%       Name string\n%EndEventDef\n"
	"%EventDef PajeDefineEntityValue 6\n%       Alias string\n"
	"%       Type string\n%       Name string\n%       Color color\n%EndEventDef\n"
	"%EventDef PajeCreateContainer 7\n%       Time date\n%       Alias string\n"
	"%       Type string\n%       Container string\n%       Name string\n%EndEventDef\n"
	"%EventDef PajeDestroyContainer 8\n%       Time date\n%       Type string\n"
	"%       Name string\n%EndEventDef\n"
	"%EventDef PajeSetState 10\n%       Time date\n%       Type string\n"
	"%       Container string\n%       Value string\n%EndEventDef\n"
	"%EventDef PajePushState 11\n%       Time date\n%       Type string\n"
	"%       Container string\n%       Value string\n%EndEventDef\n"
	"%EventDef PajePopState 12\n%       Time date\n%       Type string\n"
	"%       Container string\n%EndEventDef\n"
	"%EventDef PajeNewEvent 20\n%       Time date\n%       Type string\n"
	"%       Container string\n%       Value string\n%EndEventDef\n"
	"1 P 0 \"Process\"\n1 T P \"Thread\"\n"
	"3 S T \"State\"\n4 E T \"Event\"\n";

/* Thread states of the kernel's scheduling, as Perfetto names them. */
enum tstate { TS_NONE, TS_RUNNING, TS_RUNNABLE, TS_SLEEPING, TS_UNINTERRUPTIBLE,
	      TS_DEAD };
static const char *const tstate_name[] = {
	"", "Running", "Runnable", "Sleeping", "Uninterruptible", "Dead",
};
static const char paje_sched_types[] =
	"1 C 0 \"CPU\"\n3 R C \"Running thread\"\n3 K T \"Scheduling\"\n"
	"6 Running K \"Running\" \"0.2 0.7 0.2\"\n"
	"6 Runnable K \"Runnable\" \"0.9 0.6 0.1\"\n"
	"6 Sleeping K \"Sleeping\" \"0.8 0.8 0.8\"\n"
	"6 Uninterruptible K \"Uninterruptible\" \"0.8 0.2 0.2\"\n"
	"6 Dead K \"Dead\" \"0.3 0.3 0.3\"\n";

static enum tstate tstate_of(uint64_t prev_state)
{
	if (!(prev_state & 0xff))
		return TS_RUNNABLE; /* preempted */
	if (prev_state & 0x02)
		return TS_UNINTERRUPTIBLE;
	if (prev_state & 0x30)
		return TS_DEAD;
	return TS_SLEEPING; /* S, T, t, P, I */
}

/* A Paje string: no quotes or newlines inside. */
static void paje_str(struct cli_out *o, const char *s)
{
	cli_out_mem(o, "\"", 1);
	for (; *s; s++)
		cli_out_mem(o, (*s == '"' || *s == '\n') ? "_" : s, 1);
	cli_out_mem(o, "\"", 1);
}

/* "t<pid>_<tid>", "p<pid>" or "c<cpu>": container aliases. */
static void paje_alias(struct cli_out *o, uint64_t key)
{
	uint32_t hi = (uint32_t)(key >> 32), lo = (uint32_t)key;

	cli_out_mem(o, hi == KEY_CPU ? "c" : lo == KEY_ALL ? "p" : "t", 1);
	cli_out_u64(o, hi == KEY_CPU ? lo : hi);
	if (hi != KEY_CPU && lo != KEY_ALL) {
		cli_out_mem(o, "_", 1);
		cli_out_u64(o, lo);
	}
}

static void paje_time(struct cli_out *o, const char *code, uint64_t ns)
{
	cli_out_str(o, code);
	secs(o, ns);
	cli_out_mem(o, " ", 1);
}

/* The container of `key` (a thread, process or CPU), created at `ns`
 * (its process first); NULL when out of memory. */
static struct cthread *paje_container(struct conv *cv, uint64_t key, uint64_t ns)
{
	struct cli_out *o = cv->o;
	uint32_t hi = (uint32_t)(key >> 32), lo = (uint32_t)key;
	bool thread = hi != KEY_CPU && lo != KEY_ALL;
	struct cthread *e = ctab_get(&cv->th, key);
	char nm[64];

	if (!e || e->shown)
		return e;
	if (thread) { /* its process first; then the table may have grown */
		struct cthread *t;
		if (!paje_container(cv, (uint64_t)hi << 32 | KEY_ALL, ns) ||
		    !(t = ctab_get(&cv->th, (uint64_t)KEY_ALL << 32 | lo)))
			return NULL;
		t->pid = hi; /* the tid's process, for sched_switch's next_pid */
		e = ctab_find(&cv->th, key);
	}
	e->shown = 1;
	paje_time(o, "7 ", ns);
	paje_alias(o, key);
	if (hi == KEY_CPU) {
		cli_out_str(o, " C 0 ");
		snprintf(nm, sizeof(nm), "CPU %" PRIu32, lo);
	} else if (!thread) {
		cli_out_str(o, " P 0 ");
		const char *pn = procname(cv, hi);
		snprintf(nm, sizeof(nm), "pid %" PRIu32 "%s%.40s", hi, *pn ? " " : "", pn);
	} else {
		cli_out_str(o, " T p");
		cli_out_u64(o, hi);
		cli_out_mem(o, " ", 1);
		const char *tn = names_of(cv, lo);
		snprintf(nm, sizeof(nm), "tid %" PRIu32 "%s%.40s", lo, *tn ? " " : "", tn);
	}
	paje_str(o, nm);
	cli_out_mem(o, "\n", 1);
	return e;
}

static void paje_state(struct cli_out *o, const char *code, uint64_t ns, const char *type,
		       uint64_t key, const char *value)
{
	paje_time(o, code, ns);
	cli_out_str(o, type);
	paje_alias(o, key);
	if (value) {
		cli_out_mem(o, " ", 1);
		paje_str(o, value);
	}
	cli_out_mem(o, "\n", 1);
}

/* The scheduling state of thread `tid`, when it has a container. */
static void paje_tstate(struct conv *cv, uint32_t tid, enum tstate s, uint64_t ns)
{
	struct cthread *t = ctab_find(&cv->th, (uint64_t)KEY_ALL << 32 | tid);
	struct cthread *e;

	if (!tid || !t || !(e = ctab_find(&cv->th, (uint64_t)t->pid << 32 | tid)) ||
	    e->sched == s)
		return;
	e->sched = (uint8_t)s;
	paje_state(cv->o, "10 ", ns, "K ", (uint64_t)t->pid << 32 | tid, tstate_name[s]);
}

static int paje_sched(struct conv *cv, const struct strata_event *ev, uint64_t ns)
{
	const struct cclass *k = &cv->cc[ev->cls->index];
	uint64_t cpu = (uint64_t)KEY_CPU << 32 | ev->cpu;

	if (k->kind == CK_SWITCH) {
		char next[17], v[40];
		uint32_t ntid = (uint32_t)ival(ev, k->f[SW_NEXT_PID]);
		if (!paje_container(cv, cpu, ns))
			return -1;
		comm_of(ev, k->f[SW_NEXT_COMM], next);
		if (ntid)
			snprintf(v, sizeof(v), "%s %" PRIu32, next, ntid);
		else
			snprintf(v, sizeof(v), "idle");
		paje_state(cv->o, "10 ", ns, "R ", cpu, v);
		paje_tstate(cv, (uint32_t)ival(ev, k->f[SW_PREV_PID]),
			    tstate_of(ival(ev, k->f[SW_PREV_STATE])), ns);
		paje_tstate(cv, ntid, TS_RUNNING, ns);
		return 0;
	}
	/* a wakeup: Runnable, unless it already runs (a wakeup of the
	 * current thread, or one that raced with its switch) */
	uint32_t tid = (uint32_t)ival(ev, k->f[WK_PID]);
	struct cthread *t = ctab_find(&cv->th, (uint64_t)KEY_ALL << 32 | tid);
	struct cthread *e = t ? ctab_find(&cv->th, (uint64_t)t->pid << 32 | tid) : NULL;
	if (e && e->sched != TS_RUNNING)
		paje_tstate(cv, tid, TS_RUNNABLE, ns);
	return 0;
}

/* Intervals open when the window starts, in a first pass (Paje wants
 * time order): those begun before it, and below them the ends met in it
 * whose begin is not in the trace at all. */
static int paje_prepass(struct conv *cv, struct strata_iter *it)
{
	const struct strata_event *ev;
	int r = to_window(cv, it, &ev, cv->replay);

	for (size_t i = 0; i < cv->th.cap; i++)
		cv->th.v[i].depth = cv->th.v[i].nstk;
	for (; r > 0 && ev->timestamp <= cv->to; r = strata_iter_next(it, &ev)) {
		int k = cv->cc[ev->cls->index].kind;
		struct cthread *e;
		if (k != CK_BEGIN && k != CK_END)
			continue;
		if (!(e = ctab_get(&cv->th, (uint64_t)ev->pid << 32 | ev->tid)))
			return -1;
		if (k == CK_BEGIN)
			e->depth++;
		else if (e->depth)
			e->depth--;
		else if (stk_push(e, ev->cls->index, true) < 0)
			return -1;
	}
	return r;
}

static int paje_run(struct conv *cv, struct strata_iter *pre, struct strata_iter *it,
		    struct cli_progress *pg)
{
	struct cli_out *o = cv->o;
	struct strata_trace *t = cv->t;
	const struct strata_event *ev;
	bool sched = false;
	uint64_t n = 0;

	for (unsigned i = 0; i < strata_trace_nclasses(t); i++)
		sched |= cv->cc[i].kind >= CK_SWITCH;
	if (pre && paje_prepass(cv, pre) < 0)
		return -1;

	cli_out_str(o, paje_header);
	if (sched)
		cli_out_str(o, paje_sched_types);
	/* a colour per begin class, once per name: sub-traces share classes
	 * (the values of cut intervals whose begin class is not known are
	 * created by the reader) */
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++) {
		const struct strata_event_class *cl = strata_trace_class(t, i);
		bool seen = false;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = !strcmp(strata_trace_class(t, j)->name, cl->name);
		if (cl->kind != STRATA_KIND_BEGIN || seen)
			continue;
		char col[32];
		unsigned h = cl->index * 2654435761u;
		cli_out_str(o, "6 ");
		paje_str(o, cl->name);
		cli_out_str(o, " S ");
		paje_str(o, cl->name);
		snprintf(col, sizeof(col), " \"%.2f %.2f %.2f\"\n", (h & 255) / 255.0,
			 (h >> 8 & 255) / 255.0, (h >> 16 & 255) / 255.0);
		cli_out_str(o, col);
	}
	/* every sub-trace's process, then the intervals that were open when
	 * the window starts, pushed outermost first */
	for (unsigned s = 0; s < strata_trace_nsubtraces(t); s++) {
		const char *vp = strata_trace_env(t, s, "vpid");
		uint32_t pid = vp ? (uint32_t)strtoul(vp, NULL, 10) : 0;
		if (!paje_container(cv, (uint64_t)pid << 32 | KEY_ALL, cv->start_ns))
			return -1;
	}
	size_t nopen;
	uint64_t *open = open_threads(&cv->th, &nopen);
	if (!open)
		return -1;
	for (size_t i = 0; i < cv->th.cap; i++)
		cv->th.v[i].depth = 0;
	for (size_t i = 0; i < nopen; i++) {
		struct cthread *e = paje_container(cv, open[i], cv->start_ns);
		if (!e) {
			free(open);
			return -1;
		}
		for (uint32_t j = 0; j < e->nstk; j++)
			paje_state(o, "11 ", cv->start_ns, "S ", open[i], open_name(cv, e->stk[j]));
		e->depth = e->nstk;
	}
	free(open);

	int r = to_window(cv, it, &ev, false);
	for (; r > 0 && ev->timestamp <= cv->to; r = strata_iter_next(it, &ev)) {
		uint64_t ns = cli_time_ns(&cv->tm, ev->timestamp);
		uint64_t key = (uint64_t)ev->pid << 32 | ev->tid;
		int k = cv->cc[ev->cls->index].kind;
		struct cthread *e;

		if (!(++n & 0xffff))
			cli_progress_tick(pg, strata_iter_progress(it));
		if (!(e = paje_container(cv, key, ns)))
			return -1;
		if (k >= CK_SWITCH && cv->kstream[ev->stream]) {
			if (paje_sched(cv, ev, ns) < 0)
				return -1;
			continue;
		}
		if (k == CK_END && !e->depth)
			continue; /* the first pass pushed it: cannot happen */
		if (k == CK_BEGIN)
			e->depth++;
		else if (k == CK_END)
			e->depth--;
		paje_state(o, k == CK_BEGIN ? "11 " : k == CK_END ? "12 " : "20 ", ns,
			   k == CK_BEGIN || k == CK_END ? "S " : "E ", key,
			   k == CK_END ? NULL : ev->cls->name);
	}
	if (r < 0)
		return -1;
	/* states still pushed end with the window; then threads, processes
	 * and CPUs end there */
	for (size_t i = 0; i < cv->th.cap; i++)
		for (struct cthread *e = &cv->th.v[i]; e->key && e->depth; e->depth--)
			paje_state(o, "12 ", cv->end_ns, "S ", e->key - 1, NULL);
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < cv->th.cap; i++) {
			uint64_t key = cv->th.v[i].key - 1;
			uint32_t hi = (uint32_t)(key >> 32), lo = (uint32_t)key;
			int what = hi == KEY_CPU ? 2 : lo == KEY_ALL ? 1 : 0;
			if (!cv->th.v[i].key || !cv->th.v[i].shown || hi == KEY_ALL ||
			    what != pass)
				continue;
			paje_time(o, "8 ", cv->end_ns);
			cli_out_str(o, what == 2 ? "C " : what == 1 ? "P " : "T ");
			paje_alias(o, key);
			cli_out_mem(o, "\n", 1);
		}
	return 0;
}

/* ---- the command -------------------------------------------------------------- */

/* Thread names for the whole trace, whatever the filters: the state
 * dump's records and the kernel's sched_switch comms (scan.h). */
static int read_names(struct conv *cv, struct cli_trace *ct)
{
	struct strata_filter *f = NULL;
	struct strata_iter *it = NULL;
	int rc = strata_filter_create(cv->t, &f);

	if (!rc && strata_filter_event(f, "strata:thread_name") +
			   strata_filter_event(f, "sched:sched_switch") == 0) {
		strata_filter_destroy(f);
		return 0; /* nothing names threads */
	}
	struct strata_iter_options io = { .stream = -1, .filter = f,
					  .flags = STRATA_ITER_INTERNAL };
	if (!rc)
		rc = strata_iter_create(cv->t, &io, &it);
	if (rc < 0) {
		cli_err(ct->path, "%s", strerror(-rc));
		strata_filter_destroy(f);
		return -1;
	}
	cv->names.want_names = true;
	rc = scan_run(&cv->names, ct, it);
	strata_iter_destroy(it);
	strata_filter_destroy(f);
	return rc;
}

static int setup(struct conv *cv, struct cli_trace *ct, const struct cli_filter_opts *fo)
{
	struct strata_trace *t = ct->t;
	unsigned maxf = 0, ns = strata_trace_nstreams(t);

	cv->t = t;
	cli_time_init(&cv->tm, t, false);
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++) {
		const struct strata_event_class *c = strata_trace_class(t, i);
		if (c->nfields > maxf)
			maxf = c->nfields;
		cv->has_waking |= !strcmp(c->name, "sched:sched_waking");
	}
	cv->nvals = maxf + 4; /* strata_event_fields' fast path */
	cv->vals = calloc(cv->nvals, sizeof(*cv->vals));
	cv->cc = classes(t);
	cv->kstream = calloc(ns + 1, sizeof(*cv->kstream));
	if (!cv->vals || !cv->cc || !cv->kstream) {
		cli_err(NULL, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < ns; i++) {
		struct strata_stream_info si;
		const char *d = NULL;
		if (strata_trace_stream(t, i, &si) == 0)
			d = strata_trace_env(t, si.subtrace, "domain");
		cv->kstream[i] = d && !strcmp(d, "kernel");
	}
	/* the window, where cut intervals begin and end: the ticks that
	 * cli_open() would filter on (it reads without a time filter here:
	 * the events before the window tell which intervals cross it) */
	uint64_t b = strata_trace_begin(t), e = strata_trace_end(t);
	cv->from = fo->has_from ? b + strata_trace_ns_to_ticks(t,
					(uint64_t)llround(fo->from * 1e9)) : 0;
	cv->to = fo->has_to ? b + strata_trace_ns_to_ticks(t,
					(uint64_t)llround(fo->to * 1e9)) : UINT64_MAX;
	if (cv->from > cv->to) {
		cli_err(NULL, "--from is after --to");
		return -1;
	}
	cv->start_ns = cli_time_ns(&cv->tm, cv->from);
	cv->end_ns = cli_time_ns(&cv->tm, cv->to < e ? cv->to : e);
	if (cv->end_ns < cv->start_ns)
		cv->end_ns = cv->start_ns;
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++)
		cv->intervals |= cv->cc[i].kind == CK_BEGIN || cv->cc[i].kind == CK_END;
	cv->replay = cv->intervals && fo->has_from;
	return read_names(cv, ct);
}

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		CLI_FILTER_OPTIONS,
		{ 0 },
	};
	struct cli_filter_opts fo = { 0 };
	const char *fmt = NULL, *outpath = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "F:o:", opts, NULL)) != -1) {
		if (c == 'F') {
			fmt = optarg;
		} else if (c == 'o') {
			outpath = optarg;
		} else if (c == OPT_TO && (!strcmp(optarg, "chrome") || !strcmp(optarg, "paje"))) {
			/* --to used to be the format: never take one for the other */
			cli_err(NULL, "convert: --to is the end of the window (seconds); "
				      "the format is --format %s (-F %s)", optarg, optarg);
			return 1;
		} else if (c == OPT_TO && fo.has_to) {
			cli_err(NULL, "convert: --to given twice (the window's end; "
				      "the format is --format)");
			return 1;
		} else if (c == '?' || cli_filter_opt(&fo, c, optarg) < 0) {
			return 1;
		}
	}
	if (optind != argc - 1 || !fmt || !outpath) {
		cli_err(NULL, "convert: expected TRACE --format chrome|paje -o OUT "
			      "(see strata convert --help)");
		return 1;
	}
	bool paje = !strcmp(fmt, "paje");
	if (!paje && strcmp(fmt, "chrome")) {
		cli_err(NULL, "--format: expected chrome or paje, not '%s'", fmt);
		return 1;
	}

	struct cli_trace ct = { 0 };
	struct strata_iter *it = NULL, *pre = NULL;
	struct conv cv = { 0 };
	struct cli_out o;
	struct cli_progress pg;
	FILE *f = NULL;
	int rc = 1;

	struct cli_filter_opts all_time = fo;
	all_time.has_from = all_time.has_to = false;
	if (cli_open(&ct, argv[optind], &all_time) < 0 ||
	    cli_iter(&ct, fo.internal, &it) < 0 || setup(&cv, &ct, &fo) < 0)
		goto out;
	if (paje && cv.intervals && cli_iter(&ct, fo.internal, &pre) < 0)
		goto out;
	if (!paje && !(cv.sys = tmpfile())) {
		cli_err(NULL, "temporary file: %s", strerror(errno));
		goto out;
	}
	f = strcmp(outpath, "-") ? fopen(outpath, "we") : stdout;
	if (!f) {
		cli_err(outpath, "%s", strerror(errno));
		goto out;
	}
	if (cli_out_init(&o, f) < 0) {
		cli_err(NULL, "out of memory");
		goto out;
	}
	cv.o = &o;
	cli_progress_init(&pg, strata_trace_size(ct.t));
	rc = paje ? paje_run(&cv, pre, it, &pg) : chrome_run(&cv, it, &pg);
	if (rc < 0)
		cli_err(NULL, "out of memory");
	rc = rc < 0;
	cli_progress_done(&pg);
	if (cli_out_fini(&o) < 0 || (f != stdout && fclose(f))) {
		cli_err(outpath, "write error");
		rc = 1;
	}
	f = NULL;
	if (!rc)
		rc = cli_status(&ct);
out:
	if (f && f != stdout)
		fclose(f);
	if (cv.sys)
		fclose(cv.sys);
	ctab_fini(&cv.th);
	scan_fini(&cv.names);
	free(cv.cc);
	free(cv.kstream);
	free(cv.vals);
	strata_iter_destroy(pre);
	strata_iter_destroy(it);
	cli_close(&ct);
	return rc;
}
