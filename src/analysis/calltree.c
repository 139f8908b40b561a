/* SPDX-License-Identifier: MIT */
/* Function probes' call trees: each thread's by address as its calls close, then named and merged by path (calls.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/calls.h"

struct ct_node *ct_child(struct ct_node *n, uint64_t fn)
{
	struct ct_node *c;

	/* a node has few distinct callees: a list is enough */
	for (c = n->first; c; c = c->next)
		if (c->fn == fn)
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fn = fn;
	c->parent = n;
	c->next = n->first;
	n->first = c;
	return c;
}

int ct_adopt(struct ct_node *root, uint64_t fn, uint64_t t0, uint64_t ts)
{
	struct ct_node *a = calloc(1, sizeof(*a));
	uint64_t inner = 0;

	if (!a)
		return -1;
	a->fn = fn;
	a->parent = root;
	a->first = root->first;
	for (struct ct_node *c = a->first; c; c = c->next) {
		c->parent = a;
		inner += c->incl;
	}
	root->first = a;
	a->calls = 1;
	a->incl = ts > t0 ? ts - t0 : 0;
	a->self = a->incl > inner ? a->incl - inner : 0;
	a->partial = true;
	return 0;
}

void ct_free(struct ct_node *n)
{
	struct ct_node *c = n->first;

	while (c) {
		struct ct_node *next = c->next;
		ct_free(c);
		free(c);
		c = next;
	}
	n->first = NULL;
}

/* The child of out named name, made when new; NULL: out of memory. */
static struct calls_node *named_child(struct calls_node *out, const char *name)
{
	for (size_t i = 0; i < out->nchild; i++)
		if (!strcmp(out->child[i].name, name))
			return &out->child[i];
	struct calls_node *v = realloc(out->child, (out->nchild + 1) * sizeof(*v));
	if (!v)
		return NULL;
	out->child = v;
	struct calls_node *c = &v[out->nchild];
	memset(c, 0, sizeof(*c));
	if (!(c->name = strdup(name)))
		return NULL;
	out->nchild++;
	return c;
}

int ct_add(struct calls_node *out, const struct ct_node *root, uint32_t pid,
	   ct_namer name, void *ctx, uint64_t (*to_ns)(void *ctx, uint64_t t))
{
	for (const struct ct_node *c = root->first; c; c = c->next) {
		const char *nm = name(ctx, pid, c->fn);
		struct calls_node *o = nm ? named_child(out, nm) : NULL;
		if (!o)
			return -1;
		o->calls += c->calls;
		o->total_ns += to_ns(ctx, c->incl);
		o->self_ns += to_ns(ctx, c->self);
		o->partial |= c->partial;
		if (ct_add(o, c, pid, name, ctx, to_ns) < 0)
			return -1;
	}
	return 0;
}

int ct_merge(struct calls_node *dst, const struct calls_node *src)
{
	dst->calls += src->calls;
	dst->total_ns += src->total_ns;
	dst->self_ns += src->self_ns;
	dst->partial |= src->partial;
	for (size_t i = 0; i < src->nchild; i++) {
		struct calls_node *o = named_child(dst, src->child[i].name);
		if (!o || ct_merge(o, &src->child[i]) < 0)
			return -1;
	}
	return 0;
}

static int cmp_node(const void *a, const void *b)
{
	const struct calls_node *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

void ct_sort(struct calls_node *n)
{
	qsort(n->child, n->nchild, sizeof(*n->child), cmp_node);
	for (size_t i = 0; i < n->nchild; i++)
		ct_sort(&n->child[i]);
}

void ct_node_fini(struct calls_node *n)
{
	for (size_t i = 0; i < n->nchild; i++)
		ct_node_fini(&n->child[i]);
	free(n->child);
	free(n->name);
	n->child = NULL;
	n->name = NULL;
	n->nchild = 0;
}
