/* SPDX-License-Identifier: MIT */
/* Unit-test helper: strata_iter_decode and strata_iter_read give exactly what strata_iter_next and strata_event_fields give. */
#ifndef STRATA_TEST_BATCH_CHECK_H
#define STRATA_TEST_BATCH_CHECK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <strata/reader.h>

#define BC_MAXV 64

struct bc_ev {
	struct strata_event ev;
	unsigned nv; /* values a batch must hold: 0 for a damaged payload */
	struct strata_value v[BC_MAXV];
};

static inline void bc_same(const struct strata_event *got, const struct bc_ev *want)
{
	assert_memory_equal(got, &want->ev, sizeof(*got));
}

/* One way of reading: batches of `cap`, and with `mix` a strata_iter_next
 * and a strata_iter_read of 5 between batches. */
static inline void bc_pass(struct strata_trace *t, const struct strata_iter_options *io,
			   const struct bc_ev *ref, unsigned nref, unsigned cap, int mix)
{
	struct strata_iter *it;
	struct strata_batch *b;
	assert_int_equal(strata_iter_create(t, io, &it), 0);
	assert_int_equal(strata_batch_alloc(t, cap, &b), 0);
	unsigned k = 0;
	for (unsigned round = 0;; round++) {
		if (mix && round % 3 == 1) {
			const struct strata_event *ev;
			if (strata_iter_next(it, &ev) <= 0)
				break;
			assert_true(k < nref);
			bc_same(ev, &ref[k++]);
			continue;
		}
		if (mix && round % 3 == 2) {
			struct strata_event e[5];
			int n = strata_iter_read(it, e, 5);
			assert_true(n >= 0 && n <= 5);
			for (int i = 0; i < n; i++) {
				assert_true(k < nref);
				bc_same(&e[i], &ref[k++]);
			}
			if (n < 5)
				break;
			continue;
		}
		int n = strata_iter_decode(it, b);
		assert_true(n >= 0 && (unsigned)n <= cap);
		assert_int_equal((unsigned)n, b->n);
		if (!n)
			break;
		for (int i = 0; i < n; i++, k++) {
			assert_true(k < nref);
			bc_same(&b->events[i], &ref[k]);
			assert_int_equal(b->first[i + 1] - b->first[i], ref[k].nv);
			assert_memory_equal(&b->values[b->first[i]], ref[k].v,
					    ref[k].nv * sizeof(struct strata_value));
		}
	}
	assert_int_equal(k, nref);
	assert_int_equal(strata_iter_decode(it, b), 0);
	strata_batch_free(b);
	strata_iter_destroy(it);
}

/* Every batch size and mix over the trace at dir, iterated with io (its
 * filter, if any, must belong to t). */
static inline void batch_check_trace(struct strata_trace *t,
				     const struct strata_iter_options *io)
{
	struct strata_iter *it;
	const struct strata_event *ev;
	unsigned cap = 1024, nref = 0;
	struct bc_ev *ref = malloc(cap * sizeof(*ref));
	assert_non_null(ref);
	assert_int_equal(strata_iter_create(t, io, &it), 0);
	while (strata_iter_next(it, &ev) > 0) {
		if (nref == cap) {
			cap *= 2;
			ref = realloc(ref, cap * sizeof(*ref));
			assert_non_null(ref);
		}
		struct bc_ev *r = &ref[nref++];
		memset(r, 0, sizeof(*r));
		r->ev = *ev;
		int nf = strata_event_fields(ev, r->v, ev->cls->nfields);
		r->nv = nf > 0 ? (unsigned)nf : 0;
	}
	strata_iter_destroy(it);
	static const unsigned caps[] = { 1, 2, 7, 64, 4096 };
	for (unsigned c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
		for (int mix = 0; mix < 2; mix++)
			bc_pass(t, io, ref, nref, caps[c], mix);
	free(ref);
}

/* batch_check_trace merged, unordered, with strata's records, and for
 * each stream alone. */
static inline void batch_check(const char *dir)
{
	struct strata_trace *t;
	assert_int_equal(strata_trace_open(dir, NULL, &t), 0);
	static const unsigned flags[] = { 0, STRATA_ITER_UNORDERED, STRATA_ITER_INTERNAL };
	for (unsigned i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct strata_iter_options io = { .stream = -1, .flags = flags[i] };
		batch_check_trace(t, &io);
	}
	for (unsigned s = 0; s < strata_trace_nstreams(t); s++) {
		struct strata_iter_options io = { .stream = (int)s };
		batch_check_trace(t, &io);
	}
	strata_trace_close(t);
}

#endif /* STRATA_TEST_BATCH_CHECK_H */
