/* SPDX-License-Identifier: MIT */
/* A program of vocabulary A, for the two-process test. */
#include "alpha.h"
int main(void)
{
	for (int i = 0; i < 1000; i++)
		strata_alpha_x((unsigned long long)i);
	return 0;
}
