/* SPDX-License-Identifier: MIT */
/* strata view: what the files of the API (summary.c, window.c, events.c, filter.c) share and the rest of the view does not use. */
#ifndef STRATA_VIEW_API_H
#define STRATA_VIEW_API_H

#include "json.h"

/* A 400's body for a field expression the reader refused: {"error": "what:
 * msg"} into err. Returns 400. */
int vw_bad_expr(struct vw_buf *err, const char *what, const char *msg);

#endif /* STRATA_VIEW_API_H */
