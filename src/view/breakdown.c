// SPDX-License-Identifier: MIT
/* strata view's api/breakdown: where one thread's time went over a range — running, in a system call, runnable, sleeping, I/O wait — as strata breakdown counts it (docs/view.md). */
#include <string.h>

#include "view.h"
#include "api.h"

/*
 * The thread's stretches of state are the breakdown's own (src/analysis,
 * bd_compute's on_state hook, read once by the model), so a range's times
 * are two lookups in their running sums (vw_state_upto) rather than a
 * pass of bd_compute over the whole trace, and add up as strata breakdown
 * --from --to counts them: every tick of the range in exactly one state,
 * those the thread was not seen in (before its first event, after its
 * exit) as unseen.
 */
int vw_api_breakdown(struct vw_model *m, uint32_t tid, uint64_t t0, uint64_t t1,
		     struct vw_buf *o)
{
	const struct vw_thread *th = an_tidmap_find(&m->threads, tid);
	uint64_t a = m->begin + vw_ticks(m, t0), b = m->begin + vw_ticks(m, t1);
	uint64_t lo[BD_NSTATES] = { 0 }, hi[BD_NSTATES] = { 0 }, seen = 0;
	bool have = th && th->seen;
	b = b < m->end ? b : m->end; /* the page's t1 may be span_ns + 1 */
	if (b < a)
		b = a;
	if (have) {
		vw_state_upto(th, a, lo);
		vw_state_upto(th, b, hi);
	}
	const char *n = vw_name(m, tid);
	vw_printf(o, "{\"tid\":%u,\"pid\":%u,\"name\":", tid, th ? th->pid : 0);
	vw_put_str(o, n ? n : "", n ? strlen(n) : 0);
	vw_printf(o, ",\"t0\":%llu,\"t1\":%llu,\"have_states\":%s,\"ns\":[",
		  (unsigned long long)t0, (unsigned long long)t1, have ? "true" : "false");
	/* ns per state by analysis.h's enum bd_state, unseen last: the
	 * summary's `states` name all but it */
	for (int s = 0; s < BD_UNSEEN; s++) {
		uint64_t d = have ? hi[s] - lo[s] : 0;
		seen += d;
		vw_printf(o, "%s%llu", s ? "," : "", (unsigned long long)vw_ns(m, d));
	}
	vw_printf(o, ",%llu]}", (unsigned long long)vw_ns(m, b - a - (seen < b - a ? seen : b - a)));
	return 0;
}
