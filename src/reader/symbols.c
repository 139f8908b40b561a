/* SPDX-License-Identifier: MIT */
/* Addresses of traced processes to function+offset (file:line): the state dump's maps, the files' ELF and DWARF through libdwfl. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <strata/reader.h>

#ifdef STRATA_HAVE_DW
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stddef.h>
#include <gelf.h>
#include <unistd.h>

/* One strata:map record (format.md §4) of process pid. */
struct sym_map {
	uint32_t pid;
	uint32_t prot;
	uint64_t start, end, off, ino;
	char *path;
	char *build_id; /* hex, from strata:build_id (first mapping of a file), or NULL */
	int changed;    /* the file at path is not the mapped one: inode (1),
			 * unreadable (2), build-id (3) */
};

/* A strata:build_id record, until the maps are sorted. */
struct sym_bid {
	uint32_t pid;
	uint64_t addr;
	char *hex;
};

/* A process's modules, reported to libdwfl on first use. */
struct sym_proc {
	uint32_t pid;
	Dwfl *dwfl;
};

/* A process's parent (strata:process), for one that maps nothing of its
 * own: a fork child that did not exec runs its parent's code. */
struct sym_parent {
	uint32_t pid, ppid;
};
_Static_assert(offsetof(struct sym_map, pid) == 0 && offsetof(struct sym_parent, pid) == 0,
	       "first_of_pid() reads the pid each record begins with");

