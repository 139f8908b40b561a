/* SPDX-License-Identifier: MIT */
/* strata convert -F chrome: Chrome trace-event JSON, kernel scheduling as systrace text. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"

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
	struct cthread *e = conv_ctab_get(&cv->th, (uint64_t)pid << 32 | tid);

	if (e && !e->shown) {
		const char *nm = proc ? conv_procname(cv, pid) : conv_thread_name(cv, tid);
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
	const char *cur = conv_thread_name(cv, ev->tid);

	if (k->kind == CK_SWITCH)
		conv_comm(ev, k->f[SW_PREV_COMM], task);
	else /* ftrace's names for the idle task and for one it does not know */
		snprintf(task, sizeof(task), "%s", !ev->tid ? "<idle>" : *cur ? cur : "<...>");
	for (char *p = task; *p; p++)
		if (*p == ' ' || *p == '"' || *p == '\\')
			*p = '_';
	fprintf(cv->sys, "%16s-%-5" PRIu32 " (%5" PRIu32 ") [%03" PRIu32 "] .... %" PRIu64
		".%09" PRIu64 ": ", task, ev->tid, ev->pid, ev->cpu, ns / 1000000000,
		ns % 1000000000);
	if (k->kind == CK_SWITCH) {
		conv_comm(ev, k->f[SW_NEXT_COMM], next);
		state_letters(conv_ival(ev, k->f[SW_PREV_STATE]), st);
		fprintf(cv->sys, "sched_switch: prev_comm=%s prev_pid=%" PRId64
			" prev_prio=%" PRId64 " prev_state=%s ==> next_comm=%s next_pid=%"
			PRId64 " next_prio=%" PRId64 "\\n", task,
			(int64_t)conv_ival(ev, k->f[SW_PREV_PID]),
			(int64_t)conv_ival(ev, k->f[SW_PREV_PRIO]), st, next,
			(int64_t)conv_ival(ev, k->f[SW_NEXT_PID]),
			(int64_t)conv_ival(ev, k->f[SW_NEXT_PRIO]));
	} else {
		/* Perfetto takes Runnable from sched_waking only: a trace
		 * without it gives its wakeups under that name */
		const char *what = k->kind == CK_WAKING || !cv->has_waking ? "sched_waking"
									  : "sched_wakeup";
		conv_comm(ev, k->f[WK_COMM], comm);
		fprintf(cv->sys, "%s: comm=%s pid=%" PRId64 " prio=%" PRId64
			" target_cpu=%03" PRIu64 "\\n", what, comm,
			(int64_t)conv_ival(ev, k->f[WK_PID]), (int64_t)conv_ival(ev, k->f[WK_PRIO]),
			conv_ival(ev, k->f[WK_TARGET_CPU]));
	}
	cv->nsys++;
}

/* ---- function probes as complete events ------------------------------------ */

static size_t fname_hash(uint32_t pid, uint64_t fn)
{
	return (size_t)(((fn ^ (uint64_t)pid << 47) * 0x9E3779B97F4A7C15ull) >> 20);
}

/* The name of fn in process pid: its symbol, else an address as
 * strata_symbol_format() gives it; symbolized once per function (memory
 * grows with the functions, not the calls). NULL: out of memory. */
static const char *fn_name(struct conv *cv, uint32_t pid, uint64_t fn)
{
	if (cv->nfn * 2 >= cv->capfn) {
		size_t cap = cv->capfn ? cv->capfn * 2 : 256;
		struct fname *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < cv->capfn; i++) {
			if (!cv->fnames[i].used)
				continue;
			size_t h = fname_hash(cv->fnames[i].pid, cv->fnames[i].fn);
			while (v[h & (cap - 1)].used)
				h++;
			v[h & (cap - 1)] = cv->fnames[i];
		}
		free(cv->fnames);
		cv->fnames = v;
		cv->capfn = cap;
	}
	size_t h = fname_hash(pid, fn);
	struct fname *e = &cv->fnames[h & (cv->capfn - 1)];
	for (; e->used; e = &cv->fnames[++h & (cv->capfn - 1)])
		if (e->fn == fn && e->pid == pid)
			return e->name;

	struct strata_symbol sym;
	char buf[600];
	memset(&sym, 0, sizeof(sym));
	sym.status = STRATA_SYM_UNKNOWN;
	if (cv->sy)
		strata_symbolize(cv->sy, pid, fn, &sym);
	if (sym.status == STRATA_SYM_FUNCTION && !sym.offset)
		snprintf(buf, sizeof(buf), "%s", sym.function);
	else
		strata_symbol_format(&sym, fn, buf, sizeof(buf));
	if (!(e->name = strdup(buf)))
		return NULL;
	e->fn = fn;
	e->pid = pid;
	e->used = true;
	cv->nfn++;
	return e->name;
}

/*
 * One call as a complete event (ph X) from its entry to end_ns, named by
 * its function. Marked in args: `unwound` (left without its exit, closed
 * at an outer call's exit: a longjmp, an exception through a C frame
 * built without -fexceptions), `cut` (entered before the window or the trace, or
 * not left by its end: closed at that edge). -1: out of memory.
 */
