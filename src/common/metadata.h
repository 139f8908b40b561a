/* SPDX-License-Identifier: MIT */
/* Writing the TSDL metadata of a sub-trace (format.md §6): the one writer of it, for every component that writes a sub-trace. */
#ifndef STRATA_COMMON_METADATA_H
#define STRATA_COMMON_METADATA_H

#include <stddef.h>
#include <stdint.h>

struct strata_event_desc;

/* An event id seen in the rings with no registered descriptor. */
struct meta_raw {
	uint32_t id;
	uint16_t words; /* header included */
	uint8_t blob;   /* logged by strata_log_blob() */
};

/* Names for the values of one integer field, written as a TSDL enum over
 * the field's own type so that every reader shows them (the kernel
 * source's system call numbers and task states, format.md §6). */
struct meta_label {
	int64_t value;
	const char *label;
};
struct meta_enum {
	const char *event; /* "subsystem:name" */
	const char *field;
	const struct meta_label *labels;
	size_t nlabels;
};

struct meta_info {
	uint8_t uuid[16];
	uint32_t pid;
	const char *procname;
	uint64_t freq_hz;
	int64_t offset_ns; /* Unix time of clock value 0 */
	const struct meta_raw *raw;
	size_t nraw;
	/* The trace clock's uuid and description (clock_meta(), lib/clock.h:
	 * the writer knows no clock of its own). */
	char clock_uuid[37];
	const char *clock_desc;
	/* The event descriptors: `events`, or when it is NULL those that
	 * `each_event` visits (the consumer's: the registry's
	 * strata_registry_foreach()), or none. */
	const struct strata_event_desc *const *events;
	size_t nevents;
	int (*each_event)(int (*fn)(const struct strata_event_desc *, void *),
			  void *arg);
	/* Other writers (the kernel source, src/kernel/): their env domain
	 * and extra env entries as key, value, ..., NULL (values quoted).
	 * NULL: "ust", none. */
	const char *domain;
	const char *const *env;
	/* Fields whose values have names (above), or none. */
	const struct meta_enum *enums;
	size_t nenums;
	/* Stream class 1, compact event headers (docs/compact.md), when not
	 * NULL: the compact ids given (STRATA_NCIDS entries, full id |
	 * words << 32 | STRATA_CID_VALID, or 0). NULL: stream class 0. */
	const uint64_t *cids;
	/* The events the sub-trace's streams count as discarded, by cause
	 * (format.md §6, env `lost_*`): META_LOST_NCAUSES entries, the
	 * ring's causes (enum strata_lost_cause) then the disk's. NULL: none
	 * written. */
	const uint64_t *lost;
};

#define META_LOST_NCAUSES 6 /* STRATA_LOST_NCAUSES + 1, the disk */

/* Write DIR/metadata atomically (DIR/metadata.tmp, then rename) from
 * `mi`. Returns 0 or a negative errno. */
int meta_write(const char *dir, const struct meta_info *mi);

#endif /* STRATA_COMMON_METADATA_H */
