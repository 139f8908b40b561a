/* SPDX-License-Identifier: MIT */
/* CPU-time sampling with perf_event_open (software cpu-clock, user call chains), written as TRACE/samples on the trace clock. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/format.h"
#include "common/metadata.h"
#include "common/tfile.h"
#include "kernel/kern_int.h"
#include "kernel/sample.h"
#include "kernel/unwind.h"
#include "lib/clock.h"

/*
 * Why perf_event_open: the kernel samples every thread of the tree at its
 * own rate of CPU time (a software cpu-clock event, inherited by children
 * and enabled at the command's exec), takes the user call chain itself
 * (frame pointers: PERF_SAMPLE_CALLCHAIN), and reports each executable
 * mapping as it is made (PERF_RECORD_MMAP2), so a program that links
 * nothing of strata is sampled and symbolized; nothing runs inside it.
 * The other way, CPU-time timers and a signal handler in the program,
 * would need a preloaded library and is not built (docs/profile.md).
 *
 * Each CPU's ring is read by one thread and written to TRACE/samples/cpuN
 * with the kernel source's stream writer. perf stamps the samples with
 * CLOCK_MONOTONIC (use_clockid): the trace clock itself when it is mono;
 * when it is the TSC, a line through two calibration points, the start's
 * and one the reader takes at every round once 50 ms have passed, maps
 * them (the ring's own TSC conversion, cap_user_time_zero, is not offered
 * under KVM's clock). Both clocks run from the same counter, so the line
 * is right to the points' own precision (about 100 ns), far finer than
 * the samples' period.
 */

#define RING_PAGES 64 /* data pages per CPU: 256 KiB */
/* With stack copies (--call-graph dwarf) a sample is ~8 KiB, not ~300
 * bytes: 2 MiB per CPU hold 250 of them, a quarter second at 1 kHz. */
#define RING_PAGES_STACK 512

struct samp_cpu {
	int fd;
	struct perf_event_mmap_page *page;
	uint8_t *data;
	uint64_t size; /* data bytes, a power of two */
	uint64_t seen; /* --call-graph dwarf: the unwinder has been told of
			* the process records before this ring position */
	struct kstream ks;
};

/* A process record (mmap2, fork, exec) of a round, copied out of its ring
 * for the unwinder, which takes them in time order (proc_records()). */
struct samp_proc_rec {
	uint64_t time;
	size_t at, len; /* in the session's pbuf */
};

struct samp_session {
	char dir[4200], trace_dir[4096];
	unsigned ncpus, hz;
	struct samp_cpu *cpu;
	struct pollfd *pfd; /* per CPU, then the wake eventfd */
	int wake_fd;
	pthread_t thread;
	bool thread_started;
	int stop;
	uint8_t uuid[16];
	struct clock_point p0;
	bool tsc; /* convert perf time to TSC (else CLOCK_MONOTONIC ns) */
	bool kernel; /* samples in kernel mode too (perf_event_paranoid allows) */
	struct clock_point pn; /* the latest point: p0..pn is the line */
	uint64_t samples, lost, maps;
	/* --call-graph dwarf: the stack bytes copied per sample, and the
	 * unwinder (kernel/unwind.c); unwound: samples whose chain it made */
	unsigned stack_bytes, ring_pages;
	struct unw *unw;
	uint64_t unwound;
	struct samp_proc_rec *prec; /* the round's process records */
	size_t nprec, prec_cap;
	uint8_t *pbuf; /* their bytes */
	size_t pbuf_len, pbuf_cap;
	uint8_t rec[65536]; /* a record that wraps the ring, copied whole */
};

#define set_err(o, ...) errbuf_printf((o)->err, (o)->errlen, __VA_ARGS__)

static const struct strata_field_desc sample_fields[] = {
	{ "ip", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "n", STRATA_T_U64, 0, 0 },
	{ "frames", STRATA_T_PTR, SAMPLE_FRAMES, STRATA_F_HEX },
};

