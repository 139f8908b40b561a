/* SPDX-License-Identifier: MIT */
/* One pass over a trace counting events per type, CPU, thread and stream. */
#ifndef STRATA_CLI_SCAN_H
#define STRATA_CLI_SCAN_H

#include "cli.h"

struct scan_slot {
	uint64_t key;    /* cpu, pid << 32 | tid, or tid (names) */
	uint64_t count, first, last;
	bool used;
	bool from_dump;  /* names: from strata:thread_name (wins over the
			  * kernel's sched_switch comm) */
	uint64_t name_ts; /* names: the time of the event that gave it */
	char name[16];
};

struct scan_map {
	struct scan_slot *v;
	size_t cap, n;
};

struct scan {
	bool want_names;              /* set before scan_run: iterate with
				       * STRATA_ITER_INTERNAL, names kept */
	struct scan_map names;        /* by tid: strata:thread_name records
				       * (the state dump), else the kernel's
				       * sched_switch comm */
	uint64_t total, first, last;
	uint64_t *per_class;          /* by class index */
	uint64_t *class_first, *class_last;
	uint64_t *per_stream;
	struct scan_map cpus, threads;
};

/* Iterate with it to the end; returns 0 or -1 (out of memory, printed). */
int scan_run(struct scan *s, struct cli_trace *ct, struct strata_iter *it);
void scan_fini(struct scan *s);
/* Open TRACE into ct (filters fo, NULL: none) and count it whole into s
 * (want_names set before; internal: strata's own records too), as info
 * and stats do. 0, or -1 after saying why, ct then closed. */
int scan_trace(struct scan *s, struct cli_trace *ct, const char *path,
	       const struct cli_filter_opts *fo, bool internal);
/* The counts of class i summed over the classes of its name
 * (sub-traces share vocabularies): n, and the first and last times of
 * those counted. false when an earlier class has that name (the row is
 * that one's). */
bool scan_class_sum(const struct scan *s, struct strata_trace *t, unsigned i,
		    uint64_t *n, uint64_t *first, uint64_t *last);
/* The name of thread `tid`, or "" (want_names). */
const char *scan_thread_name(const struct scan *s, uint32_t tid);
/* Slots in key order; caller frees. */
struct scan_slot *scan_sorted(const struct scan_map *m);

#endif /* STRATA_CLI_SCAN_H */
