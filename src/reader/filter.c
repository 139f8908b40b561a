/* SPDX-License-Identifier: MIT */
/* Event filters: cheap conditions, and field expressions compiled to bytecode. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>

#include "rd.h"

/*
 * Expression grammar (precedence low to high, bitwise above comparisons so
 * that `flags & 1 == 1` means what it says):
 *   or   := and ('||' and)*
 *   and  := cmp ('&&' cmp)*
 *   cmp  := bor (('=='|'!='|'<'|'<='|'>'|'>=') bor)?
 *   bor  := band ('|' band)*
 *   band := un ('&' un)*
 *   un   := '!' un | '(' or ')' | INT | STRING | IDENT
 */

enum op {
	OP_INT, OP_STR, OP_ID, OP_NOT, OP_BAND, OP_BOR, OP_EQ, OP_NE, OP_LT,
	OP_LE, OP_GT, OP_GE, OP_JF, OP_JT, OP_POP, OP_BOOL,
};

struct insn {
	uint8_t op;
	uint32_t arg;   /* OP_ID: ident index; OP_STR: string index; jumps: target */
	uint64_t imm;   /* OP_INT */
	bool neg;       /* OP_INT: negative literal */
};

#define MAX_STACK 64
#define ID_MISSING -1
#define ID_CPU -2
#define ID_PID -3
#define ID_TID -4

struct rd_filter_prog {
	struct insn *code;
	unsigned ncode, capcode;
	char **ids;
	unsigned nids;
	char **strs;
	unsigned nstrs;
	int32_t *res; /* [class index * nids + id] -> field or ID_* */
};

struct cp {
	const char *src, *p;
	struct rd_filter_prog *g;
	char *err;
	size_t errlen;
	bool failed;
	int depth;
	int sp, maxsp;
};

__attribute__((format(printf, 2, 3))) static void cfail(struct cp *c,
							const char *fmt, ...)
{
	if (c->failed)
		return;
	c->failed = true;
	int n = snprintf(c->err, c->errlen, "at column %d: ", (int)(c->p - c->src) + 1);
	if (n < 0 || (size_t)n >= c->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->errlen - n, fmt, ap);
	va_end(ap);
}

static unsigned emit(struct cp *c, uint8_t op, uint32_t arg, uint64_t imm, bool neg)
{
	struct rd_filter_prog *g = c->g;
	if (c->failed)
		return 0;
	if (g->ncode == g->capcode) {
		unsigned cap = g->capcode ? g->capcode * 2 : 16;
		struct insn *n = realloc(g->code, cap * sizeof(*n));
		if (!n) {
			cfail(c, "out of memory");
			return 0;
		}
		g->code = n;
		g->capcode = cap;
	}
	g->code[g->ncode] = (struct insn){ op, arg, imm, neg };
	/* stack effect, to bound the evaluation stack at compile time */
	if (op == OP_INT || op == OP_STR || op == OP_ID)
		c->sp++;
	else if (op != OP_NOT && op != OP_JF && op != OP_JT && op != OP_BOOL)
		c->sp--;
	if (c->sp > c->maxsp)
		c->maxsp = c->sp;
	if (c->maxsp > MAX_STACK)
		cfail(c, "expression too deep");
	return g->ncode++;
}

static void skip_ws(struct cp *c)
{
	while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n')
		c->p++;
}

static bool accept(struct cp *c, const char *s)
{
	skip_ws(c);
	size_t n = strlen(s);
	if (strncmp(c->p, s, n))
		return false;
	/* '&' must not eat '&&', '|' not '||', '<' not '<=' ... */
	if (n == 1 && (s[0] == '&' || s[0] == '|') && c->p[1] == s[0])
		return false;
	if (n == 1 && (s[0] == '<' || s[0] == '>' || s[0] == '!') && c->p[1] == '=')
		return false;
	c->p += n;
	return true;
}

static void p_or(struct cp *c);

