/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibmc_allgather and ibmc_allreduce on the loopback hub (ranks are
 * threads): every algorithm by name and auto, 1 to 16 ranks including
 * non-powers of two, blocks of 0 B to 200 kB and vectors of 0 to 50,000
 * elements, in place and not, under 5% and 20% loss with duplication and
 * reordering; every rank's every block verified byte for byte, allreduce
 * results checked against the exact answer and bit for bit against rank
 * 0's (double and long double SUM, float PROD), non-blocking calls in
 * flight together (the multicast layouts too, mixed with blocking calls
 * and broadcasts, on uneven nodes, under loss), and mismatched counts,
 * operations and block lengths reported on every rank, by the blocking
 * and the non-blocking calls (never a wrong answer, never a timeout);
 * and the messages each algorithm sends between nodes, counted exactly.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libjob/transport.h"
#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

#define MAXR 64

struct plan {
	const char *algo;
	const size_t *sizes;
	int nsizes;
	int in_place;
	atomic_int ok, bad;
	char used[MAXR][24];
};

static unsigned char byte_of(int rank, size_t i, size_t salt)
{
	return (unsigned char)(rank * 37 + i * 11 + salt * 5 + (i >> 9));
}

static int ag(ibmc_context_t *ctx, int rank, void *arg)
{
	struct plan *p = arg;
	ibmc_comm_t *c;
	int n = ibmc_context_size(ctx), i, r, rc;

	if (ibmc_comm_create(ctx, NULL, 0, &c))
		return 1;
	if (ibmc_comm_set_algo(c, "allgather", p->algo))
		return 1;
	for (i = 0; i < p->nsizes; i++) {
		size_t bl = p->sizes[i], k;
		unsigned char *mine = malloc(bl + 1), *all = malloc(bl * n + 1);
		int bad = 0;

		for (k = 0; k < bl; k++)
			mine[k] = byte_of(rank, k, (size_t)i);
		memset(all, 0xee, bl * n);
		if (p->in_place)
			memcpy(all + (size_t)rank * bl, mine, bl);
		rc = ibmc_allgather(c, p->in_place ? IBMC_IN_PLACE : mine,
				    all, bl);
		for (r = 0; !rc && r < n; r++)
			for (k = 0; k < bl; k++)
				if (all[(size_t)r * bl + k] != byte_of(r, k, (size_t)i))
					bad = 1;
		if (rc || bad) {
			fprintf(stderr, "# allgather %s rank %d size %zu: %s\n",
				p->algo, rank, bl, rc ? strerror(-rc) : "wrong bytes");
			atomic_fetch_add(&p->bad, 1);
		} else {
			atomic_fetch_add(&p->ok, 1);
		}
		free(mine);
		free(all);
	}
	snprintf(p->used[rank], sizeof(p->used[rank]), "%s",
		 ibmc_comm_last_algo(c, "allgather"));
	return ibmc_comm_free(c);
}

/* n ranks (on the nodes lbjob_nodes set, else one each) allgather blocks
 * of sizes[0..nsizes) with algo; what: the sizes, for the report. */
static void ag_sizes(int n, const char *algo, uint32_t loss, int in_place,
		     const size_t *sizes, int nsizes, const char *what)
{
	struct ibmc_loopback_faults f = {
		.loss_ppm = loss, .dup_ppm = loss ? 20000 : 0,
		.reorder_ppm = loss ? 50000 : 0, .seed = 99 + loss + (uint64_t)n,
	};
	struct plan p = { .algo = algo, .sizes = sizes, .nsizes = nsizes,
			  .in_place = in_place };
	double t0 = lbjob_now();
	int fails;

	lbjob_env(2, 2048);
	ibmc__loopback_set_faults(lbjob_hub(), &f);
	fails = lbjob_run(n, ag, &p);
	tap_ok(!fails && !p.bad && p.ok == n * nsizes,
	       "allgather %d ranks, %s (used %s)%s, %.0f%% loss: %d/%d ok, %s, %.2fs",
	       n, algo, p.used[0], in_place ? ", in place" : "", loss / 1e4,
	       (int)p.ok, n * nsizes, what, lbjob_now() - t0);
}

static void ag_case(int n, const char *algo, uint32_t loss, int in_place)
{
	static const size_t sizes[] = { 0, 1, 100, 3000, 70000, 200000 };

	ag_sizes(n, algo, loss, in_place, sizes, 6, "0 B..200 kB");
}

struct red {
	const char *algo;
	const size_t *counts;	/* NULL: 0, 1, 7, 1000 and 50000 */
	int ncounts;
	atomic_int ok, bad;
	/* Each rank's last floating-point results (double SUM, float PROD,
	 * long double SUM), one after the other. */
	unsigned char *res[MAXR];
	size_t res_len;
	char used[MAXR][24];
};

/* Floating-point operations that round, in place on n elements, their
 * results appended to *res: every rank must get the same bits. */
