/* SPDX-License-Identifier: MIT */
/* Kernel event classes from tracefs format files, and the per-CPU stream writer (format.md §2-§4, §7). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include "common/format.h"
#include "common/tfile.h"
#include "kernel/kern_int.h"

#define MAX_PAYLOAD_WORDS 1022u
#define ID_THREAD 1u /* format.md §4 */
#define ID_CLOCK 2u

/* TSDL keywords cannot name a field: such names get a leading '_', which
 * CTF readers (babeltrace2, strata's reader) remove again. */
static const char *const tsdl_keywords[] = {
	"align", "callsite", "const", "char", "clock", "double", "enum", "env",
	"event", "floating_point", "float", "integer", "int", "long", "short",
	"signed", "stream", "string", "struct", "trace", "typealias", "typedef",
	"unsigned", "variant", "void", NULL,
};

static char *field_name(const char *name)
{
	char *out;

	for (const char *const *k = tsdl_keywords; *k; k++)
		if (!strcmp(name, *k))
			return asprintf(&out, "_%s", name) < 0 ? NULL : out;
	if (name[0] == '_') /* keep it: the reader strips one '_' */
		return asprintf(&out, "_%s", name) < 0 ? NULL : out;
	return strdup(name);
}

static uint16_t int_type(unsigned size, bool is_signed)
{
	switch (size) {
	case 1: return is_signed ? STRATA_T_S8 : STRATA_T_U8;
	case 2: return is_signed ? STRATA_T_S16 : STRATA_T_U16;
	case 4: return is_signed ? STRATA_T_S32 : STRATA_T_U32;
	default: return is_signed ? STRATA_T_S64 : STRATA_T_U64;
	}
}

static bool is_char_type(const char *type)
{
	return !strncmp(type, "char ", 5) || !strncmp(type, "char[", 5) ||
	       !strncmp(type, "__data_loc char", 15) || !strncmp(type, "__rel_loc char", 14) ||
	       !strcmp(type, "char");
}

int kclass_init(struct kclass *c, struct tep_event *ev, unsigned major,
		unsigned minor)
{
	unsigned n = 0;

	memset(c, 0, sizeof(*c));
	for (struct tep_format_field *f = ev->format.fields; f; f = f->next)
		n++;
	c->fdesc = calloc(n ? n : 1, sizeof(*c->fdesc));
	c->kf = calloc(n ? n : 1, sizeof(*c->kf));
	c->subsys = strdup(ev->system);
	c->name = strdup(ev->name);
	if (!c->fdesc || !c->kf || !c->subsys || !c->name)
		goto nomem;
	for (struct tep_format_field *f = ev->format.fields; f; f = f->next) {
		struct strata_field_desc *fd = &c->fdesc[c->nkf];
		struct kfield *k = &c->kf[c->nkf];
		bool sgn = f->flags & TEP_FIELD_IS_SIGNED;

		if (f->offset < 0 || f->offset > 0xffff || f->size <= 0 || f->size > 0xffff)
			continue;
		k->off = (uint16_t)f->offset;
		k->size = (uint16_t)f->size;
		if (f->flags & TEP_FIELD_IS_DYNAMIC) {
			if (!is_char_type(f->type) || f->size != 4)
				continue; /* dynamic arrays of other types: not carried */
			k->kind = KF_DYNSTR;
			k->relative = (f->flags & TEP_FIELD_IS_RELATIVE) != 0;
			fd->type = STRATA_T_STRING;
		} else if (f->flags & TEP_FIELD_IS_ARRAY) {
			unsigned el = f->elementsize;
			if (is_char_type(f->type)) {
				k->kind = KF_CHARS;
				fd->type = STRATA_T_STRING;
			} else if ((el == 1 || el == 2 || el == 4 || el == 8) &&
				   f->arraylen && f->arraylen * el == (unsigned)f->size &&
				   f->arraylen < 0x10000) {
				k->kind = KF_ARRAY;
				k->elem = (uint8_t)el;
				k->count = (uint16_t)f->arraylen;
				fd->type = int_type(el, sgn);
				fd->count = k->count;
			} else {
				continue;
			}
		} else if (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8) {
			k->kind = KF_INT;
			k->elem = (uint8_t)f->size;
			fd->type = (f->flags & TEP_FIELD_IS_POINTER) && f->size == 8 ?
					   STRATA_T_PTR : int_type(f->size, sgn);
		} else {
			continue; /* bit fields, odd sizes: not carried */
		}
		if (!(fd->name = field_name(f->name)))
			goto nomem;
		c->nkf++;
	}
	c->desc.subsystem = c->subsys;
	c->desc.name = c->name;
	c->desc.major = (uint8_t)major;
	c->desc.minor = (uint16_t)minor;
	c->desc.nfields = (uint16_t)c->nkf;
	c->desc.fields = c->fdesc;
	c->tep_id = ev->id;
	return 0;
nomem:
	kclass_fini(c);
	return -ENOMEM;
}