static int chrome_call(struct conv *cv, uint32_t pid, uint32_t tid, const struct cframe *f,
		       uint64_t end_ns, bool unwound, bool after)
{
	struct cli_out *o = cv->o;
	const char *nm = fn_name(cv, pid, f->fn);

	if (!nm)
		return -1;
	chrome_head(o, nm, strlen(nm), "X", f->ns, pid, tid);
	cli_out_str(o, ",\"dur\":");
	us(o, end_ns > f->ns ? end_ns - f->ns : 0);
	cli_out_str(o, ",\"cat\":\"func\",\"args\":{\"cpu\":");
	cli_out_u64(o, f->cpu);
	cli_out_str(o, ",\"fn\":");
	chrome_int(o, f->fn, false, true);
	if (f->site) {
		cli_out_str(o, ",\"site\":");
		chrome_int(o, f->site, false, true);
	}
	if (unwound)
		cli_out_str(o, ",\"unwound\":true");
	if (f->before || after) {
		cli_out_str(o, ",\"cut\":\"");
		if (f->before)
			cli_out_str(o, cv->from ? "began before the window" : "began before the trace");
		if (f->before && after)
			cli_out_str(o, ", ");
		if (after)
			cli_out_str(o, cv->to != UINT64_MAX ? "ends after the window"
							   : "ends after the trace");
		cli_out_str(o, "\"");
	}
	cli_out_str(o, "}}");
	return 0;
}

/* A func:call_entry or func:call_exit of thread e, paired as strata
 * profile pairs them (src/analysis/calls.c): an exit ends the innermost
 * open call of its function. -1: out of memory. */
static int chrome_fn(struct conv *cv, struct cthread *e, const struct strata_event *ev,
		     uint64_t ns)
{
	const struct cclass *k = &cv->cc[ev->cls->index];
	uint64_t fn = conv_ival(ev, k->f[FN_FN]);

	if (k->kind == CK_BEGIN)
		return conv_fr_push(e, &(struct cframe){ .fn = fn, .site = conv_ival(ev,
				k->f[FN_SITE]), .ns = ns, .cpu = ev->cpu });
	/* the calls above it never returned: they end here, unwound; a
	 * call entered before the trace (or the window) enclosed them all */
	uint32_t d = conv_fr_find(e, fn);
	while (e->nfr > d) {
		e->nfr--;
		if (chrome_call(cv, ev->pid, ev->tid, &e->fr[e->nfr], ns, true, false) < 0)
			return -1;
	}
	if (!d)
		return chrome_call(cv, ev->pid, ev->tid, &(struct cframe){ .fn = fn,
				   .ns = cv->start_ns, .cpu = ev->cpu, .before = true }, ns,
				   false, false);
	e->nfr--;
	return chrome_call(cv, ev->pid, ev->tid, &e->fr[e->nfr], ns, false, false);
}

/* Slices open at the window's start begin there. */
static int chrome_open(struct conv *cv)
{
	size_t n;
	uint64_t *keys = conv_open_threads(&cv->th, &n);

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
			chrome_cut(cv, conv_open_name(cv, e->stk[j]), "B", cv->start_ns, pid, tid);
		e->depth = e->nstk;
	}
	free(keys);
	return 0;
}

int conv_chrome_run(struct conv *cv, struct strata_iter *it, struct cli_progress *pg)
{
	struct cli_out *o = cv->o;
	const struct strata_event *ev;
	uint64_t n = 0;
	int r;

	/* function probes become complete events (docs/cli.md, "convert") */
	cv->fn_calls = true;
	for (unsigned i = 0; i < strata_trace_nclasses(cv->t) && !cv->sy; i++)
		if (cv->cc[i].fn && strata_symbolizer_create(cv->t, &cv->sy) == -ENOMEM)
			return -1; /* -ENOTSUP: a reader without libdw, addresses */
	cli_out_str(o, "{\"traceEvents\":[\n"
		       "{\"name\":\"strata\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
		       "\"args\":{\"name\":\"strata trace\"}}");
	if ((r = conv_to_window(cv, it, &ev, cv->replay)) < 0 || chrome_open(cv) < 0)
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
		if (k->fn) {
			if (chrome_fn(cv, e, ev, ns) < 0)
				return -1;
		} else if (k->kind == CK_BEGIN) {
			e->depth++;
			chrome_event(cv, ev, ns, "B");
		} else if (k->kind == CK_END) {
			if (e->depth)
				e->depth--;
			else /* begun before the trace */
				chrome_cut(cv, conv_open_name(cv, ev->cls->index), "B", cv->start_ns,
					   ev->pid, ev->tid);
			chrome_event(cv, ev, ns, "E");
		} else {
			chrome_event(cv, ev, ns, "i");
		}
	}
	if (r < 0)
		return -1;
	/* slices and calls still open end with the window (or the trace) */
	for (size_t i = 0; i < cv->th.cap; i++) {
		struct cthread *e = &cv->th.v[i];
		uint64_t key = e->key - 1;
		for (; e->key && e->nfr; e->nfr--)
			if (chrome_call(cv, (uint32_t)(key >> 32), (uint32_t)key,
					&e->fr[e->nfr - 1], cv->end_ns, false, true) < 0)
				return -1;
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
