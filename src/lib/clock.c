/* SPDX-License-Identifier: MIT */
/* The trace clock: TSC when invariant, CLOCK_MONOTONIC otherwise (format.md §5). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/compiler.h"
#include "common/metadata.h"
#include "lib/clock.h"
#include "lib/session.h"
#include "ring/ring.h"

STRATA_API int strata_clock_tsc;
struct clock_point clock_init_point;

/* The first line of `path` that starts with `prefix`, without its
 * newline (malloc'd), or NULL. */
static char *file_line(const char *path, const char *prefix)
{
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	while (getline(&line, &cap, f) >= 0) {
		if (!strncmp(line, prefix, strlen(prefix))) {
			line[strcspn(line, "\n")] = 0;
			fclose(f);
			return line;
		}
	}
	free(line);
	fclose(f);
	return NULL;
}

/* `word` is one of the space-separated words of `line` (nonstop_tsc is
 * not nonstop_tsc_s3). */
static int has_word(const char *line, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = line; (p = strstr(p, word)); p += n)
		if ((p == line || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
			return 1;
	return 0;
}

#if defined(__x86_64__)
/*
 * KVM's paravirtual clock, per vCPU (Linux's struct
 * pvclock_vcpu_time_info; MSR_KVM_SYSTEM_TIME_NEW in the kernel's KVM
 * documentation). The host sets PVCLOCK_TSC_STABLE_BIT when the guest's
 * TSC reads the same on every vCPU and never goes back: kvm-clock is then
 * a linear function of the TSC, and the kernel maps this page into every
 * process for the vDSO.
 */
struct pvclock_info {
	uint32_t version;
	uint32_t pad0;
	uint64_t tsc_timestamp;
	uint64_t system_time;
	uint32_t tsc_to_system_mul;
	int8_t tsc_shift;
	uint8_t flags;
	uint8_t pad[2];
};
#define PVCLOCK_TSC_STABLE_BIT 0x1

/* The vDSO's pvclock page: the first page of [vvar_vclock] (Linux >=
 * 6.13), else the second page of a 4-page [vvar] (earlier kernels). */
static uintptr_t pvclock_page(void)
{
	char line[512];
	uintptr_t vvar = 0, vclock = 0;
	unsigned long a, b;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx", &a, &b) != 2)
			continue;
		if (strstr(line, "[vvar_vclock]"))
			vclock = a;
		else if (strstr(line, "[vvar]") && b - a == 4 * 4096)
			vvar = a + 4096;
	}
	fclose(f);
	return vclock ? vclock : vvar;
}

/* Does the hypervisor vouch for this guest's TSC? The page is read
 * through a pipe: where it is not mapped the kernel's copy returns
 * EFAULT, where a plain load would raise SIGBUS in the traced program. */
static int kvm_tsc_stable(void)
{
	struct pvclock_info pv;
	uintptr_t page = pvclock_page();
	int fd[2], ok = 0;

	if (!page || pipe2(fd, O_CLOEXEC))
		return 0;
	if (write(fd[1], (const void *)page, sizeof(pv)) == (ssize_t)sizeof(pv) &&
	    read(fd[0], &pv, sizeof(pv)) == (ssize_t)sizeof(pv))
		ok = pv.tsc_to_system_mul != 0 && pv.tsc_shift > -32 &&
		     pv.tsc_shift < 32 && (pv.flags & PVCLOCK_TSC_STABLE_BIT);
	close(fd[0]);
	close(fd[1]);
	return ok;
}
#endif

/* What the clock is, and why: the metadata's description. */
static const char *clock_desc = "CLOCK_MONOTONIC";

