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
 * as with frame pointers, and its readers need no unwinder.
 *
 * Why the modules come from the kernel's records, and what is shared. A
 * process's modules are built, as perf builds them, from the mmap2 records
 * the kernel sends for each executable mapping, a fork's copy of its
 * parent's and an exec's reset, never from /proc/PID/maps: a process gone
 * before its samples are read (a run of short processes, the reader behind
 * them) is unwound all the same. What costs, opening an ELF file and
 * reading its headers and sections, is done once per file (same device,
 * inode and generation) and the libelf descriptor is shared, by its
 * reference count, by every process that maps the file: a new process of
 * a known executable costs a Dwfl of a few modules and their first call
 * frame lookups (docs/profile.md, "Call chains").
 */

#ifdef STRATA_HAVE_DW
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNW_PROCS 256  /* processes whose mappings are kept */
#define UNW_FILES 1024 /* ELF files kept mapped (descriptors closed) */
#define UNW_MAPS 4096  /* mappings per process */

/* One ELF file, opened once, shared by every process that maps it. */
struct unw_file {
	uint32_t maj, min;
	uint64_t ino, gen;
	char *path;
	Elf *elf;	 /* NULL: not an ELF file here (replaced, gone) */
	uint64_t lo, hi; /* its PT_LOADs' page-aligned span, link-time */
};

/* An executable mapping of a file, in one process. */
struct unw_map {
	uint64_t start, pgoff;
	struct unw_file *f;
};

/* A process image: what one exec (or the fork that made the process)
 * mapped, from `since` on. */
struct unw_image {
	uint64_t since;
	struct unw_map *map;
	unsigned nmap, cap;
	unsigned reported; /* map[0..reported) are modules of dwfl */
	Dwfl *dwfl;	   /* NULL: none built yet */
	bool attached;
};

/* A process: its image (img[0]), and those before its last execs, for the
 * samples taken before an exec and read after it: a fork's child between
 * fork and exec, the exec itself, and chains of execs (a script's `env`,
 * then its interpreter, then the program it execs: pyenv's shims run
 * three in a row). */
#define UNW_IMAGES 4
struct unw_proc {
	pid_t pid;
	struct unw_image img[UNW_IMAGES]; /* the newest first */
	uint64_t used; /* for eviction, the least recent first */
};

struct unw {
	struct unw_proc proc[UNW_PROCS];
	uint64_t clock;
	struct unw_file *file[UNW_FILES];
	unsigned nfile;
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

/* The shared descriptor, one more reference to it: libdwfl's elf_end()
 * of a module's file drops that reference only (elf_begin's `ref`). */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name,
		    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	struct unw_file *f = *userdata;

	(void)mod, (void)name, (void)base, (void)file_name;
	*elfp = f && f->elf ? elf_begin(-1, ELF_C_READ_MMAP, f->elf) : NULL;
	return -1; /* no descriptor: the mapping holds the file */
}

/* No separate debug files: .eh_frame is in the mapped file itself, and
 * searching /usr/lib/debug for each module of each process is what this
 * file sets out to avoid. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
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
	elf_version(EV_CURRENT);
	return calloc(1, sizeof(struct unw));
}

static void image_clear(struct unw_image *img)
{
	if (img->dwfl)
		dwfl_end(img->dwfl);
	free(img->map);
	*img = (struct unw_image){ 0 };
}

static void proc_clear(struct unw_proc *p)
{
	for (unsigned i = 0; i < UNW_IMAGES; i++)
		image_clear(&p->img[i]);
	*p = (struct unw_proc){ 0 };
}

void unw_destroy(struct unw *u)
{
	if (!u)
		return;
	for (unsigned i = 0; i < UNW_PROCS; i++)
		proc_clear(&u->proc[i]);
	for (unsigned i = 0; i < u->nfile; i++) {
		elf_end(u->file[i]->elf);
		free(u->file[i]->path);
		free(u->file[i]);
	}
	free(u);
}

static struct unw_proc *proc_find(struct unw *u, pid_t pid)
{
	for (unsigned i = 0; i < UNW_PROCS; i++)
		if (u->proc[i].used && u->proc[i].pid == pid)
			return &u->proc[i];
	return NULL;
}

/* A fresh entry for pid (a new process: its exec or fork at `since`), the
 * least recently used one evicted, or pid's own emptied. */