static void p_un(struct cp *c)
{
	skip_ws(c);
	if (++c->depth > 32) {
		cfail(c, "expression nested too deeply");
		return;
	}
	const char *s = c->p;
	if (accept(c, "!")) {
		p_un(c);
		emit(c, OP_NOT, 0, 0, false);
	} else if (accept(c, "(")) {
		p_or(c);
		if (!accept(c, ")"))
			cfail(c, "expected ')'");
	} else if ((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')) {
		bool neg = *s == '-';
		char *e;
		errno = 0;
		unsigned long long v = strtoull(s + neg, &e, 0);
		if (errno || e == s + neg)
			cfail(c, "bad number");
		c->p = e;
		emit(c, OP_INT, 0, v, neg && v);
	} else if (*s == '"') {
		const char *b = ++c->p;
		while (*c->p && *c->p != '"')
			c->p++;
		if (!*c->p) {
			cfail(c, "unterminated string");
			goto out;
		}
		char *str = strndup(b, c->p - b);
		char **n = realloc(c->g->strs, (c->g->nstrs + 1) * sizeof(*n));
		if (!str || !n) {
			free(str);
			if (n)
				c->g->strs = n;
			cfail(c, "out of memory");
			goto out;
		}
		c->g->strs = n;
		n[c->g->nstrs] = str;
		c->p++;
		emit(c, OP_STR, c->g->nstrs++, 0, false);
	} else if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_') {
		while ((*c->p >= 'a' && *c->p <= 'z') || (*c->p >= 'A' && *c->p <= 'Z') ||
		       (*c->p >= '0' && *c->p <= '9') || *c->p == '_')
			c->p++;
		size_t n = c->p - s;
		unsigned k;
		for (k = 0; k < c->g->nids; k++)
			if (strlen(c->g->ids[k]) == n && !memcmp(c->g->ids[k], s, n))
				break;
		if (k == c->g->nids) {
			char *id = strndup(s, n);
			char **ids = realloc(c->g->ids, (c->g->nids + 1) * sizeof(*ids));
			if (!id || !ids) {
				free(id);
				if (ids)
					c->g->ids = ids;
				cfail(c, "out of memory");
				goto out;
			}
			c->g->ids = ids;
			ids[c->g->nids++] = id;
		}
		emit(c, OP_ID, k, 0, false);
	} else {
		cfail(c, *s ? "expected a field, a number, a string, '!' or '('"
			    : "unexpected end of expression");
	}
out:
	c->depth--;
}

static void p_band(struct cp *c)
{
	p_un(c);
	while (!c->failed && accept(c, "&")) {
		p_un(c);
		emit(c, OP_BAND, 0, 0, false);
	}
}

static void p_bor(struct cp *c)
{
	p_band(c);
	while (!c->failed && accept(c, "|")) {
		p_band(c);
		emit(c, OP_BOR, 0, 0, false);
	}
}

static void p_cmp(struct cp *c)
{
	static const struct { const char *s; uint8_t op; } ops[] = {
		{ "==", OP_EQ }, { "!=", OP_NE }, { "<=", OP_LE }, { ">=", OP_GE },
		{ "<", OP_LT }, { ">", OP_GT },
	};
	p_bor(c);
	for (unsigned i = 0; !c->failed && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (accept(c, ops[i].s)) {
			p_bor(c);
			emit(c, ops[i].op, 0, 0, false);
			break;
		}
}

static void p_and(struct cp *c)
{
	p_cmp(c);
	while (!c->failed && accept(c, "&&")) {
		emit(c, OP_BOOL, 0, 0, false);
		unsigned j = emit(c, OP_JF, 0, 0, false);
		emit(c, OP_POP, 0, 0, false);
		p_cmp(c);
		emit(c, OP_BOOL, 0, 0, false);
		if (!c->failed)
			c->g->code[j].arg = c->g->ncode;
	}
}

static void p_or(struct cp *c)
{
	p_and(c);
	while (!c->failed && accept(c, "||")) {
		emit(c, OP_BOOL, 0, 0, false);
		unsigned j = emit(c, OP_JT, 0, 0, false);
		emit(c, OP_POP, 0, 0, false);
		p_and(c);
		emit(c, OP_BOOL, 0, 0, false);
		if (!c->failed)
			c->g->code[j].arg = c->g->ncode;
	}
}

static void prog_free(struct rd_filter_prog *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < g->nids; i++)
		free(g->ids[i]);
	for (unsigned i = 0; i < g->nstrs; i++)
		free(g->strs[i]);
	free(g->ids);
	free(g->strs);
	free(g->code);
	free(g->res);
	free(g);
}