static const struct strata_event_desc sample_desc = {
	.subsystem = "sample",
	.name = "cpu_clock",
	.major = SAMPLE_MAJOR,
	.minor = SAMPLE_MINOR,
	.nfields = sizeof(sample_fields) / sizeof(sample_fields[0]),
	.fields = sample_fields,
	.description = "the thread was on a CPU: its program counter and user "
		       "call chain (n frames, the ip's caller first)",
};

#define CALIB_MIN_NS 50000000ull /* the line's points at least this far apart */

/* A new second point for the line, once far enough from the first. */
static void calibrate(struct samp_session *s)
{
	struct clock_point p;
	clock_point_take(&p);
	if (p.mono_ns - s->p0.mono_ns >= CALIB_MIN_NS)
		s->pn = p;
}

/* perf's CLOCK_MONOTONIC ns -> the trace clock */
static uint64_t to_clock(const struct samp_session *s, uint64_t t)
{
	if (!s->tsc)
		return t; /* the trace clock is CLOCK_MONOTONIC ns */
	__int128 dm = (__int128)t - (__int128)s->p0.mono_ns;
	__int128 dts = (__int128)s->pn.ts - (__int128)s->p0.ts;
	__int128 dmono = (__int128)s->pn.mono_ns - (__int128)s->p0.mono_ns;
	return (uint64_t)((__int128)s->p0.ts + dm * dts / dmono);
}

/* The chain unwound from the sample's registers and stack (after its
 * frame-pointer chain at `at`: abi, regs, size, stack, dyn_size), into
 * frames; -1 if there is none (then the frame-pointer chain stays). */
static int unwind_sample(struct samp_session *s, uint32_t pid, uint32_t tid,
			 uint64_t time, uint64_t ip, const uint8_t *r,
			 size_t at, size_t len, uint64_t *frames)
{
	uint64_t abi, regs[UNW_NREGS], size, dyn;

	if (!s->unw || at + 8 > len)
		return -1;
	memcpy(&abi, r + at, 8);
	at += 8;
	if (abi == PERF_SAMPLE_REGS_ABI_NONE || at + sizeof(regs) + 8 > len)
		return -1; /* a kernel thread, or no user state */
	memcpy(regs, r + at, sizeof(regs));
	at += sizeof(regs);
	memcpy(&size, r + at, 8);
	at += 8;
	if (!size || size > len - at || len - at - size < 8)
		return -1;
	memcpy(&dyn, r + at + size, 8); /* the bytes the kernel filled */
	int n = unw_sample(s->unw, (pid_t)pid, (pid_t)tid, time, ip, regs,
			   r + at, dyn < size ? dyn : size, frames,
			   SAMPLE_FRAMES);
	if (n > 0)
		s->unwound++;
	return n > 0 ? n : -1;
}

static void put_sample(struct samp_session *s, struct samp_cpu *c, const uint8_t *r,
		       size_t len)
{
	/* ip, pid, tid, time, nr, ips[nr] (sample_type order), then with
	 * --call-graph dwarf the user registers and stack */
	if (len < 8 + 8 + 8 + 8 + 8)
		return;
	uint64_t ip, time, nr;
	uint32_t pid, tid;
	memcpy(&ip, r + 8, 8);
	memcpy(&pid, r + 16, 4);
	memcpy(&tid, r + 20, 4);
	memcpy(&time, r + 24, 8);
	memcpy(&nr, r + 32, 8);
	if (nr > (len - 40) / 8)
		return;
	uint64_t w[2 + SAMPLE_FRAMES] = { ip, 0 };
	int dwarf = s->stack_bytes ? unwind_sample(s, pid, tid, time, ip, r,
						   40 + nr * 8, len, w + 2) :
				     -1;
	if (dwarf >= 0) {
		w[1] = (uint64_t)dwarf;
		nr = 0; /* the frame-pointer chain is not needed */
	}
	unsigned k = 0;
	for (uint64_t i = 0; i < nr && k < SAMPLE_FRAMES; i++) {
		uint64_t pc;
		memcpy(&pc, r + 40 + i * 8, 8);
		if (pc >= (uint64_t)PERF_CONTEXT_MAX)
			continue; /* a context marker (PERF_CONTEXT_USER) */
		if (k == 0 && pc == ip)
			continue; /* the chain starts with the ip itself */
		w[2 + k++] = pc;
	}
	if (dwarf < 0)
		w[1] = k;
	kstream_event(&c->ks, to_clock(s, time), tid, pid, STRATA_ID(SAMPLE_MAJOR, SAMPLE_MINOR),
		      w, 2 + SAMPLE_FRAMES);
	s->samples++;
}