static struct unw_proc *proc_new(struct unw *u, pid_t pid, uint64_t since)
{
	struct unw_proc *p = proc_find(u, pid);

	if (!p) {
		p = &u->proc[0];
		for (unsigned i = 1; i < UNW_PROCS && p->used; i++)
			if (u->proc[i].used < p->used)
				p = &u->proc[i];
	}
	proc_clear(p);
	p->pid = pid;
	p->img[0].since = since;
	p->used = ++u->clock;
	return p;
}

/* The span of f's PT_LOADs: where a mapping places the module. */
static bool file_layout(struct unw_file *f)
{
	size_t n;
	bool any = false;

	if (elf_kind(f->elf) != ELF_K_ELF || elf_getphdrnum(f->elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		uint64_t align = ph.p_align > 1 ? ph.p_align : 1;
		if (!any)
			f->lo = ph.p_vaddr & -align; /* libdwfl's main.vaddr */
		if (ph.p_vaddr + ph.p_memsz > f->hi)
			f->hi = ph.p_vaddr + ph.p_memsz;
		any = true;
	}
	return any && f->hi > f->lo;
}

/* The file the mapping is of, opened the first time it is seen; NULL if it
 * is no file (anonymous, the vdso) or the table is full. A path that names
 * another inode now (replaced since it was mapped) is remembered as no ELF. */
static struct unw_file *file_get(struct unw *u, const struct unw_mapping *m)
{
	struct stat st;

	if (m->path[0] != '/' || !m->ino)
		return NULL;
	for (unsigned i = 0; i < u->nfile; i++) {
		struct unw_file *f = u->file[i];
		if (f->ino == m->ino && f->maj == m->maj && f->min == m->min &&
		    f->gen == m->ino_generation)
			return f;
	}
	struct unw_file *f = u->nfile < UNW_FILES ? calloc(1, sizeof(*f)) :
						    NULL;
	if (!f || !(f->path = strdup(m->path))) {
		free(f);
		return NULL;
	}
	f->maj = m->maj, f->min = m->min, f->ino = m->ino,
	f->gen = m->ino_generation;
	u->file[u->nfile++] = f;
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	/* the inode only: an overlay reports its lower file's device */
	if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_ino != m->ino)
		goto out;
	f->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	/* the whole file is mapped: the descriptor is not needed again */
	if (f->elf && (elf_cntl(f->elf, ELF_C_FDDONE) || !file_layout(f))) {
		elf_end(f->elf);
		f->elf = NULL;
	}
out:
	if (fd >= 0)
		close(fd);
	return f;
}

void unw_mmap(struct unw *u, pid_t pid, uint64_t time,
	      const struct unw_mapping *m)
{
	struct unw_proc *p = proc_find(u, pid);
	struct unw_file *f;

	if (!p) /* its exec or fork was not seen: it is a process now */
		p = proc_new(u, pid, time);
	struct unw_image *img = &p->img[0];
	if (!m->len || !(f = file_get(u, m)) || !f->elf)
		return;
	if (img->nmap == img->cap) {
		unsigned cap = img->cap ? 2 * img->cap : 32;
		struct unw_map *n =
			cap <= UNW_MAPS ? realloc(img->map, cap * sizeof(*n)) :
					  NULL;
		if (!n)
			return;
		img->map = n;
		img->cap = cap;
	}
	img->map[img->nmap++] =
		(struct unw_map){ m->start, m->pgoff, f };
}

void unw_fork(struct unw *u, pid_t pid, pid_t ppid, uint64_t time)
{
	struct unw_proc *parent = proc_find(u, ppid);

	if (pid == ppid)
		return; /* a thread: same process, same mappings */
	struct unw_proc *p = proc_new(u, pid, time);
	/* proc_new may have evicted the parent: look again */
	if (!parent || (parent = proc_find(u, ppid)) == NULL ||
	    !parent->img[0].nmap)
		return;
	const struct unw_image *from = &parent->img[0];
	struct unw_image *img = &p->img[0];
	if (!(img->map = malloc(from->nmap * sizeof(*from->map))))
		return;
	memcpy(img->map, from->map, from->nmap * sizeof(*from->map));
	img->nmap = img->cap = from->nmap;
}