void clock_init(void)
{
	struct lib_env env;
	const char *c;

	lib_env_read(&env);
	c = env.clock;

	strata_clock_tsc = 0;
	clock_desc = "CLOCK_MONOTONIC (no invariant TSC)";
#if defined(__x86_64__)
	/* Invariant TSC: constant rate, ticking in deep C-states; and
	 * synchronised across CPUs, which the kernel vouches for by using it
	 * as its clocksource, or a KVM host by its pvclock's stable bit
	 * (most cloud guests run on kvm-clock, itself computed from the
	 * TSC). Either way ftrace's x86-tsc clock reads the same counter
	 * (FKT/FUT's super-trace). */
	/* the first CPU's flags: every CPU has the same */
	char *flags = file_line("/proc/cpuinfo", "flags");
	char *cs = file_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", "");

	if (flags && has_word(flags, "constant_tsc") &&
	    has_word(flags, "nonstop_tsc")) {
		strata_clock_tsc = 1;
		if (cs && !strcmp(cs, "tsc"))
			clock_desc = "x86 TSC, invariant (the kernel's clocksource)";
		else if (cs && !strcmp(cs, "kvm-clock") && kvm_tsc_stable())
			clock_desc = "x86 TSC, invariant (stable by the KVM host; "
				     "kernel clocksource kvm-clock)";
		else if (c && !strcmp(c, "tsc")) /* --clock tsc */
			clock_desc = "x86 TSC, invariant (forced by STRATA_CLOCK=tsc)";
		else {
			strata_clock_tsc = 0;
			clock_desc = "CLOCK_MONOTONIC (TSC not vouched for by the "
				     "kernel or hypervisor)";
		}
	}
	free(flags);
	free(cs);
#endif
	/* STRATA_CLOCK=mono (`strata record --clock mono`): CLOCK_MONOTONIC
	 * even where the TSC would do, e.g. to merge with another tool's
	 * trace on that clock. "tsc" cannot force a TSC that is not
	 * invariant. */
	if (c && !strcmp(c, "mono")) {
		strata_clock_tsc = 0;
		clock_desc = "CLOCK_MONOTONIC (STRATA_CLOCK=mono)";
	}
	ring_cfg.cas_only = env.rseq_off;
	ring_init(); /* the write protocol follows the clock (ring.md §7) */
	clock_point_take(&clock_init_point);
}

void clock_use_mono(void)
{
	strata_clock_tsc = 0;
	clock_desc = "CLOCK_MONOTONIC (the session's daemon records on it)";
	ring_init();
}

STRATA_API uint64_t strata_clock_mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

const char *clock_description(void)
{
	return clock_desc;
}

static uint64_t ns_of(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void clock_point_take(struct clock_point *p)
{
	uint64_t best = UINT64_MAX;

	/* Keep the try whose two trace-clock reads are closest: the system
	 * clocks were read within that window. */
	for (int i = 0; i < 8; i++) {
		uint64_t t0 = strata_clock();
		uint64_t mono = ns_of(CLOCK_MONOTONIC);
		uint64_t real = ns_of(CLOCK_REALTIME);
		uint64_t t1 = strata_clock();
		if (t1 - t0 < best) {
			best = t1 - t0;
			p->ts = t0 + (t1 - t0) / 2;
			p->mono_ns = mono;
			p->real_ns = real;
		}
	}
}

void clock_fit(const struct clock_point *a, const struct clock_point *b,
	       uint64_t *freq_hz, int64_t *offset_ns)
{
	if (!strata_clock_tsc) {
		*freq_hz = 1000000000u;
	} else if (b->mono_ns > a->mono_ns && b->ts > a->ts) {
		double f = (double)(b->ts - a->ts) * 1e9 /
			   (double)(b->mono_ns - a->mono_ns);
		*freq_hz = (uint64_t)(f + 0.5);
	} else if (*freq_hz == 0) {
		*freq_hz = 1000000000u;
	}
	/* Anchor on the latest point: realtime = offset + ts / freq. */
	double secs = (double)b->ts / (double)*freq_hz;
	*offset_ns = (int64_t)b->real_ns - (int64_t)(secs * 1e9);
}

void clock_uuid(char out[37])
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (f) {
		if (fgets(out, 37, f) && strlen(out) == 36) {
			fclose(f);
			return;
		}
		fclose(f);
	}
	strcpy(out, "00000000-0000-4000-8000-000000000000");
}

void clock_meta(struct meta_info *mi)
{
	clock_uuid(mi->clock_uuid);
	mi->clock_desc = clock_description();
}
