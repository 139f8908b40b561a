/* SPDX-License-Identifier: MIT */
/* The session daemon's copy of a client's event descriptors: read from
 * its DESC messages, checked whole before any memory is taken. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_int.h"

/* ---- descriptors: checked whole before any memory is taken ------------- */

/*
 * What one client may make the daemon hold in descriptors, and all of
 * them together (docs/record.md, "Limits"); a descriptor past either is
 * refused (its events show raw), said once (dmn_limit_said()).
 */
#define DESC_CLIENT_BYTES (4u << 20)
#define DESC_TOTAL_BYTES (64u << 20)
#define DESC_MAX_FIELDS 512
#define DESC_MAX_NAME 128
#define DESC_MAX_TEXT 4096

/* One descriptor in one block with its fields and strings, shared by
 * the clients that have it (a fork child has its parent's) and freed
 * with the last of them. */
struct desc_blk {
	unsigned refs;
	size_t size;
	struct strata_event_desc e;
	struct strata_field_desc f[]; /* then the strings */
};

static const struct strata_event_desc *const *src_events(void *ctx, size_t *n)
{
	struct client *c = ctx;
	static const struct strata_event_desc *none[1];

	*n = c->nev;
	return c->evs ? c->evs : none;
}

static size_t desc_hash(uint8_t major, uint16_t minor, size_t cap)
{
	uint32_t k = (uint32_t)major << 16 | minor;

	return (size_t)(k * 2654435761u) & (cap - 1);
}

static const struct strata_event_desc *src_lookup(void *ctx, uint8_t major,
						  uint16_t minor)
{
	struct client *c = ctx;

	if (!c->hcap)
		return NULL;
	for (size_t i = desc_hash(major, minor, c->hcap);; i = (i + 1) & (c->hcap - 1)) {
		const struct strata_event_desc *e;
		if (!c->hidx[i])
			return NULL;
		e = c->evs[c->hidx[i] - 1];
		if (e->major == major && e->minor == minor)
			return e;
	}
}

static int src_is_blob(void *ctx, uint32_t id)
{
	const struct client *c = ctx;

	for (unsigned i = 0; i < c->nblobs; i++)
		if (c->blobs[i] == id)
			return 1;
	return 0;
}

static uint64_t src_generation(void *ctx)
{
	return ((struct client *)ctx)->gen;
}

static struct desc_blk *desc_blk_of(const struct strata_event_desc *e)
{
	return (struct desc_blk *)((char *)e - offsetof(struct desc_blk, e));
}

static void desc_put(struct dmn *d, const struct strata_event_desc *e)
{
	struct desc_blk *b = desc_blk_of(e);

	if (--b->refs)
		return;
	d->desc_bytes -= b->size;
	free(b);
}

/* Index slot i of c->evs by its id (the table has room: dmn_desc_add). */
static void hidx_put(struct client *c, size_t i)
{
	const struct strata_event_desc *e = c->evs[i];
	size_t k = desc_hash(e->major, e->minor, c->hcap);

	while (c->hidx[k])
		k = (k + 1) & (c->hcap - 1);
	c->hidx[k] = (uint32_t)(i + 1);
}

/* Give c the descriptor `e` (a reference taken) unless it has one of that
 * id: the first one stays (strata_register's rule). Returns 1 if added,
 * 0 if it had one, -ENOMEM. */
int dmn_desc_add(struct client *c, const struct strata_event_desc *e)
{
	if (src_lookup(c, e->major, e->minor))
		return 0;
	if (c->nev == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		void *p = realloc(c->evs, cap * sizeof(*c->evs));
		if (!p)
			return -ENOMEM;
		c->evs = p;
		c->cap = cap;
	}
	if (2 * (c->nev + 1) > c->hcap) {
		size_t cap = c->hcap ? c->hcap * 2 : 128;
		uint32_t *h = calloc(cap, sizeof(*h));
		if (!h)
			return -ENOMEM;
		free(c->hidx);
		c->hidx = h;
		c->hcap = cap;
		for (size_t i = 0; i < c->nev; i++)
			hidx_put(c, i);
	}
	c->evs[c->nev] = e;
	hidx_put(c, c->nev++);
	desc_blk_of(e)->refs++;
	c->gen++;
	return 1;
}

