/* SPDX-License-Identifier: MIT */
/* A C frame that a C++ exception crosses (throw.cc): built without -fexceptions, so its probe's exit never runs. */

/* Calls cb(n), which throws. */
__attribute__((noinline)) void c_mid(void (*cb)(int), int n)
{
	cb(n);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}
