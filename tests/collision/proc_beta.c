/* SPDX-License-Identifier: MIT */
/* A program of vocabulary B (A's ids), for the two-process test. */
#include "beta.h"
int main(void)
{
	for (unsigned i = 0; i < 1000; i++)
		strata_beta_y(i, "from beta");
	return 0;
}
