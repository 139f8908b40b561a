// SPDX-License-Identifier: MIT
/* strata view's activity rules, from the command line or typed in the page: their parser, and api/activity's intervals (docs/view.md). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"

int vw_activity_parse(const char *arg, struct vw_activity *a, char *why, size_t len)
{
	char *s = strdup(arg), *eq = s ? strchr(s, '=') : NULL;
	char *dots = eq ? strstr(eq + 1, "..") : NULL, *by = dots ? strstr(dots + 2, ",by=") : NULL;
	if (!s) {
		snprintf(why, len, "'%s': out of memory", arg);
		return -ENOMEM;
	}
	if (!eq || eq == s || !dots || dots == eq + 1 || (by ? by : dots + 2)[0] == '\0' ||
	    (by && !by[4]) || eq - s > 64) {
		snprintf(why, len, "'%s': not NAME=BEGIN..END[,by=FIELD] (NAME up to 64 bytes)",
			 arg);
		free(s);
		return -EINVAL;
	}
	*eq = *dots = '\0';
	if (by)
		*by = '\0';
	*a = (struct vw_activity){ .name = s, .begin = eq + 1, .end = dots + 2,
				   .by = by ? by + 4 : NULL };
	return 0;
}

int vw_activity_make(struct strata_trace *t, struct vw_activity *a, char *why, size_t len)
{
	*why = '\0';
	int err = iv_pairer_create(t, &(struct iv_options){ .begin = a->begin, .end = a->end,
				   .by = a->by, .err = why, .errlen = len }, &a->pairer);
	if (err && !*why)
		snprintf(why, len, "%s", strerror(-err));
	return err;
}

void vw_activity_fini(struct vw_activity *a)
{
	iv_pairer_destroy(a->pairer);
	free(a->name);
	*a = (struct vw_activity){ 0 };
}

/* ---- api/activity: the page's rules, paired over a range on demand ---------- */

struct found {
	struct vw_iv *v;         /* kind: the rule's index */
	uint32_t *tid, *pid;
	size_t n, cap;
	uint64_t from, to;       /* ticks: the window the intervals overlap */
	const struct vw_filter *q;
	unsigned rule;
	bool full, nomem;
};

/* An interval kept: one that overlaps [from, to], whether it began
 * before the window, inside it, or spans it. */
static void on_found(const struct iv_interval *iv, void *arg)
{
	struct found *f = arg;
	if (iv->end < f->from || iv->begin > f->to || !vw_filter_keeps(f->q, 't', iv->tid))
		return;
	if (f->n == VW_EXACT_MAX) {
		f->full = true;
		return;
	}
	if (f->n == f->cap) {
		size_t c = f->cap ? 2 * f->cap : 1024;
		struct vw_iv *v = realloc(f->v, c * sizeof(*v));
		uint32_t *t = v ? realloc(f->tid, c * sizeof(*t)) : NULL;
		uint32_t *p = t ? realloc(f->pid, c * sizeof(*p)) : NULL;
		f->v = v ? v : f->v;
		f->tid = t ? t : f->tid;
		f->pid = p ? p : f->pid;
		if (!p) {
			f->nomem = true;
			return;
		}
		f->cap = c;
	}
	f->v[f->n] = (struct vw_iv){ iv->begin, iv->end, f->rule, iv->depth };
	f->tid[f->n] = iv->tid;
	f->pid[f->n++] = iv->pid;
}

static const struct vw_iv *sorting;