static int fp_ops(ibmc_comm_t *c, int rank, size_t n, unsigned char **res,
		  size_t *res_len)
{
	float *f = malloc(n * sizeof(float) + 8);
	long double *l = malloc(n * sizeof(long double) + 16);
	size_t k, fl = n * sizeof(float), ll = n * sizeof(long double);
	int rc;

	if (!f || !l) {
		free(f);
		free(l);
		return -ENOMEM;
	}
	for (k = 0; k < n; k++) {
		f[k] = 1.0f + 1.0f / (float)(rank + 7 + (int)(k % 5));
		l[k] = 1.0L / (long double)(rank + 3) + (long double)k * 1e-9L;
	}
	rc = ibmc_allreduce(c, IBMC_IN_PLACE, f, n, IBMC_FLOAT, IBMC_PROD);
	rc = rc ?: ibmc_allreduce(c, IBMC_IN_PLACE, l, n, IBMC_LONG_DOUBLE,
				  IBMC_SUM);
	if (!rc && res) {
		unsigned char *r = realloc(*res, *res_len + fl + ll);

		if (!r) {
			rc = -ENOMEM;
		} else {
			memcpy(r + *res_len, f, fl);
			/* long double's padding bytes are not its value */
			memset(r + *res_len + fl, 0, ll);
			for (k = 0; k < n; k++)
				memcpy(r + *res_len + fl + k * sizeof(*l),
				       &l[k], sizeof(*l) < 10 ?
				       sizeof(*l) : 10);
			*res = r;
			*res_len += fl + ll;
		}
	}
	free(f);
	free(l);
	return rc;
}

static int ar(ibmc_context_t *ctx, int rank, void *arg)
{
	static const size_t dflt[] = { 0, 1, 7, 1000, 50000 };
	struct red *p = arg;
	const size_t *counts = p->counts ? p->counts : dflt;
	int ncounts = p->counts ? p->ncounts : 5;
	ibmc_comm_t *c;
	int n = ibmc_context_size(ctx), i, rc, bad;
	size_t k, cnt;

	if (ibmc_comm_create(ctx, NULL, 0, &c))
		return 1;
	if (ibmc_comm_set_algo(c, "allreduce", p->algo))
		return 1;
	for (i = 0; i < ncounts; i++) {
		int32_t *iv, *io;
		double *dv;
		struct { int v, i; } *lv;
		uint64_t *uv;

		cnt = counts[i];
		bad = 0;
		/* SUM of int32: exact */
		iv = malloc(cnt * 4 + 4);
		io = malloc(cnt * 4 + 4);
		for (k = 0; k < cnt; k++)
			iv[k] = (int32_t)(rank * 1000 + (int)k);
		rc = ibmc_allreduce(c, iv, io, cnt, IBMC_INT32, IBMC_SUM);
		for (k = 0; !rc && k < cnt; k++)
			if (io[k] != (int32_t)(1000 * n * (n - 1) / 2 + n * (int)k))
				bad = 1;
		/* in place: MAX */
		for (k = 0; !rc && k < cnt; k++)
			io[k] = (int32_t)((rank * 7919 + (int)k * 13) % 1009);
		if (!rc)
			rc = ibmc_allreduce(c, IBMC_IN_PLACE, io, cnt,
					    IBMC_INT32, IBMC_MAX);
		for (k = 0; !rc && k < cnt; k++) {
			int r2, m = 0;

			for (r2 = 0; r2 < n; r2++)
				if ((r2 * 7919 + (int)k * 13) % 1009 > m)
					m = (r2 * 7919 + (int)k * 13) % 1009;
			if (io[k] != m)
				bad = 1;
		}
		/* MAXLOC on 2INT: ties go to the lower index */
		lv = malloc(cnt * sizeof(*lv) + 8);
		for (k = 0; k < cnt; k++) {
			lv[k].v = (int)((k + (size_t)rank) % 3);
			lv[k].i = rank;
		}
		if (!rc)
			rc = ibmc_allreduce(c, IBMC_IN_PLACE, lv, cnt,
					    IBMC_2INT, IBMC_MAXLOC);
		for (k = 0; !rc && k < cnt; k++) {
			int r2, bv = -1, bi = 0;

			for (r2 = 0; r2 < n; r2++)
				if ((int)((k + (size_t)r2) % 3) > bv) {
					bv = (int)((k + (size_t)r2) % 3);
					bi = r2;
				}
			if (lv[k].v != bv || lv[k].i != bi)
				bad = 1;
		}
		/* BXOR on uint64 */
		uv = malloc(cnt * 8 + 8);
		for (k = 0; k < cnt; k++)
			uv[k] = (uint64_t)1 << ((rank + k) % 64);
		if (!rc)
			rc = ibmc_allreduce(c, IBMC_IN_PLACE, uv, cnt,
					    IBMC_UINT64, IBMC_BXOR);
		for (k = 0; !rc && k < cnt; k++) {
			uint64_t x = 0;
			int r2;

			for (r2 = 0; r2 < n; r2++)
				x ^= (uint64_t)1 << ((r2 + k) % 64);
			if (uv[k] != x)
				bad = 1;
		}
		/* SUM of doubles that round: the same bits on every rank */
		dv = malloc(cnt * 8 + 8);
		for (k = 0; k < cnt; k++)
			dv[k] = 1.0 / (double)(rank + 3) + (double)k * 1e-7;
		if (!rc)
			rc = ibmc_allreduce(c, IBMC_IN_PLACE, dv, cnt,
					    IBMC_DOUBLE, IBMC_SUM);
		if (!rc && i == ncounts - 1) {
			size_t len = cnt * 8;

			p->res[rank] = malloc(cnt * 8 + 8);
			memcpy(p->res[rank], dv, cnt * 8);
			if (!rc)
				rc = fp_ops(c, rank, cnt, &p->res[rank], &len);
			if (rank == 0)
				p->res_len = len;
		} else if (!rc) {
			rc = fp_ops(c, rank, cnt, NULL, NULL);
		}
		if (rc || bad) {
			fprintf(stderr, "# allreduce %s rank %d count %zu: %s\n",
				p->algo, rank, cnt, rc ? strerror(-rc) : "wrong result");
			atomic_fetch_add(&p->bad, 1);
		} else {
			atomic_fetch_add(&p->ok, 1);
		}
		free(iv);
		free(io);
		free(lv);
		free(uv);
		free(dv);
		if (rc)
			break;
	}
	snprintf(p->used[rank], sizeof(p->used[rank]), "%s",
		 ibmc_comm_last_algo(c, "allreduce"));
	return ibmc_comm_free(c);
}