/* PERF_RECORD_MMAP2 -> strata:map (format.md §4), the state dump's layout,
 * so that strata_symbolize() finds the mapping of that process. */
static void put_map(struct samp_session *s, struct samp_cpu *c, const uint8_t *r, size_t len)
{
	/* pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot,
	 * flags, filename, then sample_id (pid, tid, time): 16 bytes */
	if (len < 8 + 72 + 16)
		return;
	uint32_t pid, tid, prot;
	uint64_t addr, mlen, pgoff, ino, time;
	memcpy(&pid, r + 8, 4);
	memcpy(&tid, r + 12, 4);
	memcpy(&addr, r + 16, 8);
	memcpy(&mlen, r + 24, 8);
	memcpy(&pgoff, r + 32, 8);
	memcpy(&ino, r + 48, 8);
	memcpy(&prot, r + 64, 4);
	memcpy(&time, r + len - 8, 8);
	const char *name = (const char *)r + 72;
	size_t nlen = strnlen(name, len - 72 - 16);
	if (nlen > 4000)
		nlen = 4000;
	/* start, end, offset, inode, then u32 prot, u32 the path's count */
	uint64_t fixed[5] = { addr, addr + mlen, pgoff, ino,
			      (prot & PROT_READ ? 1u : 0) | (prot & PROT_WRITE ? 2u : 0) |
				      (prot & PROT_EXEC ? 4u : 0) };
	uint64_t w[(40 + 4000 + 8) / 8];
	fmt_counted_put(w, fixed, sizeof(fixed), name, nlen);
	kstream_event(&c->ks, to_clock(s, time), tid, pid, STRATA_ID(0, STRATA_ID_MAP), w,
		      (unsigned)(fmt_counted_size(sizeof(fixed), nlen) / 8));
	s->maps++;
}

/* PERF_RECORD_FORK of a new process (not a thread: pid != ppid) ->
 * strata:process with no name (format.md §4): a child that does not exec
 * maps nothing of its own, and the kernel reports no mapping for it, so
 * strata_symbolize() names its frames from its parent's maps, which this
 * record says whose they are. */
static void put_fork(struct samp_session *s, struct samp_cpu *c, const uint8_t *r, size_t len)
{
	/* pid, ppid, tid, ptid, time, then sample_id (pid, tid, time) */
	uint32_t pid, ppid, tid;
	uint64_t time;

	if (len < 8 + 24 + 16)
		return;
	memcpy(&pid, r + 8, 4);
	memcpy(&ppid, r + 12, 4);
	memcpy(&tid, r + 16, 4);
	memcpy(&time, r + 24, 8);
	if (pid == ppid)
		return; /* a thread */
	uint32_t fixed[3] = { pid, ppid, 0 };
	uint64_t w[2];
	fmt_counted_put(w, fixed, sizeof(fixed), "", 0);
	kstream_event(&c->ks, to_clock(s, time), tid, pid, STRATA_ID(0, STRATA_ID_PROCESS), w,
		      (unsigned)(fmt_counted_size(sizeof(fixed), 0) / 8));
}

/* The record at ring position pos, below head, whole: in the ring, or
 * copied to buf if it wraps its end. NULL if no whole record is there. */
static const uint8_t *record_at(const struct samp_cpu *c, uint64_t pos,
				uint64_t head, uint8_t *buf,
				struct perf_event_header *h)
{
	const uint8_t *r = c->data + (pos & (c->size - 1));
	size_t first = c->size - (pos & (c->size - 1));

