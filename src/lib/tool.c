/* SPDX-License-Identifier: MIT */
/* The internals the strata tool uses, behind src/common/tool.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "common/tool.h"
#include "lib/clock.h"
#include "lib/guard.h"
#include "lib/session.h"
#include "lib/statedump.h"

int tool_clock_choose(const char *name)
{
	if (strcmp(name, "tsc") && strcmp(name, "mono"))
		return -EINVAL;
	/* read by clock_init(), here and in every process */
	setenv("STRATA_CLOCK", name, 1);
	clock_init(); /* no ring exists yet */
	return !strcmp(name, "tsc") && !strata_clock_tsc ? -ENODEV : 0;
}

int tool_options_check_env(void)
{
	struct strata_options o;

	/* the output is the tool's, not the environment's */
	if (strata_options_from_env(&o) || (o.output = ".", options_check(&o)))
		return -EINVAL;
	return 0;
}

void tool_statedump_system(void)
{
	statedump_system();
}

int tool_guard_session_file(const char *dir, char *path, size_t n)
{
	return (size_t)snprintf(path, n, "%s/" GUARD_SESSION_FILE, dir) >= n ?
		-ENAMETOOLONG : 0;
}