void unw_exec(struct unw *u, pid_t pid, uint64_t time)
{
	struct unw_proc *p = proc_find(u, pid);

	if (!p) {
		proc_new(u, pid, time);
		return;
	}
	image_clear(&p->img[UNW_IMAGES - 1]);
	memmove(&p->img[1], &p->img[0], (UNW_IMAGES - 1) * sizeof(p->img[0]));
	p->img[0] = (struct unw_image){ .since = time };
}

/* Map m as a module of p's Dwfl: the module starts where its first PT_LOAD
 * lands (libdwfl computes its bias from there). */
static void report_map(Dwfl *d, const struct unw_map *m)
{
	const struct unw_file *f = m->f;
	size_t n;

	if (elf_getphdrnum(f->elf, &n))
		return;
	/* the PT_LOAD the mapping's first page is of (x86-64's 4 KiB pages:
	 * this unwinder is x86-64's, perf_to_dwarf) */
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(f->elf, (int)i, &ph) ||
		    ph.p_type != PT_LOAD ||
		    m->pgoff < (ph.p_offset & ~4095ull) ||
		    m->pgoff >= ph.p_offset + ph.p_filesz)
			continue;
		uint64_t bias =
			m->start - (ph.p_vaddr - ph.p_offset + m->pgoff);
		Dwfl_Module *mod = dwfl_report_module(d, f->path, bias + f->lo,
						      bias + f->hi);
		void **ud;
		if (mod && dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL,
					    NULL, NULL))
			*ud = (void *)f;
		return;
	}
}

/* The image's Dwfl with every mapping reported so far as a module: built
 * at its first sample, new mappings (a dlopen) added to it later. */
static Dwfl *image_dwfl(struct unw *u, pid_t pid, struct unw_image *p)
{
	if (p->reported == p->nmap && p->attached)
		return p->dwfl;
	if (!p->dwfl) {
		if (!(p->dwfl = dwfl_begin(&proc_callbacks)))
			return NULL;
		dwfl_report_begin(p->dwfl);
	} else {
		dwfl_report_begin_add(p->dwfl);
	}
	for (; p->reported < p->nmap; p->reported++)
		report_map(p->dwfl, &p->map[p->reported]);
	if (dwfl_report_end(p->dwfl, NULL, NULL) != 0)
		return NULL;
	/* the unwinder's state: its backend from the first module it opens */
	if (!p->attached &&
	    !(p->attached = dwfl_attach_state(p->dwfl, NULL, pid,
					      &thread_callbacks, u)))
		return NULL;
	return p->dwfl;
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

int unw_sample(struct unw *u, pid_t pid, pid_t tid, uint64_t time, uint64_t ip,
	       const uint64_t *regs, const uint8_t *stack, size_t len,
	       uint64_t *pcs, unsigned max)
{
	struct unw_proc *p = proc_find(u, pid);
	struct unw_image *img = NULL;
	Dwfl *d;

	if (!p || !max)
		return -1;
	/* taken before its last exec (read after it): the image it is of;
	 * older than those kept, not known here */
	for (unsigned i = 0; i < UNW_IMAGES && !img; i++)
		if (time >= p->img[i].since)
			img = &p->img[i];
	if (!img || !img->nmap)
		return -1;
	p->used = ++u->clock;
	if (!(d = image_dwfl(u, pid, img)))
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
	(void)dwfl_getthread_frames(d, tid, frame_cb, u);
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

void unw_mmap(struct unw *u, pid_t pid, uint64_t time,
	      const struct unw_mapping *m)
{
	(void)u, (void)pid, (void)time, (void)m;
}

void unw_fork(struct unw *u, pid_t pid, pid_t ppid, uint64_t time)
{
	(void)u, (void)pid, (void)ppid, (void)time;
}

void unw_exec(struct unw *u, pid_t pid, uint64_t time)
{
	(void)u, (void)pid, (void)time;
}

int unw_sample(struct unw *u, pid_t pid, pid_t tid, uint64_t time, uint64_t ip,
	       const uint64_t *regs, const uint8_t *stack, size_t len,
	       uint64_t *pcs, unsigned max)
{
	(void)u, (void)pid, (void)tid, (void)time, (void)ip, (void)regs;
	(void)stack, (void)len, (void)pcs, (void)max;
	return -1;
}

#endif