/* n ranks allreduce vectors of counts[0..ncounts) elements (NULL: the
 * default five) with algo; what: the counts, for the report. */
static void ar_counts(int n, const char *algo, uint32_t loss,
		      const size_t *counts, int ncounts, const char *what)
{
	struct ibmc_loopback_faults f = {
		.loss_ppm = loss, .dup_ppm = loss ? 20000 : 0,
		.reorder_ppm = loss ? 50000 : 0, .seed = 7 + loss + (uint64_t)n,
	};
	struct red p = { .algo = algo, .counts = counts, .ncounts = ncounts };
	double t0 = lbjob_now();
	int fails, r, same = 1, ran = 1, calls = counts ? ncounts : 5;

	lbjob_env(2, 2048);
	ibmc__loopback_set_faults(lbjob_hub(), &f);
	fails = lbjob_run(n, ar, &p);
	for (r = 1; r < n; r++)
		same &= p.res[r] && p.res[0] &&
			!memcmp(p.res[r], p.res[0], p.res_len);
	/* A named algorithm runs as named (1 rank: nothing to run). */
	for (r = 0; r < n; r++)
		ran &= n == 1 || !strcmp(algo, "auto") ||
		       !strcmp(p.used[r], algo);
	tap_ok(!fails && !p.bad && p.ok == n * calls && same && ran,
	       "allreduce %d ranks, %s (used %s), %.0f%% loss: %d/%d ok, %s (SUM, MAX in place, MAXLOC, BXOR exact; double SUM, float PROD, long double SUM bit-identical on all ranks: %s), %.2fs",
	       n, algo, p.used[0], loss / 1e4, (int)p.ok, n * calls, what,
	       same ? "yes" : "NO", lbjob_now() - t0);
	for (r = 0; r < n; r++)
		free(p.res[r]);
}

static void ar_case(int n, const char *algo, uint32_t loss)
{
	ar_counts(n, algo, loss, NULL, 5, "0..50000 elements");
}

/* Non-blocking ones in flight together, completed in reverse order. */
static int nb(ibmc_context_t *ctx, int rank, void *arg)
{
	int n = ibmc_context_size(ctx), r, rc;
	int32_t v[100], out[100];
	unsigned char all[MAXR * 10];
	unsigned char mine[10];
	ibmc_request_t *q[3];
	ibmc_comm_t *c;

	(void)arg;
	if (ibmc_comm_create(ctx, NULL, 0, &c))
		return 1;
	for (r = 0; r < 100; r++)
		v[r] = rank + r;
	memset(mine, rank, sizeof(mine));
	rc = ibmc_iallreduce(c, v, out, 100, IBMC_INT32, IBMC_SUM, &q[0]);
	rc = rc ?: ibmc_iallgather(c, mine, all, 10, &q[1]);
	rc = rc ?: ibmc_ibarrier(c, &q[2]);
	rc = rc ?: ibmc_wait(&q[2]) ?: ibmc_wait(&q[1]) ?: ibmc_wait(&q[0]);
	for (r = 0; !rc && r < 100; r++)
		if (out[r] != n * (n - 1) / 2 + n * r)
			rc = -EIO;
	for (r = 0; !rc && r < n * 10; r++)
		if (all[r] != r / 10)
			rc = -EIO;
	ibmc_comm_free(c);
	return rc != 0;
}

/* --- non-blocking calls that multicast ------------------------------ */

struct nbm {
	const char *ag_algo, *ar_algo;	/* set on the communicator */
	const char *ar_want;		/* what the allreduces must report */
	const size_t *sizes;		/* one round per block length */
	int nsizes;
	int poll;			/* no progress thread; ibmc_test, not
					 * ibmc_wait, moves the stages on */
	atomic_int ok, bad;
	char used_ag[MAXR][24], used_ar[MAXR][24];
};

/* What one rank holds for a round's calls. */
struct nbm_bufs {
	unsigned char *mine, *all, *all2, *bc, small[100], small_all[100 * MAXR];
	int32_t *iv, *io;
	int64_t mx[7];
	size_t cnt;
};

static int nbm_alloc(struct nbm_bufs *b, size_t bl, int n)
{
	b->cnt = bl / 4;
	b->mine = malloc(bl + 1);
	b->all = malloc(bl * (size_t)n + 1);
	b->all2 = malloc(bl * (size_t)n + 1);
	b->bc = malloc(bl + 1);
	b->iv = malloc(b->cnt * 4 + 4);
	b->io = malloc(b->cnt * 4 + 4);
	return b->mine && b->all && b->all2 && b->bc && b->iv && b->io ?
	       0 : -ENOMEM;
}

static void nbm_free(struct nbm_bufs *b)
{
	free(b->mine);
	free(b->all);
	free(b->all2);
	free(b->bc);
	free(b->iv);
	free(b->io);
}

/* Complete *q: by ibmc_wait, or by polling ibmc_test (bounded). */
static int finish(ibmc_request_t **q, int poll)
{
	double end = lbjob_now() + 60;
	int done = 0, rc = 0;

	if (!poll)
		return ibmc_wait(q);
	while (!rc && !done && lbjob_now() < end) {
		rc = ibmc_test(q, &done);
		if (!rc && !done)
			usleep(100);	/* the host's 2 cores are shared */
	}
	return rc ? rc : done ? 0 : -ETIMEDOUT;
}

