/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the TSDL metadata parser on arbitrary text. */
#include <stddef.h>
#include <stdint.h>

#include "rd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rd_meta m;
	char err[256];
	if (rd_meta_parse((const char *)data, size, &m, err, sizeof(err)) == 0) {
		/* walk what it built: every class and field must be consistent */
		for (unsigned i = 0; i < m.nclasses; i++) {
			const struct strata_event_class *c = &m.classes[i]->pub;
			for (unsigned j = 0; j < c->nfields; j++)
				if (c->fields[j].length_field >= (int32_t)j)
					__builtin_trap();
		}
		rd_meta_fini(&m);
	}
	return 0;
}
