// SPDX-License-Identifier: MIT
/* strata view's model cache: the model written once outside the trace, mmap'ed on the next open (docs/view.md, "The cache"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "view.h"

#define VWC_MAGIC "STRVWC\r\n"
#define VWC_VERSION 5

/* The file's first bytes (docs/view.md, "The cache"); the body follows at
 * hdr_size, every array 8-byte aligned. */
struct vwc_header {
	char magic[8];
	uint32_t version, hdr_size;
	uint64_t file_size;      /* the whole file: a short one is damaged */
	uint64_t key;            /* the trace's identity (vw_cache_key) */
	uint64_t begin, end, nevents, nproblems, nwakes, nflows;
	uint32_t nbins, ncpus, nthreads, nrows, nclasses, nstreams, nprob, have_sched;
	uint64_t sum;            /* FNV-1a of the bytes above */
};

/* What a thread's record says before its arrays. */
struct vwc_thread {
	uint32_t pid, tid;
	uint64_t events, nrun, nst, st_end, niv;
	uint64_t nlev[VW_IV_LEVELS];
	uint32_t row;
	uint8_t seen, has_bins, has_cbins, pad;
	char name[16];
};

/* docs/view.md's table gives these sizes */
_Static_assert(sizeof(struct vwc_header) == 120, "the header's size");
_Static_assert(sizeof(struct vwc_thread) == 392, "a thread's record's size");
_Static_assert(sizeof(struct vw_iv) == 24 && sizeof(struct vw_switch) == 16 &&
	       sizeof(struct vw_wake) == 32 && sizeof(struct vw_problem) == 40 &&
	       sizeof(struct vw_flow) == 56,
	       "the arrays' element sizes");

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	while (n--)
		h = (h ^ *c++) * 0x100000001b3ull;
	return h;
}

#define FNV0 0xcbf29ce484222325ull

uint64_t vw_path_hash(const char *path)
{
	return fnv(FNV0, path, strlen(path));
}

/* The size, mtime and inode of path into h (a file that is not there
 * counts as one). */
static uint64_t fnv_stat(uint64_t h, const char *path)
{
	struct stat st;
	uint64_t v[4] = { 0 };
	if (!stat(path, &st)) {
		v[0] = (uint64_t)st.st_size;
		v[1] = (uint64_t)st.st_mtim.tv_sec;
		v[2] = (uint64_t)st.st_mtim.tv_nsec;
		v[3] = (uint64_t)st.st_ino;
	}
	return fnv(fnv(h, path, strlen(path)), v, sizeof(v));
}

/* The metadata's bytes (its uuid) into h. */
static uint64_t fnv_file(uint64_t h, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return fnv(h, "-", 1);
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		h = fnv(h, buf, n);
	fclose(f);
	return h;
}

uint64_t vw_cache_key(struct strata_trace *t, const struct vw_activity *acts, unsigned nacts)
{
	uint64_t h = FNV0;
	uint32_t v[4] = { VWC_VERSION, sizeof(struct vw_iv), sizeof(struct vw_wake), 1u << 15 };
	h = fnv(h, v, sizeof(v));
	for (unsigned i = 0; i < nacts; i++) {
		const char *s[4] = { acts[i].name, acts[i].begin, acts[i].end, acts[i].by };
		for (int k = 0; k < 4; k++)
			h = fnv(h, s[k] ? s[k] : "", s[k] ? strlen(s[k]) + 1 : 1);
	}
	/* each stream, its index and its sub-trace's metadata: a trace
	 * still growing, or rewritten, has another key */
	const char *dir = NULL;
	for (unsigned i = 0; i < strata_trace_nstreams(t); i++) {
		struct strata_stream_info si;
		if (strata_trace_stream(t, i, &si))
			continue;
		char p[PATH_MAX];
		h = fnv_stat(h, si.path);
		const char *base = strrchr(si.path, '/');
		snprintf(p, sizeof(p), "%s/index/%s.idx", si.trace_dir, base ? base + 1 : si.path);
		h = fnv_stat(h, p);
		if (!dir || strcmp(dir, si.trace_dir)) {
			dir = si.trace_dir;
			snprintf(p, sizeof(p), "%s/metadata", dir);
			h = fnv_file(fnv_stat(h, p), p);
		}
	}
	return h;
}

