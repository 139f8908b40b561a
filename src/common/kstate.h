/* SPDX-License-Identifier: MIT */
/* A task's state as the kernel's sched_switch prints it (R, S, D, R+ ...): for the kernel source's metadata and the analyses. */
#ifndef STRATA_COMMON_KSTATE_H
#define STRATA_COMMON_KSTATE_H

#include <stdint.h>
#include <string.h>

/* The preemption bit (TASK_REPORT_MAX) beside the 8 TASK_REPORT bits. */
#define KSTATE_PREEMPT 0x100

/* `s` (prev_state) as letters into buf (at least 11 bytes): TASK_REPORT
 * order, "R" for none, "+" when preempted, "?" when negative. */
static inline const char *kstate_letters(int64_t s, char *buf)
{
	static const char letters[] = "SDTtXZPI";
	size_t n = 0;

	if (s < 0) {
		strcpy(buf, "?");
		return buf;
	}
	for (unsigned i = 0; i < 8; i++)
		if (s & (1 << i))
			buf[n++] = letters[i];
	if (!n)
		buf[n++] = 'R';
	if (s & KSTATE_PREEMPT)
		buf[n++] = '+';
	buf[n] = 0;
	return buf;
}

#endif /* STRATA_COMMON_KSTATE_H */