static int longest(const void *a, const void *b)
{
	const struct vw_iv *x = &sorting[*(const size_t *)a], *y = &sorting[*(const size_t *)b];
	uint64_t dx = x->end - x->begin, dy = y->end - y->begin;
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int earliest(const void *a, const void *b)
{
	const struct vw_iv *x = &sorting[*(const size_t *)a], *y = &sorting[*(const size_t *)b];
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static int bad_rule(struct vw_buf *o, unsigned i, const char *why)
{
	char line[VW_ARG_MAX + 320];
	snprintf(line, sizeof(line), "rule %u: %s", i + 1, why);
	vw_puts(o, "{\"error\":");
	vw_put_str(o, line, strlen(line));
	vw_puts(o, "}");
	return 400;
}

/* The rules' text, split at ';', parsed and made into pairers: 0, 400
 * (why in o), -ENOMEM. */
static int make_rules(struct vw_model *m, const char *text, struct vw_activity *r,
		      unsigned *n, struct vw_buf *o)
{
	char why[512];
	*n = 0;
	unsigned seps = 0;
	for (const char *p = text; *p; p++)
		seps += *p == ';';
	if (seps >= VW_RULES_MAX && text[strlen(text) - 1] != ';')
		return bad_rule(o, VW_RULES_MAX, "at most " VW_STR(VW_RULES_MAX) " rules, "
				"separated by ';'");
	for (const char *p = text; *p;) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char one[VW_RULE_MAX + 1];
		if (*n == VW_RULES_MAX)
			return bad_rule(o, *n, "at most " VW_STR(VW_RULES_MAX) " rules, "
					"separated by ';'");
		if (len > VW_RULE_MAX)
			return bad_rule(o, *n, "longer than " VW_STR(VW_RULE_MAX) " bytes");
		memcpy(one, p, len);
		one[len] = '\0';
		/* a rule that fails is still in r, for the caller's fini */
		int err = vw_activity_parse(one, &r[*n], why, sizeof(why));
		if (!err)
			err = vw_activity_make(m->t, &r[*n], why, sizeof(why));
		if (err == -EINVAL)
			return bad_rule(o, *n, why);
		if (err)
			return err;
		++*n;
		p = e ? e + 1 : p + len;
	}
	return *n ? 0 : bad_rule(o, 0, "no rule given");
}

/* Ends that found no begin, over the rules' pairers (one kind each). */
static uint64_t orphans(const struct vw_activity *r, unsigned nr)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < nr; i++) {
		uint64_t open, orphan, deep;
		iv_pairer_unmatched(r[i].pairer, 0, &open, &orphan, &deep);
		sum += orphan;
	}
	return sum;
}

/* Whether an interval begun at or before `t` is still open: one that
 * may overlap the window. Those begun after it do not matter, and in a
 * busy trace some always are open. */
static bool open_since(const struct vw_activity *r, unsigned nr, uint64_t t)
{
	for (unsigned i = 0; i < nr; i++)
		if (iv_pairer_oldest_open(r[i].pairer) <= t)
			return true;
	return false;
}

/* Events a pass reads past the window at least: an interval that spans
 * the window shows only by its end, ahead, found without a begin. */
#define VW_AHEAD (VW_EXACT_MAX / 4)

/*
 * One pass: the rules' pairers made anew and fed the events from
 * `back` ticks before the window through it and on, until `back` ticks
 * and VW_AHEAD events past it and then while an interval begun by the
 * window's end is still open (checked every 1024 events), VW_EXACT_MAX events at most (*complete
 * false past that). *lost: an end at or after the window's start found
 * no begin, so an interval that overlaps the window began before the
 * pass (or its begin is not in the trace). Returns 0 or -ENOMEM.
 */
static int pair_pass(struct vw_model *m, struct vw_activity *r, unsigned nr, uint64_t back,
		     struct found *f, bool *complete, bool *lost)
{
	struct strata_iter *it = NULL;
	char why[512];
	int err = 0;
	for (unsigned i = 0; i < nr && !err; i++) {
		iv_pairer_destroy(r[i].pairer);
		r[i].pairer = NULL;
		err = vw_activity_make(m->t, &r[i], why, sizeof(why));
	}
	if (!err)
		err = strata_iter_create(m->t, &(struct strata_iter_options){ .stream = -1 }, &it);
	if (err)
		return err == -EINVAL ? -ENOMEM : err; /* it was made once already */
	f->n = 0;
	f->full = false;
	uint64_t read = 0, ahead = 0, before = UINT64_MAX;
	uint64_t from = f->from - m->begin > back ? f->from - back : m->begin;
	uint64_t past = back < UINT64_MAX - f->to ? f->to + back : UINT64_MAX;
	const struct strata_event *ev;
	*complete = true;
	strata_iter_seek(it, from);
	while (!f->q->none && strata_iter_next(it, &ev) == 1) {
		if (read++ == VW_EXACT_MAX) {
			*complete = false;
			break;
		}
		if (ev->timestamp >= f->from && before == UINT64_MAX)
			before = orphans(r, nr);
		ahead += ev->timestamp > f->to;
		if (ev->timestamp > past && ahead >= VW_AHEAD && read % 1024 == 0 &&
		    !open_since(r, nr, f->to))
			break;
		for (unsigned i = 0; i < nr && !f->nomem; i++) {
			f->rule = i;
			if (iv_pairer_feed(r[i].pairer, ev, on_found, f))
				f->nomem = true;
		}
		if (f->nomem) {
			strata_iter_destroy(it);
			return -ENOMEM;
		}
	}
	*lost = before != UINT64_MAX && orphans(r, nr) > before;
	strata_iter_destroy(it);
	return 0;
}