/* A round's results, byte for byte: 0 or -EIO. */
static int nbm_check(const struct nbm_bufs *b, size_t bl, int n, int root,
		     size_t salt)
{
	size_t k;
	int r;

	for (r = 0; r < n; r++)
		for (k = 0; k < bl; k++)
			if (b->all[(size_t)r * bl + k] != byte_of(r, k, salt) ||
			    b->all2[(size_t)r * bl + k] !=
			    byte_of(r, k, salt + 1))
				return -EIO;
	for (k = 0; k < bl; k++)
		if (b->bc[k] != byte_of(root, k, salt + 2))
			return -EIO;
	for (r = 0; r < n; r++)
		for (k = 0; k < sizeof(b->small); k++)
			if (b->small_all[(size_t)r * sizeof(b->small) + k] !=
			    byte_of(r, k, salt + 3))
				return -EIO;
	for (k = 0; k < b->cnt; k++)
		if (b->io[k] != (int32_t)(1000 * n * (n - 1) / 2 + n * (int)k))
			return -EIO;
	for (k = 0; k < 7; k++)
		if (b->mx[k] != (int64_t)(n - 1) * 3 + (int64_t)k)
			return -EIO;
	return 0;
}

/*
 * Per round: an iallgather, an iallreduce and an ibcast in flight, then a
 * blocking allgather, an iallgather in place and a blocking allreduce
 * among them; the non-blocking ones waited for out of order. Every byte
 * checked; each non-blocking call's algorithm read after it alone
 * completed, and the calls counted once each (a call's stages are not
 * broadcasts or allgathers of their own).
 */
static int nbm_rank(ibmc_context_t *ctx, int rank, void *arg)
{
	struct nbm *p = arg;
	int n = ibmc_context_size(ctx), i, rc = 0, root;
	ibmc_comm_stats_t st0, st1;
	ibmc_request_t *q[4];
	ibmc_comm_t *c;
	size_t k, bl;

	if (ibmc_comm_create(ctx, NULL, 0, &c) ||
	    ibmc_comm_set_algo(c, "allgather", p->ag_algo) ||
	    ibmc_comm_set_algo(c, "allreduce", p->ar_algo))
		return 1;
	/* Alone first: what a non-blocking call of each runs. */
	{
		unsigned char one = (unsigned char)rank, ones[MAXR];
		int32_t v = rank, sum = 0;

		rc = ibmc_iallgather(c, &one, ones, 1, &q[0]) ?:
		     finish(&q[0], p->poll);
		snprintf(p->used_ag[rank], sizeof(p->used_ag[rank]), "%s",
			 ibmc_comm_last_algo(c, "allgather"));
		rc = rc ?: ibmc_iallreduce(c, &v, &sum, 1, IBMC_INT32,
					   IBMC_SUM, &q[0]) ?:
			  finish(&q[0], p->poll);
		snprintf(p->used_ar[rank], sizeof(p->used_ar[rank]), "%s",
			 ibmc_comm_last_algo(c, "allreduce"));
		for (i = 0; !rc && i < n; i++)
			if (ones[i] != i)
				rc = -EIO;
		if (!rc && sum != n * (n - 1) / 2)
			rc = -EIO;
	}
	ibmc_comm_get_stats(c, &st0);
	for (i = 0; !rc && i < p->nsizes; i++) {
		struct nbm_bufs b = { 0 };
		size_t salt = (size_t)i * 4;

		bl = p->sizes[i];
		root = i % n;
		rc = nbm_alloc(&b, bl, n);
		for (k = 0; !rc && k < bl; k++) {
			b.mine[k] = byte_of(rank, k, salt);
			b.all2[(size_t)rank * bl + k] = byte_of(rank, k, salt + 1);
			b.bc[k] = rank == root ? byte_of(root, k, salt + 2) : 0;
		}
		for (k = 0; !rc && k < b.cnt; k++)
			b.iv[k] = (int32_t)(rank * 1000 + (int)k);
		for (k = 0; k < sizeof(b.small); k++)
			b.small[k] = byte_of(rank, k, salt + 3);
		for (k = 0; k < 7; k++)
			b.mx[k] = (int64_t)rank * 3 + (int64_t)k;
		rc = rc ?: ibmc_iallgather(c, b.mine, b.all, bl, &q[0]);
		rc = rc ?: ibmc_iallreduce(c, b.iv, b.io, b.cnt, IBMC_INT32,
					   IBMC_SUM, &q[1]);
		rc = rc ?: ibmc_ibcast(c, b.bc, bl, root, &q[2]);
		rc = rc ?: ibmc_allgather(c, b.small, b.small_all,
					  sizeof(b.small));
		rc = rc ?: ibmc_iallgather(c, IBMC_IN_PLACE, b.all2, bl, &q[3]);
		rc = rc ?: ibmc_allreduce(c, IBMC_IN_PLACE, b.mx, 7,
					  IBMC_INT64, IBMC_MAX);
		rc = rc ?: finish(&q[3], p->poll) ?: finish(&q[1], p->poll) ?:
		     finish(&q[2], p->poll) ?: finish(&q[0], p->poll);
		rc = rc ?: nbm_check(&b, bl, n, root, salt);
		if (rc)
			fprintf(stderr, "# nbm rank %d round %d (%zu B): %s\n",
				rank, i, bl, strerror(-rc));
		nbm_free(&b);
	}
	ibmc_comm_get_stats(c, &st1);
	if (!rc && (st1.allgathers - st0.allgathers !=
		    3 * (uint64_t)p->nsizes ||
		    st1.allreduces - st0.allreduces !=
		    2 * (uint64_t)p->nsizes ||
		    (n > 1 && st1.bcasts - st0.bcasts != (uint64_t)p->nsizes))) {
		fprintf(stderr, "# nbm rank %d: counted %llu allgathers, %llu allreduces, %llu broadcasts\n",
			rank, (unsigned long long)(st1.allgathers - st0.allgathers),
			(unsigned long long)(st1.allreduces - st0.allreduces),
			(unsigned long long)(st1.bcasts - st0.bcasts));
		rc = -EIO;
	}
	atomic_fetch_add(rc ? &p->bad : &p->ok, 1);
	return ibmc_comm_free(c) || rc;
}

