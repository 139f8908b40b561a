/* SPDX-License-Identifier: MIT */
/* Intervals that close out of begin order within one level of duration: a job and the lock held through all of it but its first and last steps, so that the model's build must move the job back past the lock (model.c, on_interval), in a level's tail or in its file (cache_test.py). */
#include <stdint.h>
#include <stdlib.h>

#include <strata/strata.h>

#include "workers.h" /* examples/workers.strata's events */

static volatile uint64_t sink;

static void spin(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	unsigned jobs = argc > 1 ? (unsigned)atoi(argv[1]) : 20000;
	static int lock;
	for (unsigned j = 0; j < jobs; j++) {
		strata_work_job_begin(j, 1);
		/* the lock's hold is nearly the job: the same level, mostly */
		strata_work_lock_acquire(&lock);
		spin(200 + j % 7 * 10);
		strata_work_lock_release(&lock);
		strata_work_job_end(j, sink);
	}
	return 0;
}