/*
 * The intervals of the rules of `text` (parsed into r, *nr of them) that
 * overlap f's window: paired from a window's width before it to a width
 * (and VW_AHEAD events) past it, then, while an end at or after its start found no begin, 4
 * times further each way each pass (an interval spanning the window shows
 * by its end, ahead, that its begin lies behind), until the trace's start
 * or a pass that reads VW_EXACT_MAX events (docs/view.md,
 * "api/activity"). Returns 0, 400 (a bad rule, why in o), -ENOMEM.
 */
static int pair_rules(struct vw_model *m, const char *text, struct vw_activity *r,
		      unsigned *nr, struct found *f, bool *complete, struct vw_buf *o)
{
	bool lost = false;
	int err = make_rules(m, text, r, nr, o);
	for (uint64_t back = f->to - f->from + 1; !err; back *= 4) {
		err = pair_pass(m, r, *nr, back, f, complete, &lost);
		if (!lost || !*complete || f->from - m->begin <= back || back > UINT64_MAX / 4)
			break;
	}
	return err;
}

static void found_fini(struct found *f, struct vw_activity *r)
{
	for (unsigned i = 0; i < VW_RULES_MAX; i++)
		vw_activity_fini(&r[i]);
	free(f->v);
	free(f->tid);
	free(f->pid);
}

int vw_activity_durations(struct vw_model *m, const char *text, unsigned rule, uint64_t a,
			  uint64_t b, const struct vw_filter *q, uint64_t **out, size_t *n,
			  bool *complete, struct vw_buf *o)
{
	struct vw_activity r[VW_RULES_MAX] = { 0 };
	struct found f = { .from = a, .to = b, .q = q };
	unsigned nr;
	*out = NULL;
	*n = 0;
	int err = pair_rules(m, text, r, &nr, &f, complete, o);
	if (!err && rule >= nr)
		err = bad_rule(o, rule, "no such rule: kind counts the rules from 0");
	if (!err && !(*out = malloc((f.n + 1) * sizeof(**out))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < f.n; i++)
		if (f.v[i].kind == rule && f.v[i].begin >= a)
			(*out)[(*n)++] = vw_ns(m, f.v[i].end - f.v[i].begin);
	*complete = *complete && !f.full;
	found_fini(&f, r);
	return err;
}

int vw_api_activity(struct vw_model *m, const char *text, uint64_t t0, uint64_t t1, int by,
		    unsigned n, const struct vw_filter *q, struct vw_buf *o)
{
	struct vw_activity r[VW_RULES_MAX] = { 0 };
	struct found f = { .from = m->begin + vw_ticks(m, t0),
			   .to = m->begin + vw_ticks(m, t1 + 1) - 1, .q = q };
	size_t *order = NULL;
	unsigned nr;
	bool complete = true;
	int err = pair_rules(m, text, r, &nr, &f, &complete, o);
	if (err)
		goto out;
	if (!(order = malloc((f.n + 1) * sizeof(*order)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < f.n; i++)
		order[i] = i;
	sorting = f.v; /* one thread answers every request (server.c) */
	qsort(order, f.n, sizeof(*order), by ? earliest : longest);
	vw_printf(o, "{\"t0\":%llu,\"t1\":%llu,\"by\":%d,\"complete\":%s,\"more\":%s,"
		  "\"kinds\":[", (unsigned long long)t0, (unsigned long long)t1, by,
		  complete && !f.full ? "true" : "false", f.n > n || f.full ? "true" : "false");
	for (unsigned i = 0; i < nr; i++) {
		vw_puts(o, i ? "," : "");
		vw_put_str(o, r[i].name, strlen(r[i].name));
	}
	vw_puts(o, "],\"intervals\":[");
	for (size_t i = 0; i < f.n && i < n; i++) {
		const struct vw_iv *iv = &f.v[order[i]];
		vw_printf(o, "%s{\"tid\":%u,\"pid\":%u,\"begin\":%llu,\"end\":%llu,"
			  "\"dur\":%llu,\"depth\":%u,\"kind\":%u}", i ? "," : "", f.tid[order[i]],
			  f.pid[order[i]], (unsigned long long)vw_ns(m, iv->begin - m->begin),
			  (unsigned long long)vw_ns(m, iv->end - m->begin),
			  (unsigned long long)vw_ns(m, iv->end - iv->begin), iv->depth, iv->kind);
	}
	vw_puts(o, "]}");
out:
	found_fini(&f, r);
	free(order);
	return err;
}