	if (pos + sizeof(*h) > head)
		return NULL;
	if (first >= sizeof(*h)) {
		memcpy(h, r, sizeof(*h));
	} else { /* even the header wraps */
		memcpy(h, r, first);
		memcpy((uint8_t *)h + first, c->data, sizeof(*h) - first);
	}
	if (h->size < sizeof(*h) || pos + h->size > head)
		return NULL;
	if (first < h->size) { /* the record wraps: copy it whole */
		memcpy(buf, r, first);
		memcpy(buf + first, c->data, h->size - first);
		r = buf;
	}
	return r;
}

/* CPU c's records up to head (one past the last to write). */
static void drain(struct samp_session *s, struct samp_cpu *c, uint64_t head)
{
	uint64_t tail = c->page->data_tail;
	struct perf_event_header h;
	const uint8_t *r;

	for (; (r = record_at(c, tail, head, s->rec, &h)); tail += h.size) {
		switch (h.type) {
		case PERF_RECORD_SAMPLE:
			put_sample(s, c, r, h.size);
			break;
		case PERF_RECORD_MMAP2:
			put_map(s, c, r, h.size);
			break;
		case PERF_RECORD_FORK:
			put_fork(s, c, r, h.size);
			break;
		case PERF_RECORD_LOST: {
			uint64_t n;
			if (h.size >= 24) {
				memcpy(&n, r + 16, 8);
				s->lost += n;
				c->ks.discarded += n; /* events_discarded: the gap is seen */
			}
			break;
		}
		default:
			break;
		}
	}
	/* the kernel may write over what was read from here on */
	strata_store_release(&c->page->data_tail, tail);
}

static bool is_proc_record(const struct perf_event_header *h)
{
	return h->type == PERF_RECORD_MMAP2 || h->type == PERF_RECORD_FORK ||
	       (h->type == PERF_RECORD_COMM &&
		(h->misc & PERF_RECORD_MISC_COMM_EXEC));
}

/* One process record to the unwinder (layouts: perf_event.h; each ends
 * with sample_id: pid, tid, time). */
