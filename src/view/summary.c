// SPDX-License-Identifier: MIT
/* strata view's api/summary: what the page needs once, the trace's counts, rows, names and kinds (docs/view.md). */
#include <string.h>

#include "view.h"

static const char *thread_name(const struct vw_model *m, uint32_t tid)
{
	const char *n = vw_name(m, tid);
	return n ? n : "";
}

/* ns from the trace's begin of a time in ticks (0 before it). */
static unsigned long long ns_at(const struct vw_model *m, uint64_t ts)
{
	return ts > m->begin ? (unsigned long long)vw_ns(m, ts - m->begin) : 0;
}

/* Whether tick t lies inside the trace: a time read from a damaged packet
 * may be anything. */
static bool inside(const struct vw_model *m, uint64_t t)
{
	return t >= m->begin && t <= m->end;
}

/* The sound packet of stream s nearest packet i going by `step` (-1,
 * +1), into *pk: its header read and its times inside the trace (a
 * flipped bit can send them anywhere); false when there is none. Only
 * damaged packets are skipped, 1024 at most. */
static bool readable(const struct vw_model *m, unsigned s, uint64_t i, int step,
		     struct strata_packet_info *pk)
{
	for (unsigned k = 0; k < 1024; k++, i += (uint64_t)(int64_t)step) {
		if (step < 0 && i == UINT64_MAX)
			return false;
		int err = strata_trace_packet(m->t, s, i, pk);
		if (!err && inside(m, pk->begin) && inside(m, pk->end) && pk->begin <= pk->end)
			return true;
		if (err && err != -ENODATA)
			return false; /* past the stream's end */
	}
	return false;
}

/*
 * The range of its stream a problem spoils, [*lo, *hi] in ticks, from the
 * packet index (docs/view.md, "Damage and loss"): damaged bytes, from the
 * end of the readable packet before them to the beginning of the next
 * one (the trace's end when none follows: a stream cut short); lost
 * packets, the gap before the packet that reported them; discarded
 * events, from the packet before to the end of the one that reported
 * them (the ring was full somewhere in there). Returns the stream's CPU,
 * or -1 (and the reader's point, lo = hi = ts) when its stream or
 * packets are not known.
 */
static int damage_range(const struct vw_model *m, const struct vw_problem *p, uint64_t *lo,
			uint64_t *hi)
{
	bool ts_in = inside(m, p->ts);
	uint64_t ts = ts_in ? p->ts : p->ts < m->begin ? m->begin : m->end;
	*lo = *hi = ts;
	struct strata_stream_info si;
	unsigned s, n = strata_trace_nstreams(m->t);
	for (s = 0; s < n; s++)
		if (!strata_trace_stream(m->t, s, &si) && vw_path_hash(si.path) == p->file)
			break;
	if (s == n || !si.packet_size)
		return -1;
	uint64_t i = p->offset / si.packet_size;
	struct strata_packet_info at, before, after;
	bool has_at = !strata_trace_packet(m->t, s, i, &at) && inside(m, at.begin) &&
		      inside(m, at.end) && at.begin <= at.end;
	uint64_t from = i && readable(m, s, i - 1, -1, &before) ? before.end :
			has_at ? at.begin : ts_in ? ts : m->begin;
	switch (p->kind) {
	case STRATA_PROBLEM_DAMAGED: {
		bool next = readable(m, s, i + 1, 1, &after);
		*lo = from;
		*hi = next ? after.begin : m->end;
		if (has_at) { /* its header read */
			*lo = at.begin < *lo ? at.begin : *lo;
			*hi = at.end > *hi ? at.end : *hi;
		}
		break;
	}
	case STRATA_PROBLEM_PACKETS_LOST:
		*lo = from;
		*hi = has_at ? at.begin : ts;
		break;
	case STRATA_PROBLEM_DISCARDED:
		*lo = from;
		*hi = has_at ? at.end : ts;
		break;
	default:
		return (int)si.cpu;
	}
	if (ts_in) { /* the reader's point is inside what it spoils */
		*lo = ts < *lo ? ts : *lo;
		*hi = ts > *hi ? ts : *hi;
	}
	return (int)si.cpu;
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
	/* [ts, kind, count, from, to, cpu] each, ns: where the reader met
	 * it and the range of its stream it spoils (damage_range); a time
	 * before the trace's begin (a lost packet's) is shown at the start */
	vw_puts(o, "],\"damage\":[");
	for (unsigned i = 0; m->problems && i < m->problems->n; i++) {
		const struct vw_problem *p = &m->problems->v[i];
		uint64_t lo, hi;
		int cpu = damage_range(m, p, &lo, &hi);
		vw_printf(o, "%s%llu,%d,%llu,%llu,%llu,%d", i ? "," : "", ns_at(m, p->ts), p->kind,
			  (unsigned long long)p->count, ns_at(m, lo), ns_at(m, hi), cpu);
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