static void nbm_case(int n, const int *nodes, const char *where,
		     const char *ar_algo, const char *ar_want, uint32_t loss,
		     const size_t *sizes, int nsizes, const char *what,
		     int poll)
{
	struct ibmc_loopback_faults f = {
		.loss_ppm = loss, .dup_ppm = loss ? 20000 : 0,
		.reorder_ppm = loss ? 50000 : 0, .seed = 41 + loss + (uint64_t)n,
	};
	struct nbm p = { .ag_algo = "mcast", .ar_algo = ar_algo,
			 .ar_want = ar_want, .sizes = sizes, .nsizes = nsizes,
			 .poll = poll };
	double t0 = lbjob_now();
	int fails, r, same = 1;

	lbjob_env(2, 2048);
	if (nodes)
		lbjob_nodes(nodes, n);
	ibmc__loopback_set_faults(lbjob_hub(), &f);
	setenv("IBMCAST_PROGRESS_THREAD", poll ? "0" : "1", 1);
	fails = lbjob_run(n, nbm_rank, &p);
	unsetenv("IBMCAST_PROGRESS_THREAD");
	unsetenv("IBMCAST_LOOPBACK_NODES");
	for (r = 0; r < n; r++)
		same &= !strcmp(p.used_ag[r], "mcast") &&
			!strcmp(p.used_ar[r], ar_want);
	tap_ok(!fails && !p.bad && p.ok == n && same,
	       "non-blocking multicast, %d ranks %s, allreduce %s, %.0f%% loss: iallgather used %s, iallreduce used %s (want mcast, %s); with ibcast, blocking calls, in place, out of order, %s: %d/%d ok, %s, %.2fs",
	       n, where, ar_algo, loss / 1e4, p.used_ag[0], p.used_ar[0],
	       ar_want, poll ? "no progress thread, completed by ibmc_test" :
	       "ibmc_wait", (int)p.ok, n, what, lbjob_now() - t0);
}

/* Messages to other nodes (ibmc_comm_stats_t.messages_sent) summed over
 * the ranks of one call: each algorithm's count follows from its shape,
 * so it is checked exactly. */
struct msgs {
	const char *coll, *algo;
	atomic_ulong sum;
	atomic_int bad;
};

static int msgs_rank(ibmc_context_t *ctx, int rank, void *arg)
{
	struct msgs *m = arg;
	int n = ibmc_context_size(ctx);
	double *buf = calloc((size_t)n * 64, sizeof(double));
	ibmc_comm_stats_t st0, st1;
	ibmc_comm_t *c;
	int rc;

	(void)rank;
	if (!buf || ibmc_comm_create(ctx, NULL, 0, &c)) {
		free(buf);
		return 1;
	}
	rc = ibmc_comm_set_algo(c, m->coll, m->algo);
	ibmc_comm_get_stats(c, &st0);
	if (!rc && !strcmp(m->coll, "bcast"))
		rc = ibmc_bcast(c, buf, 64 * sizeof(double), 0);
	else if (!rc && !strcmp(m->coll, "allgather"))
		rc = ibmc_allgather(c, IBMC_IN_PLACE, buf, 64 * sizeof(double));
	else if (!rc)
		rc = ibmc_allreduce(c, IBMC_IN_PLACE, buf, 64, IBMC_DOUBLE,
				    IBMC_SUM);
	ibmc_comm_get_stats(c, &st1);
	if (rc)
		atomic_fetch_add(&m->bad, 1);
	atomic_fetch_add(&m->sum, st1.messages_sent - st0.messages_sent);
	free(buf);
	return ibmc_comm_free(c);
}

static void msgs_case(const char *coll, const char *algo, unsigned long want,
		      const char *why)
{
	static const int pairs[] = { 0, 0, 1, 1, 2, 2, 3, 3 };
	struct msgs m = { .coll = coll, .algo = algo };
	int fails;

	lbjob_env(2, 2048);
	lbjob_nodes(pairs, 8);
	fails = lbjob_run(8, msgs_rank, &m);
	unsetenv("IBMCAST_LOOPBACK_NODES");
	tap_ok(!fails && !m.bad && m.sum == want,
	       "%s %s, 8 ranks on 4 nodes of 2: %lu messages between nodes (%lu: %s)",
	       coll, algo, (unsigned long)m.sum, want, why);
}

static atomic_int mm_size, mm_inval, mm_other, mm_zero;
static double mm_secs[8];