static void proc_record(struct samp_session *s, const uint8_t *r, size_t len,
			uint64_t time)
{
	struct perf_event_header h;
	uint32_t pid, ppid;

	memcpy(&h, r, sizeof(h));
	memcpy(&pid, r + 8, 4);
	if (h.type == PERF_RECORD_FORK && len >= 32) {
		memcpy(&ppid, r + 12, 4);
		unw_fork(s->unw, (pid_t)pid, (pid_t)ppid, time);
	} else if (h.type == PERF_RECORD_COMM) {
		unw_exec(s->unw, (pid_t)pid, time);
	} else if (h.type == PERF_RECORD_MMAP2 && len >= 72 + 16 &&
		   !(h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) { /* no inode */
		struct unw_mapping m;
		char path[4096];
		size_t n = strnlen((const char *)r + 72, len - 72 - 16);
		if (n >= sizeof(path))
			return;
		memcpy(path, r + 72, n);
		path[n] = 0;
		memcpy(&m.start, r + 16, 8);
		memcpy(&m.len, r + 24, 8);
		memcpy(&m.pgoff, r + 32, 8);
		memcpy(&m.maj, r + 40, 4);
		memcpy(&m.min, r + 44, 4);
		memcpy(&m.ino, r + 48, 8);
		memcpy(&m.ino_generation, r + 56, 8);
		m.path = path;
		unw_mmap(s->unw, (pid_t)pid, time, &m);
	}
}

static int prec_cmp(const void *a, const void *b)
{
	const struct samp_proc_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at; /* one CPU's: ring order */
}

/* Copy one process record into the round's list; false if out of memory. */
static bool prec_add(struct samp_session *s, const uint8_t *r, size_t len)
{
	if (s->nprec == s->prec_cap) {
		size_t cap = s->prec_cap ? 2 * s->prec_cap : 256;
		void *n = realloc(s->prec, cap * sizeof(*s->prec));
		if (!n)
			return false;
		s->prec = n;
		s->prec_cap = cap;
	}
	if (s->pbuf_len + len > s->pbuf_cap) {
		size_t cap = s->pbuf_cap ? 2 * s->pbuf_cap : 65536;
		while (cap < s->pbuf_len + len)
			cap *= 2;
		void *n = realloc(s->pbuf, cap);
		if (!n)
			return false;
		s->pbuf = n;
		s->pbuf_cap = cap;
	}
	uint64_t time;
	memcpy(&time, r + len - 8, 8);
	memcpy(s->pbuf + s->pbuf_len, r, len);
	s->prec[s->nprec++] = (struct samp_proc_rec){ time, s->pbuf_len, len };
	s->pbuf_len += len;
	return true;
}

/*
 * --call-graph dwarf: the process records (mmap2, fork, exec) of every
 * CPU's ring, up to the head each has now, to the unwinder in time order,
 * before any sample of the round is unwound. Why: a process's exec and
 * mappings are reported on the CPU it ran on then, its samples on every
 * CPU it ran on since, and the rings are drained one after the other; a
 * fork on one CPU and the child's exec on another must be applied in the
 * order they happened. Only records up to these heads are drained next
 * (c->seen), so no sample is unwound before the mappings that precede it.
 */
static void proc_records(struct samp_session *s)
{
	struct perf_event_header h;
	const uint8_t *r;

	s->nprec = s->pbuf_len = 0;
	for (unsigned i = 0; i < s->ncpus; i++) {
		struct samp_cpu *c = &s->cpu[i];
		if (c->fd < 0)
			continue;
		/* pairs with the kernel's write of the records */
		uint64_t head = strata_load_acquire(&c->page->data_head);
		uint64_t pos = c->seen > c->page->data_tail ?
				       c->seen :
				       c->page->data_tail;
		for (; (r = record_at(c, pos, head, s->rec, &h)); pos += h.size)
			if (is_proc_record(&h) && h.size >= 8 + 16)
				(void)prec_add(
					s, r,
					h.size); /* lost: frame pointers */
		c->seen = pos;
	}
	qsort(s->prec, s->nprec, sizeof(*s->prec), prec_cmp);
	for (size_t i = 0; i < s->nprec; i++)
		proc_record(s, s->pbuf + s->prec[i].at, s->prec[i].len,
			    s->prec[i].time);
}

/* Every CPU's ring, as far as the kernel has written. */
static void drain_all(struct samp_session *s)
{
	if (s->unw)
		proc_records(s);
	for (unsigned i = 0; i < s->ncpus; i++) {
		struct samp_cpu *c = &s->cpu[i];
		if (c->fd < 0)
			continue;
		/* pairs with the kernel's write of the records */
		drain(s, c,
		      s->unw ? c->seen :
			       strata_load_acquire(&c->page->data_head));
	}
}

static void *reader_main(void *arg)
{
	struct samp_session *s = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!strata_load_acquire(&s->stop)) {
		if (poll(s->pfd, s->ncpus + 1, 100) < 0 && errno != EINTR)
			break;
		calibrate(s);
		if (s->tsc && s->pn.mono_ns == 0)
			continue; /* no line yet: the rings hold the first samples */
		drain_all(s);
	}
	return NULL;
}

static int open_cpu(struct samp_session *s, const struct samp_options *o, unsigned i)
{
	struct samp_cpu *c = &s->cpu[i];
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000000ull / (o->hz ? o->hz : 1000); /* ns of CPU time */
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_CALLCHAIN;
	/* the forks: a child that does not exec is symbolized with its
	 * parent's maps (put_fork()) */
	a.task = 1;
	if (s->stack_bytes) {
		/* and the execs that unmake a process's mappings
		 * (kernel/unwind.c builds its modules from them) */
		a.comm = 1;
		a.comm_exec = 1;
		a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a.sample_regs_user = UNW_REGS_MASK;
		a.sample_stack_user = s->stack_bytes;
	}
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.inherit = 1;
	/* time in the kernel counts too (a sample there has a kernel ip and
	 * the user chain that led to it), unless perf_event_paranoid
	 * allows user space only: then it is left out (env sample_kernel) */
	a.exclude_kernel = !s->kernel;
	a.exclude_hv = 1;
	a.exclude_callchain_kernel = 1;
	a.mmap = 1;
	a.mmap2 = 1;
	a.sample_id_all = 1;
	a.wakeup_events = s->stack_bytes ? 16 : 64;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	c->fd = (int)syscall(SYS_perf_event_open, &a, o->pid, (int)i, -1, PERF_FLAG_FD_CLOEXEC);
	if (c->fd < 0)
		return errno == ENODEV || errno == EINVAL ? 0 : -errno; /* an offline CPU */
	size_t len = (size_t)(1 + s->ring_pages) * (size_t)sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	c->page = m;
	c->data = (uint8_t *)m + c->page->data_offset;
	c->size = c->page->data_size;
	s->pfd[i].fd = c->fd;
	s->pfd[i].events = POLLIN;
	return 0;
}

