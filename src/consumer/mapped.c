/* SPDX-License-Identifier: MIT */
/* Mapping another process's ring from its memfd, trusting nothing in it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "consumer/consumer.h"
#include "ring/ring.h"

/* ring.md §1 and src/ring/shm.c: the memfd holds the creator's private
 * view (4 KiB, pointers of no use here), then the control block. */
#define PRIV_SIZE 4096u
#define CTL_SIZE 4096u

/* The live timer's fields were appended in the consumer line's padding,
 * the in-flight marks after `cids` (include/strata/inline/ring.h, "ABI"):
 * the lines around them kept their places, so rings of older libraries
 * map as before (their marks read 0, inside the control block's 4 KiB). */
_Static_assert(offsetof(struct strata_ring_ctl, live_time) == 128 + 16 &&
		       offsetof(struct strata_ring_ctl, lost) == 192 &&
		       offsetof(struct strata_ring_ctl, inflight) == 512 &&
		       sizeof(struct strata_ring_ctl) == 576,
	       "ring control block: an append moved a field");

/* A consumer-side view of the ring plus what to unmap. */
struct mapped_ring {
	struct strata_ring ring; /* first: cons_ring_unmap() gets this */
	void *base;
	size_t len;
};

int cons_ring_map(int fd, uint32_t pid, const uint8_t uuid[16],
		  struct strata_ring **out)
{
	struct strata_ring_ctl ctl;
	struct mapped_ring *m;
	struct stat st;
	unsigned char *base;
	uint64_t psize, npackets, commit_end, data_end;

	/* Sealed against resizing (src/ring/shm.c) before its size is read:
	 * a shrunk file would make our reads of the mapping fault. */
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_SEAL)) !=
			 (F_SEAL_SHRINK | F_SEAL_SEAL)) {
		slog_detail("ring of pid %u: its memfd is not sealed against "
			    "shrinking", pid);
		return -EPERM;
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)(PRIV_SIZE + CTL_SIZE)) {
		slog_detail("ring of pid %u: not a ring memfd", pid);
		return -EINVAL;
	}
	/* Read the control block once, into our memory: the other process
	 * could change it after the checks (identity fields are never
	 * read from the mapping again). */
	if (pread(fd, &ctl, sizeof(ctl), PRIV_SIZE) != (ssize_t)sizeof(ctl)) {
		slog_detail("ring of pid %u: cannot read its control block", pid);
		return -EINVAL;
	}
	psize = UINT64_C(1) << (ctl.psize_shift & 63);
	npackets = UINT64_C(1) << (ctl.npackets_shift & 63);
	commit_end = ctl.commit_offset + npackets * STRATA_COMMIT_STRIDE * 8;
	data_end = ctl.data_offset + psize * npackets;
	if (ctl.magic != STRATA_RING_MAGIC || ctl.version != STRATA_RING_VERSION ||
	    ctl.pid != pid || ctl.cpu >= STRATA_MAX_CPUS ||
	    ctl.psize_shift < 14 || ctl.psize_shift > 26 ||
	    ctl.npackets_shift < 1 || ctl.npackets_shift > 16 ||
	    ctl.mode > STRATA_MODE_BLOCK || ctl.rseq > 1 ||
	    ctl.commit_offset < sizeof(struct strata_ring_ctl) ||
	    ctl.commit_offset % 64 ||
	    ctl.data_offset < commit_end || ctl.data_offset % 4096 ||
	    ctl.map_size < data_end || ctl.map_size > (UINT64_C(1) << 40) ||
	    (uint64_t)st.st_size < PRIV_SIZE + ctl.map_size ||
	    memcmp(ctl.uuid, uuid, 16)) {
		slog_detail("ring of pid %u: inconsistent control block "
			    "(magic %#x, version %u, pid %u, cpu %u, shifts %u/%u)",
			    pid, ctl.magic, ctl.version, ctl.pid, ctl.cpu,
			    ctl.psize_shift, ctl.npackets_shift);
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->len = (size_t)ctl.map_size;
	base = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    PRIV_SIZE);
	if (base == MAP_FAILED) {
		int err = -errno;
		slog_detail("ring of pid %u: cannot map it: %s", pid,
			    strerror(errno));
		free(m);
		return err;
	}
	m->base = base;
	m->ring.ctl = (struct strata_ring_ctl *)base;
	m->ring.commit = (uint64_t *)(base + ctl.commit_offset);
	m->ring.data = base + ctl.data_offset;
	m->ring.psize = psize;
	m->ring.pmask = psize - 1;
	m->ring.bufmask = psize * npackets - 1;
	m->ring.pshift = ctl.psize_shift;
	m->ring.nmask = (uint32_t)npackets - 1;
	m->ring.cpu = ctl.cpu;
	m->ring.rseq = ctl.rseq;
	m->ring.fd = -1;
	*out = &m->ring;
	return 0;
}

void cons_ring_unmap(struct strata_ring *ring)
{
	struct mapped_ring *m = (struct mapped_ring *)ring;

	if (!m)
		return;
	munmap(m->base, m->len);
	free(m);
}
