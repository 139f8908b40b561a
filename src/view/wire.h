/* SPDX-License-Identifier: MIT */
/* strata view's api/window answer, written once by the walk over the model (window.c, flows.c) in either of its two forms: JSON, or the compact binary of docs/view.md ("The binary window"). */
#ifndef STRATA_VIEW_WIRE_H
#define STRATA_VIEW_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "json.h"

/* The binary form's tables, in the order the answer holds them. Each
 * list of the JSON ("slices", "marks"...) is a row of one of them. */
enum wire_table {
	WT_SLICES,  /* the CPUs' "slices", then the threads' "running" */
	WT_STATES,  /* the threads' "states" */
	WT_IVS,     /* the threads' "intervals" */
	WT_MARKS,   /* the CPUs' "marks", then the threads' */
	WT_ARROWS,  /* one row: "arrows" */
	WT_FLOWS,   /* one row: "flows" (their keys in the preamble) */
	WT_N
};

#define WIRE_MAGIC "SVWB"
#define WIRE_VERSION 1u
#define WIRE_COLS 8  /* columns of a table at most */
#define WIRE_HEAD (16 + 8 * WT_N) /* bytes before the preamble */

/* The answer being written. JSON goes straight into o; the binary form
 * is gathered per table and column and put into o by wire_end. Out of
 * memory is o's (or a column's) `failed`, checked once by the caller. */
struct wire {
	struct vw_buf *o;
	bool bin;
	unsigned items;          /* objects in the open array ("cpus", "threads") */
	uint32_t n;              /* records in the open list */
	enum wire_table tab;     /* the open list's table */
	/* binary only */
	struct wire_tab {
		struct vw_buf counts; /* u32 records per row */
		struct vw_buf col[WIRE_COLS];
		uint32_t rows, recs;
	} t[WT_N];
	struct vw_buf tids, keys; /* the preamble's lists, as JSON text */
	uint64_t t0, t1, events, arrows_left, flows_left;
	unsigned w, ncpus;
	bool exact, filtered;
};

void wire_init(struct wire *e, struct vw_buf *o, bool bin);
void wire_fini(struct wire *e);

/* The answer's frame, in this order: head, then per CPU wire_cpu, its
 * lists, wire_obj_end; wire_threads, then per thread row likewise;
 * wire_rows_end; the arrows' list and wire_left; the flows' list and
 * wire_left; wire_end. */
void wire_head(struct wire *e, uint64_t t0, uint64_t t1, unsigned w, bool exact,
	       bool filtered, uint64_t events);
void wire_cpu(struct wire *e, unsigned cpu);
void wire_thread(struct wire *e, uint32_t tid);
void wire_obj_end(struct wire *e);
void wire_threads(struct wire *e);
/* After the last thread's object. */
void wire_rows_end(struct wire *e);
/* A list named key (the JSON's), a row of table tab. */
void wire_list(struct wire *e, enum wire_table tab, const char *key);
void wire_list_end(struct wire *e);
/* "arrows_left" or "flows_left", after that list's end. */
void wire_left(struct wire *e, const char *key, uint64_t n);
/* The JSON's closing brace, or the whole binary answer into o. */
void wire_end(struct wire *e);

/* The records, one per call, into the open list; x are pixels from the
 * window's start, times ns since the trace's. */
/* A slice or running run; px: whole pixels (the JSON writes integers). */
void wire_slice(struct wire *e, double x0, double x1, int32_t id, int mixed, bool px);
void wire_state(struct wire *e, double x0, double x1, int state, int mixed, uint64_t from,
		uint64_t to);
void wire_iv(struct wire *e, double x0, double x1, uint32_t depth, uint32_t kind,
	     uint64_t from, uint64_t to, bool exact);
void wire_mark(struct wire *e, unsigned x, uint32_t span, uint32_t count, uint64_t ts,
	       int32_t cls);
/* run: -1 when the wakee never ran again in the trace. */
void wire_arrow(struct wire *e, double x0, double x1, int32_t waker, uint32_t cpu,
		int32_t wakee, uint64_t t, int64_t run);
/* An end not in the trace: tid -1, CPU 0, time -1. key: the decimal text. */
void wire_flow(struct wire *e, double x0, double x1, int32_t stid, uint32_t scpu,
	       int32_t rtid, uint32_t rcpu, int64_t ts, int64_t tr, const char *key);

#endif /* STRATA_VIEW_WIRE_H */
