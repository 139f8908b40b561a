/* SPDX-License-Identifier: MIT */
/* strata convert -F paje: a Paje trace (pajeng, ViTE) of containers, states and events. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"

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
	struct cthread *e = conv_ctab_get(&cv->th, key);
	char nm[64];

	if (!e || e->shown)
		return e;
	if (thread) { /* its process first; then the table may have grown */
		struct cthread *t;
		if (!paje_container(cv, (uint64_t)hi << 32 | KEY_ALL, ns) ||
		    !(t = conv_ctab_get(&cv->th, (uint64_t)KEY_ALL << 32 | lo)))
			return NULL;
		t->pid = hi; /* the tid's process, for sched_switch's next_pid */
		e = conv_ctab_find(&cv->th, key);
	}
	e->shown = 1;
	paje_time(o, "7 ", ns);
	paje_alias(o, key);
	if (hi == KEY_CPU) {
		cli_out_str(o, " C 0 ");
		snprintf(nm, sizeof(nm), "CPU %" PRIu32, lo);
	} else if (!thread) {
		cli_out_str(o, " P 0 ");
		const char *pn = conv_procname(cv, hi);
		snprintf(nm, sizeof(nm), "pid %" PRIu32 "%s%.40s", hi, *pn ? " " : "", pn);
	} else {
		cli_out_str(o, " T p");
		cli_out_u64(o, hi);
		cli_out_mem(o, " ", 1);
		const char *tn = conv_thread_name(cv, lo);
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
	struct cthread *t = conv_ctab_find(&cv->th, (uint64_t)KEY_ALL << 32 | tid);
	struct cthread *e;

	if (!tid || !t || !(e = conv_ctab_find(&cv->th, (uint64_t)t->pid << 32 | tid)) ||
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
		uint32_t ntid = (uint32_t)conv_ival(ev, k->f[SW_NEXT_PID]);
		if (!paje_container(cv, cpu, ns))
			return -1;
		conv_comm(ev, k->f[SW_NEXT_COMM], next);
		if (ntid)
			snprintf(v, sizeof(v), "%s %" PRIu32, next, ntid);
		else
			snprintf(v, sizeof(v), "idle");
		paje_state(cv->o, "10 ", ns, "R ", cpu, v);
		paje_tstate(cv, (uint32_t)conv_ival(ev, k->f[SW_PREV_PID]),
			    tstate_of(conv_ival(ev, k->f[SW_PREV_STATE])), ns);
		paje_tstate(cv, ntid, TS_RUNNING, ns);
		return 0;
	}
	/* a wakeup: Runnable, unless it already runs (a wakeup of the
	 * current thread, or one that raced with its switch) */
	uint32_t tid = (uint32_t)conv_ival(ev, k->f[WK_PID]);
	struct cthread *t = conv_ctab_find(&cv->th, (uint64_t)KEY_ALL << 32 | tid);
	struct cthread *e = t ? conv_ctab_find(&cv->th, (uint64_t)t->pid << 32 | tid) : NULL;
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
	int r = conv_to_window(cv, it, &ev, cv->replay);

	for (size_t i = 0; i < cv->th.cap; i++)
		cv->th.v[i].depth = cv->th.v[i].nstk;
	for (; r > 0 && ev->timestamp <= cv->to; r = strata_iter_next(it, &ev)) {
		int k = cv->cc[ev->cls->index].kind;
		struct cthread *e;
		if (k != CK_BEGIN && k != CK_END)
			continue;
		if (!(e = conv_ctab_get(&cv->th, (uint64_t)ev->pid << 32 | ev->tid)))
			return -1;
		if (k == CK_BEGIN)
			e->depth++;
		else if (e->depth)
			e->depth--;
		else if (conv_stk_push(e, ev->cls->index, true) < 0)
			return -1;
	}
	return r;
}

/* The definitions: pajeng's header, the scheduling types when the trace
 * has scheduling events, a colour per begin class. */
static void paje_define(struct conv *cv)
{
	struct cli_out *o = cv->o;
	struct strata_trace *t = cv->t;
	bool sched = false;

	for (unsigned i = 0; i < strata_trace_nclasses(t); i++)
		sched |= cv->cc[i].kind >= CK_SWITCH;
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
}

/* Every sub-trace's process, then the intervals that were open when the
 * window starts, pushed outermost first; -1 when out of memory. */
static int paje_open(struct conv *cv)
{
	struct strata_trace *t = cv->t;

	for (unsigned s = 0; s < strata_trace_nsubtraces(t); s++) {
		const char *vp = strata_trace_env(t, s, "vpid");
		uint32_t pid = vp ? (uint32_t)strtoul(vp, NULL, 10) : 0;
		if (!paje_container(cv, (uint64_t)pid << 32 | KEY_ALL, cv->start_ns))
			return -1;
	}
	size_t nopen;
	uint64_t *open = conv_open_threads(&cv->th, &nopen);
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
			paje_state(cv->o, "11 ", cv->start_ns, "S ", open[i],
				   conv_open_name(cv, e->stk[j]));
		e->depth = e->nstk;
	}
	free(open);
	return 0;
}

/* The events of the window; -1 when out of memory or unreadable. */
static int paje_events(struct conv *cv, struct strata_iter *it, struct cli_progress *pg)
{
	const struct strata_event *ev;
	uint64_t n = 0;

	int r = conv_to_window(cv, it, &ev, false);
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
		paje_state(cv->o, k == CK_BEGIN ? "11 " : k == CK_END ? "12 " : "20 ", ns,
			   k == CK_BEGIN || k == CK_END ? "S " : "E ", key,
			   k == CK_END ? NULL : ev->cls->name);
	}
	return r < 0 ? -1 : 0;
}

/* States still pushed end with the window; then threads, processes and
 * CPUs end there. */
static void paje_close(struct conv *cv)
{
	struct cli_out *o = cv->o;

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
}

int conv_paje_run(struct conv *cv, struct strata_iter *pre, struct strata_iter *it,
		  struct cli_progress *pg)
{
	if (pre && paje_prepass(cv, pre) < 0)
		return -1;
	paje_define(cv);
	if (paje_open(cv) < 0 || paje_events(cv, it, pg) < 0)
		return -1;
	paje_close(cv);
	return 0;
}