void dmn_client_descs_free(struct dmn *d, struct client *c)
{
	for (size_t i = 0; i < c->nev; i++)
		desc_put(d, c->evs[i]);
	free(c->evs);
	free(c->hidx);
	c->evs = NULL;
	c->hidx = NULL;
	c->nev = c->cap = c->hcap = 0;
}

/* A NUL-terminated string inside [*p, end); advances *p. */
static const char *take_str(const unsigned char **p, const unsigned char *end)
{
	const unsigned char *s = *p;
	const unsigned char *z = memchr(s, 0, (size_t)(end - s));

	if (!z)
		return NULL;
	*p = z + 1;
	return (const char *)s;
}

/* Names and text go into TSDL: keep them short and printable. */
static int name_ok(const char *s)
{
	if (!*s || strlen(s) > DESC_MAX_NAME)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return 0;
	return 1;
}

/* One DESC record (proto.h) read in place, nothing allocated. */
struct desc_rec {
	uint8_t major, kind;
	uint16_t minor, nfields;
	const char *sub, *name, *fmt, *desc;
	const unsigned char *fields; /* nfields records: u16 type, u16 count,
				      * u32 flags, name */
	size_t size; /* of its desc_blk */
};

/*
 * Read the record at *p (advanced past it) and check all of it: the
 * fields are read and checked here, before anything is allocated for it,
 * so that what a record claims (65535 fields) costs nothing unless it
 * is there. Returns 1 (good), 0 (whole but not usable: skipped, its
 * events show raw) or -1 (cut short: the rest of the message is not
 * read).
 */
static int desc_parse(const unsigned char **p, const unsigned char *end,
		      struct desc_rec *r)
{
	unsigned char rec[8];
	int ok;

	if (end - *p < 8)
		return -1;
	memcpy(rec, *p, 8);
	*p += 8;
	r->major = rec[0];
	r->kind = rec[1];
	memcpy(&r->minor, rec + 2, 2);
	memcpy(&r->nfields, rec + 4, 2);
	if (!(r->sub = take_str(p, end)) || !(r->name = take_str(p, end)) ||
	    !(r->fmt = take_str(p, end)) || !(r->desc = take_str(p, end)))
		return -1;
	ok = r->major >= 1 && r->major <= STRATA_MAJOR_MAX &&
	     r->kind <= STRATA_EV_END && r->nfields <= DESC_MAX_FIELDS &&
	     name_ok(r->sub) && name_ok(r->name);
	r->size = sizeof(struct desc_blk) +
		  r->nfields * sizeof(struct strata_field_desc) +
		  strlen(r->sub) + strlen(r->name) + 2 +
		  strnlen(r->fmt, DESC_MAX_TEXT) + strnlen(r->desc, DESC_MAX_TEXT) + 2;
	r->fields = *p;
	for (unsigned k = 0; k < r->nfields; k++) {
		uint16_t type, count;
		const char *fname;
		if (end - *p < 8)
			return -1;
		memcpy(&type, *p, 2);
		memcpy(&count, *p + 2, 2);
		*p += 8;
		if (!(fname = take_str(p, end)))
			return -1;
		r->size += strlen(fname) + 1;
		if (!name_ok(fname) || type < STRATA_T_U8 || type > STRATA_T_STRING ||
		    (type == STRATA_T_STRING && count))
			ok = 0;
	}
	return ok;
}

/* Copy `s` (at most max bytes of it) to *at, advance *at. */
static const char *blk_str(char **at, const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *out = *at;

	memcpy(out, s, n);
	out[n] = 0;
	*at += n + 1;
	return out;
}

/* A checked record (desc_parse) made into a descriptor: one block. */
static struct desc_blk *desc_build(const struct desc_rec *r)
{
	struct desc_blk *b = malloc(r->size);
	const unsigned char *p = r->fields;
	char *at;

