/* SPDX-License-Identifier: MIT */
/* The live timer of a process whose rings another process drains (docs/record.md, "Live reading"). */
#define _GNU_SOURCE
#include <stdint.h>

#include <strata/strata.h>

#include "common/mono.h"
#include "lib/client_int.h"
#include "lib/clock.h"
#include "ring/ring.h"

/*
 * Only a ring's own process may close its open packet (ring.md §7), so
 * under the guardian, `strata record` and the daemon the flush of the
 * live timer runs here, on the helper thread, and the daemon's consumer
 * only reads what it left in each ring's control block: the trace time
 * read before the flush and the number of rings flushed. Once it has
 * drained every packet the flush closed, on every one of those rings,
 * nothing of ours stamped before that time is left unwritten (the
 * in-process consumer's rule, src/consumer/consumer.c live_beacon()).
 *
 * The count stands for the set: the daemon takes our rings in the order
 * we sent them (one socket), so once it drains as many as we flushed it
 * has all of them, provided each was sent before any later ring. So a
 * pass waits (until a later round) while a ring is not handed over yet;
 * one refused or lost for good holds nothing the trace will ever show.
 */
static void live_flush(void)
{
	/* Before the flush: an event stamped earlier is in a packet it
	 * closes, or an earlier one (ring.md §2: the stamp follows the
	 * writer's load of `write`). */
	uint64_t before = strata_clock();
	/* Pairs with the release CAS of ring_hwm, each ring's load with its
	 * publishing CAS (ring_get_or_create(), shm.c). */
	unsigned hwm = strata_load_acquire(&ring_hwm), n = 0, closed = 0;

	for (unsigned i = 0; i < hwm; i++) {
		if (!strata_load_acquire(&strata_rings[i]))
			continue;
		/* pairs with the sweep's claim (acq_rel CAS) or give-back */
		if (!strata_load_acquire(&client_cl.ring_sent[i]))
			return; /* its handover is retried next round */
		n++;
	}
	closed = ring_flush_all();
	for (unsigned i = 0; i < hwm; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		if (!r)
			continue;
		strata_store_relaxed(&r->ctl->live_rings, n);
		/* After the flushes' moves of `write` and the count: pairs with
		 * the consumer's acquire load (cons_poll()), which then sees
		 * the packet closed. */
		strata_store_release(&r->ctl->live_time, before);
	}
	if (!closed)
		return; /* nothing new to write: the daemon may sleep on */
	/* Our stores of live_time, then the loads of cwait; the daemon
	 * stores cwait, then loads live_time (cons_arm()): one of us sees
	 * the other's, so it does not sleep past this flush's beacon
	 * (the bell rung by the flush itself may have woken it too early). */
	strata_fence_seq_cst();
	for (unsigned i = 0; i < hwm; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		if (r)
			ring_doorbell(&r->ctl->cwait);
	}
}

/* Helper thread, every round: flush when the period is over. Not in
 * overwrite mode, where nothing is drained before the end, nor while
 * the daemon has not taken us yet. */
void client_live_round(void)
{
	uint64_t now;

	if (!client_cl.live_ms || ring_cfg.mode == STRATA_MODE_OVERWRITE ||
	    strata_load_acquire(&client_cl.state) != CLIENT_ON)
		return;
	now = mono_ms();
	if (now - client_cl.live_last < client_cl.live_ms)
		return;
	client_cl.live_last = now;
	live_flush();
}
