/* SPDX-License-Identifier: MIT */
/* State dump: this process, its threads' names and its memory maps, as strata records (format.md §4). */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <link.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/compiler.h"
#include "common/format.h"
#include "lib/session.h"
#include "lib/statedump.h"
#include "ring/ring.h"

/*
 * LTT recorded the system's initial state from /proc and LTTng-UST has
 * its state dump; a reader needs the same to name threads and, later, to
 * symbolize addresses. The process writes its own: the records go into its
 * rings like any event, with its clock, so a trace of a process that is
 * killed still holds them, and no other process needs to read our /proc.
 * It runs once when tracing starts (in-process consumer) or when the
 * process joins a session, on a thread that is not the program's hot path
 * (the session helper thread; strata_start()'s caller otherwise), and reads
 * /proc with plain stdio: a few hundred microseconds.
 */

/* records attempted by the last dump: strata_stats.internal_logged; and
 * those dropped (buffer full), which count among the ring's losses */
static uint64_t dumped, dump_lost;

uint64_t statedump_logged(void)
{
	return strata_load_relaxed(&dumped);
}

uint64_t statedump_lost(void)
{
	return strata_load_relaxed(&dump_lost);
}

/* `hid`: the record's compact id (= its minor, docs/compact.md), with
 * STRATA_HID_EXT for those of variable length. */
static int reserve(struct strata_rsv *r, uint32_t hid, uint32_t words)
{
	strata_add_fetch_relaxed(&dumped, 1);
	if (strata_reserve(r, hid, words))
		return 1;
	strata_add_fetch_relaxed(&dump_lost, 1);
	return 0;
}

static void read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");

	buf[0] = 0;
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/*
 * Fixed words, then one counted string (format.md §3): `fixed` bytes of
 * fields whose last 4 bytes are the string's count, filled here, with
 * room for `room` bytes of text. The text is str, or with `path` the
 * first line of that file read after the reservation (so that the
 * record's time comes before the read); a shorter text leaves zeros.
 */
static void put_record_room(uint16_t minor, const void *fixed, size_t nfixed,
			    const char *str, const char *path, size_t room)
{
	struct strata_rsv r;
	size_t end = fmt_counted_size(nfixed, room);
	char line[64];

	if (!reserve(&r, STRATA_HID_EXT | minor, (uint32_t)(1 + end / 8)))
		return;
	if (path) {
		read_line(path, line, sizeof(line));
		str = line;
	}
	fmt_counted_put(r.p, fixed, nfixed, str, room);
	strata_commit(&r);
}

static void put_record(uint16_t minor, const void *fixed, size_t nfixed,
		       const char *str)
{
	size_t n = strlen(str); /* NUL-terminated: read_line, prctl, maps */

	put_record_room(minor, fixed, nfixed, str, NULL, n < 4000 ? n : 4000);
}

static void put_phase(uint32_t phase)
{
	struct strata_rsv r;

	if (!reserve(&r, STRATA_ID_STATEDUMP, 2))
		return;
	r.p[0] = phase;
	strata_commit(&r);
}

static uint32_t status_ppid(const char *proc)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/status", proc);
	FILE *f = fopen(path, "re");
	char line[256];
	unsigned long ppid = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "PPid: %lu", &ppid) == 1)
			break;
	fclose(f);
	return (uint32_t)ppid;
}

/* Threads of this process already named, with a hash of the name: the
 * periodic update names only new threads and renamed ones. */
#define SEEN_CAP 4096
static struct {
	uint32_t tid, hash;
} seen[SEEN_CAP];
pthread_mutex_t statedump_lock = LIB_LOCK_INITIALIZER;

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h | 1;
}

/* True when (tid, name) is new: remembered now. A full table names no
 * more threads. */
static bool seen_new(uint32_t tid, const char *name)
{
	uint32_t h = name_hash(name);
	for (uint32_t i = 0, k = tid * 2654435761u; i < SEEN_CAP; i++, k++) {
		uint32_t j = k % SEEN_CAP;
		if (seen[j].tid == tid || !seen[j].tid) {
			bool fresh = seen[j].tid != tid || seen[j].hash != h;
			seen[j].tid = tid;
			seen[j].hash = h;
			return fresh;
		}
	}
	return false;
}

/* `self`: this process, remembering what was named. */
static void dump_threads(const char *proc, uint32_t pid, bool self)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/task", proc);
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end, path[600], name[64];
		unsigned long tid = strtoul(e->d_name, &end, 10);
		if (*end || !tid)
			continue;
		snprintf(path, sizeof(path), "%s/%s/comm", dir, e->d_name);
		read_line(path, name, sizeof(name));
		if (self && !seen_new((uint32_t)tid, name))
			continue;
		uint32_t f[3] = {(uint32_t)tid, pid, 0};
		/* A thread of ours: the name read again after the record is
		 * reserved, so that a thread that renamed itself and named
		 * itself at its first event (statedump_name_thread()) meanwhile
		 * is never renamed back by an older read stamped later
		 * (thread-names saw it under ASan: 7 of 8 named). At most 15
		 * bytes (TASK_COMM_LEN). */
		if (self)
			put_record_room(STRATA_ID_THREAD_NAME, f, sizeof(f), NULL, path, 15);
		else
			put_record(STRATA_ID_THREAD_NAME, f, sizeof(f), name);
	}
	closedir(d);
}

/* Every mapping with a name: files (what a symbolizer needs), and
 * [heap], [stack], [vdso]. */