int samp_probe(char *err, size_t errlen)
{
	struct perf_event_attr a;

	/* the least samp_start() asks for: user space only, this thread */
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int ret = -errno;
		errbuf_printf(err, errlen, "perf_event_open: %s%s", strerror(-ret),
			  ret == -EACCES || ret == -EPERM ?
				  " (kernel.perf_event_paranoid, or a seccomp filter)" : "");
		return ret;
	}
	close(fd);
	return 0;
}

static void session_free(struct samp_session *s)
{
	size_t len = (size_t)(1 + s->ring_pages) * (size_t)sysconf(_SC_PAGESIZE);
	for (unsigned i = 0; s->cpu && i < s->ncpus; i++) {
		if (s->cpu[i].page)
			munmap(s->cpu[i].page, len);
		if (s->cpu[i].fd >= 0)
			close(s->cpu[i].fd);
	}
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	unw_destroy(s->unw);
	free(s->prec);
	free(s->pbuf);
	free(s->cpu);
	free(s->pfd);
	free(s);
}

int samp_start(const struct samp_options *o, struct samp_session **out)
{
	struct samp_session *s = calloc(1, sizeof(*s));
	int ret = -ENOMEM;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	clock_init();
	clock_point_take(&s->p0);
	s->wake_fd = -1;
	s->hz = o->hz ? o->hz : 1000;
	s->tsc = strata_clock_tsc;
	s->ring_pages = RING_PAGES;
	if (o->stack_bytes) {
		if (!unw_available()) {
			set_err(o, "--call-graph dwarf: this strata was built "
				   "without elfutils' libdw (scripts/deps.sh "
				   "installs libdw-dev)");
			ret = -ENOTSUP;
			goto fail;
		}
		/* perf's bounds: a multiple of 8, below 64 KiB with the rest */
		s->stack_bytes = (o->stack_bytes + 7) & ~7u;
		if (s->stack_bytes > 63u << 10)
			s->stack_bytes = 63u << 10;
		s->ring_pages = RING_PAGES_STACK;
		if (!(s->unw = unw_create()))
			goto fail;
	}
	snprintf(s->trace_dir, sizeof(s->trace_dir), "%s", o->trace_dir);
	snprintf(s->dir, sizeof(s->dir), "%s/samples", o->trace_dir);
	long nc = sysconf(_SC_NPROCESSORS_CONF);
	s->ncpus = nc > 0 ? (unsigned)nc : 1;
	if (!(s->cpu = calloc(s->ncpus, sizeof(*s->cpu))) ||
	    !(s->pfd = calloc(s->ncpus + 1, sizeof(*s->pfd))))
		goto fail;
	for (unsigned i = 0; i < s->ncpus; i++) {
		s->cpu[i].fd = -1;
		s->cpu[i].ks.fd = s->cpu[i].ks.idx_fd = -1;
		s->pfd[i].fd = -1;
	}
	s->kernel = true;
	for (unsigned i = 0; i < s->ncpus; i++) {
		if ((ret = open_cpu(s, o, i)) == -EACCES && s->kernel && i == 0) {
			s->kernel = false; /* user space only, then */
			ret = open_cpu(s, o, i);
		}
		if (ret < 0) {
			set_err(o, "perf_event_open (cpu-clock sampling): %s%s", strerror(-ret),
				ret == -EACCES || ret == -EPERM ?
					" (kernel.perf_event_paranoid: run as root or lower it)" :
				"");
			goto fail;
		}
	}
	char idx[4300];
	snprintf(idx, sizeof(idx), "%s/index", s->dir);
	if ((ret = tfile_mkdir(s->trace_dir, 0)) || (ret = tfile_mkdir(s->dir, 0)) ||
	    (ret = tfile_mkdir(idx, 0))) {
		set_err(o, "%s: cannot create directory: %s", s->dir, strerror(-ret));
		goto fail;
	}
	if (getrandom(s->uuid, 16, 0) != 16)
		memcpy(s->uuid, &s->p0, 16);
	for (unsigned i = 0; i < s->ncpus; i++)
		if ((ret = kstream_open(&s->cpu[i].ks, s->dir, i, s->uuid, 256u << 10))) {
			set_err(o, "%s/cpu%u: cannot create: %s", s->dir, i, strerror(-ret));
			goto fail;
		}
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->pfd[s->ncpus].fd = s->wake_fd;
	s->pfd[s->ncpus].events = POLLIN;
	if ((ret = -pthread_create(&s->thread, NULL, reader_main, s))) {
		set_err(o, "cannot start the sample reader: %s", strerror(-ret));
		goto fail;
	}
	s->thread_started = true;
	*out = s;
	return 0;
fail:
	for (unsigned i = 0; s->cpu && i < s->ncpus; i++)
		if (s->cpu[i].ks.fd >= 0)
			kstream_close(&s->cpu[i].ks, strata_clock());
	session_free(s);
	return ret;
}

