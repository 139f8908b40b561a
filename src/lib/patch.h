/* SPDX-License-Identifier: MIT */
/* Static branches: the library's side of tracepoint sites (docs/patch.md). */
#ifndef STRATA_LIB_PATCH_H
#define STRATA_LIB_PATCH_H

#include <stdint.h>

/*
 * Patch every registered site to what control_site_wanted() says of it.
 * Called after each change of the mask or of a flag (lib/control.c).
 * Any thread; a call from a signal handler that interrupted the patcher
 * on its own thread is run by that patcher when it resumes (so returns
 * before its sites are patched). Nothing to return: where a patch fails
 * the sites stay jumps to the mask test, which is correct.
 */
void patch_follow(void);

/* lib/control.c: whether a site of `major`/`flag` must jump (see there). */
int control_site_wanted(unsigned major, const volatile uint8_t *flag);

/* lib/options.c: STRATA_PATCH=0 asks for the mask test at every site. */
int env_patch_off(void);

#endif /* STRATA_LIB_PATCH_H */
