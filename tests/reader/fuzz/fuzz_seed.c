/* SPDX-License-Identifier: MIT */
/* Seeds of fuzz_packet: a stream of each stream class (format.md §3, docs/compact.md), every kind of event of synth.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../synth.h"

int main(int argc, char **argv)
{
	enum { N = 400 };
	struct synth_ev e[N];
	char tmp[256], from[512], to[512];
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seed CORPUS_DIR\n");
		return 2;
	}
	/* beside the corpus: rename() stays on one file system */
	snprintf(tmp, sizeof(tmp), "%s/.seed-XXXXXX", argv[1]);
	if (!mkdtemp(tmp)) {
		perror("fuzz_seed: mkdtemp");
		return 1;
	}
	/* every kind in turn; a gap that 27 bits cannot carry now and then */
	uint64_t ts = (1u << 27) - 1000;
	for (unsigned i = 0; i < N; i++) {
		ts += 3 + i % 7 + (i % 97 == 50 ? 1u << 27 : 0);
		e[i] = (struct synth_ev){ ts, (int)(i % 7), 200 + i % 3 };
	}
	for (unsigned sc = 0; sc < 2; sc++) {
		synth_write_class(tmp, sc, 0, 100, 100, e, N, 4096);
		snprintf(from, sizeof(from), "%s/cpu0", tmp);
		snprintf(to, sizeof(to), "%s/class%u-cpu0", argv[1], sc);
		if (rename(from, to) < 0) {
			perror("fuzz_seed: rename");
			return 1;
		}
	}
	synth_rmdir(tmp);
	return 0;
}
