// SPDX-License-Identifier: MIT
/* strata view's api/breakdown: where one thread's time went over a range — running, in a system call, runnable, sleeping, I/O wait — and its system calls, as strata breakdown counts them (docs/view.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "api.h"

/* System calls a range's answer names, at most (the most time first). */
#define SC_MAX 64

struct sc {
	uint32_t nr;
	uint64_t count, ticks;
	bool open;  /* one still in it at the range's end */
};

/* One call's ticks in the range, by number. */
static struct sc *sc_of(struct sc *v, unsigned *n, uint32_t nr)
{
	for (unsigned i = 0; i < *n; i++)
		if (v[i].nr == nr)
			return &v[i];
	if (*n == SC_MAX)
		return NULL;
	v[*n] = (struct sc){ .nr = nr };
	return &v[(*n)++];
}

static int by_ticks(const void *a, const void *b)
{
	const struct sc *x = a, *y = b;
	return x->ticks != y->ticks ? (x->ticks < y->ticks ? 1 : -1) :
	       (x->nr > y->nr) - (x->nr < y->nr);
}

/* When the thread was seen, [*lo, *hi) ticks: from its first state but
 * unseen to the end of its last (a thread forked inside the trace first
 * shows in its fork's return, one that exits never leaves exit_group);
 * the whole time without states. */
static void seen_span(const struct vw_thread *th, uint64_t *lo, uint64_t *hi)
{
	*lo = 0;
	*hi = UINT64_MAX;
	if (!th || !th->seen || !th->nst)
		return;
	size_t i = 0, j = th->nst;
	while (i < th->nst && th->st[i].tid == BD_UNSEEN)
		i++;
	while (j > i && th->st[j - 1].tid == BD_UNSEEN)
		j--;
	if (i < j) {
		*lo = th->st[i].t;
		*hi = j < th->nst ? th->st[j].t : th->st_end;
	}
}

/*
 * The thread's system calls in [a, b] (ticks), from its raw_syscalls
 * events read there, as strata breakdown counts them over a window: a
 * call's time is the part of it from sys_enter to sys_exit inside the
 * range (one open at either end counts up to the edge; one the thread
 * never leaves, exit or exit_group, to its end, and counts), its count the
 * calls that entered and ended inside. Only where the range holds at
 * most VW_EXACT_MAX events (the reader's, not the bins'): else
 * "syscalls" is null and the page says to zoom in.
 */
static int put_syscalls(struct vw_model *m, const struct vw_thread *th, uint32_t tid,
			uint64_t a, uint64_t b, struct vw_buf *o)
{
	unsigned b0 = vw_bin(m, a), b1 = vw_bin(m, b);
	if (m->prefix[b1 + 1] - m->prefix[b0] > VW_EXACT_MAX) {
		vw_puts(o, ",\"syscalls\":null");
		return 0;
	}
	struct strata_filter *f;
	int err = strata_filter_create(m->t, &f);
	if (err)
		return err;
	strata_filter_tid(f, tid);
	if (strata_filter_event(f, "raw_syscalls:sys_e*") <= 0) {
		strata_filter_destroy(f);
		vw_puts(o, ",\"syscalls\":[]");
		return 0;
	}
	struct strata_iter *it;
	err = strata_iter_create(m->t, &(struct strata_iter_options){ .stream = -1, .filter = f },
				 &it);
	if (err) {
		strata_filter_destroy(f);
		return err;
	}
	struct sc v[SC_MAX];
	unsigned n = 0;
	bool in = false, first = true;
	uint32_t nr = 0;
	uint64_t since = a, lo, hi;
	seen_span(th, &lo, &hi);
	struct vw_range r;
	vw_range_init(&r, m, it, a, b);
	const struct strata_event *ev;
	const struct strata_event_class *cls = NULL; /* the last event's */
	int id = -1;
	bool enter = false;
	while (vw_range_next(&r, &ev)) {
		if (ev->cls != cls) { /* its number field and kind, once a class */
			cls = ev->cls;
			id = strata_event_class_field(cls, "id");
			enter = !strcmp(cls->name, "raw_syscalls:sys_enter");
		}
		struct strata_value x;
		if (id < 0 || strata_event_field(ev, (unsigned)id, &x) < 0)
			continue;
		struct sc *c;
		if (in && (c = sc_of(v, &n, nr))) { /* this event ends it */
			c->ticks += ev->timestamp - since;
			c->count += !enter; /* an enter: its exit was lost */
		} else if (first && !enter && a > lo && (c = sc_of(v, &n, (uint32_t)x.u))) {
			/* entered before the range; not one begun before
			 * the thread was seen (a fork's child returns from
			 * it): its state there is unknown, as breakdown's */
			c->ticks += ev->timestamp - a;
		}
		first = false;
		in = enter;
		nr = (uint32_t)x.u;
		since = ev->timestamp;
	}
	strata_iter_destroy(it);
	strata_filter_destroy(f);
	struct sc *c;
	if (in && (c = sc_of(v, &n, nr))) { /* to the end, or to its exit */
		uint64_t end = b < hi ? b : hi;
		c->ticks += end > since ? end - since : 0;
		c->open = b < hi;
		c->count += !c->open; /* exit, exit_group: ended by the thread's */
	}
	qsort(v, n, sizeof(*v), by_ticks);
	vw_puts(o, ",\"syscalls\":[");
	for (unsigned i = 0; i < n; i++) {
		const char *name = bd_syscall_name(m->t, v[i].nr);
		vw_printf(o, "%s{\"nr\":%u,\"name\":", i ? "," : "", v[i].nr);
		vw_put_str(o, name ? name : "", name ? strlen(name) : 0);
		vw_printf(o, ",\"count\":%llu,\"ns\":%llu,\"open\":%s}",
			  (unsigned long long)v[i].count, (unsigned long long)vw_ns(m, v[i].ticks),
			  v[i].open ? "true" : "false");
	}
	vw_puts(o, "]");
	return 0;
}

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
	vw_printf(o, ",%llu]", (unsigned long long)vw_ns(m, b - a - (seen < b - a ? seen : b - a)));
	int err = put_syscalls(m, th, tid, a, b, o);
	vw_puts(o, "}");
	return err;
}
