/* SPDX-License-Identifier: MIT */
/* The lock test programs' way to know a thread sleeps in a lock call: its state in /proc. */
#ifndef LOCKS_TEST_SLEEPING_H
#define LOCKS_TEST_SLEEPING_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Whether thread `tid` sleeps (state S in /proc/self/task/TID/stat). */
static inline int sleeping(int32_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* comm may hold spaces */
	return p && p[1] == ' ' && p[2] == 'S';
}

static inline void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };
	nanosleep(&ts, NULL);
}

#endif
