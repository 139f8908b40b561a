/* SPDX-License-Identifier: MIT */
/* Aligned text tables for the report commands. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

void table_init(struct table *t, unsigned ncol, const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncol = ncol;
	t->right = align;
}

void table_cell(struct table *t, const char *fmt, ...)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **c = realloc(t->cells, cap * sizeof(*c));
		if (!c)
			return;
		t->cells = c;
		t->cap = cap;
	}
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&t->cells[t->nrows], fmt, ap) < 0)
		t->cells[t->nrows] = NULL;
	va_end(ap);
	t->nrows++; /* counts cells; rows = nrows / ncol */
}

void table_print(struct table *t, FILE *f, const char *indent)
{
	size_t w[TABLE_MAXCOL] = { 0 };
	for (size_t i = 0; i < t->nrows; i++) {
		size_t l = t->cells[i] ? strlen(t->cells[i]) : 0;
		if (l > w[i % t->ncol])
			w[i % t->ncol] = l;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		unsigned c = i % t->ncol;
		const char *s = t->cells[i] ? t->cells[i] : "";
		if (c == 0)
			fputs(indent, f);
		bool last = c == t->ncol - 1 || i == t->nrows - 1;
		if (t->right[c] == 'r')
			fprintf(f, "%*s", (int)w[c], s);
		else if (last)
			fputs(s, f);
		else
			fprintf(f, "%-*s", (int)w[c], s);
		fputs(last ? "\n" : "  ", f);
	}
}

void table_fini(struct table *t)
{
	for (size_t i = 0; i < t->nrows; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}