/* ---- evaluation ----------------------------------------------------------------- */

struct val {
	uint8_t kind; /* 0 int, 1 string */
	bool neg;     /* int: negative as int64 */
	uint64_t u;
	const char *s;
	uint32_t len;
};

static int cmp_int(const struct val *a, const struct val *b)
{
	if (a->neg != b->neg)
		return a->neg ? -1 : 1;
	return a->u < b->u ? -1 : a->u > b->u; /* same sign: two's complement orders */
}

static bool truthy(const struct val *v)
{
	return v->kind ? v->len != 0 : v->u != 0;
}

static bool load_id(const struct rd_filter_prog *g, const struct strata_event *ev,
		    unsigned k, struct val *out)
{
	int r = g->res[(size_t)ev->cls->index * g->nids + k];
	memset(out, 0, sizeof(*out));
	switch (r) {
	case ID_MISSING:
		return false;
	case ID_CPU:
		out->u = ev->cpu;
		return true;
	case ID_PID:
		out->u = ev->pid;
		return true;
	case ID_TID:
		out->u = ev->tid;
		return true;
	}
	struct strata_value v;
	if (strata_event_field(ev, r, &v) < 0)
		return false;
	switch (v.type) {
	case STRATA_VALUE_UINT:
		out->u = v.u;
		return true;
	case STRATA_VALUE_SINT:
		out->u = v.u;
		out->neg = v.s < 0;
		return true;
	case STRATA_VALUE_DOUBLE:
		out->neg = v.d < 0;
		out->u = v.d < 0 ? (uint64_t)(int64_t)v.d : (uint64_t)v.d;
		return true;
	case STRATA_VALUE_STRING:
		out->kind = 1;
		out->s = v.str;
		out->len = v.count;
		return true;
	}
	return false;
}

static bool run(const struct rd_filter_prog *g, const struct strata_event *ev)
{
	struct val st[MAX_STACK + 1];
	int sp = -1;
	for (unsigned pc = 0; pc < g->ncode; pc++) {
		const struct insn *in = &g->code[pc];
		struct val *a, *b;
		int c;
		switch (in->op) {
		case OP_INT:
			st[++sp] = (struct val){ 0, in->neg, in->neg ? (uint64_t)-(int64_t)in->imm : in->imm, NULL, 0 };
			break;
		case OP_STR:
			st[++sp] = (struct val){ 1, false, 0, g->strs[in->arg],
						 (uint32_t)strlen(g->strs[in->arg]) };
			break;
		case OP_ID:
			if (!load_id(g, ev, in->arg, &st[++sp]))
				return false; /* no such field: no match */
			break;
		case OP_NOT:
			st[sp] = (struct val){ 0, false, !truthy(&st[sp]), NULL, 0 };
			break;
		case OP_BOOL:
			st[sp] = (struct val){ 0, false, truthy(&st[sp]), NULL, 0 };
			break;
		case OP_BAND:
		case OP_BOR:
			b = &st[sp--];
			a = &st[sp];
			if (a->kind || b->kind)
				return false;
			a->u = in->op == OP_BAND ? a->u & b->u : a->u | b->u;
			a->neg = (int64_t)a->u < 0 && (a->neg || b->neg);
			break;
		case OP_JF:
			if (!st[sp].u)
				pc = in->arg - 1;
			break;
		case OP_JT:
			if (st[sp].u)
				pc = in->arg - 1;
			break;
		case OP_POP:
			sp--;
			break;
		default: /* comparisons */
			b = &st[sp--];
			a = &st[sp];
			if (a->kind != b->kind)
				return false;
			if (a->kind) {
				uint32_t n = a->len < b->len ? a->len : b->len;
				c = memcmp(a->s, b->s, n);
				if (!c)
					c = a->len < b->len ? -1 : a->len > b->len;
			} else {
				c = cmp_int(a, b);
			}
			bool r = in->op == OP_EQ ? c == 0 : in->op == OP_NE ? c != 0 :
				 in->op == OP_LT ? c < 0 : in->op == OP_LE ? c <= 0 :
				 in->op == OP_GT ? c > 0 : c >= 0;
			*a = (struct val){ 0, false, r, NULL, 0 };
			break;
		}
	}
	return sp >= 0 && truthy(&st[sp]);
}

