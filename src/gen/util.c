/* SPDX-License-Identifier: MIT */
/* strata-gen helpers: the arena that owns the event model, diagnostics, output buffers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* The model is built once and freed at once, so it lives in an arena:
 * error paths anywhere in the parser never leak. */
struct gen_arena_block {
	struct gen_arena_block *next;
	size_t used, size;
	max_align_t data[];
};

#define GEN_ARENA_CHUNK 65536

void gen_ctx_init(struct gen_ctx *ctx, FILE *err)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->err = err;
}

void gen_ctx_fini(struct gen_ctx *ctx)
{
	struct gen_arena_block *b, *next;

	if (!ctx)
		return;
	for (b = ctx->arena; b; b = next) {
		next = b->next;
		free(b);
	}
	ctx->arena = NULL;
}

void *gen_alloc(struct gen_ctx *ctx, size_t size)
{
	struct gen_arena_block *b = ctx->arena;
	size_t align = sizeof(max_align_t);
	void *p;

	if (size > SIZE_MAX / 2)
		return NULL;
	size = (size + align - 1) & ~(align - 1);
	if (!b || b->size - b->used < size) {
		size_t cap = size > GEN_ARENA_CHUNK ? size : GEN_ARENA_CHUNK;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->size = cap;
		b->next = ctx->arena;
		ctx->arena = b;
	}
	p = (char *)b->data + b->used;
	b->used += size;
	memset(p, 0, size);
	return p;
}

char *gen_strndup(struct gen_ctx *ctx, const char *s, size_t n)
{
	char *p = gen_alloc(ctx, n + 1);

	if (p)
		memcpy(p, s, n);
	return p;
}

char *gen_strdup(struct gen_ctx *ctx, const char *s)
{
	return gen_strndup(ctx, s, strlen(s));
}

void *gen_grow(struct gen_ctx *ctx, void *array, size_t n, size_t elem)
{
	void *p;

	/* The capacity is implicit: 4, then each power of two reached. */
	if (n && (n < 4 || (n & (n - 1))))
		return array;
	if (n > SIZE_MAX / 2 / elem)
		return NULL;
	p = gen_alloc(ctx, (n ? 2 * n : 4) * elem);
	if (p && n)
		memcpy(p, array, n * elem);
	return p;
}

static void gen_diag(struct gen_ctx *ctx, const struct gen_loc *loc,
		     const char *what, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

static void gen_diag(struct gen_ctx *ctx, const struct gen_loc *loc,
		     const char *what, const char *fmt, va_list ap)
{
	if (!ctx->err)
		return;
	if (loc && loc->file)
		fprintf(ctx->err, "%s:%u:%u: %s: ", loc->file, loc->line,
			loc->col, what);
	else
		fprintf(ctx->err, "strata-gen: %s: ", what);
	vfprintf(ctx->err, fmt, ap);
	fputc('\n', ctx->err);
}

void gen_error(struct gen_ctx *ctx, const struct gen_loc *loc, const char *fmt, ...)
{
	va_list ap;

	ctx->nerrors++;
	va_start(ap, fmt);
	gen_diag(ctx, loc, "error", fmt, ap);
	va_end(ap);
}

void gen_note(struct gen_ctx *ctx, const struct gen_loc *loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gen_diag(ctx, loc, "note", fmt, ap);
	va_end(ap);
}

void gen_buf_init(struct gen_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void gen_buf_fini(struct gen_buf *b)
{
	free(b->p);
	gen_buf_init(b);
}

static int gen_buf_reserve(struct gen_buf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return -ENOMEM;
	if (b->cap - b->len > n)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len <= n) {
		if (cap > SIZE_MAX / 2)
			goto oom;
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (!p)
		goto oom;
	b->p = p;
	b->cap = cap;
	return 0;
oom:
	b->oom = 1;
	return -ENOMEM;
}

void gen_buf_puts(struct gen_buf *b, const char *s)
{
	size_t n = strlen(s);

	if (gen_buf_reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

void gen_buf_printf(struct gen_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	if (gen_buf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}