struct strata_symbolizer {
	struct sym_map *maps; /* sorted by pid, then start */
	size_t nmaps;
	struct sym_parent *parents; /* sorted by pid */
	size_t nparents;
	struct sym_proc *procs;
	size_t nprocs, cap;
	char **names; /* versioned names without their "@@GLIBC_2.34", owned */
	size_t nnames;
};

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static int cmp_map(const void *a, const void *b)
{
	const struct sym_map *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

static int add_map(struct strata_symbolizer *s, size_t *cap, const struct strata_event *ev,
		   const int *f)
{
	struct strata_value v[6];
	for (int i = 0; i < 6; i++)
		if (f[i] < 0 || strata_event_field(ev, (unsigned)f[i], &v[i]) < 0)
			return 0; /* damaged: skipped */
	if (v[5].type != STRATA_VALUE_STRING || !v[5].count)
		return 0;
	if (s->nmaps == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct sym_map *n = realloc(s->maps, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->maps = n;
		*cap = nc;
	}
	struct sym_map *m = &s->maps[s->nmaps];
	memset(m, 0, sizeof(*m));
	m->pid = ev->pid;
	m->start = v[0].u;
	m->end = v[1].u;
	m->off = v[2].u;
	m->ino = v[3].u;
	m->prot = (uint32_t)v[4].u;
	if (!(m->path = strndup(v[5].str, strnlen(v[5].str, v[5].count))))
		return -ENOMEM;
	s->nmaps++;
	return 0;
}

static int add_bid(struct sym_bid **b, size_t *n, const struct strata_event *ev, const int *f)
{
	struct strata_value a, h;
	if (f[0] < 0 || f[1] < 0 || strata_event_field(ev, (unsigned)f[0], &a) < 0 ||
	    strata_event_field(ev, (unsigned)f[1], &h) < 0 || h.type != STRATA_VALUE_STRING ||
	    !h.count)
		return 0; /* damaged: skipped */
	struct sym_bid *g = realloc(*b, (*n + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	*b = g;
	g[*n].pid = ev->pid;
	g[*n].addr = a.u;
	if (!(g[*n].hex = strndup(h.str, strnlen(h.str, h.count))))
		return -ENOMEM;
	(*n)++;
	return 0;
}

static void free_bids(struct sym_bid *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(b[i].hex);
	free(b);
}

static const struct sym_map *find_map(const struct strata_symbolizer *s, uint32_t pid,
				      uint64_t addr);

/* strata:process's pid and ppid: the state dump's, and the sample
 * reader's at each fork it saw (format.md §4). */
static int add_parent(struct strata_symbolizer *s, size_t *cap, const struct strata_event *ev)
{
	struct strata_value pid, ppid;
	int fp = strata_event_class_field(ev->cls, "pid");
	int fpp = strata_event_class_field(ev->cls, "ppid");

	if (fp < 0 || fpp < 0 || strata_event_field(ev, (unsigned)fp, &pid) < 0 ||
	    strata_event_field(ev, (unsigned)fpp, &ppid) < 0 || !pid.u || pid.u > UINT32_MAX ||
	    ppid.u > UINT32_MAX || pid.u == ppid.u)
		return 0;
	if (s->nparents == *cap) {
		size_t n = *cap ? 2 * *cap : 64;
		struct sym_parent *g = realloc(s->parents, n * sizeof(*g));
		if (!g)
			return -ENOMEM;
		s->parents = g;
		*cap = n;
	}
	s->parents[s->nparents++] = (struct sym_parent){ (uint32_t)pid.u, (uint32_t)ppid.u };
	return 0;
}

static int cmp_parent(const void *a, const void *b)
{
	const struct sym_parent *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The first of n records of `size` bytes, sorted by the uint32_t pid each
 * begins with (sym_map, sym_parent), whose pid is not below pid. */
static size_t first_of_pid(const void *base, size_t n, size_t size, uint32_t pid)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		uint32_t at;
		memcpy(&at, (const char *)base + mid * size, 4);
		if (at < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether process pid has any strata:map. */
static bool has_maps(const struct strata_symbolizer *s, uint32_t pid)
{
	size_t i = first_of_pid(s->maps, s->nmaps, sizeof(*s->maps), pid);
	return i < s->nmaps && s->maps[i].pid == pid;
}

/* The process whose maps pid's addresses are in: pid's own, or, for one
 * that maps nothing (a fork child that did not exec), its parent's, or
 * theirs (bounded: pid numbers are reused, a cycle must not loop). */
static uint32_t maps_of(const struct strata_symbolizer *s, uint32_t pid)
{
	for (int depth = 0; depth < 16 && !has_maps(s, pid); depth++) {
		size_t i = first_of_pid(s->parents, s->nparents, sizeof(*s->parents), pid);
		if (i == s->nparents || s->parents[i].pid != pid)
			break;
		pid = s->parents[i].ppid;
	}
	return pid;
}

/* Each build-id to the first mapping of the file whose mapping holds its
 * address (the one proc_dwfl() checks); frees bids. */
static void attach_bids(struct strata_symbolizer *s, struct sym_bid *bids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct sym_map *m = find_map(s, bids[i].pid, bids[i].addr);
		for (size_t j = 0; m && j < s->nmaps; j++) {
			struct sym_map *first = &s->maps[j];
			if (first->pid == m->pid && !strcmp(first->path, m->path)) {
				free(first->build_id);
				first->build_id = bids[i].hex;
				bids[i].hex = NULL;
				break;
			}
		}
	}
	free_bids(bids, n);
}

/* Whether the module's build-id is the hex one the trace recorded. */
static bool same_build_id(Dwfl_Module *mod, const char *hex)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (n <= 0 || strlen(hex) != 2 * (size_t)n)
		return false;
	for (int i = 0; i < n; i++) {
		char b[3];
		snprintf(b, sizeof(b), "%02x", bits[i]);
		if (memcmp(b, hex + 2 * i, 2))
			return false;
	}
	return true;
}

int strata_symbolizer_create(struct strata_trace *t, struct strata_symbolizer **out)
{
	struct strata_symbolizer *s = calloc(1, sizeof(*s));
	struct strata_filter *flt = NULL;
	struct strata_iter *it = NULL;
	const struct strata_event *ev;
	size_t cap = 0, nbids = 0;
	struct sym_bid *bids = NULL;
	int ret = -ENOMEM;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	/* the state dump's maps only: a name filter skips every other event
	 * before it is decoded, streams one after another */
	if ((ret = strata_filter_create(t, &flt)) < 0)
		goto fail;
	if ((ret = strata_filter_event(flt, "strata:map")) <= 0 ||
	    (ret = strata_filter_event(flt, "strata:build_id")) < 0 ||
	    (ret = strata_filter_event(flt, "strata:process")) < 0) {
		*out = s; /* no maps: every address is unknown */
		strata_filter_destroy(flt);
		return 0;
	}
	struct strata_iter_options io = {
		.stream = -1,
		.flags = STRATA_ITER_INTERNAL | STRATA_ITER_UNORDERED,
		.filter = flt,
	};
	if ((ret = strata_iter_create(t, &io, &it)) < 0)
		goto fail;
	const struct strata_event_class *cls = NULL;
	int f[6], fb[2] = {-1, -1};
	size_t pcap = 0;
	while (strata_iter_next(it, &ev) > 0) {
		if (!strcmp(ev->cls->name, "strata:process")) {
			if ((ret = add_parent(s, &pcap, ev)) < 0)
				goto fail;
			continue;
		}
		if (!strcmp(ev->cls->name, "strata:build_id")) {
			if (fb[0] < 0) {
				fb[0] = strata_event_class_field(ev->cls, "addr");
				fb[1] = strata_event_class_field(ev->cls, "build_id");
			}
			if ((ret = add_bid(&bids, &nbids, ev, fb)) < 0)
				goto fail;
			continue;
		}
		if (ev->cls != cls) {
			static const char *const names[6] = { "start", "end", "offset",
							      "inode", "prot", "path" };
			cls = ev->cls;
			for (int i = 0; i < 6; i++)
				f[i] = strata_event_class_field(cls, names[i]);
		}
		if ((ret = add_map(s, &cap, ev, f)) < 0)
			goto fail;
	}
	qsort(s->maps, s->nmaps, sizeof(*s->maps), cmp_map);
	qsort(s->parents, s->nparents, sizeof(*s->parents), cmp_parent);
	attach_bids(s, bids, nbids);
	strata_iter_destroy(it);
	strata_filter_destroy(flt);
	*out = s;
	return 0;
fail:
	free_bids(bids, nbids);
	strata_iter_destroy(it);
	strata_filter_destroy(flt);
	strata_symbolizer_destroy(s);
	return ret;
}

void strata_symbolizer_destroy(struct strata_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nprocs; i++)
		dwfl_end(s->procs[i].dwfl);
	for (size_t i = 0; i < s->nmaps; i++) {
		free(s->maps[i].path);
		free(s->maps[i].build_id);
	}
	for (size_t i = 0; i < s->nnames; i++)
		free(s->names[i]);
	free(s->names);
	free(s->procs);
	free(s->maps);
	free(s->parents);
	free(s);
}

/*
 * The load bias of the file mapped by m (its first mapping): the segment
 * holding file offset m->off is at p_vaddr - p_offset + off past the bias
 * (p_vaddr and p_offset agree modulo the page size: ELF's rule for
 * loadable segments). Returns 0, or -1 when the file has no such segment.
 */
static int load_bias(int fd, const struct sym_map *m, uint64_t *bias)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = 0;
	int ret = -1;

	if (e && elf_getphdrnum(e, &n) == 0)
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			uint64_t lo = ph.p_offset & ~(uint64_t)0xfff;
			if (m->off >= lo && m->off < ph.p_offset + ph.p_filesz) {
				*bias = m->start - (ph.p_vaddr - ph.p_offset + m->off);
				ret = 0;
				break;
			}
		}
	if (e)
		elf_end(e);
	return ret;
}

/* Report each file mapped by process pid once, at its first mapping,
 * unless it is not the file that was mapped (inode) any more. */
static Dwfl *proc_dwfl(struct strata_symbolizer *s, uint32_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return s->procs[i].dwfl;
	if (s->nprocs == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 8;
		struct sym_proc *n = realloc(s->procs, nc * sizeof(*n));
		if (!n)
			return NULL;
		s->procs = n;
		s->cap = nc;
	}
	Dwfl *d = dwfl_begin(&callbacks);
	if (!d)
		return NULL;
	dwfl_report_begin(d);
	for (size_t i = 0; i < s->nmaps; i++) {
		struct sym_map *m = &s->maps[i];
		if (m->pid != pid || m->path[0] != '/')
			continue;
		bool seen = false; /* reported at an earlier mapping */
		for (size_t j = 0; j < i && !seen; j++)
			seen = s->maps[j].pid == pid && !strcmp(s->maps[j].path, m->path);
		if (seen)
			continue;
		struct stat st;
		int fd = open(m->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			m->changed = 2;
		} else if ((uint64_t)st.st_ino != m->ino) {
			m->changed = 1;
		} else {
			uint64_t bias;
			const char *base = strrchr(m->path, '/') + 1;
			Dwfl_Module *mod = NULL;
			if (load_bias(fd, m, &bias) == 0 &&
			    (mod = dwfl_report_elf(d, base, m->path, fd, bias, false)))
				fd = -1; /* the module owns it now */
			/* same inode, other contents: rebuilt in place (cp over
			 * it); the module stays reported, never read */
			if (mod && m->build_id && !same_build_id(mod, m->build_id))
				m->changed = 3;
		}
		if (fd >= 0)
			close(fd);
	}
	dwfl_report_end(d, NULL, NULL);
	s->procs[s->nprocs].pid = pid;
	s->procs[s->nprocs].dwfl = d;
	s->nprocs++;
	return d;
}

static const struct sym_map *find_map(const struct strata_symbolizer *s, uint32_t pid,
				      uint64_t addr)
{
	size_t lo = 0, hi = s->nmaps;
	while (lo < hi) { /* the first map of pid starting above addr */
		size_t mid = (lo + hi) / 2;
		const struct sym_map *m = &s->maps[mid];
		if (m->pid < pid || (m->pid == pid && m->start <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sym_map *m = &s->maps[lo - 1];
	return m->pid == pid && addr < m->end ? m : NULL;
}

/* A symbol's name as people write it: "__libc_start_main", not its
 * versioned "__libc_start_main@@GLIBC_2.34" (kept once, owned by s).
 * Most names have no version: they are libdwfl's own strings. */
static const char *plain_name(struct strata_symbolizer *s, const char *name)
{
	size_t n = strcspn(name, "@");
	if (!name[n])
		return name;
	for (size_t i = 0; i < s->nnames; i++)
		if (!strncmp(s->names[i], name, n) && !s->names[i][n])
			return s->names[i];
	char **g = realloc(s->names, (s->nnames + 1) * sizeof(*g));
	char *copy = strndup(name, n);
	if (g)
		s->names = g;
	if (!g || !copy) {
		free(copy);
		return name; /* out of memory: the versioned name */
	}
	return s->names[s->nnames++] = copy;
}

int strata_symbolize_return(struct strata_symbolizer *s, uint32_t pid, uint64_t pc,
			    struct strata_symbol *out)
{
	if (!pc)
		return strata_symbolize(s, pid, pc, out);
	strata_symbolize(s, pid, pc - 1, out);
	if (out->status == STRATA_SYM_FUNCTION)
		out->offset++;
	else if (out->status != STRATA_SYM_UNKNOWN)
		out->module_offset++;
	return out->status;
}

int strata_symbolize(struct strata_symbolizer *s, uint32_t pid, uint64_t addr,
		     struct strata_symbol *out)
{
	memset(out, 0, sizeof(*out));
	out->status = STRATA_SYM_UNKNOWN;
	pid = maps_of(s, pid);
	const struct sym_map *m = find_map(s, pid, addr);
	if (!m)
		return out->status;
	Dwfl *d = proc_dwfl(s, pid);
	/* the file's first mapping decides whether it was read */
	const struct sym_map *first = m;
	for (size_t i = 0; i < s->nmaps; i++)
		if (s->maps[i].pid == pid && !strcmp(s->maps[i].path, m->path)) {
			first = &s->maps[i];
			break;
		}
	const char *slash = strrchr(m->path, '/');
	out->module = slash ? slash + 1 : m->path;
	out->module_offset = addr - m->start + m->off;
	if (m->path[0] != '/') {
		out->module = m->path;
		out->module_offset = addr - m->start;
		return out->status = STRATA_SYM_MAPPING;
	}
	if (first->changed == 3)
		return out->status = STRATA_SYM_REBUILT;
	if (first->changed)
		return out->status = STRATA_SYM_CHANGED;
	Dwfl_Module *mod = d ? dwfl_addrmodule(d, addr) : NULL;
	out->status = STRATA_SYM_MODULE;
	if (!mod)
		return out->status;
	Dwarf_Addr bias = 0;
	if (dwfl_module_getelf(mod, &bias))
		out->module_offset = addr - bias;
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	if (name) {
		out->function = plain_name(s, name);
		out->offset = off;
		out->status = STRATA_SYM_FUNCTION;
	}
	Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
	if (l) {
		const char *file = dwfl_lineinfo(l, NULL, &out->line, NULL, NULL, NULL);
		out->file = file;
	}
	return out->status;
}

#else /* !STRATA_HAVE_DW */

int strata_symbolizer_create(struct strata_trace *t, struct strata_symbolizer **out)
{
	(void)t;
	*out = NULL;
	return -ENOTSUP;
}

void strata_symbolizer_destroy(struct strata_symbolizer *s)
{
	(void)s;
}

int strata_symbolize(struct strata_symbolizer *s, uint32_t pid, uint64_t addr,
		     struct strata_symbol *out)
{
	(void)s;
	(void)pid;
	(void)addr;
	memset(out, 0, sizeof(*out));
	return out->status = STRATA_SYM_UNKNOWN;
}

int strata_symbolize_return(struct strata_symbolizer *s, uint32_t pid, uint64_t pc,
			    struct strata_symbol *out)
{
	return strata_symbolize(s, pid, pc, out);
}

#endif

const char *strata_symbol_format(const struct strata_symbol *sym, uint64_t addr, char *buf,
				 size_t len)
{
	if (!len)
		return buf;
	switch (sym->status) {
	case STRATA_SYM_FUNCTION: {
		const char *file = sym->file ? strrchr(sym->file, '/') : NULL;
		file = file ? file + 1 : sym->file;
		int n = snprintf(buf, len, "%s+0x%llx", sym->function,
				 (unsigned long long)sym->offset);
		if (file && n >= 0 && (size_t)n < len)
			snprintf(buf + n, len - (size_t)n, " (%s:%d)", file, sym->line);
		break;
	}
	case STRATA_SYM_MODULE:
	case STRATA_SYM_MAPPING:
		snprintf(buf, len, "%s+0x%llx", sym->module, (unsigned long long)sym->module_offset);
		break;
	case STRATA_SYM_CHANGED:
		snprintf(buf, len, "%s+0x%llx (changed since the trace)", sym->module,
			 (unsigned long long)sym->module_offset);
		break;
	case STRATA_SYM_REBUILT:
		snprintf(buf, len, "%s+0x%llx (changed since the trace: build-id differs)",
			 sym->module, (unsigned long long)sym->module_offset);
		break;
	default:
		snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	}
	return buf;
}
