/* SPDX-License-Identifier: MIT */
/* The metadata a kernel session writes at stop, on the clock of the user sub-traces beside it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <strata/strata.h>

#include "common/kstate.h"
#include "common/metadata.h"
#include "kernel/kern_int.h"
#include "kernel/syscalls.h"
#include "lib/clock.h"

/* ---- stop: metadata with the user sub-traces' clock ---------------------- */

/* The clock of a user sub-trace beside us (TRACE/ust/ * /metadata), so that
 * both share one clock class exactly (format.md §1, §5). */
bool kern_ust_clock(const char *trace_dir, uint64_t *freq, int64_t *off_ns)
{
	char path[4600], ust[4200];
	struct dirent **names = NULL;
	bool found = false;

	snprintf(ust, sizeof(ust), "%s/ust", trace_dir);
	int n = scandir(ust, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (!found && names[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s/metadata", ust, names[i]->d_name);
			FILE *f = fopen(path, "re");
			char line[512];
			bool inclock = false;
			unsigned long long fr = 0, offc = 0;
			long long offs = 0;
			while (f && fgets(line, sizeof(line), f)) {
				if (!strncmp(line, "clock {", 7))
					inclock = true;
				else if (inclock && line[0] == '}')
					break;
				else if (inclock) {
					sscanf(line, " freq = %llu;", &fr);
					sscanf(line, " offset_s = %lld;", &offs);
					sscanf(line, " offset = %llu;", &offc);
				}
			}
			if (f)
				fclose(f);
			if (fr) {
				*freq = fr;
				*off_ns = offs * 1000000000ll +
					  (int64_t)((double)offc * 1e9 / (double)fr + 0.5);
				found = true;
			}
		}
		free(names[i]);
	}
	free(names);
	return found;
}

int kern_write_metadata(struct kern_session *s)
{
	struct meta_info mi;
	struct utsname u;
	const struct strata_event_desc **ev = calloc(s->nclasses + 2, sizeof(*ev));
	/* env: kernel release, trace clock, the scope, then the syscall names */
	size_t nenv = 6 + 2 * NSYSCALL_NAMES + 1;
	const char **env = calloc(nenv, sizeof(*env));
	char (*keys)[32] = calloc(NSYSCALL_NAMES + 1, sizeof(*keys));
	int ret;

	if (!ev || !env || !keys) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < s->nclasses; i++)
		ev[i] = &s->classes[i].desc;
	ev[s->nclasses] = ktimes_desc();
	size_t k = 0;
	uname(&u);
	env[k++] = "kernel_release";
	env[k++] = u.release;
	env[k++] = "trace_clock";
	env[k++] = strata_clock_tsc ? "x86-tsc" : "mono";
	if (s->scope) { /* docs/kernel.md: what a scoped trace sees */
		env[k++] = "scope_tids";
		env[k++] = s->scope;
	}
	for (size_t i = 0; i < NSYSCALL_NAMES; i++) {
		snprintf(keys[i], sizeof(keys[i]), "syscall_%u", syscall_names[i].nr);
		env[k++] = keys[i];
		env[k++] = syscall_names[i].name;
	}
	env[k] = NULL;

	/* Named values (format.md §6): system calls by number, task states
	 * as sched_switch prints them, each state alone and preempted. */
	struct meta_label sc[NSYSCALL_NAMES], st[18];
	char letters[18][12];
	for (size_t i = 0; i < NSYSCALL_NAMES; i++)
		sc[i] = (struct meta_label){syscall_names[i].nr, syscall_names[i].name};
	for (unsigned i = 0; i < 18; i++) {
		int64_t v = (i % 9 ? INT64_C(1) << (i % 9 - 1) : 0) |
			    (i >= 9 ? KSTATE_PREEMPT : 0);
		st[i] = (struct meta_label){v, kstate_letters(v, letters[i])};
	}
	/* The states are written first, so that a build without a system
	 * call table can pass the states alone (a prefix of the array). */
	enum { KMETA_STATES, KMETA_SYS_ENTER, KMETA_SYS_EXIT, KMETA_NENUMS };
	const struct meta_enum enums[KMETA_NENUMS] = {
		[KMETA_STATES] = {"sched:sched_switch", "prev_state", st, 18},
		[KMETA_SYS_ENTER] = {"raw_syscalls:sys_enter", "id", sc, NSYSCALL_NAMES},
		[KMETA_SYS_EXIT] = {"raw_syscalls:sys_exit", "id", sc, NSYSCALL_NAMES},
	};

	memset(&mi, 0, sizeof(mi));
	memcpy(mi.uuid, s->uuid, 16);
	mi.pid = 0;
	mi.procname = "kernel";
	mi.domain = "kernel";
	mi.enums = enums;
	/* no system call table at build time: the states only */
	mi.nenums = syscall_names[0].name[0] ? KMETA_NENUMS : KMETA_STATES + 1;
	mi.events = ev;
	mi.nevents = s->nclasses + 1;
	mi.env = env;
	clock_meta(&mi);
	s->meta_ust = kern_ust_clock(s->trace_dir, &mi.freq_hz, &mi.offset_ns);
	if (!s->meta_ust) {
		struct clock_point p1;
		clock_point_take(&p1);
		mi.freq_hz = 0;
		clock_fit(&s->p0, &p1, &mi.freq_hz, &mi.offset_ns);
	}
	ret = meta_write(s->dir, &mi);
out:
	free(ev);
	free(env);
	free(keys);
	return ret;
}
