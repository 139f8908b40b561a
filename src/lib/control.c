/* SPDX-License-Identifier: MIT */
/* strata_enable() / strata_disable(): switch events and subsystems on and off by name at run time. */
#include <errno.h>
#include <fnmatch.h>
#include <string.h>

#include <strata/strata.h>

#include "lib/registry.h"

struct control {
	const char *subsys_glob; /* NUL-terminated copy of the part before ':' */
	const char *event_glob;  /* after ':'; NULL for a bare subsystem pattern */
	int on;
	int matched;
	uint64_t majors; /* major bits to flip after the walk */
};

#define CONTROL_MAX_PATTERN 256

static int match_subsys(const struct strata_subsys_desc *s, void *arg)
{
	struct control *c = arg;

	if (s->major < 1 || s->major > STRATA_MAJOR_MAX)
		return 0;
	if (!fnmatch(c->subsys_glob, s->name, 0)) {
		c->majors |= STRATA_MAJOR_BIT(s->major);
		c->matched++;
	}
	return 0;
}

static int match_event(const struct strata_event_desc *e, void *arg)
{
	struct control *c = arg;

	if (e->major < 1 || e->major > STRATA_MAJOR_MAX ||
	    fnmatch(c->subsys_glob, e->subsystem, 0) ||
	    fnmatch(c->event_glob, e->name, 0))
		return 0;
	if (e->enabled) {
		/* Relaxed: the tracepoint reads the flag with a plain volatile
		 * load and orders nothing after it; an event racing with this
		 * store is logged or not, either is correct. */
		__atomic_store_n(e->enabled, (uint8_t)(c->on ? 1 : 0),
				 __ATOMIC_RELAXED);
	} else if (!c->on) {
		/* No flag (strata-gen --no-event-flags): only its subsystem's
		 * bit controls it, and disabling that would hit its siblings. */
		return 0;
	}
	/* Enabling an event also makes sure its subsystem is on, so that it
	 * fires (docs/dsl.md, "Enabling events"). */
	if (c->on)
		c->majors |= STRATA_MAJOR_BIT(e->major);
	c->matched++;
	return 0;
}

/*
 * Apply `pattern`: "subsys:event" globs set per-event flags, a bare
 * subsystem glob flips major bits. Not async-signal-safe (the registry
 * lock). Returns the number of events or subsystems matched, or -EINVAL.
 */
static int control(const char *pattern, int on)
{
	char buf[CONTROL_MAX_PATTERN];
	struct control c;
	const char *colon;
	size_t len;
	int ret;

	if (!pattern || !pattern[0])
		return -EINVAL;
	len = strlen(pattern);
	if (len >= sizeof(buf))
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	c.on = on;
	memcpy(buf, pattern, len + 1);
	colon = strchr(pattern, ':');
	if (colon) {
		size_t sl = (size_t)(colon - pattern);

		if (!sl || !colon[1] || strchr(colon + 1, ':'))
			return -EINVAL;
		buf[sl] = 0;
		c.event_glob = buf + sl + 1;
	}
	c.subsys_glob = buf;

	if (c.event_glob)
		ret = strata_registry_foreach_copy(match_event, &c);
	else
		ret = strata_registry_foreach_subsys(match_subsys, &c);
	if (ret)
		return ret < 0 ? ret : -EINVAL;
	if (c.majors) {
		if (on)
			strata_enable_majors(c.majors);
		else
			strata_disable_majors(c.majors);
	}
	return c.matched;
}

STRATA_API int strata_enable(const char *pattern)
{
	return control(pattern, 1);
}

STRATA_API int strata_disable(const char *pattern)
{
	return control(pattern, 0);
}