/* What rank 1 passes differently from the others, and where. */
struct mm_case {
	const char *coll, *algo;
	int op;			/* allreduce: another operation, not count */
	int want;		/* every rank's error */
	const char *what;
	/* allreduce: counts on both sides of auto's line between recursive
	 * doubling and Rabenseifner (IBMC__AR_SHORT_BYTES, 2 KiB), so that
	 * members run different algorithms: 1: 1 KiB against 4 KiB; 2:
	 * 2 KiB against 4 KiB, whose halves (Rabenseifner's first round)
	 * are as long as the whole 2 KiB (recursive doubling's). */
	int cross;
};

static int mm_count(const struct mm_case *k, int rank)
{
	if (k->cross)
		return rank != 1 ? 1024 : k->cross == 1 ? 256 : 512;
	return k->op || rank != 1 ? 64 : 32;
}

/* The calls are the non-blocking ones and a wait. */
static int mm_nb;
/* IBMCAST_COMM_MODE for the job (NULL: the default, sm). */
static const char *mm_mode;

/* Members that disagree: every rank must fail with the error (the
 * collective runs to its end, the error travelling with the data; where
 * members ran different algorithms, each that sees it tells the others),
 * none may return a result, none may wait for the timeout. */
static int mismatch(ibmc_context_t *ctx, int rank, void *arg)
{
	const struct mm_case *k = arg;
	int32_t v[1024] = { 0 }, out[1024];
	ibmc_request_t *q;
	ibmc_comm_t *c;
	double t0;
	int rc;

	if (ibmc_comm_create(ctx, NULL, 0, &c))
		return 1;
	ibmc_comm_set_algo(c, k->coll, k->algo);
	t0 = lbjob_now();
	if (mm_nb && !strcmp(k->coll, "allgather"))
		rc = ibmc_iallgather(c, v, out, rank == 1 ? 128 : 256, &q) ?:
		     ibmc_wait(&q);
	else if (mm_nb)
		rc = ibmc_iallreduce(c, v, out, (size_t)mm_count(k, rank),
				     IBMC_INT32, k->op && rank == 1 ?
				     IBMC_MAX : IBMC_SUM, &q) ?: ibmc_wait(&q);
	else if (!strcmp(k->coll, "allgather"))
		rc = ibmc_allgather(c, v, out, rank == 1 ? 128 : 256);
	else if (!k->op)
		rc = ibmc_allreduce(c, v, out, (size_t)mm_count(k, rank),
				    IBMC_INT32, IBMC_SUM);
	else
		rc = ibmc_allreduce(c, v, out, 64, IBMC_INT32,
				    rank == 1 ? IBMC_MAX : IBMC_SUM);
	mm_secs[rank] = lbjob_now() - t0;
	atomic_fetch_add(rc == -EMSGSIZE ? &mm_size : rc == -EINVAL ?
			 &mm_inval : rc == 0 ? &mm_zero : &mm_other, 1);
	lbjob_barrier();
	ibmc_comm_free(c);
	return 0;
}

/* nodes: rank r on node nodes[r] (NULL: all on one); where: says so. */
static void mismatch_on(const struct mm_case *k, int n, const int *nodes,
			const char *where)
{
	double worst = 0;
	int i;

	mm_size = mm_inval = mm_other = mm_zero = 0;
	lbjob_env(2, 2048);
	if (mm_mode)
		setenv("IBMCAST_COMM_MODE", mm_mode, 1);
	if (nodes)
		lbjob_nodes(nodes, n);
	lbjob_run(n, mismatch, (void *)k);
	unsetenv("IBMCAST_LOOPBACK_NODES");
	for (i = 0; i < n; i++)
		if (mm_secs[i] > worst)
			worst = mm_secs[i];
	tap_ok((k->want == -EMSGSIZE ? mm_size : mm_inval) == n && worst < 1.5,
	       "%s %s%s, %s on rank 1 of %d%s: every rank fails with %s, none times out (%d EMSGSIZE, %d EINVAL, %d other errors, %d results; slowest %.3fs, timeout 2s)",
	       k->algo, mm_nb ? "i" : "", k->coll, k->what, n, where,
	       k->want == -EMSGSIZE ?
	       "EMSGSIZE" : "EINVAL", (int)mm_size, (int)mm_inval,
	       (int)mm_other, (int)mm_zero, worst);
}

static void mismatch_case(const struct mm_case *k, int n)
{
	mismatch_on(k, n, NULL, "");
}

