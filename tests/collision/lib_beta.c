/* SPDX-License-Identifier: MIT */
/* A library logging vocabulary B, whose ids collide with A's. */
#include "beta.h"

void log_beta(unsigned v);
void log_beta(unsigned v)
{
	strata_beta_y(v, "beta");
}
