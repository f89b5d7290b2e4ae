/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The barrier collective: its algorithm table, auto's choice by
 * measurement, and ibmc_barrier()/ibmc_ibarrier().
 *
 * Auto measures: the first blocking barrier of a communicator whose size
 * and node layout have not been measured yet times a few trial barriers
 * of each candidate (n-way for n = 1 .. min(8, P-1), and the multicast
 * release when the communicator may multicast); rank 0's medians decide
 * and a broadcast shares the decision, which every member caches in its
 * context for that size and node layout. Whether a communicator measures
 * is rank 0's cache's answer, broadcast first: members' caches differ
 * (each holds the layouts of the communicators that rank was in), and a
 * member new to a layout must not measure while the others run a cached
 * barrier. Measuring there, not at
 * communicator creation, keeps creation free of traffic (no join, no test,
 * no wait) and costs nothing to communicators that never call a barrier;
 * IBMCAST_BARRIER_MEASURE=create measures at creation instead. A
 * non-blocking barrier never measures nor looks at the cache: it uses
 * what was decided on its communicator, or the 1-way dissemination.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "libjob/coll/barrier.h"
#include "libjob/coll/coll.h"
#include "libjob/comm.h"
#include "libjob/mcast_switch.h"
#include "libjob/model.h"
#include "libjob/task.h"

static const struct ibmc__algo_desc algos[] = {
	{ IBMC__BA_NWAY, "nway",
	  "n-way dissemination (seed 004): ceil(log_{n+1} P) rounds of n messages; nway:N fixes n",
	  1, IBMC__NWAY_MAX },
	{ IBMC__BA_MCAST, "mcast",
	  "arrivals up a binomial tree, release by one multicast", 0, 0 },
};

const struct ibmc__coll_desc ibmc__barrier_desc = {
	.coll = IBMC__C_BARRIER,
	.name = "barrier",
	.env = "IBMCAST_BARRIER_ALGO",
	.algos = algos,
	.nalgos = sizeof(algos) / sizeof(algos[0]),
};

#define TRIALS 3		/* timed trial barriers per candidate */
#define GAIN 0.95		/* a larger n must be 5% faster than 1-way */

static int clamp_n(const struct ibmc_comm *c, int n)
{
	int max = c->size > 1 ? c->size - 1 : 1;

	if (n < 1)
		n = 1;
	if (n > IBMC__NWAY_MAX)
		n = IBMC__NWAY_MAX;
	return n > max ? max : n;
}

/* The algorithm and n a barrier on c uses now. */
static void resolve(const struct ibmc_comm *c, int *algo, int *n)
{
	int a = c->algo[IBMC__C_BARRIER], p = c->algo_param[IBMC__C_BARRIER];

	*algo = a ? a : (c->bar_n ? c->bar_algo : IBMC__BA_NWAY);
	*n = clamp_n(c, p ? p : (c->bar_n ? c->bar_n : 1));
}

static int start(struct ibmc_comm *c, int algo, int n,
		 struct ibmc_request *req)
{
	struct ibmc__args args = { .param = n };
	const struct ibmc__task_ops *ops = algo == IBMC__BA_MCAST ?
		&ibmc__barrier_mcast_ops : &ibmc__barrier_nway_ops;

	return ibmc__task_start(c, IBMC__C_BARRIER, algo, ops, &args, NULL,
				req);
}

/* One blocking barrier with this algorithm; ctx->lock held. */
static int run(struct ibmc_comm *c, int algo, int n)
{
	struct ibmc_request req = { 0 };
	int rc = start(c, algo, n, &req);

	return rc ? rc : ibmc__wait(&req);
}

static int needs_measuring(const struct ibmc_comm *c)
{
	int a = c->algo[IBMC__C_BARRIER];

	if (c->size < 3 || c->bar_n)
		return 0;
	return a == 0 || (a == IBMC__BA_NWAY && !c->algo_param[IBMC__C_BARRIER]);
}

/*
 * What the measurement depends on, for its cache: the communicator's size
 * and how its ranks fall on nodes (each member's node numbered by first
 * appearance: block, cyclic and uneven placements differ), the same on
 * every member since node names went round at ibmc_init.
 */
static uint32_t layout_key(const struct ibmc_comm *c)
{
	const uint32_t *node = c->ctx->node;
	uint32_t h = ibmc__fnv1a32(IBMC__FNV32_INIT, &c->size, sizeof(c->size));
	int i, j, id, nid = 0;
	int *ids = malloc(sizeof(int) * (size_t)c->size);

	for (i = 0; i < c->size; i++) {
		id = -1;
		for (j = 0; ids && j < i && id < 0; j++)
			if (node[c->members[j]] == node[c->members[i]])
				id = ids[j];
		if (id < 0)
			id = nid++;
		if (ids)
			ids[i] = id;
		h = ibmc__fnv1a32(h, &id, sizeof(id));
	}
	free(ids);
	return h;
}

static int cache_find(struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;
	uint32_t key = layout_key(c);
	int i;

	for (i = 0; i < ctx->nbar_cache; i++)
		if (ctx->bar_cache[i].key == key) {
			c->bar_algo = ctx->bar_cache[i].algo;
			c->bar_n = ctx->bar_cache[i].n;
			return 1;
		}
	return 0;
}