static int write_metadata(struct samp_session *s)
{
	const struct strata_event_desc *ev[1] = { &sample_desc };
	char hz[32];
	snprintf(hz, sizeof(hz), "%u", s->hz);
	const char *env[] = { "sample_source", "perf cpu-clock", "sample_hz", hz,
			      "sample_kernel", s->kernel ? "yes" : "no", NULL };
	struct meta_info mi;

	memset(&mi, 0, sizeof(mi));
	memcpy(mi.uuid, s->uuid, 16);
	mi.procname = "samples";
	mi.domain = "samples";
	mi.events = ev;
	mi.nevents = 1;
	mi.env = env;
	clock_meta(&mi);
	if (!kern_ust_clock(s->trace_dir, &mi.freq_hz, &mi.offset_ns)) {
		struct clock_point p1;
		clock_point_take(&p1);
		clock_fit(&s->p0, &p1, &mi.freq_hz, &mi.offset_ns);
	}
	return meta_write(s->dir, &mi);
}

int samp_stop(struct samp_session *s, struct samp_stats *st)
{
	int ret = 0;

	if (!s)
		return 0;
	for (unsigned i = 0; i < s->ncpus; i++)
		if (s->cpu[i].fd >= 0)
			ioctl(s->cpu[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	if (s->thread_started) {
		uint64_t one = 1;
		strata_store_release(&s->stop, 1); /* pairs with reader_main's loads */
		if (write(s->wake_fd, &one, sizeof(one)) < 0) {
			/* the reader times out of poll() within 100 ms anyway */
		}
		pthread_join(s->thread, NULL);
	}
	uint64_t now = strata_clock();
	calibrate(s);
	if (s->tsc && s->pn.mono_ns == 0) /* under 50 ms: the one line there is */
		clock_point_take(&s->pn);
	if (s->pn.mono_ns != s->p0.mono_ns)
		drain_all(s);
	for (unsigned i = 0; i < s->ncpus; i++) {
		int r = kstream_close(&s->cpu[i].ks, now);
		if (r && !ret)
			ret = r;
	}
	int r = write_metadata(s);
	if (r && !ret)
		ret = r;
	if (st) {
		st->samples = s->samples;
		st->lost = s->lost;
		st->maps = s->maps;
		st->unwound = s->unwound;
		st->dwarf = s->stack_bytes != 0;
		st->ncpus = s->ncpus;
	}
	session_free(s);
	return ret;
}
