/* SPDX-License-Identifier: MIT */
/* State dump of this process as strata records (src/lib/statedump.c). */
#ifndef STRATA_LIB_STATEDUMP_H
#define STRATA_LIB_STATEDUMP_H

#include <stdbool.h>
#include <stdint.h>

/* Log strata:statedump begin, strata:process, one strata:thread_name per
 * thread, one strata:map per named mapping, strata:statedump end; unless
 * nothing is enabled (STRATA_MAJORS=none), or `unmasked`. Returns whether
 * it did. */
bool statedump_self(bool unmasked);

/* Log strata:thread_name for thread `tid` (the calling thread) now: the
 * ring's hook for a thread's first event (ring_thread_hook), so that a
 * thread gone before the next update is named too. Async-signal-safe. */
void statedump_name_thread(uint32_t tid);
/* Name the threads of this process that are new or renamed since the last
 * dump or update (strata:thread_name), and dump the maps again if objects
 * were loaded or unloaded since (statedump_objects_update()): called
 * periodically by the consumer or session thread. */
void statedump_update(void);
/* strata:map and strata:build_id records of every mapping again, if the
 * program loaded or unloaded objects (dlopen, dlclose) since the last
 * dump: periodically, and when tracing stops, so that a library loaded in
 * the last second is mapped too. */
void statedump_objects_update(void);
/* Every process of the system and its threads, named (what a session
 * starts from: LTT's initial state); strata:statedump phases 2 and 3
 * bracket it. Readable /proc entries only. */
void statedump_system(void);
/* Records attempted so far (they count in internal_logged), and those
 * of them dropped (counted in the ring's losses too). */
uint64_t statedump_logged(void);
uint64_t statedump_lost(void);

#endif /* STRATA_LIB_STATEDUMP_H */
