// SPDX-License-Identifier: MIT
/* strata view: serve at once, build behind: the packets' overview answers while a thread builds the model (docs/view.md, "Serve at once"). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server_int.h"

/* The overview's bins over the trace's span: a 4096-pixel strip at most
 * is drawn from them, and a packet (256 KiB of events, milliseconds)
 * covers a few. */
#define QBINS 4096u

struct qstream {
	uint32_t cpu, pid;
	char *procname;
	uint64_t packets, content, discarded, lost;
	uint64_t begin_ns, end_ns;
};

struct qcpu {
	uint32_t cpu;
	uint64_t packets, content;
	double bins[QBINS];      /* content bytes, spread over each packet's time */
};

/* What the packets say, made before the build starts and never changed:
 * the request thread reads it while the builder reads the trace, and it
 * holds no pointer into the trace. */
struct vw_quick {
	uint64_t begin, end;     /* ticks, as the model's */
	uint64_t span_ns, freq, bytes, content, packets, lost_events, lost_packets;
	int64_t wall_ns;
	char *clock;
	struct qstream *st;
	unsigned nst;
	struct qcpu *cpus;
	unsigned ncpus;
};

static void quick_free(struct vw_quick *q)
{
	if (!q)
		return;
	for (unsigned i = 0; i < q->nst; i++)
		free(q->st[i].procname);
	free(q->st);
	free(q->cpus);
	free(q->clock);
	free(q);
}

static struct qcpu *cpu_row(struct vw_quick *q, uint32_t cpu)
{
	for (unsigned i = 0; i < q->ncpus; i++)
		if (q->cpus[i].cpu == cpu)
			return &q->cpus[i];
	return NULL;
}

/* A packet's bytes spread evenly over [b, e] (ticks) across the bins. */
static void spread(const struct vw_quick *q, double *bins, uint64_t b, uint64_t e, uint64_t bytes)
{
	b = b < q->begin ? q->begin : b > q->end ? q->end : b;
	e = e < b ? b : e > q->end ? q->end : e;
	double len = (double)(q->end - q->begin) + 1, w = len / QBINS;
	double lo = (double)(b - q->begin), hi = (double)(e - q->begin) + 1;
	unsigned k0 = (unsigned)(lo / w), k1 = (unsigned)((hi - 1) / w);
	k1 = k1 >= QBINS ? QBINS - 1 : k1;
	k0 = k0 > k1 ? k1 : k0;
	for (unsigned k = k0; k <= k1; k++) {
		double a = k * w > lo ? k * w : lo, z = (k + 1) * w < hi ? (k + 1) * w : hi;
		bins[k] += z > a ? bytes * (z - a) / (hi - lo) : (k0 == k1 ? (double)bytes : 0);
	}
}

/* One stream's packets into its row and the totals. */
static int add_stream(struct vw_quick *q, const struct strata_trace *t, unsigned i)
{
	struct strata_stream_info si;
	if (strata_trace_stream(t, i, &si))
		return 0;
	struct qstream *qs = &q->st[q->nst++];
	*qs = (struct qstream){ .cpu = si.cpu, .pid = si.pid, .procname = strdup(si.procname),
				.discarded = si.discarded, .lost = si.packets_lost };
	struct qcpu *row = cpu_row(q, si.cpu);
	if (!qs->procname)
		return -ENOMEM;
	if (!row) {
		row = &q->cpus[q->ncpus++];
		row->cpu = si.cpu;
	}
	uint64_t b = UINT64_MAX, e = 0;
	struct strata_packet_info p;
	for (uint64_t k = 0;; k++) {
		int r = strata_trace_packet(t, i, k, &p);
		if (r == -EINVAL)
			break;
		if (r)
			continue; /* rejected: readers skip it */
		spread(q, row->bins, p.begin, p.end, p.content);
		qs->packets++;
		qs->content += p.content;
		b = p.begin < b ? p.begin : b;
		e = p.end > e ? p.end : e;
	}
	row->packets += qs->packets;
	row->content += qs->content;
	q->packets += qs->packets;
	q->content += qs->content;
	q->lost_events += qs->discarded;
	q->lost_packets += qs->lost;
	if (qs->packets) {
		qs->begin_ns = strata_trace_ticks_to_ns(t, b > q->begin ? b - q->begin : 0);
		qs->end_ns = strata_trace_ticks_to_ns(t, e > q->begin ? e - q->begin : 0);
	}
	return 0;
}

