/* SPDX-License-Identifier: MIT */
/* Function probes: per function, its calls and the time spent in them, from libstrata-func's func:call_entry and func:call_exit (docs/profile.md). */
#ifndef STRATA_ANALYSIS_CALLS_H
#define STRATA_ANALYSIS_CALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <strata/reader.h>

/* One function (all processes' calls of it, by symbol and file). */
struct calls_entry {
	char *name;
	char *module;      /* the file it is in, or "" */
	uint64_t calls;    /* entries matched by their exits */
	uint64_t total_ns; /* inside it, its callees included; a recursive
			    * call's time counted once, in its outermost */
	uint64_t self_ns;  /* inside it, its callees' time excluded */
	uint64_t max_ns;   /* the longest call */
	uint64_t unwound;  /* calls left without their exit (longjmp, an
			    * exception): closed at an outer function's exit */
	uint32_t max_depth; /* the deepest a call of it was on its stack (1: the
			     * outermost probed call) */
};

/*
 * A call tree: one node per distinct path of calls from a thread's
 * outermost probed call (or, merged, of every thread's), named by
 * symbol. A node's total includes its callees; its self does not; the
 * selves of a tree add up to its root's total, the time the thread was
 * inside a probed call (`covered`). Partial: some of its calls were not
 * seen whole: entered before the trace or the window (closed from the
 * thread's first event), or never left by its end (closed there).
 */
struct calls_node {
	char *name;        /* the root: "" */
	uint64_t calls;
	uint64_t total_ns;
	uint64_t self_ns;
	bool partial;
	struct calls_node *child; /* most total time first */
	size_t nchild;
};

struct calls_thread {
	uint32_t pid, tid;
	uint64_t covered_ns; /* inside a probed call: the root's total */
	uint64_t span_ns;    /* its first event to its last (or the end) */
	struct calls_node root;
};

struct calls_result {
	struct calls_entry *entries; /* most total time first */
	size_t nentries;
	uint64_t calls;     /* every call matched */
	uint64_t unwound;   /* of which left without their exit */
	uint64_t open;      /* entered and not left by the end of the window */
	uint64_t stray;     /* exits whose entry is not in the window */
	uint64_t skipped;   /* not logged: deeper than the bound, or excluded
			     * (func:skipped, at the threads' exits) */
	uint64_t lost;      /* events_discarded of the user-space streams */
	unsigned threads;
	uint32_t max_depth;
	uint64_t partial;   /* calls closed at the window's edges, or left by
			     * a longjmp (unwound), in the tree */
	struct calls_node tree;      /* every thread's, merged by name */
	struct calls_thread *thread; /* each thread's, in order of first event */
	size_t nthread;
};

/*
 * Pair every func:call_entry and func:call_exit that `it` returns (the
 * caller's filter: window, pids, tids) per thread on a stack, and add up
 * each function's calls and times; symbolize through sy (NULL: addresses).
 * Returns 0, -ENOENT (no func:call_entry class: build with
 * -finstrument-functions, link libstrata-func, record with --functions),
 * -ENOMEM.
 */
int calls_compute(struct strata_trace *t, struct strata_iter *it,
		  struct strata_symbolizer *sy, struct calls_result **out);
void calls_free(struct calls_result *r); /* NULL ok */

/* ---- the call tree (calltree.c) ------------------------------------------- */

/* A thread's tree of calls by address, as calls.c builds it. */
struct ct_node {
	uint64_t fn;
	struct ct_node *parent, *first, *next; /* children: first, then next */
	uint64_t calls, incl, self; /* ticks */
	bool partial;
};

/* The child of n for fn, made when new; NULL: out of memory. */
struct ct_node *ct_child(struct ct_node *n, uint64_t fn);
/*
 * An exit of fn with no entry seen on a thread whose tree is root and
 * whose stack is empty: fn was entered before the thread's first event
 * (t0) and called everything seen so far. Those move under a new node
 * for fn, one partial call from t0 to ts. 0, or -1: out of memory.
 */
int ct_adopt(struct ct_node *root, uint64_t fn, uint64_t t0, uint64_t ts);
void ct_free(struct ct_node *root); /* its nodes, not the root itself */

/* The names of fn in pid, for the trees; NULL: out of memory. */
typedef const char *(*ct_namer)(void *ctx, uint32_t pid, uint64_t fn);
/* Add the tree `root` of pid (ticks into ns by to_ns) into out, by name:
 * the same path under two addresses is one node. 0, or -1: no memory. */
int ct_add(struct calls_node *out, const struct ct_node *root, uint32_t pid,
	   ct_namer name, void *ctx, uint64_t (*to_ns)(void *ctx, uint64_t t));
/* Add tree src into dst, by name. 0, or -1: out of memory. */
int ct_merge(struct calls_node *dst, const struct calls_node *src);
/* Sort every node's children, most total time first. */
void ct_sort(struct calls_node *n);
void ct_node_fini(struct calls_node *n);

/*
 * A depth-first walk of a named tree without recursion (a tree is as deep
 * as the traced program's calls): ct_walk_next() returns each node below
 * the root twice, entered (before its children) and left (after), and
 * the root last, left. The entered node's depth below the root is
 * w->n - 2 (0: a root's child); ct_walk_skip() after an enter passes
 * over its children. 1 with *node and *enter; 0: done; -1: no memory.
 */
struct ct_walk {
	struct ct_walk_frame {
		const struct calls_node *n;
		size_t next; /* its next child to enter */
	} *st;
	size_t n, cap;
};
int ct_walk_init(struct ct_walk *w, const struct calls_node *root); /* 0, -1 */
int ct_walk_next(struct ct_walk *w, const struct calls_node **node, bool *enter);
void ct_walk_skip(struct ct_walk *w);
void ct_walk_fini(struct ct_walk *w);

#endif /* STRATA_ANALYSIS_CALLS_H */
