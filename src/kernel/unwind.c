/* SPDX-License-Identifier: MIT */
/* DWARF call chains of perf samples, unwound while recording with elfutils' libdwfl. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/unwind.h"

/*
 * Why unwind while recording, and with libdwfl. A frame-pointer chain
 * (PERF_SAMPLE_CALLCHAIN) is cheap and taken by the kernel, but Debian
 * builds its libraries and most programs without frame pointers: there the
 * chain stops at the first frame or wanders. perf's answer, --call-graph
 * dwarf, copies each sample's user registers and the top of its stack
 * (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER) and unwinds them later
 * with the binaries' call frame information (.eh_frame, which x86-64
 * binaries carry for exceptions whatever their optimisation). strata does
 * the same with elfutils' unwinder (the library perf itself links), but
 * in the sample reader's thread as the samples arrive, outside the traced
 * program, and writes only the resulting chain: the trace stays as small
 * as with frame pointers, its readers need no unwinder, and the process's
 * modules are read from /proc/PID/maps while it lives. A process gone
 * before its first sample is read (one shorter than the reader's 100 ms
 * round) keeps the frame-pointer chain, as does any sample the unwinder
 * cannot start.
 */

#ifdef STRATA_HAVE_DW
#include <elfutils/libdwfl.h>
#include <dwarf.h>

#define UNW_PROCS 64 /* processes whose modules are kept */

struct unw_proc {
	pid_t pid;
	Dwfl *dwfl;     /* NULL: not read yet, or stale */
	bool gone;      /* its maps could not be read: frame pointers */
	uint64_t used;  /* for eviction, the least recent first */
};

struct unw {
	struct unw_proc proc[UNW_PROCS];
	uint64_t clock;
	/* the sample being unwound (the thread callbacks' argument) */
	pid_t tid;
	const uint64_t *regs;
	const uint8_t *stack;
	uint64_t sp;
	size_t len;
	uint64_t *pcs;
	unsigned max, n;
	uint64_t ip; /* the sample's own: the first frame, if it is that */
	bool first;
};

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

/* perf's x86-64 register order (UNW_REGS_MASK: ax bx cx dx si di bp sp
 * ip r8..r15) -> DWARF's (rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip) */
static const unsigned char perf_to_dwarf[UNW_NREGS] = {
	0, 3, 2, 1, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15,
};
#define PERF_SP 7

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unw *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0; /* one thread: the sample's */
	*thread_argp = u;
	return u->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct unw *u = arg;

	(void)dwfl;
	*thread_argp = u;
	return tid == u->tid;
}

/* Words of the stack copy only: what lies beyond it was not copied. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	struct unw *u = arg;

	(void)dwfl;
	if (addr < u->sp || addr - u->sp > u->len ||
	    u->len - (addr - u->sp) < sizeof(*result))
		return false;
	memcpy(result, u->stack + (addr - u->sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unw *u = arg;
	Dwarf_Word r[UNW_NREGS];

	for (unsigned i = 0; i < UNW_NREGS; i++)
		r[perf_to_dwarf[i]] = u->regs[i];
	return dwfl_thread_state_registers(thread, 0, UNW_NREGS, r);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

bool unw_available(void)
{
	return true;
}

struct unw *unw_create(void)
{
	return calloc(1, sizeof(struct unw));
}

void unw_destroy(struct unw *u)
{
	if (!u)
		return;
	for (unsigned i = 0; i < UNW_PROCS; i++)
		if (u->proc[i].dwfl)
			dwfl_end(u->proc[i].dwfl);
	free(u);
}

static struct unw_proc *proc_find(struct unw *u, pid_t pid)
{
	for (unsigned i = 0; i < UNW_PROCS; i++)
		if (u->proc[i].used && u->proc[i].pid == pid)
			return &u->proc[i];
	return NULL;
}

void unw_maps_changed(struct unw *u, pid_t pid)
{
	struct unw_proc *p = proc_find(u, pid);

	if (!p)
		return;
	if (p->dwfl)
		dwfl_end(p->dwfl);
	p->dwfl = NULL;
	p->gone = false; /* its pid taken again: a new process */
}

/* The process's modules from its /proc/PID/maps, and the unwinder's
 * state attached: NULL if they cannot be read (the process is gone). */
static Dwfl *proc_open(struct unw *u, pid_t pid)
{
	Dwfl *d = dwfl_begin(&proc_callbacks);

	if (!d)
		return NULL;
	dwfl_report_begin(d);
	if (dwfl_linux_proc_report(d, pid) != 0 ||
	    dwfl_report_end(d, NULL, NULL) != 0 ||
	    !dwfl_attach_state(d, NULL, pid, &thread_callbacks, u)) {
		dwfl_end(d);
		return NULL;
	}
	return d;
}

/* pid's entry, made (the least recently used one evicted) if need be,
 * its modules read if they are not. */
static struct unw_proc *proc_get(struct unw *u, pid_t pid)
{
	struct unw_proc *p = proc_find(u, pid);

	if (!p) {
		p = &u->proc[0];
		for (unsigned i = 1; i < UNW_PROCS && p->used; i++)
			if (u->proc[i].used < p->used)
				p = &u->proc[i];
		if (p->dwfl)
			dwfl_end(p->dwfl);
		*p = (struct unw_proc){ .pid = pid };
	}
	p->used = ++u->clock;
	if (!p->dwfl && !p->gone && !(p->dwfl = proc_open(u, pid)))
		p->gone = true;
	return p;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unw *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	if (u->first) {
		u->first = false;
		if (pc == u->ip)
			return DWARF_CB_OK; /* the sample has it */
	}
	u->pcs[u->n++] = pc; /* a return address, as the kernel's chain */
	return u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int unw_sample(struct unw *u, pid_t pid, pid_t tid, uint64_t ip,
	       const uint64_t *regs, const uint8_t *stack, size_t len,
	       uint64_t *pcs, unsigned max)
{
	struct unw_proc *p = proc_get(u, pid);

	if (!p->dwfl || !max)
		return -1;
	u->tid = tid;
	u->regs = regs;
	u->stack = stack;
	u->len = len;
	u->sp = regs[PERF_SP];
	u->pcs = pcs;
	u->max = max;
	u->n = 0;
	u->ip = ip;
	u->first = true;
	/* Ends at the outermost frame, the copy's end or a frame without
	 * call frame information: what it reached is kept either way. */
	(void)dwfl_getthread_frames(p->dwfl, tid, frame_cb, u);
	return (int)u->n;
}

#else /* no libdwfl: frame pointers only */

bool unw_available(void)
{
	return false;
}

struct unw *unw_create(void)
{
	return NULL;
}

void unw_destroy(struct unw *u)
{
	(void)u;
}

void unw_maps_changed(struct unw *u, pid_t pid)
{
	(void)u;
	(void)pid;
}

int unw_sample(struct unw *u, pid_t pid, pid_t tid, uint64_t ip,
	       const uint64_t *regs, const uint8_t *stack, size_t len,
	       uint64_t *pcs, unsigned max)
{
	(void)u, (void)pid, (void)tid, (void)ip, (void)regs, (void)stack, (void)len;
	(void)pcs, (void)max;
	return -1;
}

#endif
