/* SPDX-License-Identifier: MIT */
/* strata view: what the files of the API (summary.c, window.c, events.c, filter.c, breakdown.c, stats.c) share and the rest of the view does not use. */
#ifndef STRATA_VIEW_API_H
#define STRATA_VIEW_API_H

#include "view.h"

/* The events of [t0, t1] (ticks) in the merged order, from an iterator
 * (fill_exact, count_exact, api/breakdown's system calls): seeked to t0
 * by vw_range_init. A damaged stream is read as written, its times out
 * of order (reader.h), and a flipped bit can throw a packet's times past
 * the trace's end: an event past the range ends it only after a run of
 * them, which costs a sound trace 64 events more, a damaged one up to a
 * packet's worth. */
struct vw_range {
	struct strata_iter *it;
	uint64_t t0, t1;
	unsigned past, patience;
};
void vw_range_init(struct vw_range *r, const struct vw_model *m, struct strata_iter *it,
		   uint64_t t0, uint64_t t1);
/* The range's next event into *ev: true, or false at its end. */
bool vw_range_next(struct vw_range *r, const struct strata_event **ev);

/* A 400's body for a field expression the reader refused: {"error": "what:
 * msg"} into err. Returns 400. */
int vw_bad_expr(struct vw_buf *err, const char *what, const char *msg);

/* Ticks th spent in each state (analysis.h's bd_state) from its first
 * stretch up to tick x: the block's sums, then at most a block of
 * stretches (view.h), so a binary search and VW_ST_BLOCK steps at most
 * (window.c). */
void vw_state_upto(const struct vw_thread *th, uint64_t x, uint64_t acc[BD_NSTATES]);

/* Where api/list starts (docs/view.md, "api/list"): at the first event
 * at or after time t (ns); or at the event of stream `stream` at byte
 * `offset` listed at t, when stream >= 0 (`before` lists those before
 * it, `after` it and those after it); or, when index >= 0, at the
 * trace's event number index as the bins place it. */
struct vw_list_at {
	uint64_t t;
	int64_t index;           /* -1: from t */
	int64_t stream;          /* -1: none */
	uint64_t offset;
	unsigned before, after;
};

/* The list from `at` under q (events.c). Returns 0, 400 (a bad
 * expression, why in out), -ENOMEM. */
int vw_api_list_at(struct vw_model *m, const struct vw_list_at *at, const struct vw_filter *q,
		   struct vw_buf *out);

/* One event, the one of stream `stream` at byte `offset` listed at time t
 * (ns), with its call chain symbolized when it is a sample (events.c,
 * docs/view.md "api/event"). Returns 0, 400 (no such stream), 404 (no
 * such event there), -ENOMEM. */
int vw_api_event(struct vw_model *m, uint64_t t, uint32_t stream, uint64_t offset,
		 struct vw_buf *out);

#endif /* STRATA_VIEW_API_H */
