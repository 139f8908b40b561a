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

/* Whether this build unwinds with DWARF (elfutils' libdwfl). */
bool unw_available(void);
struct unw *unw_create(void);
void unw_destroy(struct unw *u);
/* Process pid's mappings changed (an executable mapping, an exec): its
 * modules are read again at its next sample. */
void unw_maps_changed(struct unw *u, pid_t pid);
/*
 * Unwind one sample of thread tid of process pid from its user registers
 * (UNW_NREGS, perf's order) and the `len` bytes of its stack copied at
 * regs' sp. The callers' return addresses go to pcs, at most max, the
 * sample's own `ip` left out (the sample has it; a sample taken in the
 * kernel keeps the user ip its registers hold, the chain's first user
 * frame). Returns how many, or -1 if the process's modules cannot be read
 * (it has gone): the caller keeps the frame-pointer chain then.
 */
int unw_sample(struct unw *u, pid_t pid, pid_t tid, uint64_t ip,
	       const uint64_t *regs, const uint8_t *stack, size_t len,
	       uint64_t *pcs, unsigned max);

#endif /* STRATA_KERNEL_UNWIND_H */