/* $XDG_CACHE_HOME/strata/view/, else ~/.cache/strata/view/, made as
 * needed (0700); the file of this trace and rules in it. */
int vw_cache_path(const char *trace, const struct vw_activity *acts, unsigned nacts, char *out,
		  size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX], real[PATH_MAX];
	if (xdg && *xdg == '/')
		snprintf(dir, sizeof(dir), "%s/strata/view", xdg);
	else if (home && *home)
		snprintf(dir, sizeof(dir), "%s/.cache/strata/view", home);
	else
		return -ENOENT;
	for (char *s = dir + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(dir, 0700) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	const char *id = realpath(trace, real) ? real : trace;
	uint64_t h = fnv(FNV0, id, strlen(id));
	for (unsigned i = 0; i < nacts; i++)
		h = fnv(h, acts[i].name, strlen(acts[i].name) + 1);
	if ((size_t)snprintf(out, len, "%s/%016llx.vwc", dir, (unsigned long long)h) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- writing ---------------------------------------------------------- */

struct wr {
	FILE *f;
	uint64_t off;
	int err;
	const struct vw_spill *sp; /* the model's file, or NULL */
};

/* Written in pieces, each unmapped once written when it is in the spill
 * file: the writer maps a piece of the model at a time, not all of it. */
#define PUT_PIECE (16u << 20)

static void put(struct wr *w, const void *p, size_t n)
{
	static const char zero[8];
	if (w->err || !n)
		return;
	for (size_t o = 0, k; o < n; o += k) {
		k = n - o < PUT_PIECE ? n - o : PUT_PIECE;
		if (fwrite((const char *)p + o, 1, k, w->f) != k) {
			w->err = -EIO;
			break;
		}
		vw_spill_release(w->sp, (const char *)p + o, k);
	}
	w->off += n;
	size_t pad = (8 - w->off % 8) % 8;
	if (pad && fwrite(zero, 1, pad, w->f) != pad)
		w->err = -EIO;
	w->off += pad;
}

static void put_cbins(struct wr *w, uint32_t **cbins, unsigned ncls)
{
	uint8_t have[ncls ? ncls : 1];
	for (unsigned c = 0; c < ncls; c++)
		have[c] = cbins && cbins[c];
	put(w, have, ncls);
	for (unsigned c = 0; c < ncls; c++)
		if (have[c])
			put(w, cbins[c], VW_CBINS * sizeof(uint32_t));
}

static void put_thread(struct wr *w, const struct vw_model *m, const struct vw_thread *th,
		       unsigned ncls)
{
	struct vwc_thread r = { .pid = th->pid, .tid = th->tid, .events = th->events,
		.nrun = th->nrun, .nst = th->nst, .st_end = th->st_end, .niv = th->niv,
		.row = th->row, .seen = th->seen, .has_bins = !!th->bins,
		.has_cbins = !!th->cbins };
	const char *n = vw_name(m, th->tid);
	if (n)
		strncpy(r.name, n, sizeof(r.name) - 1);
	for (unsigned l = 0; l < VW_IV_LEVELS; l++)
		r.nlev[l] = th->lev[l].n;
	put(w, &r, sizeof(r));
	if (th->bins)
		put(w, th->bins, m->nbins * sizeof(*th->bins));
	if (th->cbins)
		put_cbins(w, th->cbins, ncls);
	put(w, th->run, th->nrun * sizeof(*th->run));
	put(w, th->st, th->nst * sizeof(*th->st));
	put(w, th->stcum, (th->nst + VW_ST_BLOCK - 1) / VW_ST_BLOCK * sizeof(*th->stcum));
	for (unsigned l = 0; l < VW_IV_LEVELS; l++) {
		const struct vw_ivlevel *lv = &th->lev[l];
		put(w, lv->iv, lv->n * sizeof(*lv->iv));
		put(w, lv->blockmax, (lv->n + VW_IV_BLOCK - 1) / VW_IV_BLOCK * sizeof(uint64_t));
		if (vw_iv_has_cnt(lv->n))
			put(w, lv->cnt, (m->nbins + 1) * sizeof(*lv->cnt));
	}
}

static void put_body(struct wr *w, const struct vw_model *m, const struct vw_problems *ps,
		     unsigned ncls, unsigned nstreams)
{
	put(w, m->prefix, (m->nbins + 1) * sizeof(*m->prefix));
	put(w, m->kernel, nstreams * sizeof(*m->kernel));
	if (ps)
		put(w, ps->v, ps->n * sizeof(*ps->v));
	put(w, m->wakes, m->nwakes * sizeof(*m->wakes));
	put(w, m->flows, m->nflows * sizeof(*m->flows));
	for (unsigned i = 0; i < m->ncpus; i++) {
		const struct vw_cpu *c = &m->cpus[i];
		uint64_t n = c->nsw;
		put(w, &n, sizeof(n));
		put(w, c->sw, c->nsw * sizeof(*c->sw));
		put(w, c->bins, m->nbins * sizeof(*c->bins));
		put_cbins(w, c->cbins, ncls);
	}
	for (size_t i = 0; i < m->threads.n; i++)
		put_thread(w, m, m->threads.all[i], ncls);
	/* the rows, as indices into the threads' order above */
	uint32_t *k = calloc(m->nrows ? m->nrows : 1, sizeof(*k));
	if (!k) {
		w->err = -ENOMEM;
		return;
	}
	for (uint32_t i = 0; i < m->threads.n; i++) {
		const struct vw_thread *th = m->threads.all[i];
		if (th->row < m->nrows && m->rows[th->row] == th)
			k[th->row] = i;
	}
	put(w, k, m->nrows * sizeof(*k));
	free(k);
}

static void seal(struct vwc_header *h)
{
	h->sum = fnv(FNV0, h, offsetof(struct vwc_header, sum));
}

int vw_cache_write(const struct vw_model *m, const struct vw_problems *ps, uint64_t key,
		   const char *path)
{
	char tmp[PATH_MAX];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	struct wr w = { .f = fdopen(fd, "wb"), .sp = m->spill };
	if (!w.f) {
		close(fd);
		unlink(tmp);
		return -ENOMEM;
	}
	/* counts only: the request thread may be reading the trace */
	unsigned ncls = strata_trace_nclasses(m->t), nstreams = strata_trace_nstreams(m->t);
	struct vwc_header h = { .magic = VWC_MAGIC, .version = VWC_VERSION,
		.hdr_size = sizeof(h), .key = key, .begin = m->begin, .end = m->end,
		.nevents = m->nevents, .nproblems = m->nproblems,
		.nwakes = m->nwakes, .nflows = m->nflows, .nbins = m->nbins, .ncpus = m->ncpus,
		.nthreads = (uint32_t)m->threads.n, .nrows = m->nrows, .nclasses = ncls,
		.nstreams = nstreams, .nprob = ps ? ps->n : 0, .have_sched = m->have_sched };
	put(&w, &h, sizeof(h)); /* again at the end, with the size */
	put_body(&w, m, ps, ncls, nstreams);
	h.file_size = w.off;
	seal(&h);
	if (!w.err && (fseek(w.f, 0, SEEK_SET) || fwrite(&h, sizeof(h), 1, w.f) != 1))
		w.err = -EIO;
	if (fclose(w.f) && !w.err)
		w.err = -EIO;
	/* the rename makes it whole or not at all: a reader never sees a
	 * file being written */
	if (!w.err && rename(tmp, path))
		w.err = -errno;
	if (w.err)
		unlink(tmp);
	return w.err;
}

/* ---- reading ---------------------------------------------------------- */

struct rd {
	const char *base;
	uint64_t off, size;
	bool bad;
	const struct vw_problem *prob; /* copied out once the whole file is read */
};

/* n bytes of the mapping, or NULL (and bad) past its end. */
static const void *take(struct rd *r, uint64_t n)
{
	uint64_t end = r->off + n;
	if (r->bad || end < r->off || end > r->size) {
		r->bad = true;
		return NULL;
	}
	const void *p = r->base + r->off;
	r->off = (end + 7) & ~7ull;
	return n ? p : NULL;
}

/* The reader's counts, bounded before they multiply: nothing in a file
 * can make n * size wrap. */
static const void *take_n(struct rd *r, uint64_t n, size_t size)
{
	if (n > r->size / (size ? size : 1)) {
		r->bad = true;
		return NULL;
	}
	return take(r, n * size);
}

static int take_cbins(struct rd *r, uint32_t ***out, unsigned ncls)
{
	const uint8_t *have = take(r, ncls);
	if (r->bad || !(*out = calloc(ncls ? ncls : 1, sizeof(**out))))
		return r->bad ? -EBADMSG : -ENOMEM;
	for (unsigned c = 0; c < ncls; c++)
		if (have[c])
			(*out)[c] = (uint32_t *)take(r, VW_CBINS * sizeof(uint32_t));
	return r->bad ? -EBADMSG : 0;
}

static int take_thread(struct rd *r, struct vw_model *m, unsigned ncls)
{
	const struct vwc_thread *rec = take(r, sizeof(*rec));
	if (!rec)
		return -EBADMSG;
	bool made;
	struct vw_thread *th = an_tidmap_get(&m->threads, rec->tid, sizeof(*th), &made);
	if (!th)
		return -ENOMEM;
	if (!made)
		return -EBADMSG; /* one tid twice */
	*th = (struct vw_thread){ .pid = rec->pid, .tid = rec->tid, .events = rec->events,
		.nrun = rec->nrun, .nst = rec->nst, .st_end = rec->st_end, .niv = rec->niv,
		.row = rec->row, .seen = rec->seen, .name = rec->name };
	if (rec->has_bins)
		th->bins = (uint32_t *)take_n(r, m->nbins, sizeof(uint32_t));
	if (rec->has_cbins && take_cbins(r, &th->cbins, ncls))
		return -EBADMSG;
	th->run = (struct vw_switch *)take_n(r, th->nrun, sizeof(*th->run));
	th->st = (struct vw_switch *)take_n(r, th->nst, sizeof(*th->st));
	th->stcum = (void *)take_n(r, (th->nst + VW_ST_BLOCK - 1) / VW_ST_BLOCK,
				   sizeof(*th->stcum));
	for (size_t i = 0; !r->bad && i < th->nst; i++)
		if ((unsigned)th->st[i].tid >= BD_NSTATES)
			return -EBADMSG; /* an index into the states' sums */
	for (unsigned l = 0; l < VW_IV_LEVELS; l++) {
		struct vw_ivlevel *lv = &th->lev[l];
		lv->n = rec->nlev[l];
		lv->iv = (struct vw_iv *)take_n(r, lv->n, sizeof(*lv->iv));
		lv->blockmax = (uint64_t *)take_n(r, (lv->n + VW_IV_BLOCK - 1) / VW_IV_BLOCK,
						  sizeof(uint64_t));
		if (vw_iv_has_cnt(lv->n)) {
			lv->cnt = (uint32_t *)take_n(r, (uint64_t)m->nbins + 1, sizeof(*lv->cnt));
			/* indices into iv: bounded, so a probe stays inside */
			if (lv->cnt && lv->cnt[m->nbins] != lv->n)
				return -EBADMSG;
		}
	}
	th->name = th->name[0] ? th->name : NULL;
	return r->bad ? -EBADMSG : 0;
}

static int take_body(struct rd *r, struct vw_model *m, const struct vwc_header *h)
{
	m->prefix = (uint64_t *)take_n(r, (uint64_t)m->nbins + 1, sizeof(*m->prefix));
	m->kernel = (bool *)take_n(r, h->nstreams, sizeof(*m->kernel));
	const struct vw_problem *pv = take_n(r, h->nprob, sizeof(*pv));
	m->wakes = (struct vw_wake *)take_n(r, h->nwakes, sizeof(*m->wakes));
	m->flows = (struct vw_flow *)take_n(r, h->nflows, sizeof(*m->flows));
	if (r->bad || h->nprob > VW_MAX_PROBLEMS)
		return -EBADMSG;
	r->prob = pv;
	m->nwakes = h->nwakes;
	for (size_t i = 0; i < m->nwakes; i++)
		if (m->wakes[i].cls >= h->nclasses)
			return -EBADMSG; /* an index into the class table */
	m->nflows = h->nflows;
	for (size_t i = 0; i < m->nflows; i++) {
		const struct vw_flow *f = &m->flows[i];
		/* class indexes, and the order the window's search needs */
		if ((f->scls >= h->nclasses && f->scls != UINT32_MAX) ||
		    (f->rcls >= h->nclasses && f->rcls != UINT32_MAX) ||
		    (f->scls == UINT32_MAX && f->rcls == UINT32_MAX) ||
		    (i && f->t < m->flows[i - 1].t))
			return -EBADMSG;
	}
	vw_flows_index(m);
	if (!(m->cpus = calloc(m->ncpus ? m->ncpus : 1, sizeof(*m->cpus))))
		return -ENOMEM;
	for (unsigned i = 0; i < m->ncpus; i++) {
		struct vw_cpu *c = &m->cpus[i];
		const uint64_t *n = take(r, sizeof(*n));
		c->cpu = i;
		c->nsw = n ? *n : 0;
		c->sw = (struct vw_switch *)take_n(r, c->nsw, sizeof(*c->sw));
		c->bins = (uint32_t *)take_n(r, m->nbins, sizeof(*c->bins));
		if (r->bad || take_cbins(r, &c->cbins, h->nclasses))
			return -EBADMSG;
	}
	for (unsigned i = 0; i < h->nthreads; i++) {
		int err = take_thread(r, m, h->nclasses);
		if (err)
			return err;
	}
	const uint32_t *rows = take_n(r, h->nrows, sizeof(*rows));
	if (r->bad || !(m->rows = calloc(h->nrows ? h->nrows : 1, sizeof(*m->rows))))
		return r->bad ? -EBADMSG : -ENOMEM;
	for (unsigned i = 0; i < h->nrows; i++) {
		if (rows[i] >= m->threads.n)
			return -EBADMSG;
		m->rows[i] = m->threads.all[rows[i]];
		m->rows[i]->row = i;
	}
	m->nrows = h->nrows;
	/* a thread with events counts them in its row (stats.c, window.c) */
	for (size_t i = 0; i < m->threads.n; i++) {
		const struct vw_thread *th = m->threads.all[i];
		if (th->bins && (th->row >= m->nrows || m->rows[th->row] != th))
			return -EBADMSG;
	}
	return r->off == r->size ? 0 : -EBADMSG;
}

/* The header, checked: -EBADMSG for a file that is not a whole cache of
 * this version, -ESTALE for one of another trace or another state of it. */
static int check_header(const struct vwc_header *h, uint64_t size, uint64_t key,
			struct strata_trace *t)
{
	struct vwc_header c = *h;
	seal(&c);
	if (memcmp(h->magic, VWC_MAGIC, 8) || h->version != VWC_VERSION ||
	    h->hdr_size != sizeof(*h) || h->file_size != size || c.sum != h->sum)
		return -EBADMSG;
	if (h->key != key || h->nclasses != strata_trace_nclasses(t) ||
	    h->nstreams != strata_trace_nstreams(t) || h->nbins != (1u << 15) ||
	    h->ncpus > 4096 || h->nrows > h->nthreads)
		return -ESTALE;
	return 0;
}

int vw_cache_open(struct vw_model *m, struct strata_trace *t, const char *trace,
		  struct vw_activity *acts, unsigned nacts, uint64_t key, const char *path,
		  struct vw_problems *ps)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	void *p = MAP_FAILED;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size >= sizeof(struct vwc_header))
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -EBADMSG;
	const struct vwc_header *h = p;
	int err = check_header(h, (uint64_t)st.st_size, key, t);
	if (!err && h->end <= h->begin)
		err = -EBADMSG; /* the build makes end > begin */
	if (err) {
		munmap(p, (size_t)st.st_size);
		return err;
	}
	*m = (struct vw_model){ .t = t, .path = trace, .acts = acts, .nacts = nacts,
		.begin = h->begin, .end = h->end, .nevents = h->nevents, .nbins = h->nbins,
		.gridlen = h->end - h->begin + 1, .ivspan = h->end - h->begin,
		.ncls = h->nclasses,
		.ncpus = h->ncpus, .have_sched = h->have_sched, .nproblems = h->nproblems,
		.map = p, .map_size = (size_t)st.st_size };
	struct rd r = { .base = p, .off = sizeof(*h), .size = (uint64_t)st.st_size };
	err = take_body(&r, m, h);
	if (!err && ps) {
		memcpy(ps->v, r.prob, h->nprob * sizeof(*r.prob));
		ps->n = h->nprob;
	}
	if (!err && iv_pairer_create(t, &(struct iv_options){ 0 }, &m->pairer) < 0)
		m->pairer = NULL;
	m->nkinds = (m->pairer ? iv_pairer_nkinds(m->pairer) : 0) + nacts;
	if (err) {
		vw_model_fini(m);
		return err;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	m->build_ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	return 0;
}