static int cmp_cpu(const void *a, const void *b)
{
	const struct qcpu *x = a, *y = b;
	return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

/* The overview from t's packets (its index): no event is read. */
static int quick_make(const struct strata_trace *t, struct vw_quick **out)
{
	unsigned n = strata_trace_nstreams(t);
	struct vw_quick *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->st = calloc(n ? n : 1, sizeof(*q->st));
	q->cpus = calloc(n ? n : 1, sizeof(*q->cpus));
	struct strata_clock_info ck;
	strata_trace_clock(t, &ck);
	q->clock = strdup(ck.name ? ck.name : "");
	int err = q->st && q->cpus && q->clock ? 0 : -ENOMEM;
	/* the model's span (vw_model_build) */
	q->begin = strata_trace_begin(t);
	q->end = strata_trace_end(t);
	if (q->end <= q->begin)
		q->end = q->begin + 1;
	q->span_ns = strata_trace_ticks_to_ns(t, q->end - q->begin);
	q->wall_ns = strata_trace_wall_ns(t, q->begin);
	q->freq = ck.freq;
	q->bytes = strata_trace_size(t); /* as the model's summary says it */
	for (unsigned i = 0; !err && i < n; i++)
		err = add_stream(q, t, i);
	if (err) {
		quick_free(q);
		return err;
	}
	qsort(q->cpus, q->ncpus, sizeof(*q->cpus), cmp_cpu);
	*out = q;
	return 0;
}

/* bins resampled to w pixels, each the bytes of the span it covers. */
static void put_pixels(const double *bins, unsigned w, struct vw_buf *o)
{
	double per = (double)QBINS / w;
	vw_puts(o, "[");
	for (unsigned p = 0; p < w; p++) {
		double lo = p * per, hi = (p + 1) * per, sum = 0;
		for (unsigned k = (unsigned)lo; k < QBINS && k < hi; k++) {
			double a = k > lo ? k : lo, z = k + 1 < hi ? k + 1 : hi;
			sum += bins[k] * (z - a);
		}
		vw_printf(o, "%s%.0f", p ? "," : "", sum);
	}
	vw_puts(o, "]");
}

unsigned vw_quick_overview(const struct vw_quick *q, unsigned w, struct vw_buf *o)
{
	if (!q) {
		vw_puts(o, "{\"error\":\"no overview: the model was not built behind one "
			"(a cache used, --wait, --live)\"}");
		return 404;
	}
	double all[QBINS] = { 0 };
	for (unsigned i = 0; i < q->ncpus; i++)
		for (unsigned k = 0; k < QBINS; k++)
			all[k] += q->cpus[i].bins[k];
	vw_printf(o, "{\"coarse\":true,\"unit\":\"content bytes\",\"t0\":0,\"t1\":%llu,\"w\":%u,\"all\":",
		  (unsigned long long)q->span_ns, w);
	put_pixels(all, w, o);
	vw_puts(o, ",\"cpus\":[");
	for (unsigned i = 0; i < q->ncpus; i++) {
		vw_printf(o, "%s{\"cpu\":%u,\"bytes\":", i ? "," : "", q->cpus[i].cpu);
		put_pixels(q->cpus[i].bins, w, o);
		vw_puts(o, "}");
	}
	vw_puts(o, "]}");
	return 200;
}

/* The model's pass's progress: the share of the span it read, below 1
 * until the model is swapped in (the states' pass and the sorting end
 * the build after the last event). */
static double progress(struct server *s)
{
	const struct vw_quick *q = s->quick;
	uint64_t ts = atomic_load_explicit(&s->progress.ts, memory_order_relaxed);
	double f = ts > q->begin ? (double)(ts - q->begin) / (double)(q->end - q->begin) : 0;
	return f > 0.99 ? 0.99 : f;
}

static void quick_summary(struct server *s, struct vw_buf *o)
{
	const struct vw_quick *q = s->quick;
	vw_printf(o, "{\"building\":true,\"progress\":%.3f,\"trace\":", progress(s));
	vw_put_str(o, s->trace, strlen(s->trace));
	vw_printf(o, ",\"span_ns\":%llu,\"wall_ns\":%lld,\"clock\":",
		  (unsigned long long)q->span_ns, (long long)q->wall_ns);
	vw_put_str(o, q->clock, strlen(q->clock));
	vw_printf(o, ",\"freq\":%llu,\"bytes\":%llu,\"content\":%llu,\"packets\":%llu,\"cache\":\"building\","
		  "\"lost_events\":%llu,\"lost_packets\":%llu,\"streams\":[",
		  (unsigned long long)q->freq, (unsigned long long)q->bytes,
		  (unsigned long long)q->content,
		  (unsigned long long)q->packets, (unsigned long long)q->lost_events,
		  (unsigned long long)q->lost_packets);
	for (unsigned i = 0; i < q->nst; i++) {
		const struct qstream *st = &q->st[i];
		vw_printf(o, "%s{\"stream\":%u,\"cpu\":%u,\"pid\":%u,\"procname\":", i ? "," : "", i,
			  st->cpu, st->pid);
		vw_put_str(o, st->procname, strlen(st->procname));
		vw_printf(o, ",\"packets\":%llu,\"content\":%llu,\"begin_ns\":%llu,\"end_ns\":%llu,"
			  "\"discarded\":%llu,\"lost_packets\":%llu}",
			  (unsigned long long)st->packets, (unsigned long long)st->content,
			  (unsigned long long)st->begin_ns, (unsigned long long)st->end_ns,
			  (unsigned long long)st->discarded, (unsigned long long)st->lost);
	}
	vw_puts(o, "],\"cpus\":[");
	for (unsigned i = 0; i < q->ncpus; i++)
		vw_printf(o, "%s{\"cpu\":%u,\"packets\":%llu,\"content\":%llu}", i ? "," : "",
			  q->cpus[i].cpu, (unsigned long long)q->cpus[i].packets,
			  (unsigned long long)q->cpus[i].content);
	vw_puts(o, "]}");
}

unsigned srv_quick_api(struct server *s, const char *what, unsigned w, struct vw_buf *o)
{
	if (s->build_err) {
		vw_printf(o, "{\"error\":\"building the model failed: %s\"}",
			  strerror(-s->build_err));
		return 500;
	}
	if (!strcmp(what, "summary")) {
		quick_summary(s, o);
		return 200;
	}
	if (!strcmp(what, "overview"))
		return vw_quick_overview(s->quick, w, o);
	vw_printf(o, "{\"building\":true,\"progress\":%.3f,\"error\":\"the model is being "
		  "built: ask again after Retry-After\"}", progress(s));
	return 503;
}

/* STRATA_VIEW_TEST_HOLD=FILE: the tests' knob (docs/view.md), a build that
 * waits until FILE exists (two minutes at most), so that a small trace's
 * build is seen under way for as long as the test needs, on a machine of
 * any speed: a delay of fixed length raced the browser's start. */
static void test_hold(struct server *s)
{
	const char *f = getenv("STRATA_VIEW_TEST_HOLD");
	for (int ms = 0; f && *f && ms < 120000 && access(f, F_OK) &&
			 !atomic_load_explicit(&s->progress.stop, memory_order_relaxed);
	     ms += 10)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
}

/* The builder's thread: the build as `strata view --wait` does it, on the
 * trace that only this thread touches until the model is swapped in
 * under the lock; from then on the request thread owns both. */
static void *build_behind(void *arg)
{
	struct server *s = arg;
	struct vw_model m = { 0 };
	test_hold(s);
	int err = atomic_load_explicit(&s->progress.stop, memory_order_relaxed) ? -ECANCELED :
		  vw_model_build(&m, s->t, s->trace, s->oo.flags, s->acts, s->nacts, &s->progress,
				 srv_spill(s, s->build_nocache));
	pthread_mutex_lock(&s->lock);
	if (err) {
		vw_model_fini(&m);
		s->build_err = err;
		if (err != -ECANCELED)
			fprintf(stderr, "strata: %s: reading the trace: %s\n", s->trace,
				strerror(-err));
	} else {
		s->m = m;
		s->m.problems = s->oo.problem_arg;
		srv_cache_built(s, 0, s->build_nocache);
		fprintf(stderr, "strata view: the model is ready: %llu events in %.0f ms\n",
			(unsigned long long)s->m.nevents, s->m.build_ms);
	}
	s->building = false;
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int srv_quick_start(struct server *s, bool nocache)
{
	quick_free(s->quick);
	s->quick = NULL;
	int err = quick_make(s->t, &s->quick);
	if (err)
		return err;
	s->build_nocache = nocache;
	s->building = true;
	atomic_init(&s->progress.ts, 0);
	atomic_init(&s->progress.stop, false);
	err = pthread_create(&s->builder, NULL, build_behind, s);
	if (err) {
		s->building = false;
		fprintf(stderr, "strata view: no thread to build the model: %s\n", strerror(err));
		return -err;
	}
	s->builder_started = true;
	return 0;
}

void srv_quick_stop(struct server *s)
{
	if (s->builder_started) {
		atomic_store_explicit(&s->progress.stop, true, memory_order_relaxed);
		pthread_join(s->builder, NULL);
		s->builder_started = false;
	}
	quick_free(s->quick);
	s->quick = NULL;
}
