// SPDX-License-Identifier: MIT
/* strata view's api/window answer in its two forms, JSON and binary: the back ends of the one walk over the model (docs/view.md, "The binary window"). */
#include <stdio.h>
#include <string.h>

#include "wire.h"

/*
 * Each table's columns, in the order the answer holds them, one letter a
 * column: 'f' float32 (pixels), 'd' float64 (ns, and the arrows' pixels,
 * which are not clamped to the window), 'i' int32, 'u' uint32, 'b' uint8.
 * The JSON's numbers of a record in the same order (docs/view.md).
 */
static const char *const cols[WT_N] = {
	[WT_SLICES] = "ffib",     /* x0, x1, tid (a thread's: cpu + 1), mixed */
	[WT_STATES] = "ffbbdd",   /* x0, x1, state, mixed, from, to */
	[WT_IVS] = "ffuuddb",     /* x0, x1, depth, kind, from, to, exact */
	[WT_MARKS] = "uuudi",     /* x, span, count, ts, class */
	[WT_ARROWS] = "ddiuidd",  /* x0, x1, waker, cpu, wakee, t, run */
	[WT_FLOWS] = "ddiuiudd",  /* x0, x1, sender, scpu, receiver, rcpu, ts, tr */
};

static unsigned col_size(char c)
{
	return c == 'd' ? 8 : c == 'b' ? 1 : 4;
}

void wire_init(struct wire *e, struct vw_buf *o, bool bin)
{
	*e = (struct wire){ .o = o, .bin = bin };
}

void wire_fini(struct wire *e)
{
	for (unsigned k = 0; k < WT_N; k++) {
		vw_buf_fini(&e->t[k].counts);
		for (unsigned c = 0; c < WIRE_COLS; c++)
			vw_buf_fini(&e->t[k].col[c]);
	}
	vw_buf_fini(&e->tids);
	vw_buf_fini(&e->keys);
}

/* size bytes of bits, little-endian whatever the host's order. A value
 * at a time, hundreds of thousands an answer: stored in place while
 * there is room (these buffers are bytes, never read as text, so they
 * need not end in vw_put's '\0'), else by vw_put, which grows b. */
static void put_le(struct vw_buf *b, uint64_t bits, unsigned size)
{
	unsigned char p[8];
	for (unsigned i = 0; i < size; i++)
		p[i] = (unsigned char)(bits >> (8 * i));
	if (b->len + size < b->cap && !b->failed) {
		memcpy(b->p + b->len, p, size);
		b->len += size;
	} else {
		vw_put(b, (const char *)p, size);
	}
}

/* One record of the open list's table: v[c] for column c, converted to
 * the column's type (every value fits it: docs/view.md). */
static void bin_rec(struct wire *e, const double *v)
{
	struct wire_tab *t = &e->t[e->tab];
	const char *spec = cols[e->tab];
	for (unsigned c = 0; spec[c]; c++) {
		uint64_t bits;
		if (spec[c] == 'f') {
			float f = (float)v[c];
			uint32_t u;
			memcpy(&u, &f, sizeof(u));
			bits = u;
		} else if (spec[c] == 'd') {
			memcpy(&bits, &v[c], sizeof(bits));
		} else if (spec[c] == 'i') {
			bits = (uint32_t)(int32_t)v[c];
		} else {
			bits = (uint32_t)v[c];
		}
		put_le(&t->col[c], bits, col_size(spec[c]));
	}
	t->recs++;
}

static bool first(const struct wire *e)
{
	return !e->n;
}

/* ---- the frame ----------------------------------------------------------- */

