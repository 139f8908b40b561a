/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the DSL parser and the emitter must survive any input without a crash, a leak or UB. */
#include <stddef.h>
#include <stdint.h>

#include "gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gen_emit_opts opts = { "fuzz.strata", 0 };
	struct gen_file *file = NULL;
	struct gen_ctx ctx;
	struct gen_buf out;

	gen_ctx_init(&ctx, NULL);
	gen_buf_init(&out);
	if (!gen_load_buffer(&ctx, "fuzz.strata", (const char *)data, size, &file)) {
		gen_emit_header(file, &opts, &out);
		opts.no_event_flags = 1;
		gen_emit_header(file, &opts, &out);
	}
	gen_buf_fini(&out);
	gen_ctx_fini(&ctx);
	return 0;
}