bool rd_filter_expr_match(const struct strata_filter *f, const struct strata_event *ev)
{
	for (unsigned i = 0; i < f->nprogs; i++)
		if (!run(f->progs[i], ev))
			return false;
	return true;
}

/* ---- public API -------------------------------------------------------------------- */

int strata_filter_create(struct strata_trace *t, struct strata_filter **out)
{
	struct strata_filter *f = calloc(1, sizeof(*f));
	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->trace = t;
	f->t_begin = 0;
	f->t_end = UINT64_MAX;
	*out = f;
	return 0;
}

void strata_filter_destroy(struct strata_filter *f)
{
	if (!f)
		return;
	free(f->cpus);
	free(f->pids);
	free(f->tids);
	free(f->name_ok);
	for (unsigned i = 0; i < f->nprogs; i++)
		prog_free(f->progs[i]);
	free(f->progs);
	free(f);
}

int strata_filter_time(struct strata_filter *f, uint64_t begin, uint64_t end)
{
	f->narrowed = true; /* iterators leave their fast path */
	if (begin > end)
		return -EINVAL;
	if (begin > f->t_begin)
		f->t_begin = begin;
	if (end < f->t_end)
		f->t_end = end;
	return 0;
}

/* x into the set v (sorted, without repeats: rd_in searches it in
 * halves, so a viewer's process filter of thousands of threads costs an
 * event a dozen compares, not thousands). */
static int push_u32(uint32_t **v, uint32_t *n, uint32_t x)
{
	uint32_t at = *n; /* ids given in order append */
	while (at && (*v)[at - 1] > x)
		at--;
	if (at && (*v)[at - 1] == x)
		return 0;
	uint32_t *nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	memmove(nv + at + 1, nv + at, (*n - at) * sizeof(*nv));
	nv[at] = x;
	(*n)++;
	*v = nv;
	return 0;
}

int strata_filter_cpu(struct strata_filter *f, uint32_t cpu)
{
	f->narrowed = true; /* iterators leave their fast path */
	return push_u32(&f->cpus, &f->ncpus, cpu);
}

int strata_filter_pid(struct strata_filter *f, uint32_t pid)
{
	f->narrowed = true; /* iterators leave their fast path */
	return push_u32(&f->pids, &f->npids, pid);
}

int strata_filter_tid(struct strata_filter *f, uint32_t tid)
{
	f->narrowed = true; /* iterators leave their fast path */
	return push_u32(&f->tids, &f->ntids, tid);
}