void wire_head(struct wire *e, uint64_t t0, uint64_t t1, unsigned w, bool exact,
	       bool filtered, uint64_t events)
{
	e->t0 = t0;
	e->t1 = t1;
	e->w = w;
	e->exact = exact;
	e->filtered = filtered;
	e->events = events;
	e->items = 0;
	if (!e->bin)
		vw_printf(e->o, "{\"t0\":%llu,\"t1\":%llu,\"w\":%u,\"exact\":%s,"
			  "\"filtered\":%s,\"events\":%llu,\"cpus\":[", (unsigned long long)t0,
			  (unsigned long long)t1, w, exact ? "true" : "false",
			  filtered ? "true" : "false", (unsigned long long)events);
}

/* The CPUs' rows are 0..ncpus-1: the binary form keeps their number only. */
void wire_cpu(struct wire *e, unsigned cpu)
{
	if (e->bin)
		e->ncpus++;
	else
		vw_printf(e->o, "%s{\"cpu\":%u", e->items ? "," : "", cpu);
	e->items++;
}

void wire_thread(struct wire *e, uint32_t tid)
{
	struct vw_buf *b = e->bin ? &e->tids : e->o;
	vw_printf(b, e->bin ? "%s%u" : "%s{\"tid\":%u", e->items ? "," : "", tid);
	e->items++;
}

void wire_obj_end(struct wire *e)
{
	if (!e->bin)
		vw_puts(e->o, "}");
}

void wire_threads(struct wire *e)
{
	if (!e->bin)
		vw_puts(e->o, "],\"threads\":[");
	e->items = 0;
}

void wire_rows_end(struct wire *e)
{
	if (!e->bin)
		vw_puts(e->o, "]");
}

void wire_list(struct wire *e, enum wire_table tab, const char *key)
{
	e->tab = tab;
	e->n = 0;
	if (!e->bin)
		vw_printf(e->o, ",\"%s\":[", key);
}

void wire_list_end(struct wire *e)
{
	if (!e->bin) {
		vw_puts(e->o, "]");
		return;
	}
	put_le(&e->t[e->tab].counts, e->n, 4);
	e->t[e->tab].rows++;
}

void wire_left(struct wire *e, const char *key, uint64_t n)
{
	if (e->bin)
		*(e->tab == WT_ARROWS ? &e->arrows_left : &e->flows_left) = n;
	else
		vw_printf(e->o, ",\"%s\":%llu", key, (unsigned long long)n);
}

/* b's bytes, then zeros up to a multiple of 8; b's failure is o's. */
static void put_padded(struct vw_buf *o, const struct vw_buf *b)
{
	static const char zero[8];
	if (b->len)
		vw_put(o, b->p, b->len);
	vw_put(o, zero, (8 - o->len % 8) % 8);
	o->failed |= b->failed;
}

/* The binary answer: header, preamble, then each table's counts and
 * columns, each padded to 8 bytes so that the page views them in place
 * (docs/view.md, "The binary window"). o is empty before: the offsets are
 * the answer's. */
static void bin_end(struct wire *e)
{
	struct vw_buf pre = { 0 }, *o = e->o;
	vw_printf(&pre, "{\"t0\":%llu,\"t1\":%llu,\"w\":%u,\"exact\":%s,\"filtered\":%s,"
		  "\"events\":%llu,\"arrows_left\":%llu,\"flows_left\":%llu,\"ncpus\":%u,"
		  "\"tids\":[%s],\"keys\":[%s]}", (unsigned long long)e->t0,
		  (unsigned long long)e->t1, e->w, e->exact ? "true" : "false",
		  e->filtered ? "true" : "false", (unsigned long long)e->events,
		  (unsigned long long)e->arrows_left, (unsigned long long)e->flows_left,
		  e->ncpus, e->tids.p ? e->tids.p : "", e->keys.p ? e->keys.p : "");
	vw_put(o, WIRE_MAGIC, 4);
	put_le(o, WIRE_VERSION, 4);
	put_le(o, pre.len, 4);
	put_le(o, WT_N, 4);
	for (unsigned k = 0; k < WT_N; k++) {
		put_le(o, e->t[k].rows, 4);
		put_le(o, e->t[k].recs, 4);
	}
	put_padded(o, &pre);
	o->failed |= e->tids.failed || e->keys.failed;
	vw_buf_fini(&pre);
	for (unsigned k = 0; k < WT_N; k++) {
		put_padded(o, &e->t[k].counts);
		for (unsigned c = 0; cols[k][c]; c++)
			put_padded(o, &e->t[k].col[c]);
	}
}