static void dump_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4400];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		char perms[8];
		int at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &start, &end,
			   perms, &off, &ino, &at) < 5 || !at)
			continue;
		char *path = line + at;
		path[strcspn(path, "\n")] = 0;
		if (!*path)
			continue;
		uint32_t prot = (perms[0] == 'r') | (perms[1] == 'w') << 1 |
				(perms[2] == 'x') << 2 | (perms[3] == 's') << 3;
		uint64_t fx[5];
		fx[0] = start;
		fx[1] = end;
		fx[2] = off;
		fx[3] = ino;
		fx[4] = prot; /* u32 prot, then the string's u32 count */
		put_record(STRATA_ID_MAP, fx, sizeof(fx), path);
	}
	fclose(f);
}

/*
 * Each loaded object's GNU build-id (its NT_GNU_BUILD_ID note, read in
 * memory: no file is opened), as strata:build_id records whose address
 * lies in one of the object's mappings: a reader then refuses a file at
 * that path whose build-id is not this one (rebuilt in place, same
 * inode: docs/reader.md "Symbols"). Objects without the note: none.
 */
static int dump_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const void *)p;
			const char *name = p + sizeof(*n);
			const unsigned char *desc =
				(const unsigned char *)name + ((n->n_namesz + 3) & ~3u);
			p = (const char *)desc + ((n->n_descsz + 3) & ~3u);
			if (p > end)
				break;
			if (n->n_type != NT_GNU_BUILD_ID || n->n_namesz != 4 ||
			    memcmp(name, "GNU", 4) || !n->n_descsz || n->n_descsz > 64)
				continue;
			char hex[129];
			for (uint32_t k = 0; k < n->n_descsz; k++)
				snprintf(hex + 2 * k, 3, "%02x", desc[k]);
			struct {
				uint64_t addr;
				uint32_t count;
			} __attribute__((packed)) fx = {(uint64_t)(uintptr_t)name, 0};
			put_record(STRATA_ID_BUILD_ID, &fx, sizeof(fx), hex);
			return 0;
		}
	}
	return 0;
}

/* strata:process, then its threads' names. */
static void dump_process(const char *proc, uint32_t pid, bool self)
{
	char path[300], name[64];

	snprintf(path, sizeof(path), "%s/comm", proc);
	read_line(path, name, sizeof(name));
	/* not getppid(): a traced program's own system calls stay its own */
	uint32_t f[3] = {pid, status_ppid(proc), 0};
	put_record(STRATA_ID_PROCESS, f, sizeof(f), name);
	dump_threads(proc, pid, self);
}

/*
 * A thread's name at its first event (ring_thread_hook): a thread that
 * lives less than the periodic update's second is named too. Slow path
 * of a tracepoint, maybe in a signal handler: one prctl(), no lock, no
 * allocation (the `seen` table is the update's, under its lock: a name
 * logged twice costs a record, nothing more).
 */
void statedump_name_thread(uint32_t tid)
{
	char name[17] = "";

	if (prctl(PR_GET_NAME, name, 0, 0, 0) < 0 || !name[0])
		return;
	uint32_t f[3] = {tid, strata_pid, 0};
	put_record(STRATA_ID_THREAD_NAME, f, sizeof(f), name);
}

/* The loader's count of objects loaded and unloaded since the process
 * began (glibc's dlpi_adds + dlpi_subs), when the maps were last dumped;
 * under statedump_lock. */
static unsigned long long objects_gen;

static int objects_now(struct dl_phdr_info *info, size_t size, void *data)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		*(unsigned long long *)data = info->dlpi_adds + info->dlpi_subs;
	return 1; /* every object's says the same: one is enough */
}

static unsigned long long objects_count(void)
{
	unsigned long long n = 0;

	dl_iterate_phdr(objects_now, &n);
	return n;
}

/* The maps and the objects' build-ids, and the loader's count they hold
 * (read first: an object loaded meanwhile makes the next update dump
 * again). Under statedump_lock. */
static void dump_objects(void)
{
	unsigned long long n = objects_count();

	dump_maps();
	dl_iterate_phdr(dump_build_id, NULL);
	objects_gen = n;
}

bool statedump_self(bool unmasked)
{
	strata_store_relaxed(&dumped, 0);
	if (!mask_wanted() && !unmasked) /* STRATA_MAJORS=none: nothing */
		return false;
	pthread_mutex_lock(&statedump_lock);
	memset(seen, 0, sizeof(seen));
	put_phase(0);
	dump_process("/proc/self", strata_pid, true);
	dump_objects();
	put_phase(1);
	pthread_mutex_unlock(&statedump_lock);
	return true;
}

/*
 * Objects the program loaded or unloaded since the last dump (dlopen:
 * perl's and python's modules, plugins): the maps again, all of them,
 * since a reader's symbolizer takes the union of a process's maps (the
 * mappings of objects still loaded come twice; that costs records, not
 * answers). Checking costs one dl_iterate_phdr() callback.
 */
void statedump_objects_update(void)
{
	if (!mask_wanted())
		return;
	pthread_mutex_lock(&statedump_lock);
	if (objects_count() != objects_gen)
		dump_objects();
	pthread_mutex_unlock(&statedump_lock);
}

void statedump_update(void)
{
	if (!mask_wanted())
		return;
	pthread_mutex_lock(&statedump_lock);
	dump_threads("/proc/self", strata_pid, true);
	pthread_mutex_unlock(&statedump_lock);
	statedump_objects_update();
}

void statedump_system(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return;
	put_phase(2);
	while ((e = readdir(d))) {
		char *end, proc[300];
		unsigned long pid = strtoul(e->d_name, &end, 10);
		if (*end || !pid)
			continue;
		snprintf(proc, sizeof(proc), "/proc/%s", e->d_name);
		dump_process(proc, (uint32_t)pid, false); /* gone meanwhile: skipped */
	}
	closedir(d);
	put_phase(3);
}