int strata_filter_event(struct strata_filter *f, const char *glob)
{
	f->narrowed = true; /* iterators leave their fast path */
	struct strata_trace *t = f->trace;
	if (!f->name_ok) {
		f->name_ok = calloc(t->nclasses ? t->nclasses : 1, 1);
		if (!f->name_ok)
			return -ENOMEM;
	}
	f->by_name = true;
	int n = 0;
	for (unsigned i = 0; i < t->nclasses; i++)
		if (!fnmatch(glob, t->classes[i]->name, 0)) {
			n += !f->name_ok[i];
			f->name_ok[i] = 1;
		}
	return n;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Into err: why `id` names no field of trace t, with the names it could
 * have meant (every field of every class, and cpu/pid/tid, sorted), as
 * many as fit. An expression on a field that no event has would match
 * nothing, and an empty answer would look like a true one.
 */
static int no_such_field(const struct strata_trace *t, const char *id, char *err,
			 size_t errlen)
{
	size_t n = 3, k = 0;
	for (unsigned ci = 0; ci < t->nclasses; ci++) {
		if (strata_event_class_field(t->classes[ci], id) >= 0) {
			snprintf(err, errlen, "field '%s' holds an array: expressions compare "
				 "integers and text", id);
			return -EINVAL;
		}
		n += t->classes[ci]->nfields;
	}
	const char **v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	v[k++] = "cpu";
	v[k++] = "pid";
	v[k++] = "tid";
	for (unsigned ci = 0; ci < t->nclasses; ci++)
		for (unsigned i = 0; i < t->classes[ci]->nfields; i++)
			if (!t->classes[ci]->fields[i].hidden)
				v[k++] = t->classes[ci]->fields[i].name;
	qsort(v, k, sizeof(*v), cmp_name);
	size_t at = (size_t)snprintf(err, errlen, "no event of this trace has a field '%s'; "
				     "the fields are: ", id);
	for (size_t i = 0; i < k && at < errlen; i++) {
		if (i && !strcmp(v[i], v[i - 1]))
			continue;
		size_t len = strlen(v[i]);
		if (at + len + 6 >= errlen) {
			snprintf(err + at, errlen - at, "...");
			break;
		}
		at += (size_t)snprintf(err + at, errlen - at, "%s%s", i ? ", " : "", v[i]);
	}
	free(v);
	return -EINVAL;
}

int strata_filter_expr(struct strata_filter *f, const char *expr, char *err,
		       size_t errlen)
{
	f->narrowed = true; /* iterators leave their fast path */
	struct strata_trace *t = f->trace;
	struct rd_filter_prog *g = calloc(1, sizeof(*g));
	char dummy[1];
	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = 0;
	if (!g)
		return -ENOMEM;
	struct cp c = { .src = expr, .p = expr, .g = g, .err = err, .errlen = errlen };
	p_or(&c);
	skip_ws(&c);
	if (!c.failed && *c.p)
		cfail(&c, "unexpected '%c'", *c.p);
	if (!c.failed && !g->ncode)
		cfail(&c, "empty expression");
	if (c.failed) {
		int rc = strstr(err, "out of memory") ? -ENOMEM : -EINVAL;
		prog_free(g);
		return rc;
	}
	/* resolve identifiers against every class once */
	g->res = malloc(((size_t)t->nclasses * g->nids + 1) * sizeof(*g->res));
	struct rd_filter_prog **np = realloc(f->progs, (f->nprogs + 1) * sizeof(*np));
	if (!g->res || !np) {
		if (np)
			f->progs = np;
		prog_free(g);
		return -ENOMEM;
	}
	f->progs = np;
	for (unsigned ci = 0; ci < t->nclasses; ci++)
		for (unsigned k = 0; k < g->nids; k++) {
			const struct strata_event_class *cls = t->classes[ci];
			int r = strata_event_class_field(cls, g->ids[k]);
			if (r >= 0 && (cls->fields[r].type == STRATA_FIELD_ARRAY ||
				       (cls->fields[r].type == STRATA_FIELD_SEQUENCE &&
					!cls->fields[r].text)))
				r = ID_MISSING;
			else if (r < 0)
				r = !strcmp(g->ids[k], "cpu") ? ID_CPU :
				    !strcmp(g->ids[k], "pid") ? ID_PID :
				    !strcmp(g->ids[k], "tid") ? ID_TID : ID_MISSING;
			g->res[(size_t)ci * g->nids + k] = r;
		}
	for (unsigned k = 0; k < g->nids; k++) {
		const char *id = g->ids[k];
		bool known = !strcmp(id, "cpu") || !strcmp(id, "pid") || !strcmp(id, "tid");
		for (unsigned ci = 0; ci < t->nclasses && !known; ci++)
			known = g->res[(size_t)ci * g->nids + k] != ID_MISSING;
		if (!known) {
			int rc = no_such_field(t, g->ids[k], err, errlen);
			prog_free(g);
			return rc;
		}
	}
	f->progs[f->nprogs++] = g;
	return 0;
}
