/* SPDX-License-Identifier: MIT */
/* One process, three libraries: A twice, and B (A's ids) loaded later. */
#include <dlfcn.h>
#include <stdio.h>
#include <strata/strata.h>

void log_alpha1(unsigned long long v);
void log_alpha2(unsigned long long v);

int main(int argc, char **argv)
{
	/* The first vocabulary registered keeps the ids: load B after A's
	 * libraries registered theirs (a plugin loaded at run time). */
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	void (*log_beta)(unsigned) = h ? (void (*)(unsigned))dlsym(h, "log_beta") : NULL;
	if (!log_beta) {
		fprintf(stderr, "oneproc: cannot load %s: %s\n",
			argc > 1 ? argv[1] : "(none)", dlerror());
		return 1;
	}

	for (int i = 0; i < 100; i++) {
		log_alpha1(1000 + i); /* recorded, decoded as alpha:x */
		log_alpha2(2000 + i); /* the same vocabulary: recorded too */
		log_beta(i);          /* refused: never logged, never misread */
	}
	/* Per-event control reaches both copies of alpha:x. */
	strata_disable("alpha:x");
	log_alpha1(1);
	log_alpha2(2);
	strata_enable("alpha:x");
	log_alpha1(3000);
	log_alpha2(4000);
	return 0;
}
