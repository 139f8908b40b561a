/* SPDX-License-Identifier: MIT */
/* What a trace lost, per domain, for the analyses to say so (analysis.h). */
#include <string.h>

#include "analysis/analysis.h"

void an_loss_get(struct strata_trace *t, struct an_loss *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		if (strata_trace_stream(t, i, &si) < 0)
			continue;
		if (!si.discarded && !si.packets_lost)
			continue;
		if (an_is_kernel(t, si.subtrace)) {
			out->kernel_events += si.discarded;
			out->kernel_packets += si.packets_lost;
			out->kernel_streams++;
		} else {
			out->user_events += si.discarded;
			out->user_packets += si.packets_lost;
			out->user_streams++;
		}
	}
}
