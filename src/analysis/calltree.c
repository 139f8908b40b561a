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

/*
 * Every walk of a tree here is a loop, never a recursion: a tree is as
 * deep as the traced program's calls (a recursion 100,000 deep makes a
 * path of 100,000 nodes), far deeper than strata's own stack would go.
 * A thread's tree by address walks through its parent links; the named
 * trees (children in arrays) through a stack on the heap (ct_walk).
 */
void ct_free(struct ct_node *root)
{
	struct ct_node *n = root->first;

	/* n is always its parent's first child: freed once its own are */
	while (n && n != root) {
		if (n->first) {
			n = n->first;
			continue;
		}
		struct ct_node *up = n->parent, *next = n->next;
		up->first = next;
		free(n);
		n = next ? next : up;
	}
	root->first = NULL;
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

/* Room in *pv (an array of `size`-byte elements, *cap of them) for
 * `need`. 0, or -1: out of memory (*pv unchanged). */
static int grow(void *pv, size_t *cap, size_t need, size_t size)
{
	void **p = pv;
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	void *v = realloc(*p, nc * size);
	if (!v)
		return -1;
	*p = v;
	*cap = nc;
	return 0;
}

int ct_add(struct calls_node *out, const struct ct_node *root, uint32_t pid,
	   ct_namer name, void *ctx, uint64_t (*to_ns)(void *ctx, uint64_t t))
{
	struct calls_node **st = NULL;
	size_t cap = 0, d = 0; /* st[d]: the output of c's parent */
	const struct ct_node *c = root->first;
	int ret = -1;

	if (grow(&st, &cap, 1, sizeof(*st)) < 0)
		return -1;
	st[0] = out;
	while (c) {
		const char *nm = name(ctx, pid, c->fn);
		/* named_child moves st[d]'s children only: st[d + 1] is
		 * replaced below, the ancestors stay put */
		struct calls_node *o = nm ? named_child(st[d], nm) : NULL;
		if (!o || grow(&st, &cap, d + 2, sizeof(*st)) < 0)
			goto out;
		o->calls += c->calls;
		o->total_ns += to_ns(ctx, c->incl);
		o->self_ns += to_ns(ctx, c->self);
		o->partial |= c->partial;
		st[d + 1] = o;
		if (c->first) {
			c = c->first;
			d++;
			continue;
		}
		while (!c->next && (c = c->parent) != root)
			d--;
		c = c == root ? NULL : c->next;
	}
	ret = 0;
out:
	free(st);
	return ret;
}

int ct_walk_init(struct ct_walk *w, const struct calls_node *root)
{
	memset(w, 0, sizeof(*w));
	if (grow(&w->st, &w->cap, 1, sizeof(*w->st)) < 0)
		return -1;
	w->st[0] = (struct ct_walk_frame){ .n = root };
	w->n = 1;
	return 0;
}

int ct_walk_next(struct ct_walk *w, const struct calls_node **node, bool *enter)
{
	if (!w->n)
		return 0;
	struct ct_walk_frame *f = &w->st[w->n - 1];
	if (f->next < f->n->nchild) {
		if (grow(&w->st, &w->cap, w->n + 1, sizeof(*w->st)) < 0)
			return -1;
		f = &w->st[w->n - 1];
		const struct calls_node *c = &f->n->child[f->next++];
		w->st[w->n++] = (struct ct_walk_frame){ .n = c };
		*node = c;
		*enter = true;
		return 1;
	}
	*node = f->n;
	*enter = false;
	w->n--;
	/* the root is left too: the caller closes it */
	return 1;
}

void ct_walk_skip(struct ct_walk *w)
{
	if (w->n)
		w->st[w->n - 1].next = w->st[w->n - 1].n->nchild;
}

void ct_walk_fini(struct ct_walk *w)
{
	free(w->st);
	memset(w, 0, sizeof(*w));
}

int ct_merge(struct calls_node *dst, const struct calls_node *src)
{
	struct ct_walk w;
	struct calls_node **st = NULL; /* st[k]: dst's node for w.st[k] */
	size_t cap = 0;
	const struct calls_node *n;
	bool enter;
	int r, ret = -1;

	if (ct_walk_init(&w, src) < 0 || grow(&st, &cap, 1, sizeof(*st)) < 0)
		goto out;
	st[0] = dst;
	dst->calls += src->calls;
	dst->total_ns += src->total_ns;
	dst->self_ns += src->self_ns;
	dst->partial |= src->partial;
	while ((r = ct_walk_next(&w, &n, &enter)) > 0) {
		if (!enter)
			continue;
		/* entered: n is w.st[w.n - 1], its parent's copy st[w.n - 2] */
		struct calls_node *o;
		if (grow(&st, &cap, w.n, sizeof(*st)) < 0 ||
		    !(o = named_child(st[w.n - 2], n->name)))
			goto out;
		o->calls += n->calls;
		o->total_ns += n->total_ns;
		o->self_ns += n->self_ns;
		o->partial |= n->partial;
		st[w.n - 1] = o;
	}
	ret = r;
out:
	free(st);
	ct_walk_fini(&w);
	return ret;
}

static int cmp_node(const void *a, const void *b)
{
	const struct calls_node *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Every node of the tree below root, root first, each before its
 * children, which visit(n), called first, may reorder. NULL: out of
 * memory. */
static struct calls_node **preorder(struct calls_node *root, void (*visit)(struct calls_node *),
				    size_t *count)
{
	struct calls_node **all = NULL, **todo = NULL;
	size_t n = 0, cap = 0, nt = 0, tcap = 0;

	if (grow(&todo, &tcap, 1, sizeof(*todo)) < 0)
		return NULL;
	todo[nt++] = root;
	while (nt) {
		struct calls_node *x = todo[--nt];
		if (visit)
			visit(x);
		if (grow(&all, &cap, n + 1, sizeof(*all)) < 0 ||
		    grow(&todo, &tcap, nt + x->nchild, sizeof(*todo)) < 0) {
			free(all);
			all = NULL;
			break;
		}
		all[n++] = x;
		for (size_t i = 0; i < x->nchild; i++)
			todo[nt++] = &x->child[i];
	}
	free(todo);
	*count = n;
	return all;
}

static void sort_children(struct calls_node *n)
{
	if (n->nchild) /* a leaf's children may be NULL, which qsort must not get */
		qsort(n->child, n->nchild, sizeof(*n->child), cmp_node);
}

void ct_sort(struct calls_node *n)
{
	size_t count;
	/* each node's children sorted before they are listed: the list's
	 * pointers stay valid */
	free(preorder(n, sort_children, &count));
}

void ct_node_fini(struct calls_node *n)
{
	size_t count;
	struct calls_node **all = preorder(n, NULL, &count);

	/* out of memory to list them: the nodes are leaked, not walked */
	for (size_t i = all ? count : 0; i-- > 0;) { /* children before parents */
		free(all[i]->child);
		free(all[i]->name);
	}
	free(all);
	n->child = NULL;
	n->name = NULL;
	n->nchild = 0;
}
