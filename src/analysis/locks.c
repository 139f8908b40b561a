/* SPDX-License-Identifier: MIT */
/* Lock contention per lock address from libstrata-locks.so's lock:* events: waits, holds, threads (docs/locks.md). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/locks.h"

#define LOCK_EOWNERDEAD 130 /* Linux's EOWNERDEAD: acquired all the same */
#define TH_HELD 8           /* as the preload's LK_HELD */
#define TH_SWITCHES 32      /* a thread's last switches out, kept for causes */

enum { R_NONE, R_BEGIN, R_END, R_RELEASE, R_COUNT, R_SPINS, R_CHAIN, R_INIT, R_ALIVE, R_ACQUIRE,
       R_TALLY,
       /* kernel events recorded beside (-k): the futex cross-check and the
	* switches of the holders */
       R_SYS_ENTER, R_SYS_EXIT, R_SWITCH };
#define KIND_SEM 5 /* the preload's LOCKS_KIND_SEM: no owner, no hold */

/* The events' classes and the indexes of their fields. */
struct roles {
	uint8_t *role;      /* per class index */
	bool *futex;        /* per system call number < NSYSCALLS: a futex call */
	int (*f)[4];        /* per class: addr or acquisitions, then the rest;
			     * wait_begin's chain (f[3]) may be missing: -1 */
};

#define NSYSCALLS 1024

struct th {
	bool waiting, in_futex;
	bool locks; /* has lock:* events (not only kernel ones) */
	bool counted, alive; /* its lock:count at exit; a lock:alive for it */
	uint32_t tid, pid;
	uint64_t wait_addr, wait_ts, wait_kind, wait_chain;
	uint64_t futex_at, wait_futex; /* futex time inside the open wait */
	uint64_t preempted, blocked;   /* its switches out so far */
	uint32_t sys1;                 /* the system call it is in + 1, or 0 */
	/* its last TH_SWITCHES switches out (a ring; nsw counts them all) */
	struct { uint64_t ts; uint32_t sys1, next; bool blocked; } sw[TH_SWITCHES];
	uint64_t nsw;
	struct { uint64_t addr, ts, preempted, blocked; size_t lock; } held[TH_HELD];
	unsigned nheld;
	uint64_t acq, cont;
};

/* A value by (pid, addr): init call sites (the latest init of each), or
 * acquisition counts (TALLY_PARTIAL set when some came from a thread
 * still running); open addressing, value 0 empty (a return address, a
 * count of lock:tally, is never 0). */
#define TALLY_PARTIAL (1ull << 63)
struct imap {
	struct { uint32_t pid; uint64_t addr, site; } *slot;
	size_t cap, n;
};

/* Locks by (pid, addr): open addressing over indexes into r->locks. */
struct lmap {
	size_t *slot;  /* index + 1; 0 empty */
	size_t cap;
};

static size_t *lmap_at(struct lmap *m, const struct lock_result *r, uint32_t pid,
		       uint64_t addr)
{
	size_t i = an_mix64(addr ^ ((uint64_t)pid << 48)) & (m->cap - 1);
	for (;; i = (i + 1) & (m->cap - 1)) {
		size_t s = m->slot[i];
		if (!s || (r->locks[s - 1].addr == addr && r->locks[s - 1].pid == pid))
			return &m->slot[i];
	}
}

/* The lock (pid, addr), made when new; NULL: out of memory. */
static struct lock_stats *lock_get(struct lmap *m, struct lock_result *r, size_t *cap,
				   uint32_t pid, uint64_t addr)
{
	if ((r->nlocks + 1) * 2 > m->cap) {
		struct lmap g = { .cap = m->cap ? m->cap * 2 : 256 };
		if (!(g.slot = calloc(g.cap, sizeof(*g.slot))))
			return NULL;
		for (size_t i = 0; i < r->nlocks; i++)
			*lmap_at(&g, r, r->locks[i].pid, r->locks[i].addr) = i + 1;
		free(m->slot);
		*m = g;
	}
	size_t *s = lmap_at(m, r, pid, addr);
	if (*s)
		return &r->locks[*s - 1];
	if (r->nlocks == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct lock_stats *n = realloc(r->locks, nc * sizeof(*n));
		if (!n)
			return NULL;
		r->locks = n;
		*cap = nc;
	}
	struct lock_stats *l = &r->locks[r->nlocks];
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->addr = addr;
	*s = ++r->nlocks;
	return l;
}

