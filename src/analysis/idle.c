/* SPDX-License-Identifier: MIT */
/* The switch out of idle that some kernels do not record, inferred (analysis.h). */
#include "analysis/analysis.h"

bool idle_infer(struct idle_cpu *cpus, unsigned ncpus, const struct strata_event *ev,
		bool is_switch, int64_t prev, int64_t next, uint64_t *at)
{
	if (ev->cpu >= ncpus)
		return false;
	struct idle_cpu *k = &cpus[ev->cpu];
	bool gap = false;

	/* A recorded switch out of idle is the idle task's own event (tid 0). */
	if (k->idle && ev->tid != 0 && !(is_switch && prev == 0)) {
		*at = k->last;
		gap = true;
		k->idle = false;
	}
	if (is_switch)
		k->idle = next == 0;
	if (ev->tid == 0 || (is_switch && next == 0))
		k->last = ev->timestamp;
	return gap;
}
