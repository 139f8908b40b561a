/* SPDX-License-Identifier: MIT */
/* Draining complete packets from rings into a CTF stream directory. */
#ifndef STRATA_CONSUMER_CONSUMER_H
#define STRATA_CONSUMER_CONSUMER_H

#include <stdint.h>

#include <strata/strata.h>

struct cons;

struct cons_config {
	const char *dir; /* sub-trace directory (format.md §1), must exist */
	int mode;        /* enum strata_mode */
	unsigned flush_ms; /* close idle packets this often; 0: never */
	uint8_t uuid[16];
};

/*
 * Write the initial metadata and start the consumer thread, which drains
 * every ring of strata_rings[] as its packets complete (discard mode), or
 * leaves them in memory (overwrite mode).
 * Returns 0 or a negative errno (detail in strata_strerror_detail()).
 */
int cons_create(const struct cons_config *cfg, struct cons **out);

/*
 * Stop the thread, close every partial packet, wait (bounded) for writers
 * in flight, write what the rings hold, finish the index and metadata,
 * close the files and free; add the final counters to *final. Returns 0 or
 * the first I/O error (negative errno); what was written before an error
 * is a valid trace.
 */
int cons_destroy(struct cons *c, struct strata_stats *final);

/* Add the consumer's counters to *st. */
void cons_get_stats(struct cons *c, struct strata_stats *st);

#endif /* STRATA_CONSUMER_CONSUMER_H */