	if (!b)
		return NULL;
	b->refs = 0;
	b->size = r->size;
	at = (char *)(b->f + r->nfields);
	for (unsigned k = 0; k < r->nfields; k++) {
		struct strata_field_desc *f = &b->f[k];
		memcpy(&f->type, p, 2);
		memcpy(&f->count, p + 2, 2);
		memcpy(&f->flags, p + 4, 4);
		f->name = blk_str(&at, (const char *)p + 8, DESC_MAX_NAME);
		p += 8 + strlen((const char *)p + 8) + 1;
	}
	memset(&b->e, 0, sizeof(b->e));
	b->e.major = r->major;
	b->e.kind = r->kind;
	b->e.minor = r->minor;
	b->e.nfields = r->nfields;
	b->e.fields = r->nfields ? b->f : NULL;
	b->e.subsystem = blk_str(&at, r->sub, DESC_MAX_NAME);
	b->e.name = blk_str(&at, r->name, DESC_MAX_NAME);
	b->e.format = blk_str(&at, r->fmt, DESC_MAX_TEXT);
	b->e.description = blk_str(&at, r->desc, DESC_MAX_TEXT);
	if (!*r->fmt)
		b->e.format = NULL;
	if (!*r->desc)
		b->e.description = NULL;
	return b;
}

/* An id the process logs as a byte blob (proto.h, PROTO_DESC_BLOB). */
static void client_blob(struct client *c, uint32_t id)
{
	for (unsigned i = 0; i < c->nblobs; i++)
		if (c->blobs[i] == id)
			return;
	if (c->nblobs < CLIENT_BLOBS) {
		c->blobs[c->nblobs++] = id;
		c->gen++; /* the metadata says so from now on */
	}
}

void dmn_client_desc(struct dmn *d, struct client *c,
		     const unsigned char *buf, size_t len)
{
	struct proto_desc h;
	const unsigned char *p, *end = buf + len;

	if (len < sizeof(h) || !c->registered)
		return;
	memcpy(&h, buf, sizeof(h));
	p = buf + sizeof(h);
	for (uint32_t i = 0; i < h.count; i++) {
		struct desc_rec r;
		int ok = desc_parse(&p, end, &r);
		if (ok < 0)
			return;
		if (r.kind == PROTO_DESC_BLOB) {
			client_blob(c, STRATA_ID(r.major, r.minor));
			continue;
		}
		/* undecodable here, or one of that id it has already (a
		 * fork child's copies of its parent's): nothing taken */
		if (!ok || src_lookup(c, r.major, r.minor))
			continue;
		if (c->desc_bytes + r.size > DESC_CLIENT_BYTES ||
		    d->desc_bytes + r.size > DESC_TOTAL_BYTES) {
			if (!c->desc_full)
				dmn_limit_said(d, LIMIT_DESC, c->pid);
			c->desc_full = 1;
			continue;
		}
		struct desc_blk *b = desc_build(&r);
		if (!b)
			return;
		if (dmn_desc_add(c, &b->e) != 1) {
			free(b);
			return;
		}
		c->desc_bytes += b->size;
		d->desc_bytes += b->size;
	}
}

/* Where this client's descriptors and identity come from (consumer.h). */
static void client_source(struct dmn *d, struct client *c,
			  struct cons_source *src)
{
	memset(src, 0, sizeof(*src));
	src->pid = c->pid;
	src->procname = c->name;
	src->events = src_events;
	src->lookup = src_lookup;
	src->is_blob = src_is_blob;
	src->generation = src_generation;
	src->ctx = c;
	src->cp_first = &d->cp_first;
}

/* The consumer's configuration for c's sub-trace, or its snapshot, in
 * `dir`; *src must live as long as *cc (consumer.h). */
void dmn_client_config(struct dmn *d, struct client *c, const char *dir,
		       struct cons_source *src, struct cons_config *cc)
{
	client_source(d, c, src);
	memset(cc, 0, sizeof(*cc));
	cc->dir = dir;
	cc->mode = (int)c->mode;
	memcpy(cc->uuid, c->uuid, 16);
	cc->src = src;
	/* strata record and the guardian serve the command they run (its
	 * tree, its user); a long-lived daemon, any program that joins */
	cc->own_program = !d->daemon;
}
