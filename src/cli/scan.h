/* SPDX-License-Identifier: MIT */
/* One pass over a trace counting events per type, CPU, thread and stream. */
#ifndef STRATA_CLI_SCAN_H
#define STRATA_CLI_SCAN_H

#include "cli.h"

struct scan_slot {
	uint64_t key;    /* cpu, or pid << 32 | tid */
	uint64_t count, first, last;
	bool used;
};

struct scan_map {
	struct scan_slot *v;
	size_t cap, n;
};

struct scan {
	uint64_t total, first, last;
	uint64_t *per_class;          /* by class index */
	uint64_t *class_first, *class_last;
	uint64_t *per_stream;
	struct scan_map cpus, threads;
};

/* Iterate with it to the end; returns 0 or -1 (out of memory, printed). */
int scan_run(struct scan *s, struct cli_trace *ct, struct strata_iter *it);
void scan_fini(struct scan *s);
/* Slots in key order; caller frees. */
struct scan_slot *scan_sorted(const struct scan_map *m);

#endif /* STRATA_CLI_SCAN_H */
