/* SPDX-License-Identifier: MIT */
/* The event descriptors a session daemon is sent (src/lib/descmsg.c). */
#ifndef STRATA_LIB_DESCMSG_H
#define STRATA_LIB_DESCMSG_H

#include <stddef.h>
#include <stdint.h>

#include "lib/registry.h"

/* What one connection was sent so far; zeroed for a new one. */
struct descmsg_sent {
	size_t ndesc;                          /* descriptors, in order */
	uint8_t blob[REGISTRY_BLOB_SLOTS / 8]; /* blob ids, by registry slot */
};

/*
 * Send, as PROTO_DESC messages (proto/proto.h) through `send` (0 or a
 * negative errno; `fd` is -1), the descriptors and blob ids registered
 * since the last call: those that fit a message each, in order, and
 * again next time what a failed send may have lost. Not
 * async-signal-safe (registry lock, malloc).
 */
void descmsg_send_new(struct descmsg_sent *sent,
		      int (*send)(const void *msg, size_t len, int fd));

#endif /* STRATA_LIB_DESCMSG_H */
