/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibmc_bcast on the loopback transport without faults: every root, sizes
 * around both fragment boundaries (multicast group MTU 2048, unicast MTU
 * 4096), 2 to 32 ranks including non-powers of two, every algorithm,
 * 64 MiB once, and several communicators broadcasting at once from two
 * threads of each rank.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

#define HDR 36
#define GROUP_MTU 2048
#define TR_MTU 4096

struct plan {
	const char *algo;
	const size_t *sizes;
	int nsizes;
	int roots;		/* 0: every root, else this many */
	atomic_int bad;
	atomic_int ok;
	atomic_int mcast_used;
};

static int one_bcast(ibmc_comm_t *c, int root, size_t len, uint32_t seed,
		     const char *what)
{
	unsigned char *buf = malloc(len ? len : 1);
	int rc, me = ibmc_comm_rank(c);
	long at;

	if (!buf)
		return -ENOMEM;
	if (me == root)
		lbjob_fill(buf, len, seed);
	else
		memset(buf, 0xee, len);
	rc = ibmc_bcast(c, buf, len, root);
	if (rc) {
		fprintf(stderr, "# %s: rank %d root %d len %zu: %s\n", what,
			me, root, len, strerror(-rc));
	} else if ((at = lbjob_check(buf, len, seed)) >= 0) {
		fprintf(stderr, "# %s: rank %d root %d len %zu: byte %ld differs\n",
			what, me, root, len, at);
		rc = -EBADMSG;
	}
	free(buf);
	return rc;
}

static int run_plan(ibmc_context_t *ctx, int rank, void *arg)
{
	struct plan *p = arg;
	ibmc_comm_t *c;
	int n = ibmc_context_size(ctx), root, i, rc, roots;

	rc = ibmc_comm_create(ctx, NULL, 0, &c);
	if (rc)
		return rc;
	if (ibmc_comm_set_bcast_algo(c, p->algo))
		return -EINVAL;
	roots = p->roots && p->roots < n ? p->roots : n;
	for (root = 0; root < roots; root++) {
		int r = p->roots ? (root * 7 + 3) % n : root;

		for (i = 0; i < p->nsizes; i++) {
			rc = one_bcast(c, r, p->sizes[i],
				       (uint32_t)(r * 1000 + i), p->algo);
			if (rc)
				atomic_fetch_add(&p->bad, 1);
			else
				atomic_fetch_add(&p->ok, 1);
			if (!rc && !strcmp(ibmc_comm_last_bcast_algo(c),
					   "mcast"))
				atomic_fetch_add(&p->mcast_used, 1);
		}
	}
	return ibmc_comm_free(c);
}

static const size_t edge_sizes[] = {
	0, 1, GROUP_MTU - HDR - 1, GROUP_MTU - HDR, GROUP_MTU - HDR + 1,
	TR_MTU - HDR - 1, TR_MTU - HDR, TR_MTU - HDR + 1, 100000,
};
static const size_t big_sizes[] = { 1 << 20 };
static const size_t huge_sizes[] = { 64u << 20 };

static void case_run(int n, const char *algo, const size_t *sizes,
		     int nsizes, int roots, int want_mcast)
{
	struct plan p = { .algo = algo, .sizes = sizes, .nsizes = nsizes,
			  .roots = roots };
	double t0 = lbjob_now();
	int bad;

	lbjob_env(2, GROUP_MTU);
	bad = lbjob_run(n, run_plan, &p);
	tap_ok(!bad && !p.bad && p.ok > 0,
	       "%d ranks, %s, %d sizes from %zu to %zu, %s roots: %d ok, %d bad (%.2fs)",
	       n, algo, nsizes, sizes[0], sizes[nsizes - 1],
	       roots ? "some" : "all", (int)p.ok, (int)p.bad + bad,
	       lbjob_now() - t0);
	if (want_mcast >= 0)
		tap_ok(want_mcast ? p.mcast_used == p.ok : !p.mcast_used,
		       "  ... multicast used %d of %d times", (int)p.mcast_used,
		       (int)p.ok);
}

/* Several communicators at once: world, plus halves (first/second) and
 * a second world-sized one; a helper thread per rank broadcasts on its
 * half while the rank's thread broadcasts on the two world communicators
 * alternately. */
struct multi {
	atomic_int bad;
	atomic_int ok;
};

struct half_arg {
	ibmc_comm_t *c;
	struct multi *m;
};

static void *half_thread(void *p)
{
	struct half_arg *h = p;
	int i, n = ibmc_comm_size(h->c);

	for (i = 0; i < 12; i++) {
		if (one_bcast(h->c, i % n, (size_t)(i * 3001) % 20000,
			      (uint32_t)(7000 + i), "half"))
			atomic_fetch_add(&h->m->bad, 1);
		else
			atomic_fetch_add(&h->m->ok, 1);
	}
	return NULL;
}

