/* SPDX-License-Identifier: MIT */
/* The registry's event descriptors and blob ids as a session daemon's DESC messages (proto/proto.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "lib/descmsg.h"
#include "lib/registry.h"
#include "proto/proto.h"

struct desc_buf {
	struct descmsg_sent *sent;
	int (*send)(const void *msg, size_t len, int fd);
	unsigned char *p;
	size_t len, count, skip;
	size_t ndesc; /* descriptors among count (the rest: blob ids) */
	int err;
};

static void desc_flush(struct desc_buf *b)
{
	if (!b->count || b->err)
		return;
	struct proto_desc *d = (struct proto_desc *)b->p;
	d->h.type = PROTO_DESC;
	d->h.len = (uint32_t)b->len;
	d->count = (uint32_t)b->count;
	d->pad = 0;
	b->err = b->send(b->p, b->len, -1);
	if (!b->err)
		b->sent->ndesc += b->ndesc;
	else /* blob ids marked sent may not be: all again next time */
		memset(b->sent->blob, 0, sizeof(b->sent->blob));
	b->len = sizeof(struct proto_desc);
	b->count = b->ndesc = 0;
}

static int desc_put(unsigned char *p, size_t *len, const void *v, size_t n)
{
	if (*len + n > PROTO_MAX_MSG)
		return -1;
	memcpy(p + *len, v, n);
	*len += n;
	return 0;
}

static int desc_put_str(unsigned char *p, size_t *len, const char *s)
{
	return desc_put(p, len, s ? s : "", strlen(s ? s : "") + 1);
}

/* Serialize one descriptor (proto.h, DESC) after those already sent. */
static int desc_add(const struct strata_event_desc *e, void *arg)
{
	struct desc_buf *b = arg;
	unsigned char rec[8];
	size_t len;

	if (b->skip) {
		b->skip--;
		return 0;
	}
	if (b->err)
		return 1;
	for (int tries = 0; tries < 2; tries++) {
		len = b->len;
		rec[0] = e->major;
		rec[1] = e->kind;
		memcpy(rec + 2, &e->minor, 2);
		memcpy(rec + 4, &e->nfields, 2);
		memset(rec + 6, 0, 2);
		int bad = desc_put(b->p, &len, rec, 8) ||
			  desc_put_str(b->p, &len, e->subsystem) ||
			  desc_put_str(b->p, &len, e->name) ||
			  desc_put_str(b->p, &len, e->format) ||
			  desc_put_str(b->p, &len, e->description);
		for (unsigned i = 0; !bad && i < e->nfields; i++) {
			const struct strata_field_desc *f = &e->fields[i];
			memcpy(rec, &f->type, 2);
			memcpy(rec + 2, &f->count, 2);
			memcpy(rec + 4, &f->flags, 4);
			bad = desc_put(b->p, &len, rec, 8) ||
			      desc_put_str(b->p, &len, f->name);
		}
		if (!bad) {
			b->len = len;
			b->count++;
			b->ndesc++;
			return 0;
		}
		if (!b->count)
			break; /* alone too big for a message: left out (raw) */
		desc_flush(b);
		if (b->err)
			return 1;
	}
	b->sent->ndesc++; /* skipped for good */
	return 0;
}

/* A blob id not sent yet (proto.h, PROTO_DESC_BLOB). */
static int blob_add(unsigned slot, uint32_t id, void *arg)
{
	struct desc_buf *b = arg;
	unsigned char rec[12];
	size_t len;

	if (b->sent->blob[slot / 8] & (1u << (slot % 8)))
		return 0;
	if (b->err)
		return 1;
	rec[0] = (uint8_t)(id >> 16);
	rec[1] = PROTO_DESC_BLOB;
	rec[2] = (uint8_t)id;
	rec[3] = (uint8_t)(id >> 8);
	memset(rec + 4, 0, 8); /* nfields, reserved, four empty strings */
	for (int tries = 0; tries < 2; tries++) {
		len = b->len;
		if (!desc_put(b->p, &len, rec, sizeof(rec))) {
			b->len = len;
			b->count++;
			b->sent->blob[slot / 8] |= (uint8_t)(1u << (slot % 8));
			return 0;
		}
		desc_flush(b);
		if (b->err)
			return 1;
	}
	return 1;
}

void descmsg_send_new(struct descmsg_sent *sent,
		      int (*send)(const void *msg, size_t len, int fd))
{
	struct desc_buf b = {.sent = sent, .send = send,
			     .len = sizeof(struct proto_desc)};

	b.p = malloc(PROTO_MAX_MSG);
	if (!b.p)
		return;
	b.skip = sent->ndesc;
	strata_registry_foreach(desc_add, &b);
	registry_foreach_blob(blob_add, &b);
	desc_flush(&b);
	free(b.p);
}
