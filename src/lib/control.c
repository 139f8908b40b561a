/* SPDX-License-Identifier: MIT */
/* strata_enable() / strata_disable(): switch events and subsystems on and off by name at run time. */
#define _GNU_SOURCE /* PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "lib/patch.h"
#include "lib/registry.h"
#include "lib/session.h"

struct control {
	const char *subsys_glob; /* NUL-terminated copy of the part before ':' */
	const char *event_glob;  /* after ':'; NULL for a bare subsystem pattern */
	int on;
	int matched;
	uint64_t majors; /* major bits to flip after the walk */
};

#define CONTROL_MAX_PATTERN 256

static void flag_store(volatile uint8_t *flag, uint8_t v);
static int is_trigger(uint8_t v);

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
		flag_store(e->enabled, (uint8_t)(c->on ? 1 : 0));
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
	patch_follow(); /* flags changed without a major: their sites */
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

/* ---- the major mask, and start/stop triggers (docs/record.md, "Triggers")
 *
 * Barrelfish could start and stop tracing on chosen events. A trigger is an
 * event with a per-event flag (strata-gen's default) whose flag holds
 * STRATA_FLAG_START or STRATA_FLAG_STOP instead of 1: the generated code
 * tests `flag != 1` where it tested `!flag`, the same instruction, so
 * triggers cost enabled events nothing; only a flag that is not 1 leads to
 * strata_event_fire().
 *
 * STRATA_START_ON=GLOB (`strata record --start-on SUB:EVENT`) arms the
 * gate: until a start trigger fires, the mask holds only the triggers'
 * majors, and the other events of those majors are held off by their
 * flags (what they should be is kept in `held`). Firing opens the gate
 * with plain stores (a trigger may fire in a signal handler): the held
 * flags get their values back and the mask becomes what it would have
 * been. The trigger event itself is recorded: it is the trace's first.
 * STRATA_STOP_ON=GLOB: the stop trigger is recorded, then the mask is 0
 * for good. Each is one-shot and per process (record.md).
 *
 * Every wholesale write of the mask goes through mask_set() so that the
 * gate holds whatever else changes it (a session's state, strata_start()).
 */

enum { GATE_OPEN, GATE_ARMED, GATE_STOPPED };

#define HELD_MAX 1024

/*
 * `gate` leaves GATE_ARMED once: to OPEN by gate_open()'s acq_rel CAS, or
 * to STOPPED by a release store (strata_event_fire(), on any thread,
 * possibly in a signal handler). Its loads are acquire and pair with
 * those: whoever sees it moved sees the trigger's flag claimed first.
 * `nheld` is stored with release once held[nheld] is filled (under the
 * registry lock) and loaded with acquire by gate_open(), on the thread
 * that fires: the entries it walks are whole.
 */
static int gate;               /* GATE_* */
static uint64_t want_mask;     /* the mask the gate stands for */
static uint64_t trig_majors;   /* majors of the start triggers */
static char start_pat[CONTROL_MAX_PATTERN], stop_pat[CONTROL_MAX_PATTERN];
static struct {
	volatile uint8_t *flag;
	uint8_t want;
} held[HELD_MAX];
static unsigned nheld;
static pthread_once_t policy_once = PTHREAD_ONCE_INIT;

static void policy_read(void)
{
	struct lib_env env;
	const char *s, *p;

	lib_env_read(&env);
	s = env.start_on;
	p = env.stop_on;

	if (s && *s && strlen(s) < sizeof(start_pat)) {
		memcpy(start_pat, s, strlen(s) + 1);
		gate = GATE_ARMED;
	}
	if (p && *p && strlen(p) < sizeof(stop_pat))
		memcpy(stop_pat, p, strlen(p) + 1);
}

static void policy_init(void)
{
	pthread_once(&policy_once, policy_read);
}

/* The mask as the gate allows it. */
static uint64_t gated(uint64_t m)
{
	int g = strata_load_acquire(&gate);
	return g == GATE_OPEN ? m
	       : g == GATE_ARMED ? strata_load_relaxed(&trig_majors) : 0;
}