void kclass_fini(struct kclass *c)
{
	if (c->fdesc)
		for (unsigned i = 0; i < c->nkf; i++)
			free((char *)c->fdesc[i].name);
	free(c->fdesc);
	free(c->kf);
	free(c->subsys);
	free(c->name);
	memset(c, 0, sizeof(*c));
}

static unsigned align_up(unsigned v, unsigned a)
{
	return (v + a - 1) / a * a;
}

/* A format.md §3 string at byte `pos`: u32 count, the bytes, NUL padding
 * to the word. Cut so that the event stays within 1023 words. */
static unsigned put_string(uint8_t *p, unsigned pos, const uint8_t *s, size_t n)
{
	unsigned at = align_up(pos, 4), b = at + 4;
	size_t room = MAX_PAYLOAD_WORDS * 8 - b - 1;

	if (n > room)
		n = room;
	uint32_t cnt = (uint32_t)(align_up(b + (unsigned)n + 1, 8) - b);
	memcpy(p + at, &cnt, 4);
	memcpy(p + b, s, n);
	return b + cnt; /* the padding is already zero */
}

unsigned kclass_pack(const struct kclass *c, const uint8_t *data, unsigned size,
		     uint64_t *words)
{
	uint8_t *p = (uint8_t *)words;
	unsigned pos = 0;
	static const uint8_t zero[8];

	memset(p, 0, MAX_PAYLOAD_WORDS * 8);
	for (unsigned i = 0; i < c->nkf; i++) {
		const struct kfield *k = &c->kf[i];
		bool inside = (unsigned)k->off + k->size <= size;
		const uint8_t *src = inside ? data + k->off : NULL;

		switch (k->kind) {
		case KF_INT:
			pos = align_up(pos, k->elem);
			if (pos + k->elem > MAX_PAYLOAD_WORDS * 8)
				return MAX_PAYLOAD_WORDS; /* cannot happen with tracefs sizes */
			memcpy(p + pos, src ? src : zero, k->elem);
			pos += k->elem;
			break;
		case KF_ARRAY:
			pos = align_up(pos, k->elem);
			if (pos + k->size > MAX_PAYLOAD_WORDS * 8)
				return MAX_PAYLOAD_WORDS;
			if (src)
				memcpy(p + pos, src, k->size);
			pos += k->size;
			break;
		case KF_CHARS:
			pos = put_string(p, pos, src ? src : zero,
					 src ? strnlen((const char *)src, k->size) : 0);
			break;
		case KF_DYNSTR: {
			const uint8_t *s = zero;
			size_t n = 0;
			if (src) {
				uint32_t loc;
				memcpy(&loc, src, 4);
				unsigned soff = loc & 0xffff, slen = loc >> 16;
				if (k->relative)
					soff += k->off + 4;
				if (soff <= size && slen <= size - soff) {
					s = data + soff;
					n = strnlen((const char *)s, slen);
				}
			}
			pos = put_string(p, pos, s, n);
			break;
		}
		}
	}
	return align_up(pos, 8) / 8;
}

/* ---- the stream writer -------------------------------------------------- */

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8); /* x86-64 and every host ftrace runs on here: LE */
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint64_t header(uint64_t ts, uint32_t id, unsigned words)
{
	return (uint32_t)ts | (uint64_t)id << 32 | (uint64_t)words << 54;
}

int kstream_open(struct kstream *s, const char *dir, unsigned cpu,
		 const uint8_t uuid[16], uint32_t psize)
{
	char path[4200];

	memset(s, 0, sizeof(*s));
	s->fd = s->idx_fd = -1;
	s->cpu = cpu;
	s->psize = psize;
	memcpy(s->uuid, uuid, 16);
	if (!(s->pkt = calloc(1, psize)))
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/cpu%u", dir, cpu);
	s->fd = tfile_open(path, O_WRONLY | O_TRUNC);
	if (s->fd < 0)
		return s->fd;
	/* A dot file until the stream is closed, as the user streams'
	 * (consumer/stream.c, close_stream()): babeltrace2 refuses an
	 * index that does not cover its stream exactly. */
	if (asprintf(&s->idx_tmp, "%s/index/.cpu%u.idx", dir, cpu) < 0) {
		s->idx_tmp = NULL;
		return -ENOMEM;
	}
	s->idx_fd = tfile_open(s->idx_tmp, O_WRONLY | O_TRUNC);
	if (s->idx_fd < 0)
		return s->idx_fd;
	return fmt_idx_begin(s->idx_fd);
}

static void packet_open(struct kstream *s, uint64_t ts, uint32_t tid, uint32_t pid)
{
	uint8_t *p = s->pkt;

	memset(p, 0, s->psize);
	put32(p + STRATA_PKT_OFF_MAGIC, STRATA_PKT_MAGIC);
	memcpy(p + STRATA_PKT_OFF_UUID, s->uuid, 16);
	/* stream_instance_id: pid 0 (kernel) << 32 | cpu */
	put64(p + STRATA_PKT_OFF_STREAM_INSTANCE, s->cpu);
	put64(p + STRATA_PKT_OFF_TS_BEGIN, ts);
	put64(p + STRATA_PKT_OFF_PACKET_SIZE, (uint64_t)s->psize * 8);
	put64(p + STRATA_PKT_OFF_SEQ, s->seq);
	put32(p + STRATA_PKT_OFF_CPU, s->cpu);
	put32(p + STRATA_PKT_OFF_PID, pid);
	put32(p + STRATA_PKT_OFF_TID, tid);
	s->pos = STRATA_PKT_HEADER_SIZE;
	s->ts_begin = s->last_ts = ts;
	s->tid = tid;
	s->pid = pid;
	s->open = true;
}