void wire_end(struct wire *e)
{
	if (e->bin)
		bin_end(e);
	else
		vw_puts(e->o, "}");
}

/* ---- the records: each one's JSON (as the answer always wrote it) beside
 * its binary columns ---------------------------------------------------- */

void wire_slice(struct wire *e, double x0, double x1, int32_t id, int mixed, bool px)
{
	if (e->bin)
		bin_rec(e, (const double[]){ x0, x1, id, mixed });
	else if (px)
		vw_row(e->o, first(e), "uudd", (uint64_t)x0, (uint64_t)x1, (int64_t)id,
		       (int64_t)mixed);
	else
		vw_row(e->o, first(e), "ffdd", x0, x1, (int64_t)id, (int64_t)mixed);
	e->n++;
}

void wire_state(struct wire *e, double x0, double x1, int state, int mixed, uint64_t from,
		uint64_t to)
{
	if (e->bin)
		bin_rec(e, (const double[]){ x0, x1, state, mixed, (double)from, (double)to });
	else
		vw_row(e->o, first(e), "ffdduu", x0, x1, (int64_t)state, (int64_t)mixed, from,
		       to);
	e->n++;
}

void wire_iv(struct wire *e, double x0, double x1, uint32_t depth, uint32_t kind,
	     uint64_t from, uint64_t to, bool exact)
{
	if (e->bin)
		bin_rec(e, (const double[]){ x0, x1, depth, kind, (double)from, (double)to,
					     exact });
	else
		vw_row(e->o, first(e), "ffuuuud", x0, x1, (uint64_t)depth, (uint64_t)kind, from,
		       to, (int64_t)exact);
	e->n++;
}

void wire_mark(struct wire *e, unsigned x, uint32_t span, uint32_t count, uint64_t ts,
	       int32_t cls)
{
	if (e->bin)
		bin_rec(e, (const double[]){ x, span, count, (double)ts, cls });
	else
		vw_row(e->o, first(e), "uuuud", (uint64_t)x, (uint64_t)span, (uint64_t)count, ts,
		       (int64_t)cls);
	e->n++;
}

void wire_arrow(struct wire *e, double x0, double x1, int32_t waker, uint32_t cpu,
		int32_t wakee, uint64_t t, int64_t run)
{
	if (e->bin)
		bin_rec(e, (const double[]){ x0, x1, waker, cpu, wakee, (double)t,
					     (double)run });
	else
		vw_row(e->o, first(e), "ffdudud", x0, x1, (int64_t)waker, (uint64_t)cpu,
		       (int64_t)wakee, t, run);
	e->n++;
}

void wire_flow(struct wire *e, double x0, double x1, int32_t stid, uint32_t scpu,
	       int32_t rtid, uint32_t rcpu, int64_t ts, int64_t tr, const char *key)
{
	if (e->bin) {
		bin_rec(e, (const double[]){ x0, x1, stid, scpu, rtid, rcpu, (double)ts,
					     (double)tr });
		/* a key is digits and a sign: a JSON string as it is */
		vw_printf(&e->keys, "%s\"%s\"", e->keys.len ? "," : "", key);
	} else {
		/* printf's %.2f, as this list was always written (vw_row's
		 * rounding may differ from it at an exact half) */
		vw_printf(e->o, "%s%.2f,%.2f,%d,%u,%d,%u,%lld,%lld,\"%s\"", first(e) ? "" : ",",
			  x0, x1, stid, scpu, rtid, rcpu, (long long)ts, (long long)tr, key);
	}
	e->n++;
}