/*
 * Static branches (docs/patch.md) follow the mask and the flags: a site
 * is a jump to its mask test while its event could fire, a no-op
 * otherwise. Every path below that may enable something patches after
 * its store and before it returns, so an event logged after the call
 * returns reaches the test; one that disables patches after its store,
 * the test refusing the events in between. Paths that must stay
 * async-signal-safe (gate_open(), strata_event_fire()) patch nothing:
 * only enable what control_site_wanted() already counted as on.
 */
void mask_set(uint64_t m)
{
	policy_init();
	strata_store_relaxed(&want_mask, m);
	strata_mask = gated(m);
	patch_follow();
}

uint64_t mask_wanted(void)
{
	policy_init();
	return strata_load_relaxed(&want_mask);
}

STRATA_API void strata_enable_majors(uint64_t majors)
{
	majors &= ~STRATA_MAJOR_BIT(63);
	policy_init();
	strata_or_relaxed(&want_mask, majors);
	strata_or_relaxed(&strata_mask, gated(majors));
	patch_follow();
}

STRATA_API void strata_disable_majors(uint64_t majors)
{
	policy_init();
	strata_and_relaxed(&want_mask, ~majors);
	if (strata_load_acquire(&gate) == GATE_OPEN)
		strata_and_relaxed(&strata_mask, ~majors);
	patch_follow();
}

/*
 * Whether a site of `major` (and event flag `flag`, NULL: none) must be
 * a jump: whenever its event may fire now or without a patch later. A
 * superset is correct (the mask test still refuses), a subset loses
 * events; so the majors wanted whatever the gate, and while the gate is
 * armed every flag counts as on, because gate_open() restores held flags
 * without patching. Lock-free loads only: the patcher calls it under its
 * own lock.
 */
int control_site_wanted(unsigned major, const volatile uint8_t *flag)
{
	uint64_t on = strata_load_relaxed(&want_mask) | strata_load_relaxed(&strata_mask);

	if (major > 62 || !(on & STRATA_MAJOR_BIT(major)))
		return major > 62;
	return !flag || strata_load_relaxed(flag) != 0 ||
	       strata_load_acquire(&gate) == GATE_ARMED;
}

STRATA_API uint64_t strata_majors(void)
{
	return strata_load_relaxed(&strata_mask);
}

static int pattern_matches(const char *pat, const struct strata_event_desc *e)
{
	char buf[CONTROL_MAX_PATTERN];
	const char *colon = strchr(pat, ':');

	if (!pat[0] || !colon)
		return 0;
	memcpy(buf, pat, (size_t)(colon - pat));
	buf[colon - pat] = 0;
	return !fnmatch(buf, e->subsystem, 0) && !fnmatch(colon + 1, e->name, 0);
}

static int is_held(volatile uint8_t *flag)
{
	for (unsigned i = 0; i < nheld; i++)
		if (held[i].flag == flag)
			return (int)i;
	return -1;
}

/* A flag written by strata_enable/disable: an armed trigger keeps its
 * role; a held flag changes what it gets back when the gate opens. */
static void flag_store(volatile uint8_t *flag, uint8_t v)
{
	if (is_trigger(strata_load_relaxed(flag)))
		return;
	if (strata_load_acquire(&gate) == GATE_ARMED) {
		int i = is_held(flag);
		if (i >= 0) {
			held[i].want = v;
			return;
		}
	}
	strata_store_relaxed(flag, v);
}

/* -e patterns of a session (STRATA_ENABLE, or the daemon's state file),
 * applied to each event as it registers, so that an event fires as told
 * from its first call; set and cleared by lib/session.c. */
pthread_mutex_t control_enable_lock = LIB_LOCK_INITIALIZER;
static char enable_pats[1024];
static int enable_on;

void control_enable_patterns(const char *pats, int on)
{
	pthread_mutex_lock(&control_enable_lock);
	snprintf(enable_pats, sizeof(enable_pats), "%s", pats ? pats : "");
	enable_on = on && enable_pats[0];
	pthread_mutex_unlock(&control_enable_lock);
}

/* What the patterns say of `e`: 1 named (its flag on, its major on),
 * 2 its subsystem named (major on), 0 not named (its flag off). */
