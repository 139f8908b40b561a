/* SPDX-License-Identifier: MIT */
/* Aligned text tables for the report commands. */
#ifndef STRATA_CLI_TABLE_H
#define STRATA_CLI_TABLE_H

#include <stdio.h>

#define TABLE_MAXCOL 10

struct table {
	unsigned ncol;
	const char *right; /* per column 'r' (numbers) or 'l' */
	char **cells;      /* rows * ncol, owned */
	size_t nrows, cap;
};

void table_init(struct table *t, unsigned ncol, const char *align);
/* Append a row of ncol printf-formatted cells: table_row(t, "%s", a, "%u", b) is
 * not possible in C, so cells are added one at a time. */
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void table_print(struct table *t, FILE *f, const char *indent);
void table_fini(struct table *t);

#endif /* STRATA_CLI_TABLE_H */
