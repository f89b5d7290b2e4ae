/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The allreduce collective: its algorithm table, auto's choice, and
 * ibmc_allreduce()/ibmc_iallreduce().
 *
 * "mcast" reduces to rank 0 up a binomial tree (coll/allreduce_tree.c)
 * and multicasts the result with the reliable broadcast engine: the
 * result crosses each link of the group's tree once, where recursive
 * doubling moves whole vectors log2 P times. Auto multicasts when the
 * communicator may (the same answer on every member) from 4 ranks on,
 * else recursive doubling for vectors up to IBMC__AR_SHORT_BYTES and
 * reduce-scatter + allgather ("rabenseifner") above. A non-blocking allreduce never multicasts (two
 * collectives in a row would need a compound request).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/coll/allreduce.h"
#include "libjob/coll/coll.h"
#include "libjob/comm.h"
#include "libjob/mcast_switch.h"
#include "libjob/reduce.h"
#include "libjob/task.h"
#include "libjob/topo.h"

static const struct ibmc__algo_desc algos[] = {
	{ IBMC__AR_RD, "recursive_doubling",
	  "flat recursive doubling, whole vectors, log2 P rounds (baseline)",
	  0, 0 },
	{ IBMC__AR_MCAST, "mcast",
	  "reduce up a binomial tree to rank 0, the result by one multicast",
	  0, 0 },
	{ IBMC__AR_SHM_MCAST, "shm_mcast",
	  "node shared-memory reduce, node leaders' reduce, result by multicast",
	  0, 0 },
	{ IBMC__AR_RABENSEIFNER, "rabenseifner",
	  "flat reduce-scatter + allgather, 2 log2 P rounds of pieces (baseline)",
	  0, 0 },
};

const struct ibmc__coll_desc ibmc__allreduce_desc = {
	.coll = IBMC__C_ALLREDUCE,
	.name = "allreduce",
	.env = "IBMCAST_ALLREDUCE_ALGO",
	.algos = algos,
	.nalgos = sizeof(algos) / sizeof(algos[0]),
};

void ibmc__ar_place(const struct ibmc__ar_args *a, const struct ibmc_comm *c,
		    int *size, int *rank)
{
	*size = a->group ? a->gsize : c->size;
	*rank = a->group ? a->grank : c->rank;
}

int ibmc__ar_member(const struct ibmc__ar_args *a, int i)
{
	return a->group ? a->group[i] : i;
}

void ibmc__ar_count(struct ibmc_comm *c, int rc, int algo)
{
	if (!rc)
		c->st.allreduces++;
	c->last_algo[IBMC__C_ALLREDUCE] = algo;
	c->last_param[IBMC__C_ALLREDUCE] = 0;
}

uint32_t ibmc__ar_tag(const struct ibmc__ar_args *a, int round)
{
	return (uint32_t)round | (uint32_t)a->dtype << 16 |
	       (uint32_t)a->op << 24;
}

/* The point-to-point algorithms: the named one, or auto's by size. */
static int p2p_algo(int a, size_t len)
{
	if (a == IBMC__AR_RD || a == IBMC__AR_RABENSEIFNER)
		return a;
	return len <= IBMC__AR_SHORT_BYTES ? IBMC__AR_RD :
	       IBMC__AR_RABENSEIFNER;
}

static int choose(struct ibmc_comm *c, int blocking, size_t len)
{
	int a = c->algo[IBMC__C_ALLREDUCE];
	int mc = !c->mcast_err && c->ghandle >= 0;
	const struct ibmc__topo *t;

	/* Auto takes node shared memory when some node holds two members
	 * and, for a blocking call, the result can be multicast (a
	 * non-blocking one gets it through the segment). */
	if (a == IBMC__AR_SHM_MCAST || (!a && (mc || !blocking))) {
		t = ibmc__comm_topo(c);
		if (t && (a == IBMC__AR_SHM_MCAST || t->max_local >= 2))
			return IBMC__AR_SHM_MCAST;
	}
	if (blocking && mc && (a == IBMC__AR_MCAST || (!a && c->size >= 4)))
		return IBMC__AR_MCAST;
	return p2p_algo(a, len);
}

static int check(const ibmc_comm_t *c, const void *sendbuf, void *recvbuf,
		 size_t count, ibmc_dtype_t dtype, ibmc_op_t op)
{
	size_t es = ibmc__dtype_size(dtype);

	if (!c || ibmc_op_valid(op, dtype))
		return -EINVAL;
	if (count && (!recvbuf || !sendbuf))
		return -EINVAL;
	if (count > UINT32_MAX / es)
		return -EMSGSIZE;
	return 0;
}

