/* SPDX-License-Identifier: MIT */
/* strata convert's shared state: the thread table, event classes and window that both output formats use. */
#ifndef STRATA_CLI_CONVERT_H
#define STRATA_CLI_CONVERT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "scan.h"

/* Threads, processes and CPUs of the output. */

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
	/* chrome: the function probes' calls entered and not yet left,
	 * outermost first (they become complete events at their exits) */
	struct cframe *fr;
	uint32_t nfr, capfr;
};

/* A function call open on a thread (chrome's complete events). */
struct cframe {
	uint64_t fn, site;
	uint64_t ns;   /* its entry, or the window's start */
	uint32_t cpu;
	bool before;   /* entered before the window (found by the replay) */
};

/* A function's name in a process (chrome), symbolized once. */
struct fname {
	uint64_t fn;
	uint32_t pid;
	bool used;
	char *name;
};

struct ctab {
	struct cthread *v;
	size_t cap, n;
};

/* Event classes. */

/* What an event becomes: kernel scheduling only on a kernel stream. */
enum ckind { CK_POINT, CK_BEGIN, CK_END, CK_SWITCH, CK_WAKEUP, CK_WAKING };

/* Field indexes of the scheduling classes (docs/kernel.md). */
enum { SW_PREV_COMM, SW_PREV_PID, SW_PREV_PRIO, SW_PREV_STATE, SW_NEXT_COMM,
       SW_NEXT_PID, SW_NEXT_PRIO, SW_NFIELDS };
enum { WK_COMM, WK_PID, WK_PRIO, WK_TARGET_CPU, WK_NFIELDS };
/* ... and of func:call_entry / func:call_exit (libstrata-func). */
enum { FN_FN, FN_SITE, FN_NFIELDS };

struct cclass {
	uint8_t kind;  /* enum ckind */
	bool fn;       /* CK_BEGIN/CK_END: func:call_entry/call_exit, f[FN_*] */
	int f[SW_NFIELDS];
	/* CK_END: the begin class of the same interval, by name
	 * (x_end/x_begin...), or NULL: a slice cut at the window's start
	 * takes its name */
	const struct strata_event_class *begin;
};

/* One conversion: the trace, its window, and what the output has shown. */
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
	/* chrome: function probes as complete events, paired by function
	 * on cthread.fr (set before conv_setup()), named through sy */
	bool fn_calls;
	struct strata_symbolizer *sy;
	struct fname *fnames;    /* (pid, fn) -> name, open addressing */
	size_t capfn, nfn;
};

/* The entry of `key` in t, added when absent; NULL when out of memory. */
struct cthread *conv_ctab_get(struct ctab *t, uint64_t key);
/* The entry of `key`, or NULL when absent. */
struct cthread *conv_ctab_find(const struct ctab *t, uint64_t key);
void conv_ctab_fini(struct ctab *t);
/* Class `c` on e's stack of open intervals: on top, or at the bottom;
 * -1 when out of memory. */
int conv_stk_push(struct cthread *e, uint32_t c, bool bottom);
/* A call of fn on top of e's open calls; -1 when out of memory. */
int conv_fr_push(struct cthread *e, const struct cframe *f);
/* The depth of the innermost open call of fn on e (its index + 1), or
 * 0 when fn is not open: its entry is not in the trace or the window. */
uint32_t conv_fr_find(const struct cthread *e, uint64_t fn);
/* The keys of the threads with intervals open at the window's start (a
 * copy: the table may grow while they are written). NULL: no memory. */
uint64_t *conv_open_threads(const struct ctab *t, size_t *n);

/* Field `idx` of ev as an integer (0 when absent or not one). */
uint64_t conv_ival(const struct strata_event *ev, int idx);
/* A kernel comm as one systrace word: no blank, quote, backslash or '='. */
void conv_comm(const struct strata_event *ev, int idx, char out[17]);
/* The name of thread `tid`, of process `pid` (its sub-trace's procname,
 * else its main thread's name); "" when unknown. */
const char *conv_thread_name(const struct conv *cv, uint32_t tid);
const char *conv_procname(const struct conv *cv, uint32_t pid);
/* The name of an interval open at the window's start, from its class:
 * a begin class, or an end class met without its begin. */
const char *conv_open_name(const struct conv *cv, uint32_t c);
/*
 * Go to the window's start: with `replay`, read the events before it for
 * the intervals that cross it (they begin at the window's edge), else
 * seek there. Returns what strata_iter_next gave for the first event at
 * or after the start (in *ev), or -1.
 */
int conv_to_window(struct conv *cv, struct strata_iter *it,
		   const struct strata_event **ev, bool replay);

/* Fill cv for trace ct and the window of fo (read without a time filter),
 * thread names read; 0, or -1 after one error line. */
int conv_setup(struct conv *cv, struct cli_trace *ct,
	       const struct cli_filter_opts *fo);
/* Free what conv_setup() and a run took (not cv->o, not cv->sys). */
void conv_fini(struct conv *cv);

/* The two formats (convert-chrome.c, convert-paje.c): the whole output
 * into cv->o; 0, or -1 when out of memory (said by the caller). Paje's
 * `pre` is a second iterator for its first pass, or NULL when the trace
 * has no intervals. */
int conv_chrome_run(struct conv *cv, struct strata_iter *it, struct cli_progress *pg);
int conv_paje_run(struct conv *cv, struct strata_iter *pre, struct strata_iter *it,
		  struct cli_progress *pg);

#endif /* STRATA_CLI_CONVERT_H */
