/* SPDX-License-Identifier: MIT */
/* strata view: what the files of the API (summary.c, window.c, events.c, filter.c, breakdown.c) share and the rest of the view does not use. */
#ifndef STRATA_VIEW_API_H
#define STRATA_VIEW_API_H

#include "view.h"

/* A 400's body for a field expression the reader refused: {"error": "what:
 * msg"} into err. Returns 400. */
int vw_bad_expr(struct vw_buf *err, const char *what, const char *msg);

/* Ticks th spent in each state (analysis.h's bd_state) from its first
 * stretch up to tick x: the block's sums, then at most a block of
 * stretches (view.h), so a binary search and VW_ST_BLOCK steps at most
 * (window.c). */
void vw_state_upto(const struct vw_thread *th, uint64_t x, uint64_t acc[BD_NSTATES]);

#endif /* STRATA_VIEW_API_H */