/* The task's arguments; recvbuf gets this rank's vector. */
static struct ibmc__ar_args *args_new(const void *sendbuf, void *recvbuf,
				      size_t count, ibmc_dtype_t dtype,
				      ibmc_op_t op)
{
	struct ibmc__ar_args *a = malloc(sizeof(*a));
	size_t len = count * ibmc__dtype_size(dtype);

	if (!a)
		return NULL;
	a->dtype = dtype;
	a->op = op;
	a->count = count;
	a->buf = recvbuf;
	a->group = NULL;
	a->gsize = a->grank = 0;
	a->to_root = 0;
	if (sendbuf != IBMC_IN_PLACE && len)
		memmove(recvbuf, sendbuf, len);
	return a;
}

/* The one task that runs a whole call of algo (not the multicasting
 * ones, blocking). */
static const struct ibmc__task_ops *task_ops(int algo)
{
	if (algo == IBMC__AR_SHM_MCAST)
		return &ibmc__allreduce_shm_ops;
	return algo == IBMC__AR_RABENSEIFNER ? &ibmc__allreduce_rab_ops :
	       &ibmc__allreduce_rd_ops;
}

static int start(ibmc_comm_t *c, const struct ibmc__task_ops *ops,
		 struct ibmc__ar_args *a, int algo, int param,
		 struct ibmc_request *req)
{
	struct ibmc__args args = {
		.buf = a->buf, .len = a->count * ibmc__dtype_size(a->dtype),
		.param = param,
	};

	return ibmc__task_start(c, IBMC__C_ALLREDUCE, algo, ops, &args, a,
				req);
}

/* Reduce to rank 0 (up a tree, or through node shared memory and then up
 * the node leaders' tree), then broadcast the result by multicast (the
 * broadcast engine falls back to point-to-point where it must); lock
 * held. */
static int mcast_allreduce(ibmc_comm_t *c, struct ibmc__ar_args *a,
			   int algo)
{
	struct ibmc_request req = { 0 };
	size_t len = a->count * ibmc__dtype_size(a->dtype);
	void *buf = a->buf;
	struct ibmc__inner_mark mark;
	int rc, bad;

	ibmc__inner_begin(c, &mark);
	rc = start(c, algo == IBMC__AR_SHM_MCAST ? &ibmc__allreduce_shm_ops :
		   &ibmc__allreduce_tree_ops, a, algo, 0, &req);
	if (!rc)
		rc = ibmc__wait(&req);
	/* Members that disagree (count, datatype, operation) are seen only
	 * on the way up, by some ranks; the others wait for the broadcast:
	 * it still goes, carrying the root's error to every member. */
	if (rc && rc != -EMSGSIZE && rc != -EINVAL)
		goto out;
	bad = rc;
	memset(&req, 0, sizeof(req));
	rc = ibmc__bcast_start_error(c, buf, len, 0, c->rank ? 0 : bad, &req);
	if (!rc)
		rc = ibmc__wait(&req);
	if (!rc)
		rc = bad;
out:
	ibmc__inner_end(c, &mark, false);
	ibmc__ar_count(c, rc, algo);
	return rc;
}

int ibmc_allreduce(ibmc_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t count, ibmc_dtype_t dtype, ibmc_op_t op)
{
	struct ibmc_request req = { 0 };
	struct ibmc__ar_args *a;
	int rc = check(c, sendbuf, recvbuf, count, dtype, op), algo;

	if (rc)
		return rc;
	pthread_mutex_lock(&c->ctx->lock);
	rc = ibmc__switch_gate(c);
	if (rc)
		goto out;
	a = args_new(sendbuf, recvbuf, count, dtype, op);
	if (!a) {
		rc = -ENOMEM;
	} else if ((algo = choose(c, 1, count * ibmc__dtype_size(dtype))) ==
		   IBMC__AR_MCAST || algo == IBMC__AR_SHM_MCAST) {
		rc = mcast_allreduce(c, a, algo);
	} else {
		rc = start(c, task_ops(algo), a, algo, 0, &req);
		if (!rc)
			rc = ibmc__wait(&req);
	}
out:
	pthread_mutex_unlock(&c->ctx->lock);
	return rc;
}

int ibmc_iallreduce(ibmc_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t count, ibmc_dtype_t dtype, ibmc_op_t op,
		    ibmc_request_t **out)
{
	struct ibmc_request *req;
	struct ibmc__ar_args *a;
	int rc = check(c, sendbuf, recvbuf, count, dtype, op), algo;

	if (rc || !out)
		return rc ? rc : -EINVAL;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->heap = 1;
	pthread_mutex_lock(&c->ctx->lock);
	rc = ibmc__switch_gate(c);
	a = rc ? NULL : args_new(sendbuf, recvbuf, count, dtype, op);
	if (!rc) {
		algo = choose(c, 0, count * ibmc__dtype_size(dtype));
		/* A non-blocking shm_mcast is one task: the result through
		 * the node segments (the other algorithms ignore the
		 * parameter). */
		rc = a ? start(c, task_ops(algo), a, algo,
			       IBMC__AR_SHM_IN_SEGMENT, req) : -ENOMEM;
	}
	pthread_mutex_unlock(&c->ctx->lock);
	if (rc) {
		free(req);
		return rc;
	}
	*out = req;
	return 0;
}
