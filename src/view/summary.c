// SPDX-License-Identifier: MIT
/* strata view's api/summary: what the page needs once, the trace's counts, rows, names and kinds (docs/view.md). */
#include <string.h>

#include "view.h"

static const char *thread_name(const struct vw_model *m, uint32_t tid)
{
	const char *n = vw_name(m, tid);
	return n ? n : "";
}

int vw_api_summary(struct vw_model *m, struct vw_buf *o)
{
	struct strata_clock_info ck;
	strata_trace_clock(m->t, &ck);
	struct an_loss loss;
	an_loss_get(m->t, &loss);
	vw_puts(o, "{\"trace\":");
	vw_put_str(o, m->path, strlen(m->path));
	vw_printf(o, ",\"span_ns\":%llu,\"wall_ns\":%lld,\"clock\":",
		  (unsigned long long)vw_ns(m, m->end - m->begin),
		  (long long)strata_trace_wall_ns(m->t, m->begin));
	vw_put_str(o, ck.name ? ck.name : "", ck.name ? strlen(ck.name) : 0);
	vw_printf(o, ",\"freq\":%llu", (unsigned long long)ck.freq);
	vw_printf(o, ",\"events\":%llu,\"bytes\":%llu,\"build_ms\":%.1f,"
		  "\"cache\":\"%s\",\"live\":%s,\"partial\":%s,\"have_sched\":%s,\"problems\":%llu,\"lost_events\":%llu,"
		  "\"lost_packets\":%llu,\"cpus\":[",
		  (unsigned long long)m->nevents,
		  (unsigned long long)strata_trace_size(m->t), m->build_ms,
		  m->cache ? m->cache : "off", m->live ? "true" : "false",
		  m->partial ? "true" : "false",
		  m->have_sched ? "true" : "false",
		  (unsigned long long)vw_nproblems(m),
		  (unsigned long long)(loss.kernel_events + loss.user_events),
		  (unsigned long long)(loss.kernel_packets + loss.user_packets));
	for (unsigned i = 0; i < m->ncpus; i++) {
		uint64_t n = 0;
		for (unsigned b = 0; b < m->nbins; b++)
			n += m->cpus[i].bins[b];
		vw_printf(o, "%s{\"cpu\":%u,\"switches\":%zu,\"events\":%llu}",
			  i ? "," : "", i, m->cpus[i].nsw, (unsigned long long)n);
	}
	vw_puts(o, "],\"threads\":[");
	for (unsigned i = 0; i < m->nrows; i++) {
		const struct vw_thread *th = m->rows[i];
		const char *n = thread_name(m, th->tid);
		vw_printf(o, "%s{\"pid\":%u,\"tid\":%u,\"events\":%llu,"
			  "\"intervals\":%zu,\"states\":%zu,\"name\":", i ? "," : "",
			  th->pid, th->tid, (unsigned long long)th->events, th->niv,
			  th->seen ? th->nst : 0);
		vw_put_str(o, n, strlen(n));
		vw_puts(o, "}");
	}
	/* every thread a CPU row may show, for its name and colour */
	vw_puts(o, "],\"names\":{");
	for (size_t i = 0, k = 0; i < m->threads.n; i++) {
		const struct vw_thread *th = m->threads.all[i];
		const char *n = vw_name(m, th->tid);
		if (!n)
			continue;
		vw_printf(o, "%s\"%u\":", k++ ? "," : "", th->tid);
		vw_put_str(o, n, strlen(n));
	}
	vw_puts(o, "},\"kinds\":[");
	for (unsigned i = 0; i < m->nkinds; i++) {
		const char *k = vw_kind_name(m, i);
		vw_puts(o, i ? "," : "");
		vw_put_str(o, k, strlen(k));
	}
	/* the kinds of the command's --activity rules, by index */
	vw_printf(o, "],\"activities\":[");
	for (unsigned r = 0; r < m->nacts; r++)
		vw_printf(o, "%s%u", r ? "," : "", m->nkinds - m->nacts + r);
	/* [ts, kind, count] each, ts in ns; a time before the trace's
	 * begin (a lost packet's) is shown at the start */
	vw_puts(o, "],\"damage\":[");
	for (unsigned i = 0; m->problems && i < m->problems->n; i++) {
		const struct vw_problem *p = &m->problems->v[i];
		vw_printf(o, "%s%llu,%d,%llu", i ? "," : "",
			  (unsigned long long)(p->ts > m->begin ? vw_ns(m, p->ts - m->begin) : 0),
			  p->kind, (unsigned long long)p->count);
	}
	/* the thread states' names, by analysis.h's enum bd_state */
	vw_puts(o, "],\"states\":[\"running\",\"syscall\",\"runnable\","
		"\"sleeping\",\"io\",\"irq\",\"unknown\"]");
	_Static_assert(BD_UNKNOWN == 6 && BD_NSTATES == 8, "the names above");
	vw_puts(o, ",\"classes\":[");
	for (unsigned i = 0; i < strata_trace_nclasses(m->t); i++) {
		const struct strata_event_class *c = strata_trace_class(m->t, i);
		const char *n = c ? c->name : "";
		vw_puts(o, i ? "," : "");
		vw_put_str(o, n, strlen(n));
	}
	vw_puts(o, "]}");
	return 0;
}