static size_t imap_at(const struct imap *im, uint32_t pid, uint64_t addr)
{
	size_t i = an_mix64(addr ^ ((uint64_t)pid << 48)) & (im->cap - 1);
	while (im->slot[i].site && (im->slot[i].addr != addr || im->slot[i].pid != pid))
		i = (i + 1) & (im->cap - 1);
	return i;
}

/* The value of (pid, addr), 0 when new; NULL: out of memory. */
static uint64_t *imap_slot(struct imap *im, uint32_t pid, uint64_t addr)
{
	if ((im->n + 1) * 2 > im->cap) {
		struct imap g = { .cap = im->cap ? im->cap * 2 : 256 };
		if (!(g.slot = calloc(g.cap, sizeof(*g.slot))))
			return NULL;
		for (size_t i = 0; i < im->cap; i++)
			if (im->slot[i].site)
				g.slot[imap_at(&g, im->slot[i].pid, im->slot[i].addr)] = im->slot[i];
		g.n = im->n;
		free(im->slot);
		*im = g;
	}
	size_t i = imap_at(im, pid, addr);
	if (!im->slot[i].site) { /* the caller sets a value */
		im->n++;
		im->slot[i].pid = pid;
		im->slot[i].addr = addr;
	}
	return &im->slot[i].site;
}

/* A lock:init: (pid, addr) was initialised at site. 0, or -ENOMEM. */
static int imap_put(struct imap *im, uint32_t pid, uint64_t addr, uint64_t site)
{
	uint64_t *v = site ? imap_slot(im, pid, addr) : &site;
	if (!v)
		return -ENOMEM;
	*v = site;
	return 0;
}

/* A lock:tally: n more acquisitions of (pid, addr), partial when read
 * from a thread still running. 0, or -ENOMEM. */
static int imap_add(struct imap *im, uint32_t pid, uint64_t addr, uint64_t n, bool partial)
{
	uint64_t *v = n ? imap_slot(im, pid, addr) : &n;
	if (!v)
		return -ENOMEM;
	uint64_t part = (*v & TALLY_PARTIAL) | (partial ? TALLY_PARTIAL : 0);
	*v = ((*v & ~TALLY_PARTIAL) + n) | part;
	return 0;
}

/* Where (pid, addr) was last initialised, or 0. */
static uint64_t imap_site(const struct imap *im, uint32_t pid, uint64_t addr)
{
	return im->cap ? im->slot[imap_at(im, pid, addr)].site : 0;
}

