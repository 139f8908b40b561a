/* SPDX-License-Identifier: MIT */
/* The last event of a packet ends inside a word, or has no field (format.md §6). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * babeltrace2 2.0 reads a phantom event after a packet's last event when
 * that event's declared layout ends before a 64-bit word. The metadata pads
 * every layout to the word; this program makes such events the last of
 * their packet: it logs them on CPU 1 and everything else on CPU 0.
 */
static const struct strata_field_desc f[] = {{"a", STRATA_T_U64, 0, 0},
					     {"b", STRATA_T_U32, 0, 0}};
static const struct strata_event_desc e_tail = {
	"t", "tail32", 3, STRATA_EV_POINT, 2, 2, 0, f, "a=%{a} b=%{b}", NULL, NULL};
static const struct strata_event_desc *const evs[] = {&e_tail};

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

int main(int argc, char **argv)
{
	struct strata_rsv r;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return 77;
	strata_register(NULL, evs, 1);
	pin(1);
	STRATA_EVENT1(3, 1, 5);
	if (argc > 1 && !strcmp(argv[1], "none")) {
		STRATA_EVENT0(3, 9);
	} else if (strata_reserve(&r, STRATA_ID(3, 2), 3)) {
		r.p[0] = 7;
		r.p[1] = 9; /* b = 9 in the low half, the high half is padding */
		strata_commit(&r);
	}
	pin(0);
	STRATA_EVENT1(3, 1, 6); /* strata_stop()'s own records go here */
	return 0;
}