static int enable_match(const struct strata_event_desc *e)
{
	char buf[sizeof(enable_pats)], *save = NULL;
	int how = 0;

	memcpy(buf, enable_pats, sizeof(buf));
	for (char *p = strtok_r(buf, ",", &save); p && how != 1;
	     p = strtok_r(NULL, ",", &save)) {
		if (strchr(p, ':'))
			how = pattern_matches(p, e) ? 1 : how;
		else if (!fnmatch(p, e->subsystem, 0))
			how = 2;
	}
	return how;
}

static void enable_registered(const struct strata_event_desc *const *evs, size_t n)
{
	uint64_t majors = 0;

	pthread_mutex_lock(&control_enable_lock);
	for (size_t i = 0; enable_on && i < n; i++) {
		const struct strata_event_desc *e = evs[i];
		if (e->major < 1 || e->major > STRATA_MAJOR_MAX)
			continue;
		int how = enable_match(e);
		if (how)
			majors |= STRATA_MAJOR_BIT(e->major);
		if (e->enabled && how != 2)
			flag_store(e->enabled, how == 1);
	}
	pthread_mutex_unlock(&control_enable_lock);
	if (majors)
		strata_enable_majors(majors);
	else
		patch_follow(); /* flags may have been turned off */
}

/* An armed trigger's flag keeps its role whatever else is asked. */
static int is_trigger(uint8_t v)
{
	return v == STRATA_FLAG_START || v == STRATA_FLAG_STOP;
}

void control_registered(const struct strata_event_desc *const *evs, size_t n)
{
	policy_init();
	enable_registered(evs, n);
	if (!start_pat[0] && !stop_pat[0])
		return;
	int armed = strata_load_acquire(&gate) == GATE_ARMED;
	/* triggers first: their majors decide which siblings are held */
	for (size_t i = 0; i < n; i++) {
		const struct strata_event_desc *e = evs[i];
		if (!e->enabled || e->major < 1 || e->major > STRATA_MAJOR_MAX)
			continue;
		if (armed && pattern_matches(start_pat, e)) {
			strata_store_relaxed(e->enabled, STRATA_FLAG_START);
			strata_or_relaxed(&trig_majors,
					  STRATA_MAJOR_BIT(e->major));
		} else if (pattern_matches(stop_pat, e)) {
			strata_store_relaxed(e->enabled, STRATA_FLAG_STOP);
		}
	}
	if (!armed)
		return;
	uint64_t majors = strata_load_relaxed(&trig_majors);
	for (size_t i = 0; i < n && nheld < HELD_MAX; i++) {
		const struct strata_event_desc *e = evs[i];
		if (!e->enabled || !(majors & STRATA_MAJOR_BIT(e->major & 63)) ||
		    is_trigger(*e->enabled) || is_held(e->enabled) >= 0)
			continue;
		held[nheld].flag = e->enabled;
		held[nheld].want = *e->enabled;
		strata_store_release(&nheld, nheld + 1); /* see `gate` */
		strata_store_relaxed(e->enabled, 0);
	}
	strata_mask = majors;
	patch_follow();
}

/* The start trigger fired: the held flags get their values back and the
 * mask what it stands for. Async-signal-safe (plain stores). */
static void gate_open(void)
{
	int g = GATE_ARMED;
	/* once; see `gate` for the pairs of both */
	if (!strata_cas_acq_rel(&gate, &g, GATE_OPEN))
		return;
	for (unsigned i = 0, n = strata_load_acquire(&nheld); i < n; i++)
		strata_store_relaxed(held[i].flag, held[i].want);
	strata_mask = gated(strata_load_relaxed(&want_mask));
}

STRATA_API int strata_event_fire(volatile uint8_t *flag)
{
	uint8_t v = strata_load_relaxed(flag);

	if (v != STRATA_FLAG_START && v != STRATA_FLAG_STOP)
		return v != 0;
	/* once: the first thread to fire it acts */
	if (strata_cas_relaxed(flag, &v, 1)) {
		if (v == STRATA_FLAG_START) {
			gate_open();
		} else { /* stop, for good: this event is the last */
			strata_store_release(&gate, GATE_STOPPED); /* `gate` */
			strata_mask = 0;
		}
	}
	return 1;
}
