/* SPDX-License-Identifier: MIT */
/* DWARF call chains of perf samples: each sample's user registers and a copy of its stack, unwound while recording (docs/profile.md, "Call chains"). */
#ifndef STRATA_KERNEL_UNWIND_H
#define STRATA_KERNEL_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The user registers a sample carries (perf_event_attr.sample_regs_user,
 * x86-64: the general registers and ip, no flags or segments), in the
 * order perf writes them (increasing bit). */
#define UNW_REGS_MASK 0xff01ffull
#define UNW_NREGS 17

struct unw;

/* An executable mapping as PERF_RECORD_MMAP2 reports it. */
struct unw_mapping {
	uint64_t start, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	const char *path; /* NUL-terminated; "[vdso]", "//anon" and such
			   * are not files and are left out */
};

/* Whether this build unwinds with DWARF (elfutils' libdwfl). */
bool unw_available(void);
struct unw *unw_create(void);
void unw_destroy(struct unw *u);

/*
 * What the kernel says of the sampled processes (PERF_RECORD_MMAP2, FORK,
 * COMM with the exec flag), in the order of their `time` (perf's clock,
 * the samples' too): each process's modules are built from them, not read
 * from /proc, so a process gone before its samples are unwound is unwound
 * all the same. unw_mmap: process pid mapped m executable. unw_fork: pid
 * was forked from ppid (a new process: it starts with ppid's mappings; a
 * new thread is no event). unw_exec: pid exec'd (its mappings are gone).
 */
void unw_mmap(struct unw *u, pid_t pid, uint64_t time,
	      const struct unw_mapping *m);
void unw_fork(struct unw *u, pid_t pid, pid_t ppid, uint64_t time);
void unw_exec(struct unw *u, pid_t pid, uint64_t time);
/*
 * Unwind one sample, taken at `time`, of thread tid of process pid from its
 * user registers (UNW_NREGS, perf's order) and the `len` bytes of its stack
 * copied at regs' sp. The callers' return addresses go to pcs, at most max,
 * the sample's own `ip` left out (the sample has it; a sample taken in the
 * kernel keeps the user ip its registers hold, the chain's first user
 * frame). Returns how many, or -1 if the process's modules are not known
 * (its exec or fork was not seen, or came after the sample): the caller
 * keeps the frame-pointer chain then.
 */
int unw_sample(struct unw *u, pid_t pid, pid_t tid, uint64_t time, uint64_t ip,
	       const uint64_t *regs, const uint8_t *stack, size_t len,
	       uint64_t *pcs, unsigned max);

#endif /* STRATA_KERNEL_UNWIND_H */