static void cache_add(struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;
	uint32_t key = layout_key(c);
	int i = ctx->nbar_cache;

	if (i == (int)(sizeof(ctx->bar_cache) / sizeof(ctx->bar_cache[0])))
		i = (int)(key % (unsigned)i);	/* full: replace one */
	else
		ctx->nbar_cache++;
	ctx->bar_cache[i].key = key;
	ctx->bar_cache[i].algo = c->bar_algo;
	ctx->bar_cache[i].n = c->bar_n;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* What trials are timed with: on a transport that models time (the
 * simulated fabric) the modeled clock in ns, since wall time there
 * measures one data-plane process and this host's load, not the fabric
 * (ibmcast-dataplane(8)); else monotonic us. Only ratios are compared. */
static int64_t trial_clock(const struct ibmc_comm *c)
{
	uint64_t m = ibmc__model_clock(c->ctx);

	return m ? (int64_t)m : ibmc__task_now();
}

/* Median time of TRIALS barriers after one warm-up; lock held. */
static int trial(struct ibmc_comm *c, int algo, int n, int64_t *median)
{
	int64_t t[TRIALS], t0;
	int i, rc = run(c, algo, n);

	for (i = 0; !rc && i < TRIALS; i++) {
		t0 = trial_clock(c);
		rc = run(c, algo, n);
		t[i] = trial_clock(c) - t0;
	}
	if (rc)
		return rc;
	qsort(t, TRIALS, sizeof(t[0]), cmp_i64);
	*median = t[TRIALS / 2];
	return 0;
}

/*
 * Measure the candidates on c (collective, lock held) and set
 * c->bar_algo/bar_n from rank 0's medians. What the trials add to the
 * communicator's counters is taken back: they are not the caller's.
 */
static int measure(struct ibmc_comm *c)
{
	struct ibmc__inner_mark mark;
	int64_t best = 0, m;
	int n, nmax = clamp_n(c, IBMC__NWAY_MAX), rc = 0;
	int best_algo = IBMC__BA_NWAY, best_n = 1;
	uint32_t choice;
	struct ibmc_request req = { 0 };

	ibmc__inner_begin(c, &mark);
	for (n = 1; !rc && n <= nmax; n++) {
		rc = trial(c, IBMC__BA_NWAY, n, &m);
		if (!rc && (n == 1 || m < best * GAIN)) {
			best = m;
			best_n = n;
		}
	}
	if (!rc && c->algo[IBMC__C_BARRIER] == 0 && !c->mcast_err &&
	    c->ghandle >= 0) {
		rc = trial(c, IBMC__BA_MCAST, 1, &m);
		if (!rc && m < best * GAIN) {
			best_algo = IBMC__BA_MCAST;
			best_n = 1;
		}
	}
	if (rc)
		goto out;
	/* Rank 0's view decides, for everyone. */
	choice = (uint32_t)(best_algo << 8 | best_n);
	rc = ibmc__bcast_start(c, &choice, sizeof(choice), 0, &req);
	if (!rc)
		rc = ibmc__wait(&req);
	if (rc)
		goto out;
	c->bar_algo = (int)(choice >> 8);
	c->bar_n = clamp_n(c, (int)(choice & 0xff));
	if (c->bar_algo != IBMC__BA_NWAY && c->bar_algo != IBMC__BA_MCAST)
		c->bar_algo = IBMC__BA_NWAY;
	cache_add(c);
out:
	ibmc__inner_end(c, &mark);
	return rc;
}

/*
 * Auto's choice for c, the same on every member (collective, lock held):
 * rank 0 broadcasts the choice its cache holds for c's layout, or 0 (no
 * choice encodes as 0: n >= 1), and then all measure together.
 */
static int decide(struct ibmc_comm *c)
{
	struct ibmc__inner_mark mark;
	struct ibmc_request req = { 0 };
	uint32_t cached = 0;
	int rc;

	if (c->rank == 0 && cache_find(c))
		cached = (uint32_t)(c->bar_algo << 8 | c->bar_n);
	c->bar_algo = c->bar_n = 0;
	ibmc__inner_begin(c, &mark);
	rc = ibmc__bcast_start(c, &cached, sizeof(cached), 0, &req);
	if (!rc)
		rc = ibmc__wait(&req);
	ibmc__inner_end(c, &mark);
	if (rc)
		return rc;
	if (!cached)
		return measure(c);
	c->bar_algo = (int)(cached >> 8);
	c->bar_n = clamp_n(c, (int)(cached & 0xff));
	if (c->bar_algo != IBMC__BA_NWAY && c->bar_algo != IBMC__BA_MCAST)
		c->bar_algo = IBMC__BA_NWAY;
	return 0;
}

/* At communicator creation, with IBMCAST_BARRIER_MEASURE=create; lock
 * held. */
int ibmc__barrier_measure_now(struct ibmc_comm *c)
{
	return needs_measuring(c) ? decide(c) : 0;
}

int ibmc_barrier(ibmc_comm_t *c)
{
	int rc = 0, algo, n;

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->ctx->lock);
	rc = ibmc__switch_gate(c);
	if (!rc && needs_measuring(c))
		rc = decide(c);
	if (!rc) {
		resolve(c, &algo, &n);
		rc = run(c, algo, n);
	}
	pthread_mutex_unlock(&c->ctx->lock);
	return rc;
}

int ibmc_ibarrier(ibmc_comm_t *c, ibmc_request_t **out)
{
	struct ibmc_request *req;
	int rc, algo, n;

	if (!c || !out)
		return -EINVAL;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->heap = 1;
	pthread_mutex_lock(&c->ctx->lock);
	rc = ibmc__switch_gate(c);
	if (!rc) {
		resolve(c, &algo, &n);
		rc = start(c, algo, n, req);
	}
	pthread_mutex_unlock(&c->ctx->lock);
	if (rc) {
		free(req);
		return rc;
	}
	*out = req;
	return 0;
}
