/* SPDX-License-Identifier: MIT */
/* A preload that refuses perf_event_open as kernel.perf_event_paranoid or a seccomp filter would (EACCES), for record's fallback to the timer sampler (profile_test.py, refused). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	if (nr == SYS_perf_event_open) {
		errno = EACCES;
		return -1;
	}
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
