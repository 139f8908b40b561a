/* SPDX-License-Identifier: MIT */
/* The registry of event descriptors the metadata is written from. */
#ifndef STRATA_LIB_REGISTRY_H
#define STRATA_LIB_REGISTRY_H

#include <stdint.h>

#include <strata/events.h>

/* Call fn on every registered event, in registration order, under the
 * registry lock (fn must not register). Stops at and returns the first
 * non-zero value fn returns; 0 otherwise. */
int strata_registry_foreach(int (*fn)(const struct strata_event_desc *, void *),
			    void *arg);

/* Same, also visiting the other copies of each event (the same vocabulary
 * registered again by another library): for per-event flags. */
int strata_registry_foreach_copy(
	int (*fn)(const struct strata_event_desc *, void *), void *arg);

/* Same over subsystems. */
int strata_registry_foreach_subsys(
	int (*fn)(const struct strata_subsys_desc *, void *), void *arg);

/* Bumped by every registration that added something: the consumer
 * rewrites the metadata when it changes. */
uint64_t strata_registry_generation(void);

/* Ids logged with strata_log_blob() (lock-free set, async-signal-safe;
 * a new one bumps the generation). */
#define REGISTRY_BLOB_SLOTS 1024
void registry_mark_blob(uint32_t id);
int registry_is_blob(uint32_t id);
/* Call fn on each, with its slot (< REGISTRY_BLOB_SLOTS, never reused),
 * until it returns non-zero, which is returned. */
int registry_foreach_blob(int (*fn)(unsigned slot, uint32_t id, void *arg),
			  void *arg);

#endif /* STRATA_LIB_REGISTRY_H */
