// SPDX-License-Identifier: MIT
/* strata view's spill file (src/view/spill.c, docs/view.md "Memory"): an array grown to 256 MiB in it keeps every element through its moves and the trims, and the process's RSS stays far below the array; small arrays and a missing file stay on the heap; a file system in memory is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include <cmocka.h>

#include "view.h"

/* Sanitizers keep shadow memory of what the test touches: the RSS bounds
 * are the plain build's to check (the contents are checked in all). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHECK_RSS 0
#else
#define CHECK_RSS 1
#endif

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static uint64_t value(size_t i)
{
	return (uint64_t)i * 0x9e3779b97f4a7c15ull;
}

/* 32 M elements appended one at a time as the model appends intervals:
 * on the heap up to 4 MiB, then in the file, moved by the kernel at each
 * doubling; vw_spill_wrote trims every 64 MiB. */
static void test_grow_in_file(void **state)
{
	(void)state;
	struct vw_spill *sp;
	int err = vw_spill_open(&sp, ".");
	if (err == -EOPNOTSUPP)
		skip(); /* the build tree on tmpfs */
	assert_int_equal(err, 0);
	const size_t n = 32u << 20;
	uint64_t *a = NULL;
	size_t cap = 0;
	long base = rss_kib(), worst = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t *q = vw_spill_grow(sp, a, &cap, i, sizeof(*a));
		assert_non_null(q);
		a = q;
		a[i] = value(i);
		vw_spill_wrote(sp, sizeof(*a));
		if (!(i & 0xfffff)) {
			long r = rss_kib() - base;
			if (r > worst)
				worst = r;
		}
	}
	assert_true(vw_spill_has(sp, a));
	for (size_t i = 0; i < n; i++)
		if (a[i] != value(i))
			fail_msg("element %zu of %zu: %llx", i, n, (unsigned long long)a[i]);
	vw_spill_release(sp, a, n * sizeof(*a));
	long after = rss_kib() - base;
	print_message("256 MiB array: RSS above the start %ld MiB at most while growing, "
		      "%ld MiB once read and released\n", worst >> 10, after >> 10);
	if (CHECK_RSS) {
		assert_true(worst < 100 << 10); /* 64 MiB between trims, and the heap's start */
		assert_true(after < 48 << 10);
	}
	/* read again after the release: from the page cache, unchanged */
	for (size_t i = 0; i < n; i += 4093)
		assert_true(a[i] == value(i));
	vw_spill_trim(sp);
	vw_spill_free(sp, a); /* the file's: left to close */
	vw_spill_close(sp);
}

/* Without a file, and below the file's minimum, the heap: vw_spill_free
 * frees those. */
static void test_heap(void **state)
{
	(void)state;
	struct vw_spill *sp;
	int err = vw_spill_open(&sp, ".");
	if (err == -EOPNOTSUPP)
		skip();
	assert_int_equal(err, 0);
	uint32_t *a = NULL, *b = NULL;
	size_t ca = 0, cb = 0;
	for (size_t i = 0; i < 100000; i++) {
		a = vw_spill_grow(sp, a, &ca, i, sizeof(*a));
		b = vw_spill_grow(NULL, b, &cb, i, sizeof(*b));
		assert_non_null(a);
		assert_non_null(b);
		a[i] = b[i] = (uint32_t)i;
	}
	assert_false(vw_spill_has(sp, a)); /* 400 KB: under 4 MiB */
	assert_false(vw_spill_has(NULL, b));
	assert_int_equal(memcmp(a, b, 100000 * sizeof(*a)), 0);
	vw_spill_free(sp, a);
	vw_spill_free(NULL, b);
	vw_spill_close(sp);
	vw_spill_close(NULL);
}

/* A file in memory would only hide the memory it takes. */
static void test_tmpfs_refused(void **state)
{
	(void)state;
	struct statfs fs;
	if (statfs("/dev/shm", &fs) || fs.f_type != TMPFS_MAGIC)
		skip();
	struct vw_spill *sp = (void *)1;
	assert_int_equal(vw_spill_open(&sp, "/dev/shm"), -EOPNOTSUPP);
	assert_null(sp);
	assert_int_equal(vw_spill_open(&sp, "/nonexistent/strata"), -ENOENT);
	assert_null(sp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_in_file),
		cmocka_unit_test(test_heap),
		cmocka_unit_test(test_tmpfs_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