static void packet_close(struct kstream *s)
{
	uint8_t *p = s->pkt;
	int ret;

	put64(p + STRATA_PKT_OFF_TS_END, s->last_ts);
	put64(p + STRATA_PKT_OFF_CONTENT_SIZE, (uint64_t)s->pos * 8);
	put64(p + STRATA_PKT_OFF_DISCARDED, s->discarded);
	s->open = false;
	if (s->err)
		return;
	/* Only the content, as the consumer writes the user streams: the
	 * padding is a hole in a sparse file (a live round's packets are
	 * mostly padding), and the file is extended to whole packets at
	 * the end (kstream_close). */
	if ((ret = fmt_write_all(s->fd, p, s->pos, (off_t)s->file_off))) {
		s->err = ret;
		return;
	}
	unsigned char e[STRATA_IDX_ENTRY];
	fmt_idx_entry_put(e, &(struct strata_idx_entry){
		.offset = s->file_off,
		.packet_size = (uint64_t)s->psize * 8,
		.content_size = (uint64_t)s->pos * 8,
		.ts_begin = s->ts_begin,
		.ts_end = s->last_ts,
		.discarded = s->discarded,
		.stream_instance_id = s->cpu,
		.seq = s->seq,
	});
	if ((ret = fmt_write_all(s->idx_fd, e, sizeof(e),
				 (off_t)(STRATA_IDX_HEADER_SIZE +
					 s->seq * STRATA_IDX_ENTRY))))
		s->err = ret;
	s->file_off += s->psize;
	s->seq++;
}

void kstream_event(struct kstream *s, uint64_t ts, uint32_t tid, uint32_t pid,
		   uint32_t id, const uint64_t *words, unsigned n)
{
	if (s->err)
		return;
	if (s->open && ts < s->last_ts) {
		ts = s->last_ts; /* the kernel's nested-writer stamps: keep order */
		s->clamped++;
	}
	bool thr = s->open && (tid != s->tid || pid != s->pid);
	/* format.md §3: a gap of 2^28 ticks or more needs a strata:clock */
	bool clk = s->open && ts - s->last_ts >= (1u << 28);
	unsigned need = 1 + n + (thr ? 2 : 0) + (clk ? 2 : 0);

	if (!s->open || s->pos + need * 8 > s->psize) {
		if (s->open)
			packet_close(s);
		packet_open(s, ts, tid, pid);
		thr = clk = false;
	}
	uint8_t *p = s->pkt + s->pos;
	/* The clock record first, so that the thread record's own stamp is
	 * reconstructed right too; the event follows them directly. */
	if (clk) {
		put64(p, header(ts, ID_CLOCK, 2));
		put64(p + 8, ts);
		p += 16;
	}
	if (thr) {
		put64(p, header(ts, ID_THREAD, 2));
		put32(p + 8, tid);
		put32(p + 12, pid);
		p += 16;
		s->tid = tid;
		s->pid = pid;
	}
	put64(p, header(ts, id, 1 + n));
	memcpy(p + 8, words, (size_t)n * 8);
	p += 8 + (size_t)n * 8;
	s->pos = (uint32_t)(p - s->pkt);
	s->last_ts = ts;
	s->events += (id >> 16) != 0; /* kernel events, not strata's records */
}

void kstream_flush(struct kstream *s)
{
	if (s->open && !s->err)
		packet_close(s);
}

int kstream_close(struct kstream *s, uint64_t now)
{
	/* A CPU without events still gets one empty packet: an empty stream
	 * file is not a CTF stream. */
	if (!s->open && !s->seq && s->pkt && !s->err)
		packet_open(s, now, 0, 0);
	if (s->open)
		packet_close(s);
	if (s->fd >= 0 && !s->err && ftruncate(s->fd, (off_t)s->file_off) < 0)
		s->err = -errno;
	if (s->fd >= 0 && fsync(s->fd) < 0 && !s->err)
		s->err = -errno;
	if (s->fd >= 0)
		close(s->fd);
	if (s->idx_fd >= 0) {
		/* ".../index/.cpuN.idx" -> ".../index/cpuN.idx" */
		char path[4200];
		const char *base = strrchr(s->idx_tmp, '/') + 1;
		snprintf(path, sizeof(path), "%.*s%s", (int)(base - s->idx_tmp),
			 s->idx_tmp, base + 1);
		if (close(s->idx_fd) || s->err || rename(s->idx_tmp, path))
			unlink(s->idx_tmp);
	}
	free(s->idx_tmp);
	s->idx_tmp = NULL;
	s->fd = s->idx_fd = -1;
	free(s->pkt);
	s->pkt = NULL;
	return s->err;
}