static int run_multi(ibmc_context_t *ctx, int rank, void *arg)
{
	struct multi *m = arg;
	int n = ibmc_context_size(ctx), first = rank < n / 2, i, k = 0;
	int members[64];
	ibmc_comm_t *w1, *w2, *half;
	struct half_arg ha;
	pthread_t t;

	if (ibmc_comm_create(ctx, NULL, 0, &w1) ||
	    ibmc_comm_create(ctx, NULL, 0, &w2))
		return -1;
	for (i = 0; i < n; i++)
		if ((i < n / 2) == first)
			members[k++] = i;
	if (ibmc_comm_create(ctx, members, k, &half))
		return -1;
	ibmc_comm_set_bcast_algo(w2, "binomial");
	ha.c = half;
	ha.m = m;
	pthread_create(&t, NULL, half_thread, &ha);
	for (i = 0; i < 12; i++) {
		ibmc_comm_t *c = i % 2 ? w2 : w1;

		if (one_bcast(c, (i * 5) % n, (size_t)(i * 7919) % 30000,
			      (uint32_t)(9000 + i), "world"))
			atomic_fetch_add(&m->bad, 1);
		else
			atomic_fetch_add(&m->ok, 1);
	}
	pthread_join(t, NULL);
	ibmc_comm_free(half);
	ibmc_comm_free(w2);
	ibmc_comm_free(w1);
	return 0;
}

/* Member lists ibmc_comm_create must refuse (-EINVAL, nothing created)
 * and one it must take: a permutation, the caller anywhere in it. */
static int run_lists(ibmc_context_t *ctx, int rank, void *arg)
{
	int n = ibmc_context_size(ctx), bad = 0, i, rc;
	int dup[] = { rank, (rank + 1) % n, rank };
	int range[] = { rank, n };
	int neg[] = { -1, rank };
	int other[] = { (rank + 1) % n };
	int *perm = malloc(sizeof(int) * (size_t)n);
	ibmc_comm_t *c = NULL;

	(void)arg;
	if (!perm)
		return -ENOMEM;
	bad += ibmc_comm_create(ctx, dup, 3, &c) != -EINVAL || c;
	bad += ibmc_comm_create(ctx, range, 2, &c) != -EINVAL || c;
	bad += ibmc_comm_create(ctx, neg, 2, &c) != -EINVAL || c;
	bad += ibmc_comm_create(ctx, other, 1, &c) != -EINVAL || c;
	for (i = 0; i < n; i++)
		perm[i] = (i * 5 + 3) % n;	/* (5 is prime to n) */
	rc = ibmc_comm_create(ctx, perm, n, &c);
	if (!rc) {
		bad += ibmc_comm_size(c) != n ||
		       perm[ibmc_comm_rank(c)] != rank;
		bad += one_bcast(c, 0, 3000, 77, "permuted") != 0;
		bad += ibmc_comm_free(c) != 0;
	} else {
		bad++;
	}
	free(perm);
	return bad ? -EINVAL : 0;
}

int main(void)
{
	static const int ranks[] = { 2, 3, 5, 8, 13 };
	static const char *const algos[] = { "mcast", "binomial", "postal",
					     "auto" };
	struct multi m = { 0 };
	unsigned i, j;
	int bad;

	setenv("IBMCAST_BCAST_TIMEOUT_MS", "30000", 1);
	unsetenv("IBMCAST_BCAST_ALGO");
	for (i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++)
		for (j = 0; j < sizeof(algos) / sizeof(algos[0]); j++)
			case_run(ranks[i], algos[j], edge_sizes,
				 sizeof(edge_sizes) / sizeof(edge_sizes[0]), 0,
				 !strcmp(algos[j], "mcast") ? 1 :
				 !strcmp(algos[j], "auto") ? -1 : 0);
	case_run(32, "mcast", edge_sizes, 9, 3, 1);
	case_run(32, "postal", edge_sizes, 9, 2, 0);
	case_run(32, "auto", big_sizes, 1, 2, 1);
	case_run(7, "binomial", big_sizes, 1, 0, 0);
	case_run(3, "mcast", huge_sizes, 1, 1, 1);

	lbjob_env(4, GROUP_MTU);
	bad = lbjob_run(6, run_multi, &m);
	tap_ok(!bad && !m.bad && m.ok == 6 * 24,
	       "3 communicators at once from 2 threads per rank: %d ok, %d bad",
	       (int)m.ok, (int)m.bad + bad);

	lbjob_env(4, GROUP_MTU);
	bad = lbjob_run(7, run_lists, NULL);
	tap_ok(!bad, "member lists with a rank twice, out of range or without "
	       "the caller are refused; a permutation broadcasts");

	tap_plan(tap__n);
	return tap_done();
}
