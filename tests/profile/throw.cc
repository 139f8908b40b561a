/* SPDX-License-Identifier: MIT */
/* Function probes and C++ exceptions: throws through probed C++ frames, and through one C frame built without -fexceptions; prints its calls (throw_test.py). */
#include <cstdio>
#include <stdexcept>

/* extern "C": unmangled names in the profile; -rdynamic exports them;
 * noinline: every call is a call. */
#define PROBED extern "C" __attribute__((noinline))

extern "C" void c_mid(void (*cb)(int), int n); /* throw_c.c: C, no -fexceptions */

enum { ROUNDS = 10, DEPTH = 8 };

static volatile int sink;

/* Recurses n more levels, then throws: DEPTH + 1 calls a round. */
PROBED void t_leaf(int n)
{
	if (n == 0)
		throw std::runtime_error("from the deepest t_leaf");
	t_leaf(n - 1);
	sink++; /* not a tail call: each level is a frame */
}

/* Destroyed while the exception passes: a probed call during unwinding. */
PROBED void t_cleanup(void)
{
	sink++;
}

struct guard {
	~guard() { t_cleanup(); }
};

PROBED void t_mid(int n)
{
	guard g;
	t_leaf(n);
	sink++;
}

/* Catches what t_leaf threw, DEPTH + 2 probed frames down, and returns. */
PROBED int t_top(int n)
{
	try {
		t_mid(n);
	} catch (const std::exception &) {
		return 1;
	}
	return 0;
}

PROBED void x_leaf(int n)
{
	throw n;
}

/* Through c_mid, C code whose exit hook no cleanup calls. */
PROBED int x_top(void)
{
	try {
		c_mid(x_leaf, 1);
	} catch (int) {
		return 1;
	}
	return 0;
}

int main(void)
{
	int caught = 0;

	for (int i = 0; i < ROUNDS; i++)
		caught += t_top(DEPTH) + x_top();
	std::printf("{\"calls\": {\"main\": 1, \"t_top\": %d, \"t_mid\": %d, \"t_leaf\": %d, "
		    "\"t_cleanup\": %d, \"x_top\": %d, \"c_mid\": %d, \"x_leaf\": %d}, "
		    "\"caught\": %d}\n", ROUNDS, ROUNDS, ROUNDS * (DEPTH + 1), ROUNDS, ROUNDS,
		    ROUNDS, ROUNDS, caught);
	return 0;
}