static int add_tid(struct lock_stats *l, uint32_t tid)
{
	for (unsigned i = 0; i < l->ntids; i++)
		if (l->tids[i] == tid)
			return 0;
	if (!(l->ntids & (l->ntids + 1)) || !l->tids) { /* 0, 1, 3, 7...: grow */
		uint32_t *n = realloc(l->tids, (l->ntids + 1) * 2 * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->tids = n;
	}
	l->tids[l->ntids++] = tid;
	return 0;
}

static int roles_init(struct strata_trace *t, struct roles *ro)
{
	static const char *const names[] = { NULL, "lock:wait_begin", "lock:wait_end",
					     "lock:release", "lock:count", "lock:spins",
					     "lock:chain", "lock:init", "lock:alive", "lock:acquire",
					     "lock:tally", "raw_syscalls:sys_enter",
					     "raw_syscalls:sys_exit", "sched:sched_switch" };
	static const char *const fields[][3] = {
		{ NULL }, { "addr", "kind" }, { "addr", "ret" },
		{ "addr", "acquisitions", "contended" }, { "acquisitions", "contended" },
		{ "addr", "spins" }, { "id", "n", "frames" }, { "addr", "kind", "site" },
		{ "tid", "acquisitions", "contended" }, { "addr", "kind", "chain" },
		{ "addr", "n", "alive" }, { "id" }, { "id" },
		{ "prev_pid", "prev_state", "next_pid" },
	};
	unsigned nc = strata_trace_nclasses(t);
	bool any = false;

	ro->role = calloc(nc ? nc : 1, 1);
	ro->f = calloc(nc ? nc : 1, sizeof(*ro->f));
	if (!ro->role || !ro->f)
		return -ENOMEM;
	for (unsigned i = 0; i < nc; i++) {
		const struct strata_event_class *c = strata_trace_class(t, i);
		for (int k = R_BEGIN; k <= R_SWITCH; k++) {
			if (strcmp(c->name, names[k]))
				continue;
			bool ok = true;
			for (int j = 0; j < 3; j++)
				if (fields[k][j] &&
				    (ro->f[i][j] = strata_event_class_field(c, fields[k][j])) < 0)
					ok = false;
			/* traces from before chains have none */
			ro->f[i][3] = k == R_BEGIN ? strata_event_class_field(c, "chain") : -1;
			if (ok)
				ro->role[i] = (uint8_t)k;
			any |= ok && k == R_BEGIN;
		}
	}
	/* the futex calls by name (futex, futex_waitv, ...), from the
	 * kernel sub-trace's table: no number is assumed */
	if (!(ro->futex = calloc(NSYSCALLS, sizeof(*ro->futex))))
		return -ENOMEM;
	for (uint32_t nr = 0; nr < NSYSCALLS; nr++) {
		const char *n = bd_syscall_name(t, nr);
		ro->futex[nr] = n && !strncmp(n, "futex", 5);
	}
	return any ? 0 : -ENOENT;
}

static uint64_t field(const struct strata_event *ev, int idx)
{
	struct strata_value v;
	if (strata_event_field(ev, (unsigned)idx, &v) < 0)
		return 0;
	return v.u;
}

static void minmax(uint64_t *total, uint64_t *max, uint64_t v)
{
	*total += v;
	if (v > *max)
		*max = v;
}

/* One more use of chain id in the list (*v, *n): a wait of `waited` ns,
 * or an acquisition. 0, or -ENOMEM. */
static int chain_count(struct lock_chain_use **v, unsigned *n, uint64_t id, uint64_t waited)
{
	unsigned i;
	for (i = 0; i < *n && (*v)[i].id != id; i++)
		;
	if (i == *n) {
		if (!(*n & (*n + 1)) || !*v) { /* 0, 1, 3, 7...: grow */
			struct lock_chain_use *g = realloc(*v, (*n + 1) * 2 * sizeof(*g));
			if (!g)
				return -ENOMEM;
			*v = g;
		}
		(*v)[(*n)++] = (struct lock_chain_use){ .id = id };
	}
	(*v)[i].waits++;
	(*v)[i].wait_total += waited;
	return 0;
}

/* Waits of l from chain id: one more, `waited` ns. 0, or -ENOMEM. */
static int chain_use(struct lock_stats *l, uint64_t id, uint64_t waited)
{
	return chain_count(&l->chains, &l->nchains, id, waited);
}

/* A lock:chain record: kept once per (pid, id). 0, or -ENOMEM. */
static int chain_add(struct lock_result *r, const struct strata_event *ev, const int *f)
{
	struct strata_value id, n, fr;
	if (strata_event_field(ev, (unsigned)f[0], &id) < 0 ||
	    strata_event_field(ev, (unsigned)f[1], &n) < 0 ||
	    strata_event_field(ev, (unsigned)f[2], &fr) < 0 || fr.type != STRATA_VALUE_ARRAY)
		return 0; /* damaged: its waits keep the id, unnamed */
	if (lock_chain_find(r, ev->pid, id.u))
		return 0; /* two threads raced to log it */
	if (!(r->nchains & (r->nchains + 1)) || !r->chains) {
		struct lock_chain *c = realloc(r->chains, (r->nchains + 1) * 2 * sizeof(*c));
		if (!c)
			return -ENOMEM;
		r->chains = c;
	}
	struct lock_chain *c = &r->chains[r->nchains++];
	memset(c, 0, sizeof(*c));
	c->pid = ev->pid;
	c->id = id.u;
	c->n = (unsigned)(n.u < LOCK_FRAMES ? n.u : LOCK_FRAMES);
	if (c->n > fr.count)
		c->n = fr.count;
	for (unsigned i = 0; i < c->n; i++)
		c->frames[i] = strata_value_elem(&fr, i);
	return 0;
}

const struct lock_chain *lock_chain_find(const struct lock_result *r, uint32_t pid,
					 uint64_t id)
{
	for (size_t i = 0; i < r->nchains; i++) /* a few per lock call site */
		if (r->chains[i].id == id && r->chains[i].pid == pid)
			return &r->chains[i];
	return NULL;
}

static int cmp_count(const void *a, const void *b)
{
	const struct lock_chain_use *x = a, *y = b;
	if (x->waits != y->waits)
		return x->waits > y->waits ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int cmp_use(const void *a, const void *b)
{
	const struct lock_chain_use *x = a, *y = b;
	if (x->wait_total != y->wait_total)
		return x->wait_total > y->wait_total ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Thread th acquired l after a wait, at ts: a hold starts, timed to its
 * release (the first TH_HELD at once; deeper ones are open holds). */
static void hold_start(struct lock_result *r, struct th *th, const struct lock_stats *l,
		       uint64_t ts)
{
	if (th->nheld == TH_HELD) {
		r->open_holds++;
		return;
	}
	th->held[th->nheld].addr = l->addr;
	th->held[th->nheld].ts = ts;
	th->held[th->nheld].preempted = th->preempted;
	th->held[th->nheld].blocked = th->blocked;
	th->held[th->nheld++].lock = (size_t)(l - r->locks);
}

/* The causes of th's switches out since `from` (its longest hold of l
 * so far): the ring's, grouped, most first; those past LOCK_CAUSES, or
 * older than the ring holds, in max_hold_other. */
static void hold_causes(struct lock_stats *l, const struct th *th, uint64_t from)
{
	struct lock_cause c[TH_SWITCHES];
	unsigned nc = 0;
	uint64_t all = l->max_hold_preempted + l->max_hold_blocked;
	for (uint64_t k = th->nsw > TH_SWITCHES ? th->nsw - TH_SWITCHES : 0; k < th->nsw; k++) {
		const typeof(th->sw[0]) *s = &th->sw[k % TH_SWITCHES];
		if (s->ts < from)
			continue;
		unsigned j = 0;
		while (j < nc && (c[j].blocked != s->blocked ||
				  (s->blocked ? c[j].sys1 != s->sys1 : c[j].next != s->next)))
			j++;
		if (j == nc)
			c[nc++] = (struct lock_cause){ s->blocked, s->sys1, s->blocked ? 0 : s->next, 0 };
		c[j].n++;
	}
	/* most first (a few entries: insertion) */
	for (unsigned i = 1; i < nc; i++)
		for (unsigned j = i; j && c[j].n > c[j - 1].n; j--) {
			struct lock_cause x = c[j];
			c[j] = c[j - 1];
			c[j - 1] = x;
		}
	l->max_hold_ncauses = nc < LOCK_CAUSES ? nc : LOCK_CAUSES;
	memcpy(l->max_hold_causes, c, l->max_hold_ncauses * sizeof(*c));
	l->max_hold_other = all;
	for (unsigned i = 0; i < l->max_hold_ncauses; i++)
		l->max_hold_other -= c[i].n;
}

/* A lock:acquire (STRATA_LOCKS_CHAINS=all): l taken without a wait, from
 * chain id. 0, or -ENOMEM. */
static int acquired(struct lock_stats *l, uint64_t kind, uint64_t id)
{
	if (!l->kind)
		l->kind = (unsigned)kind;
	l->acquired++;
	return chain_count(&l->acq_chains, &l->nacq_chains, id, 0);
}

/* One lock:* event of thread `th`. 0, or -ENOMEM. */
static int feed(struct strata_trace *t, struct lock_result *r, struct lmap *m, size_t *cap,
		struct imap *im, struct imap *tallies, const struct roles *ro, struct th *th,
		const struct strata_event *ev)
{
	unsigned ci = ev->cls->index;
	uint64_t a = field(ev, ro->f[ci][0]);
	struct lock_stats *l;

	th->locks |= ro->role[ci] < R_SYS_ENTER;
	switch (ro->role[ci]) {
	case R_SYS_ENTER:
	case R_SYS_EXIT:
		r->have_syscalls = true;
		th->sys1 = ro->role[ci] == R_SYS_ENTER && a < UINT32_MAX ? (uint32_t)a + 1 : 0;
		if (a >= NSYSCALLS || !ro->futex[a])
			return 0;
		r->have_futex = true;
		if (ro->role[ci] == R_SYS_ENTER) {
			th->in_futex = true;
			th->futex_at = ev->timestamp;
		} else if (th->in_futex) {
			th->in_futex = false;
			if (th->waiting) /* the part inside the wait */
				th->wait_futex += strata_trace_ticks_to_ns(
					t, ev->timestamp - (th->futex_at > th->wait_ts ?
							    th->futex_at : th->wait_ts));
		}
		return 0;
	case R_SWITCH: { /* common_pid is prev: the thread switched out */
		uint64_t st = field(ev, ro->f[ci][1]);
		bool blocked = (st & 0xff) && !(st & 0x100); /* not R, not R+ */
		r->have_sched = true;
		th->preempted += !blocked;
		th->blocked += blocked;
		th->sw[th->nsw++ % TH_SWITCHES] = (typeof(th->sw[0])){
			ev->timestamp, blocked ? th->sys1 : 0, (uint32_t)field(ev, ro->f[ci][2]),
			blocked };
		return 0;
	}
	case R_BEGIN:
		r->open_waits += th->waiting; /* a wait that never ended */
		th->wait_futex = 0;
		th->waiting = true;
		th->wait_addr = a;
		th->wait_ts = ev->timestamp;
		th->wait_kind = field(ev, ro->f[ci][1]);
		th->wait_chain = ro->f[ci][3] >= 0 ? field(ev, ro->f[ci][3]) : 0;
		return 0;
	case R_END:
		if (!th->waiting || th->wait_addr != a) {
			r->orphans++;
			return 0;
		}
		th->waiting = false;
		if (!(l = lock_get(m, r, cap, ev->pid, a)) || add_tid(l, ev->tid))
			return -ENOMEM;
		uint64_t ret = field(ev, ro->f[ci][1]);
		uint64_t waited = strata_trace_ticks_to_ns(t, ev->timestamp - th->wait_ts);
		bool got = !ret || ret == LOCK_EOWNERDEAD;
		struct lock_kind_stats *bk =
			&l->by_kind[th->wait_kind < LOCK_KINDS ? th->wait_kind : 0];
		l->kind = (unsigned)th->wait_kind;
		bk->waits++;
		bk->contended += got;
		bk->wait_total += waited;
		if (!l->init_site) /* the init before its first wait names it */
			l->init_site = imap_site(im, ev->pid, a);
		minmax(&l->wait_total, &l->wait_max, waited);
		l->futex_total += th->wait_futex;
		if (chain_use(l, th->wait_chain, waited) < 0)
			return -ENOMEM;
		if (!got) {
			l->failed++;
			return 0;
		}
		l->contended++;
		if (th->wait_kind != KIND_SEM) /* a semaphore has no owner */
			hold_start(r, th, l, ev->timestamp);
		return 0;
	case R_RELEASE:
		th->acq = field(ev, ro->f[ci][1]);
		th->cont = field(ev, ro->f[ci][2]);
		for (unsigned i = th->nheld; i-- > 0;) {
			if (th->held[i].addr != a)
				continue;
			l = &r->locks[th->held[i].lock];
			l->holds++;
			uint64_t held = strata_trace_ticks_to_ns(t, ev->timestamp - th->held[i].ts);
			if (held >= l->hold_max) { /* why the longest hold was long */
				l->max_hold_tid = ev->tid;
				l->max_hold_preempted = th->preempted - th->held[i].preempted;
				l->max_hold_blocked = th->blocked - th->held[i].blocked;
				hold_causes(l, th, th->held[i].ts);
			}
			minmax(&l->hold_total, &l->hold_max, held);
			th->held[i] = th->held[--th->nheld];
			return 0;
		}
		r->orphans++;
		return 0;
	case R_COUNT:
		th->acq = a;
		th->cont = field(ev, ro->f[ci][1]);
		th->counted = true;
		return 0;
	case R_ALIVE: /* th is thread `a`'s, not the logging one's */
		th->acq = field(ev, ro->f[ci][1]);
		th->cont = field(ev, ro->f[ci][2]);
		th->alive = true;
		return 0;
	case R_CHAIN:
		return chain_add(r, ev, ro->f[ci]);
	case R_ACQUIRE: /* STRATA_LOCKS_CHAINS=all: no wait, a chain */
		if (!(l = lock_get(m, r, cap, ev->pid, a)))
			return -ENOMEM;
		return acquired(l, field(ev, ro->f[ci][1]), field(ev, ro->f[ci][2]));
	case R_INIT:
		return imap_put(im, ev->pid, a, field(ev, ro->f[ci][2]));
	case R_TALLY:
		r->have_tally = true;
		return imap_add(tallies, ev->pid, a, field(ev, ro->f[ci][1]),
				field(ev, ro->f[ci][2]) != 0);
	case R_SPINS: /* just before its wait_end */
		if (!(l = lock_get(m, r, cap, ev->pid, a)))
			return -ENOMEM;
		l->spins += field(ev, ro->f[ci][1]);
		return 0;
	}
	return 0;
}

/* Thread th still waits at the end (`waited` ns so far): the wait counts
 * on its lock too, open, so that a hang or a deadlock shows in the lock's
 * totals and not only in the thread's. 0, or -ENOMEM. */
static int open_wait(struct lock_result *r, struct lmap *m, size_t *cap, const struct th *th,
		     uint64_t waited)
{
	struct lock_stats *l = lock_get(m, r, cap, th->pid, th->wait_addr);
	if (!l || add_tid(l, th->tid) || chain_use(l, th->wait_chain, waited) < 0)
		return -ENOMEM;
	if (!l->kind)
		l->kind = (unsigned)th->wait_kind;
	l->open_waits++;
	l->open_wait_total += waited;
	minmax(&l->wait_total, &l->wait_max, waited);
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct lock_thread *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int lock_compute(struct strata_trace *t, uint32_t pid, struct lock_result **out)
{
	struct roles ro = { 0 };
	struct an_tidmap threads = { 0 };
	struct lmap m = { 0 };
	struct imap im = { 0 }, tallies = { 0 };
	struct strata_iter *it = NULL;
	struct lock_result *r = calloc(1, sizeof(*r));
	size_t cap = 0;
	int ret = -ENOMEM;

	*out = NULL;
	if (!r || (ret = roles_init(t, &ro)) < 0)
		goto out;
	ret = -ENOMEM;
	if (an_names_create(t, &r->names) < 0)
		goto out;
	/* strata's own records too: the state dump names the threads */
	struct strata_iter_options io = { .stream = -1, .flags = STRATA_ITER_INTERNAL };
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto out;
	const struct strata_event *ev;
	uint64_t last = 0; /* the trace's last event: where open waits end */
	while (strata_iter_next(it, &ev) > 0) {
		if (an_names_feed(r->names, ev) < 0) {
			ret = -ENOMEM;
			goto out;
		}
		if (!(ev->id >> 16))
			continue; /* strata's own records: names only */
		last = ev->timestamp > last ? ev->timestamp : last;
		unsigned role = ro.role[ev->cls->index];
		if (!role || (pid && ev->pid != pid))
			continue;
		bool made;
		uint32_t tid = role == R_ALIVE ? (uint32_t)field(ev, ro.f[ev->cls->index][0])
					       : ev->tid;
		struct th *th = an_tidmap_get(&threads, tid, sizeof(*th), &made);
		ret = -ENOMEM;
		if (!th)
			goto out;
		if (role < R_SYS_ENTER) {
			th->tid = tid;
			th->pid = ev->pid;
		}
		if (feed(t, r, &m, &cap, &im, &tallies, &ro, th, ev) < 0)
			goto out;
	}
	ret = -ENOMEM;
	for (size_t i = 0; i < threads.n; i++) {
		struct th *th = threads.all[i];
		if (th->waiting &&
		    open_wait(r, &m, &cap, th, strata_trace_ticks_to_ns(t, last - th->wait_ts)) < 0)
			goto out;
		r->open_waits += th->waiting;
		r->open_holds += th->nheld;
		r->acquisitions += th->acq;
		r->contended += th->cont;
	}
	if (threads.n && !(r->threads = calloc(threads.n, sizeof(*r->threads))))
		goto out;
	for (size_t i = 0; i < threads.n; i++) {
		const struct th *th = threads.all[i];
		if (!th->locks)
			continue;
		struct lock_thread *lt = &r->threads[r->nthreads_listed++];
		lt->tid = th->tid;
		lt->pid = th->pid;
		lt->acquisitions = th->acq;
		lt->contended = th->cont;
		lt->alive = th->alive;
		/* no exit of its own seen: still running at the end */
		lt->partial = !th->counted;
		lt->holding = th->nheld;
		if (th->waiting) {
			lt->wait_addr = th->wait_addr;
			lt->wait_ns = strata_trace_ticks_to_ns(t, last - th->wait_ts);
		}
	}
	if (r->nthreads_listed)
		qsort(r->threads, r->nthreads_listed, sizeof(*r->threads), cmp_thread);
	for (size_t i = 0; i < threads.n; i++)
		r->nthreads += ((struct th *)threads.all[i])->locks;
	/* processes with a thread whose counts never reached the trace (no
	 * exit of its own, no lock:alive: the process was killed): their
	 * locks' acquisitions are lower bounds */
	uint32_t *lost = calloc(threads.n + 1, sizeof(*lost));
	size_t nlost = 0;
	if (!lost)
		goto out;
	for (size_t i = 0; i < threads.n; i++) {
		const struct th *th = threads.all[i];
		if (th->locks && !th->counted && !th->alive)
			lost[nlost++] = th->pid;
	}
	qsort(lost, nlost, sizeof(*lost), cmp_u32);
	for (size_t i = 0; i < r->nlocks; i++) {
		struct lock_stats *l = &r->locks[i];
		uint64_t n = tallies.cap ? tallies.slot[imap_at(&tallies, l->pid, l->addr)].site : 0;
		l->acquisitions = n & ~TALLY_PARTIAL;
		l->acquisitions_partial = (n & TALLY_PARTIAL) ||
					  (nlost && bsearch(&l->pid, lost, nlost, sizeof(*lost),
							    cmp_u32));
		/* (an empty list may be NULL, which qsort must not be given) */
		if (l->ntids)
			qsort(l->tids, l->ntids, sizeof(uint32_t), cmp_u32);
		if (l->nchains)
			qsort(l->chains, l->nchains, sizeof(*l->chains), cmp_use);
		if (l->nacq_chains)
			qsort(l->acq_chains, l->nacq_chains, sizeof(*l->acq_chains), cmp_count);
	}
	free(lost);
	*out = r;
	r = NULL;
	ret = 0;
out:
	strata_iter_destroy(it);
	an_tidmap_fini(&threads);
	free(m.slot);
	free(im.slot);
	free(tallies.slot);
	free(ro.role);
	free(ro.f);
	free(ro.futex);
	lock_free(r);
	return ret;
}

static enum lock_sort sort_by;

static uint64_t sort_key(const struct lock_stats *l)
{
	switch (sort_by) {
	case LOCK_SORT_COUNT: return l->contended;
	case LOCK_SORT_MAX: return l->wait_max;
	case LOCK_SORT_HOLD: return l->hold_total;
	case LOCK_SORT_SPIN: return l->spins;
	case LOCK_SORT_ACQ: return l->acquisitions;
	default: return l->wait_total;
	}
}

static int cmp_lock(const void *a, const void *b)
{
	const struct lock_stats *x = a, *y = b;
	uint64_t kx = sort_key(x), ky = sort_key(y);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void lock_sort(struct lock_result *r, enum lock_sort by)
{
	sort_by = by; /* qsort has no argument; the CLI sorts once */
	if (r->nlocks)
		qsort(r->locks, r->nlocks, sizeof(*r->locks), cmp_lock);
}

void lock_free(struct lock_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nlocks; i++) {
		free(r->locks[i].tids);
		free(r->locks[i].chains);
		free(r->locks[i].acq_chains);
	}
	free(r->locks);
	free(r->chains);
	free(r->threads);
	an_names_destroy(r->names);
	free(r);
}

const char *lock_name_of(const struct lock_result *r, uint32_t tid)
{
	return an_names_get(r->names, tid);
}
