/* SPDX-License-Identifier: MIT */
/* A library logging vocabulary A (built twice: two copies of one vocabulary). */
#include "alpha.h"

#ifndef COPY
#define COPY 1
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

void CAT(log_alpha, COPY)(unsigned long long v);
void CAT(log_alpha, COPY)(unsigned long long v)
{
	strata_alpha_x(v);
}
