/* SPDX-License-Identifier: MIT */
/* The library's environment, read here only: strata_options and the rest (STRATA_*). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/log.h"
#include "lib/patch.h"
#include "lib/session.h"
#include "ring/ring.h"

static int parse_size(const char *name, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		goto bad;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end)
		goto bad;
	*out = v;
	return 0;
bad:
	slog_detail("%s: \"%s\" is not a size (use e.g. 256K, 1M)", name, s);
	return -EINVAL;
}

/* "all", "none", "0x1f", or a list of majors and ranges "1,2,5-9". */
int options_parse_majors(const char *s, uint64_t *out)
{
	uint64_t m = 0;
	char *end;

	if (!strcasecmp(s, "all")) {
		*out = ~UINT64_C(0) & ~STRATA_MAJOR_BIT(63);
		return 0;
	}
	if (!strcasecmp(s, "none")) {
		*out = 0;
		return 0;
	}
	if (!strncasecmp(s, "0x", 2)) {
		errno = 0;
		m = strtoull(s, &end, 16);
		if (errno || *end)
			goto bad;
		*out = m;
		return 0;
	}
	while (*s) {
		unsigned long a = strtoul(s, &end, 10), b = a;
		if (end == s)
			goto bad;
		if (*end == '-') {
			s = end + 1;
			b = strtoul(s, &end, 10);
			if (end == s)
				goto bad;
		}
		if (a > 62 || b > 62 || a > b)
			goto bad;
		for (unsigned long i = a; i <= b; i++)
			m |= STRATA_MAJOR_BIT(i);
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		s = end;
	}
	*out = m;
	return 0;
bad:
	slog_detail("STRATA_MAJORS: cannot parse \"%s\" (use all, none, 0x..., "
		    "or a list like 1,2,5-9 of majors 0-62)", s);
	return -EINVAL;
}

/*
 * The one place the library reads its environment (README's table lists
 * each variable). Read at the moment of use, not once at load: the
 * strata tool sets STRATA_CLOCK before its clock_init(), a program may
 * set STRATA_OUTPUT before strata_start(NULL), and the pointers stay
 * those of environ (valid until that variable is set again).
 */
void lib_env_read(struct lib_env *e)
{
	const char *v;

	e->output = getenv("STRATA_OUTPUT");
	e->packet_size = getenv("STRATA_PACKET_SIZE");
	e->packets = getenv("STRATA_PACKETS");
	e->mode = getenv("STRATA_MODE");
	e->majors = getenv("STRATA_MAJORS");
	e->block_timeout_ms = getenv("STRATA_BLOCK_TIMEOUT_MS");
	e->flush_ms = getenv("STRATA_FLUSH_MS");
	e->clock = getenv("STRATA_CLOCK");
	v = getenv("STRATA_RSEQ");
	e->rseq_off = v && !strcmp(v, "0");
	e->start_on = getenv("STRATA_START_ON");
	e->stop_on = getenv("STRATA_STOP_ON");
	e->session = getenv("STRATA_SESSION");
	v = getenv("STRATA_GUARDED");
	e->guarded = v && !strcmp(v, "1");
	v = getenv("STRATA_GUARD");
	e->guard_off = v && !strcmp(v, "0");
	e->tool = getenv("STRATA_TOOL");
	e->enable = getenv("STRATA_ENABLE");
	e->ktrace_dir = getenv("STRATA_KTRACE_DIR");
	e->record_trace = getenv("STRATA_RECORD_TRACE");
}

