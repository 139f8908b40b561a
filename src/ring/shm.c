/* SPDX-License-Identifier: MIT */
/* Ring memory: one memfd mapping per (process, CPU), created lazily. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "ring/ring.h"

struct ring_config ring_cfg = {
	.psize_shift = 18,   /* 256 KiB */
	.npackets_shift = 4, /* 16 packets */
	.mode = STRATA_MODE_DISCARD,
	.block_ms = 1000,
};

STRATA_API struct strata_ring *strata_rings[STRATA_MAX_CPUS];
void (*ring_created_hook)(struct strata_ring *ring);
uint32_t ring_hwm;

/* CPUs whose ring could not be created (no memory, no file descriptor):
 * when to try again, in CLOCK_MONOTONIC_COARSE milliseconds (0: not
 * failed). Not on every event, and not never: descriptors free up
 * (issue 24, item 9). Meanwhile their events count as lost_no_ring. */
#define RING_RETRY_MS 100
static uint32_t ring_retry_at[STRATA_MAX_CPUS];

static uint32_t coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* vDSO: no system call */
	return (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000) | 1;
}

/* Losses counted where there was no ring: the new ring takes them over,
 * before it is published, so that its first packet's events_discarded
 * carries them to readers. */
static void adopt_global_losses(struct strata_ring_ctl *c)
{
	for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
		c->lost[k] = strata_exchange_relaxed(&ring_lost_global[k], 0);
	c->lost_own = strata_exchange_relaxed(&ring_lost_own_global, 0);
}

/* The losses a ring that lost the publication race took over go back. */
static void return_global_losses(struct strata_ring_ctl *c)
{
	for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
		strata_add_relaxed(&ring_lost_global[k], c->lost[k]);
	strata_add_relaxed(&ring_lost_own_global, c->lost_own);
}

/*
 * Layout of one mapping (ring.md §1): the process-private `struct
 * strata_ring` first (so that one mapping is one allocation and the
 * creation path needs no malloc), then the shared control block, the
 * commit counters and the data. Only the part from the control block on
 * is meaningful to another process; offsets in the control block are
 * relative to the control block.
 */
#define PRIV_SIZE STRATA_RING_CTL_OFFSET
#define CTL_SIZE 4096u

struct strata_ring *ring_get_or_create(unsigned cpu)
{
	struct strata_ring *ring, *expected = NULL;
	uint64_t psize = UINT64_C(1) << ring_cfg.psize_shift;
	uint64_t npackets = UINT64_C(1) << ring_cfg.npackets_shift;
	uint64_t commit_size = ALIGN_UP(npackets * 64, 4096);
	uint64_t size = PRIV_SIZE + CTL_SIZE + commit_size + psize * npackets;
	unsigned char *base;
	int fd;

	if (cpu >= STRATA_MAX_CPUS)
		return NULL;
	ring = strata_load_acquire(&strata_rings[cpu]);
	if (ring)
		return ring;
	/* Called from tracepoints, possibly in a signal handler: the system
	 * calls below must not change the interrupted code's errno. */
	int saved_errno = errno;
	uint32_t retry = strata_load_relaxed(&ring_retry_at[cpu]);
	if (retry && (int32_t)(coarse_ms() - retry) < 0) {
		errno = saved_errno;
		return NULL;
	}

