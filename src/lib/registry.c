/* SPDX-License-Identifier: MIT */
/* The registry of event descriptors the metadata is written from. */
#define _GNU_SOURCE /* PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "common/compiler.h"
#include "common/log.h"
#include "lib/registry.h"
#include "lib/session.h"

pthread_mutex_t registry_lock = LIB_LOCK_INITIALIZER;
static const struct strata_event_desc **events;
static size_t nevents, cap_events;
static const struct strata_subsys_desc **subsys;
static size_t nsubsys, cap_subsys;
/* Bumped with release after an event is registered or a blob id marked;
 * strata_registry_generation()'s acquire load pairs with it: whoever sees
 * the new generation (the session helper, the consumer's metadata) finds
 * what it stands for. */
static uint64_t generation;
/* Other copies of registered events (same vocabulary, another library). */
static const struct strata_event_desc **aliases;
static size_t naliases, cap_aliases;

static int grow(void *arrp, size_t *cap, size_t need)
{
	void **arr = arrp;
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *p = realloc(*arr, n * sizeof(void *));
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

static const struct strata_event_desc *lookup_locked(uint8_t major,
						     uint16_t minor)
{
	for (size_t i = 0; i < nevents; i++)
		if (events[i]->major == major && events[i]->minor == minor)
			return events[i];
	return NULL;
}

/* Same vocabulary: same names and the same fields (the same generated
 * header compiled into two libraries of one process). */
static int same_event(const struct strata_event_desc *a,
		      const struct strata_event_desc *b)
{
	if (strcmp(a->subsystem, b->subsystem) || strcmp(a->name, b->name) ||
	    a->nfields != b->nfields)
		return 0;
	for (unsigned i = 0; i < a->nfields; i++)
		if (strcmp(a->fields[i].name, b->fields[i].name) ||
		    a->fields[i].type != b->fields[i].type ||
		    a->fields[i].count != b->fields[i].count)
			return 0;
	return 1;
}

/*
 * Two vocabularies in one process that give the same id to different
 * events cannot share a per-CPU ring: an event carries its id only, so one
 * of them would be decoded with the other's description. The first
 * registered keeps the id; the later one is refused and, where it has
 * per-event flags, switched off for good (it is not in the registry, so
 * strata_enable() cannot reach it): its events are never logged rather
 * than misread. Across processes there is no conflict: each process has
 * its own sub-trace and metadata (format.md §1).
 */
STRATA_API int strata_register(const struct strata_subsys_desc *s,
			       const struct strata_event_desc *const *evs,
			       size_t n)
{
	int ret = 0;
	int added = 0;

	pthread_mutex_lock(&registry_lock);
	if (s) {
		size_t i;
		for (i = 0; i < nsubsys; i++)
			if (subsys[i]->major == s->major)
				break;
		if (i == nsubsys) {
			if (grow(&subsys, &cap_subsys, nsubsys + 1)) {
				ret = -ENOMEM;
				goto out;
			}
			subsys[nsubsys++] = s;
			added = 1;
		} else if (strcmp(subsys[i]->name, s->name)) {
			slog("major %u is subsystem '%s'; '%s' uses it too: its "
			     "events are not recorded", s->major, subsys[i]->name,
			     s->name);
		}
	}
	if (grow(&events, &cap_events, nevents + n) ||
	    grow(&aliases, &cap_aliases, naliases + n)) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct strata_event_desc *old =
			lookup_locked(evs[i]->major, evs[i]->minor);
		if (old == evs[i])
			continue;
		if (!old) {
			events[nevents++] = evs[i];
			added = 1;
		} else if (same_event(old, evs[i])) {
			/* The same event from another copy of its header:
			 * strata_enable() must reach that copy's flag too. */
			size_t k;
			for (k = 0; k < naliases && aliases[k] != evs[i]; k++)
				;
			if (k == naliases)
				aliases[naliases++] = evs[i];
			if (evs[i]->enabled && old->enabled)
				*evs[i]->enabled = *old->enabled;
		} else {
			if (evs[i]->enabled)
				*evs[i]->enabled = 0;
			slog("%s:%s has the id %u:%u of %s:%s: not recorded",
			     evs[i]->subsystem, evs[i]->name, evs[i]->major,
			     evs[i]->minor, old->subsystem, old->name);
			ret = -EEXIST;
		}
	}
	control_registered(evs, n); /* triggers armed before the first firing */
out:
	if (added)
		strata_add_fetch_release(&generation, 1); /* see there */
	pthread_mutex_unlock(&registry_lock);
	return ret;
}