STRATA_API int strata_options_from_env(struct strata_options *opt)
{
	struct lib_env e;
	const char *v;
	uint64_t n;

	lib_env_read(&e);
	memset(opt, 0, sizeof(*opt));
	opt->output = e.output;
	if ((v = e.packet_size) && *v) {
		if (parse_size("STRATA_PACKET_SIZE", v, &n))
			return -EINVAL;
		opt->packet_size = n;
	}
	if ((v = e.packets) && *v) {
		if (parse_size("STRATA_PACKETS", v, &n))
			return -EINVAL;
		opt->npackets = (unsigned)n;
	}
	if ((v = e.mode) && *v) {
		if (!strcasecmp(v, "discard")) {
			opt->mode = STRATA_MODE_DISCARD;
		} else if (!strcasecmp(v, "overwrite")) {
			opt->mode = STRATA_MODE_OVERWRITE;
		} else if (!strcasecmp(v, "block")) {
			opt->mode = STRATA_MODE_BLOCK;
		} else {
			slog_detail("STRATA_MODE: \"%s\" is not discard, overwrite "
				    "or block", v);
			return -EINVAL;
		}
	}
	if ((v = e.majors) && *v) {
		if (options_parse_majors(v, &opt->majors))
			return -EINVAL;
		if (!opt->majors)
			opt->majors = STRATA_MAJORS_NONE;
	}
	if ((v = e.block_timeout_ms) && *v) {
		if (parse_size("STRATA_BLOCK_TIMEOUT_MS", v, &n) || n > 3600000) {
			slog_detail("STRATA_BLOCK_TIMEOUT_MS: \"%s\": milliseconds, "
				    "at most an hour", v);
			return -EINVAL;
		}
		ring_cfg.block_ms = (uint32_t)n;
	}
	if ((v = e.flush_ms) && *v) {
		if (parse_size("STRATA_FLUSH_MS", v, &n) || n > 3600000) {
			slog_detail("STRATA_FLUSH_MS: \"%s\": milliseconds, "
				    "at most an hour", v);
			return -EINVAL;
		}
		opt->flush_ms = (unsigned)n;
	}
	return 0;
}

/*
 * Packets per CPU ring when nobody said (docs/record.md, "Ring size"): 64
 * of 256 KiB (16 MiB) while the rings of every CPU fit in 128 MiB, halved
 * on bigger machines down to 16 (4 MiB). A ring absorbs the consumer's
 * absences (a preemption, a slow write): at 1 GB/s, 4 MiB is 4 ms of them,
 * and on a two-CPU machine a flat-out program lost 0.1-23 % of its events
 * to them with 4 MiB rings, nothing in most runs with 16 (bench_oob).
 * Memory is only taken as it is written (ring.md §1).
 */
static unsigned default_npackets(size_t psize)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t cpus = ncpu > 0 ? (uint64_t)ncpu : 1;
	unsigned n = 64;

	while (n > 16 && cpus * n * psize > (UINT64_C(128) << 20))
		n /= 2;
	return n;
}

int options_check(struct strata_options *o)
{
	if (!o->packet_size)
		o->packet_size = 256 << 10;
	if (!o->npackets)
		o->npackets = default_npackets(o->packet_size);
	if (o->packet_size < (16 << 10) || o->packet_size > (64u << 20) ||
	    (o->packet_size & (o->packet_size - 1))) {
		slog_detail("packet size %zu: must be a power of two from 16K "
			    "to 64M", o->packet_size);
		return -EINVAL;
	}
	if (o->npackets < 2 || o->npackets > 65536 ||
	    (o->npackets & (o->npackets - 1))) {
		slog_detail("%u packets per CPU: must be a power of two from 2 "
			    "to 65536", o->npackets);
		return -EINVAL;
	}
	if (o->mode != STRATA_MODE_DISCARD && o->mode != STRATA_MODE_OVERWRITE &&
	    o->mode != STRATA_MODE_BLOCK) {
		slog_detail("mode %d: must be discard, overwrite or block", o->mode);
		return -EINVAL;
	}
	if (!o->output || !*o->output) {
		slog_detail("no output directory (set STRATA_OUTPUT=DIR)");
		return -EINVAL;
	}
	return 0;
}

/* STRATA_PATCH=0: leave every tracepoint site a jump to its mask test
 * (docs/patch.md, "Fallback"). Read once, when the first sites register;
 * kept apart from lib_env_read() because sites register from
 * constructors that may run before anything else of the library. */
int env_patch_off(void)
{
	const char *v = getenv("STRATA_PATCH");

	return v && !strcmp(v, "0");
}

/* STRATA_SAMPLE=HZ: the in-process sampler (lib/sampler.c, docs/profile.md).
 * Read once, from the sampler's constructor. */
int env_sample_hz(unsigned *hz)
{
	const char *v = getenv("STRATA_SAMPLE");
	char *end;
	unsigned long n;

	*hz = 0;
	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || !n || n > 100000) {
		slog_detail("STRATA_SAMPLE: \"%s\" is not samples per second "
			    "from 1 to 100000; not sampling", v);
		return -EINVAL;
	}
	*hz = (unsigned)n;
	return 0;
}