	fd = memfd_create("strata-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		goto fail;
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail_fd;
	/* Its size never changes again: a session daemon that maps it
	 * (record.md, "Untrusted rings") requires the seals, so that no
	 * process can make its reads fault by shrinking the file. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail_fd;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		goto fail_fd;

	ring = (struct strata_ring *)base;
	struct strata_ring_ctl *c = (struct strata_ring_ctl *)(base + PRIV_SIZE);
	c->magic = STRATA_RING_MAGIC;
	c->version = STRATA_RING_VERSION;
	c->cpu = cpu;
	c->pid = strata_pid;
	c->psize_shift = ring_cfg.psize_shift;
	c->npackets_shift = ring_cfg.npackets_shift;
	c->mode = ring_cfg.mode;
	c->commit_offset = CTL_SIZE;
	c->data_offset = CTL_SIZE + commit_size;
	c->map_size = size - PRIV_SIZE;
	memcpy(c->uuid, ring_cfg.uuid, sizeof(c->uuid));
	c->owner = STRATA_OWNER_NONE;
	/* the protocol, whichever the clock; decided before any ring (ring_init) */
	c->rseq = strata_rseq != 0;
	ring_cids_copy(c);
	adopt_global_losses(c);

	ring->ctl = c;
	ring->commit = (uint64_t *)((unsigned char *)c + CTL_SIZE);
	ring->data = (unsigned char *)c + c->data_offset;
	ring->psize = psize;
	ring->pmask = psize - 1;
	ring->bufmask = psize * npackets - 1;
	ring->pshift = ring_cfg.psize_shift;
	ring->nmask = (uint32_t)npackets - 1;
	ring->cpu = cpu;
	ring->rseq = c->rseq;
	ring->fd = fd;

	/* Publish: the release pairs with the acquire load above and with
	 * the plain load of strata_rings[] on the fast path (a dependent
	 * load through the pointer: the ring's fields were written first).
	 * Lost the race: the acquire pairs with the winner's release, and
	 * its ring, whole, is returned. */
	if (!strata_cas_release_acquire(&strata_rings[cpu], &expected, ring)) {
		return_global_losses(c);
		munmap(base, size);
		close(fd);
		errno = saved_errno;
		return expected;
	}
	ring_cids_copy(c); /* ids given while it was made (see there) */
	/* The publication above before ring_hwm: pairs with the acquire
	 * loads of ring_hwm that bound the consumers' walks of
	 * strata_rings[] (consumer.c). Weak: a spurious failure loops. */
	uint32_t hwm = strata_load_relaxed(&ring_hwm);
	while (hwm < cpu + 1 &&
	       !strata_cas_weak_release(&ring_hwm, &hwm, cpu + 1))
		;
	if (ring_created_hook)
		ring_created_hook(ring);
	ring_bell_ring(); /* a sleeping consumer learns of it (ring.md §8) */
	errno = saved_errno;
	return ring;

fail_fd:
	close(fd);
fail:
	strata_store_relaxed(&ring_retry_at[cpu], coarse_ms() + RING_RETRY_MS);
	slog_once("cannot create the ring of CPU %u: %s; its events are "
		  "dropped (counted) until it can be", cpu, strerror(errno));
	errno = saved_errno;
	return NULL;
}

int ring_prefault(struct strata_ring *ring, uint64_t off, uint64_t len)
{
	unsigned char *p = ring->data + off;
	static int no_populate;

	if (off > ring->bufmask || len > ring->bufmask + 1 - off)
		return -EINVAL;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
	if (!strata_load_relaxed(&no_populate)) {
		if (!madvise(p, len, MADV_POPULATE_WRITE))
			return 0;
		if (errno != EINVAL)
			return -errno;
		strata_store_relaxed(&no_populate, 1);
	}
	/* A read fault on a shared memfd page allocates it (shmem maps no
	 * zero page), which is what the writers would have waited for. */
	for (uint64_t o = 0; o < len; o += 4096)
		(void)*(volatile unsigned char *)(p + o);
	return 0;
}

void ring_destroy(struct strata_ring *ring)
{
	if (!ring)
		return;
	size_t size = PRIV_SIZE + ring->ctl->map_size;
	int fd = ring->fd;
	munmap(ring, size);
	close(fd);
}

uint64_t ring_lost_total(const struct strata_ring *r)
{
	uint64_t n = 0;
	for (int i = 0; i < STRATA_LOST_NCAUSES; i++)
		n += strata_load_relaxed(&r->ctl->lost[i]);
	return n;
}