STRATA_API const struct strata_event_desc *strata_event_lookup(uint8_t major,
							       uint16_t minor)
{
	pthread_mutex_lock(&registry_lock);
	const struct strata_event_desc *d = lookup_locked(major, minor);
	pthread_mutex_unlock(&registry_lock);
	return d;
}

int strata_registry_foreach(int (*fn)(const struct strata_event_desc *, void *),
			    void *arg)
{
	int ret = 0;

	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < nevents && !ret; i++)
		ret = fn(events[i], arg);
	pthread_mutex_unlock(&registry_lock);
	return ret;
}

int strata_registry_foreach_copy(
	int (*fn)(const struct strata_event_desc *, void *), void *arg)
{
	int ret = 0;

	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < nevents && !ret; i++)
		ret = fn(events[i], arg);
	for (size_t i = 0; i < naliases && !ret; i++)
		ret = fn(aliases[i], arg);
	pthread_mutex_unlock(&registry_lock);
	return ret;
}

int strata_registry_foreach_subsys(
	int (*fn)(const struct strata_subsys_desc *, void *), void *arg)
{
	int ret = 0;

	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < nsubsys && !ret; i++)
		ret = fn(subsys[i], arg);
	pthread_mutex_unlock(&registry_lock);
	return ret;
}

uint64_t strata_registry_generation(void)
{
	return strata_load_acquire(&generation);
}

/* Open-addressing set of ids, filled lock-free (a slot goes from 0 to
 * id + 1 once, by CAS). 1024 distinct blob ids per process is plenty;
 * past that, blobs are declared as raw words. The CAS is a release, and
 * every load of a slot (the CAS's failure too) an acquire that pairs
 * with it. */
#define BLOB_SLOTS REGISTRY_BLOB_SLOTS
static uint32_t blob_ids[BLOB_SLOTS];

void registry_mark_blob(uint32_t id)
{
	uint32_t h = (id * 2654435761u) & (BLOB_SLOTS - 1);

	for (int i = 0; i < BLOB_SLOTS; i++, h = (h + 1) & (BLOB_SLOTS - 1)) {
		uint32_t cur = strata_load_acquire(&blob_ids[h]);
		if (cur == id + 1)
			return;
		if (cur == 0 &&
		    strata_cas_release_acquire(&blob_ids[h], &cur, id + 1)) {
			/* a session's helper sends it with the descriptors;
			 * the slot before the generation (see there) */
			strata_add_fetch_release(&generation, 1);
			return;
		}
		if (cur == id + 1)
			return;
	}
}

int registry_foreach_blob(int (*fn)(unsigned slot, uint32_t id, void *arg),
			  void *arg)
{
	int ret = 0;

	for (unsigned h = 0; h < BLOB_SLOTS && !ret; h++) {
		uint32_t cur = strata_load_acquire(&blob_ids[h]);
		if (cur)
			ret = fn(h, cur - 1, arg);
	}
	return ret;
}

int registry_is_blob(uint32_t id)
{
	uint32_t h = (id * 2654435761u) & (BLOB_SLOTS - 1);

	for (int i = 0; i < BLOB_SLOTS; i++, h = (h + 1) & (BLOB_SLOTS - 1)) {
		uint32_t cur = strata_load_acquire(&blob_ids[h]);
		if (cur == id + 1)
			return 1;
		if (cur == 0)
			return 0;
	}
	return 0;
}
