/* SPDX-License-Identifier: MIT */
/* The function probe events libstrata-func.so writes and `strata profile` reads (docs/profile.md). */
#ifndef STRATA_FUNC_EVENTS_H
#define STRATA_FUNC_EVENTS_H

/* The major class below the lock tracer's (src/locks/locks.h: 62), for
 * the same reason: high, so that it rarely meets a program's own DSL
 * numbering; a clash is refused by strata_register() and the probes then
 * log nothing (docs/profile.md, "Limits"). */
#define FUNC_MAJOR 61

enum func_minor {
	FUNC_ENTRY = 1, /* fn, site: fn was called from the instruction at site */
	FUNC_EXIT = 2,  /* fn: fn returns */
	FUNC_SKIPPED = 3, /* deeper, excluded: this thread's calls not logged so
			   * far, logged at its exit (its probes balance) */
};

#endif /* STRATA_FUNC_EVENTS_H */
