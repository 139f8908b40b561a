/* SPDX-License-Identifier: MIT */
/* strata convert's common part: the thread table, the event classes, the window and thread names. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"

/* ---- threads, processes and CPUs of the output ---------------------------- */

static size_t ctab_hash(uint64_t key)
{
	return (size_t)(key * 0x9E3779B97F4A7C15ull >> 17);
}

/* The entry of `key`, added when absent; NULL when out of memory. */
struct cthread *conv_ctab_get(struct ctab *t, uint64_t key)
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

struct cthread *conv_ctab_find(const struct ctab *t, uint64_t key)
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

void conv_ctab_fini(struct ctab *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->v[i].stk);
		free(t->v[i].fr);
	}
	free(t->v);
}

/* Class `c` on e's stack of open intervals: on top, or at the bottom. */
int conv_stk_push(struct cthread *e, uint32_t c, bool bottom)
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

int conv_fr_push(struct cthread *e, const struct cframe *f)
{
	if (e->nfr == e->capfr) {
		uint32_t cap = e->capfr ? e->capfr * 2 : 16;
		struct cframe *v = realloc(e->fr, cap * sizeof(*v));
		if (!v)
			return -1;
		e->fr = v;
		e->capfr = cap;
	}
	e->fr[e->nfr++] = *f;
	return 0;
}

uint32_t conv_fr_find(const struct cthread *e, uint64_t fn)
{
	uint32_t k = e->nfr;

	while (k > 0 && e->fr[k - 1].fn != fn)
		k--;
	return k;
}

/* The keys of the threads with intervals open at the window's start (a
 * copy: the table may grow while they are written). NULL: no memory. */
uint64_t *conv_open_threads(const struct ctab *t, size_t *n)
{
	uint64_t *keys = calloc(t->n + 1, sizeof(*keys));

	*n = 0;
	for (size_t i = 0; keys && i < t->cap; i++)
		if (t->v[i].key && (t->v[i].nstk || t->v[i].nfr))
			keys[(*n)++] = t->v[i].key - 1;
	return keys;
}

/* ---- event classes ---------------------------------------------------------- */

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
		if ((c->kind == STRATA_KIND_BEGIN && !strcmp(c->name, "func:call_entry")) ||
		    (c->kind == STRATA_KIND_END && !strcmp(c->name, "func:call_exit"))) {
			cc[i].f[FN_FN] = strata_event_class_field(c, "fn");
			cc[i].f[FN_SITE] = strata_event_class_field(c, "site");
			cc[i].fn = cc[i].f[FN_FN] >= 0;
		}
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

/* ---- what both formats read of events ----------------------------------------- */

uint64_t conv_ival(const struct strata_event *ev, int idx)
{
	struct strata_value v;
	if (idx < 0 || strata_event_field(ev, (unsigned)idx, &v) < 0 ||
	    (v.type != STRATA_VALUE_UINT && v.type != STRATA_VALUE_SINT))
		return 0;
	return v.u;
}

/* A kernel comm as one systrace word: no blank, quote, backslash or '='. */
void conv_comm(const struct strata_event *ev, int idx, char out[17])
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

const char *conv_thread_name(const struct conv *cv, uint32_t tid)
{
	return scan_thread_name(&cv->names, tid);
}

/* The name of process `pid`: its sub-trace's procname, else its main
 * thread's name; "" when unknown. */
const char *conv_procname(const struct conv *cv, uint32_t pid)
{
	for (unsigned s = 0; s < strata_trace_nsubtraces(cv->t); s++) {
		const char *vp = strata_trace_env(cv->t, s, "vpid");
		const char *pn = strata_trace_env(cv->t, s, "procname");
		if (vp && pn && *pn && (uint32_t)strtoul(vp, NULL, 10) == pid)
			return pn;
	}
	return conv_thread_name(cv, pid);
}

/* The name of an interval open at the window's start, from its class:
 * a begin class, or an end class met without its begin. */
const char *conv_open_name(const struct conv *cv, uint32_t c)
{
	const struct cclass *k = &cv->cc[c];
	return k->begin ? k->begin->name : strata_trace_class(cv->t, c)->name;
}

/* A function probe before the window (chrome): the calls open at its
 * start, found as the run pairs them (convert-chrome.c). */
static int replay_call(struct conv *cv, struct cthread *e, const struct strata_event *ev,
		       bool entry)
{
	const struct cclass *k = &cv->cc[ev->cls->index];
	uint64_t fn = conv_ival(ev, k->f[FN_FN]);

	if (entry)
		return conv_fr_push(e, &(struct cframe){ .fn = fn, .site = conv_ival(ev,
				k->f[FN_SITE]), .ns = cv->start_ns, .cpu = ev->cpu, .before = true });
	/* the calls above it were left without their exits; a call whose
	 * entry is before the trace enclosed all that is open */
	uint32_t d = conv_fr_find(e, fn);
	e->nfr = d ? d - 1 : 0;
	return 0;
}

/* An event before the window: the intervals it opens or closes there. */
static int replay_event(struct conv *cv, const struct strata_event *ev)
{
	int k = cv->cc[ev->cls->index].kind;
	struct cthread *e;

	if (k != CK_BEGIN && k != CK_END)
		return 0;
	if (!(e = conv_ctab_get(&cv->th, (uint64_t)ev->pid << 32 | ev->tid)))
		return -1;
	if (cv->fn_calls && cv->cc[ev->cls->index].fn)
		return replay_call(cv, e, ev, k == CK_BEGIN);
	if (k == CK_BEGIN)
		return conv_stk_push(e, ev->cls->index, false);
	if (e->nstk)
		e->nstk--;
	return 0;
}

/* convert.h */
int conv_to_window(struct conv *cv, struct strata_iter *it, const struct strata_event **ev,
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

/* ---- the conversion's set-up -------------------------------------------------- */

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

int conv_setup(struct conv *cv, struct cli_trace *ct, const struct cli_filter_opts *fo)
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

void conv_fini(struct conv *cv)
{
	conv_ctab_fini(&cv->th);
	scan_fini(&cv->names);
	for (size_t i = 0; i < cv->capfn; i++)
		free(cv->fnames[i].name);
	free(cv->fnames);
	strata_symbolizer_destroy(cv->sy);
	free(cv->cc);
	free(cv->kstream);
	free(cv->vals);
}