int main(void)
{
	static const int ranks[] = { 1, 2, 3, 5, 8, 13, 16 };
	static const char *const ag_algos[] = { "ring", "recursive_doubling",
						"mcast", "auto" };
	static const char *const ar_algos[] = { "recursive_doubling", "mcast",
						"rabenseifner", "auto" };
	static const struct mm_case mm_cases[] = {
		{ "allreduce", "recursive_doubling", 0, -EMSGSIZE,
		  "another count", 0 },
		{ "allreduce", "recursive_doubling", 1, -EINVAL,
		  "another operation", 0 },
		{ "allreduce", "rabenseifner", 0, -EMSGSIZE, "another count", 0 },
		{ "allreduce", "mcast", 0, -EMSGSIZE, "another count", 0 },
		{ "allreduce", "mcast", 1, -EINVAL, "another operation", 0 },
		{ "allgather", "ring", 0, -EMSGSIZE, "another block length", 0 },
		{ "allgather", "recursive_doubling", 0, -EMSGSIZE,
		  "another block length", 0 },
		{ "allgather", "mcast", 0, -EMSGSIZE, "another block length", 0 },
		/* one broadcast a window: the error carried by an early
		 * window's broadcast, every later window still sent */
		{ "allgather", "mcast:1", 0, -EMSGSIZE, "another block length",
		  0 },
	};
	static const struct mm_case mm_node_cases[] = {
		{ "allgather", "shm_leader", 0, -EMSGSIZE,
		  "another block length", 0 },
		{ "allreduce", "shm_mcast", 0, -EMSGSIZE, "another count", 0 },
		{ "allreduce", "shm_mcast", 1, -EINVAL, "another operation", 0 },
	};
	/* Counts on both sides of auto's line: point-to-point auto (mode
	 * p2p), and the node leaders' reduce of shm_mcast. */
	static const struct mm_case mm_cross_cases[] = {
		{ "allreduce", "auto", 0, -EMSGSIZE,
		  "1 KiB against 4 KiB (recursive doubling against Rabenseifner)",
		  1 },
		{ "allreduce", "auto", 0, -EMSGSIZE,
		  "2 KiB against 4 KiB (rounds as long, algorithms apart)", 2 },
		{ "allreduce", "shm_mcast", 0, -EMSGSIZE,
		  "1 KiB against 4 KiB (the leaders' algorithms apart)", 1 },
		{ "allreduce", "shm_mcast", 0, -EMSGSIZE,
		  "2 KiB against 4 KiB (the leaders' algorithms apart)", 2 },
	};
	static const size_t big[] = { 16u << 20 }, big_count[] = { 2u << 20 },
			    small[] = { 0, 1, 3000 };
	static const size_t nb_sizes[] = { 0, 1, 3000, 200000 },
			    nb_small[] = { 0, 100, 70001 },
			    nb_big[] = { 4u << 20 };
	static const int uneven12[] = { 0, 1, 0, 2, 0, 0, 2, 0, 0, 2, 0, 0 },
			 uneven7[] = { 3, 0, 1, 2, 0, 3, 3 },
			 two4[] = { 0, 0, 1, 1 },
			 one_per[] = { 0, 1, 2, 3, 4, 5 },
			 one_per7[] = { 0, 1, 2, 3, 4, 5, 6 };
	int nodes64[64];
	unsigned i, j;
	int fails;

	setenv("IBMCAST_BCAST_TIMEOUT_MS", "20000", 1);
	for (i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++)
		for (j = 0; j < 4; j++)
			ag_case(ranks[i], ag_algos[j], 0, (int)(i + j) % 2);
	ag_case(7, "ring", 50000, 0);
	ag_case(8, "recursive_doubling", 200000, 1);
	ag_case(6, "mcast", 50000, 0);
	for (i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++)
		for (j = 0; j < 4; j++)
			ar_case(ranks[i], ar_algos[j], 0);
	ar_case(7, "recursive_doubling", 50000);
	ar_case(6, "recursive_doubling", 200000);
	ar_case(9, "mcast", 50000);
	ar_case(11, "rabenseifner", 50000);
	ar_case(6, "rabenseifner", 200000);

	/* The largest: 16 MiB a rank (allgather blocks; allreduce vectors
	 * of 2 Mi doubles, 8 MiB of int32). */
	for (j = 0; j < 3; j++)
		ag_sizes(3, ag_algos[j], 0, 0, big, 1, "16 MiB blocks");
	for (j = 0; j < 3; j++)
		ar_counts(3, ar_algos[j], 0, big_count, 1, "2 Mi elements");
	/* The most ranks: 64, 8 on each of 8 nodes. */
	for (i = 0; i < 64; i++)
		nodes64[i] = (int)i / 8;
	lbjob_nodes(nodes64, 64);
	ag_sizes(64, "shm_leader", 0, 0, small, 3, "0 B..3000 B");
	ag_sizes(64, "mcast", 0, 1, small, 3, "0 B..3000 B");
	ag_sizes(64, "auto", 0, 0, small, 3, "0 B..3000 B");
	/* The multicast allgather's broadcasts a window at a time: two at
	 * once, on uneven nodes and one per node, under loss. */
	lbjob_nodes(uneven12, 12);
	ag_sizes(12, "mcast:2", 50000, 1, small, 3,
		 "0 B..3000 B, 8+1+3 interleaved");
	unsetenv("IBMCAST_LOOPBACK_NODES");
	ag_case(7, "mcast:2", 50000, 0);
	ar_counts(64, "shm_mcast", 0, NULL, 5, "0..50000 elements");
	ar_counts(64, "auto", 0, NULL, 5, "0..50000 elements");
	unsetenv("IBMCAST_LOOPBACK_NODES");

	lbjob_env(2, 2048);
	fails = lbjob_run(6, nb, NULL);
	tap_ok(!fails, "iallreduce, iallgather and ibarrier in flight together, waited in reverse order");

	/* The non-blocking calls take the blocking calls' multicast
	 * layouts: one rank per node, several (uneven, the first rank not
	 * on the first node), under loss, 0 B to 4 MiB; and with no
	 * progress thread, ibmc_test alone moving the stages on. */
	nbm_case(1, one_per, "alone", "mcast", "mcast", 0, nb_small, 3,
		 "0 B..70001 B", 0);
	nbm_case(6, one_per, "one per node", "auto", "mcast", 0, nb_sizes, 4,
		 "0 B..200 kB", 0);
	nbm_case(5, one_per, "one per node", "mcast", "mcast", 50000,
		 nb_sizes, 4, "0 B..200 kB", 0);
	nbm_case(6, NULL, "on one node", "auto", "shm_mcast", 0, nb_small, 3,
		 "0 B..70001 B", 0);
	nbm_case(12, uneven12, "on nodes of 8+1+3 interleaved", "auto",
		 "shm_mcast", 0, nb_small, 3, "0 B..70001 B", 0);
	nbm_case(12, uneven12, "on nodes of 8+1+3 interleaved", "auto",
		 "shm_mcast", 0, nb_small, 3, "0 B..70001 B", 1);
	nbm_case(7, uneven7, "on nodes of 2+1+1+3, rank 0 not on node 0",
		 "shm_mcast", "shm_mcast", 50000, nb_small, 3, "0 B..70001 B",
		 0);
	nbm_case(4, two4, "two per node", "mcast", "mcast", 0, nb_big, 1,
		 "4 MiB blocks", 0);
	nbm_case(5, one_per, "one per node", "mcast", "mcast", 0, nb_sizes, 4,
		 "0 B..200 kB", 1);

	msgs_case("bcast", "binomial", 3,
		  "from rank 0: to ranks 2 and 4, and 4 to 6");
	msgs_case("bcast", "mcast", 1, "one multicast");
	msgs_case("bcast", "shm_mcast", 1, "one multicast");
	msgs_case("allgather", "ring", 28,
		  "every rank sends 7, on 4 of the 8 hops to another node");
	msgs_case("allgather", "recursive_doubling", 16,
		  "8 ranks, 2 of 3 steps to another node");
	msgs_case("allgather", "shm_leader", 8, "4 leaders, 2 steps");
	msgs_case("allgather", "mcast", 4, "one multicast a node");
	msgs_case("allreduce", "recursive_doubling", 16,
		  "8 ranks, 2 of 3 steps to another node");
	msgs_case("allreduce", "rabenseifner", 32,
		  "recursive halving, then doubling: 16 each");
	msgs_case("allreduce", "mcast", 4,
		  "the binomial reduce crosses nodes 3 times, one multicast");
	msgs_case("allreduce", "shm_mcast", 9,
		  "4 leaders, 2 steps, one multicast");

	setenv("IBMCAST_BCAST_TIMEOUT_MS", "2000", 1);
	for (i = 0; i < sizeof(mm_cases) / sizeof(mm_cases[0]); i++) {
		mismatch_case(&mm_cases[i], 4);
		mismatch_case(&mm_cases[i], 7);
	}
	/* The multicast ones through the non-blocking calls too, and on
	 * nodes: rank 1's node-mate sees the disagreement in the segment,
	 * the other node only through the broadcasts; with one rank per
	 * node, one broadcast each. */
	for (j = 0; j < 2; j++) {
		mm_nb = (int)j;
		for (i = 0; i < sizeof(mm_cases) / sizeof(mm_cases[0]); i++) {
			if (strncmp(mm_cases[i].algo, "mcast", 5))
				continue;
			if (mm_nb) {
				mismatch_case(&mm_cases[i], 4);
				mismatch_case(&mm_cases[i], 7);
			}
			mismatch_on(&mm_cases[i], 4, two4, ", 2 per node");
			mismatch_on(&mm_cases[i], 7, one_per7, ", 1 per node");
		}
	}
	mm_nb = 0;
	/* The node-leader algorithms: a disagreement inside a node (rank 1
	 * and its node-mate) and across nodes (one rank per node); a
	 * leader that saw it still runs every network step, with its
	 * sends flagged, so that every other node learns it at once. */
	for (i = 0; i < sizeof(mm_node_cases) / sizeof(mm_node_cases[0]); i++) {
		mismatch_on(&mm_node_cases[i], 4, two4, ", 2 per node");
		mismatch_on(&mm_node_cases[i], 7, uneven7, ", uneven nodes");
		mismatch_on(&mm_node_cases[i], 7, one_per7, ", 1 per node");
	}

	for (i = 0; i < sizeof(mm_cross_cases) / sizeof(mm_cross_cases[0]);
	     i++) {
		const struct mm_case *k = &mm_cross_cases[i];

		if (!strcmp(k->algo, "auto")) {
			mm_mode = "p2p";
			mismatch_case(k, 4);
			mismatch_case(k, 7);
			mm_nb = 1;
			mismatch_case(k, 7);
			mm_nb = 0;
			mm_mode = NULL;
		} else {
			mismatch_on(k, 7, one_per7, ", 1 per node");
			mismatch_on(k, 4, two4, ", 2 per node");
		}
	}

	/* The one rule the MPI integrations ask before taking a call. */
	tap_ok(!ibmc_op_valid(IBMC_SUM, IBMC_LONG_DOUBLE) &&
	       !ibmc_op_valid(IBMC_BXOR, IBMC_UINT8) &&
	       !ibmc_op_valid(IBMC_LAND, IBMC_INT64) &&
	       !ibmc_op_valid(IBMC_MAXLOC, IBMC_LONG_DOUBLE_INT),
	       "ibmc_op_valid: arithmetic on numbers, logic on integers, MAXLOC on pairs");
	tap_ok(ibmc_op_valid(IBMC_SUM, IBMC_2INT) == -EINVAL &&
	       ibmc_op_valid(IBMC_BAND, IBMC_DOUBLE) == -EINVAL &&
	       ibmc_op_valid(IBMC_LOR, IBMC_FLOAT) == -EINVAL &&
	       ibmc_op_valid(IBMC_MINLOC, IBMC_INT32) == -EINVAL &&
	       ibmc_op_valid((ibmc_op_t)99, IBMC_INT32) == -EINVAL &&
	       ibmc_op_valid(IBMC_SUM, (ibmc_dtype_t)99) == -EINVAL,
	       "ibmc_op_valid: EINVAL for sums of pairs, bitwise or logical floats, MINLOC on a number, unknown values");
	tap_plan(tap__n);
	return tap_done();
}
