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
 * reduce-scatter + allgather ("rabenseifner") above. A non-blocking
 * call takes the algorithm the blocking one would (the reduce and the
 * broadcast as two stages of one request, stages.h): a program that
 * mixes them gets one layout, and the choice never depends on which of
 * them a member called.
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
#include "libjob/stages.h"
#include "libjob/task.h"
#include "libjob/topo.h"
#include "libjob/xfer.h"

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
	return (uint32_t)round | ((uint32_t)a->dtype & 0x3f) << 16 |
	       ((uint32_t)a->op & 0x1f) << 22 |
	       ((uint32_t)a->tag_algo << IBMC__XTAG_ALGO_SHIFT &
		IBMC__XTAG_ALGO_MASK);
}

/* The point-to-point algorithms: the named one, or auto's by size. */
static int p2p_algo(int a, size_t len)
{
	if (a == IBMC__AR_RD || a == IBMC__AR_RABENSEIFNER)
		return a;
	return len <= IBMC__AR_SHORT_BYTES ? IBMC__AR_RD :
	       IBMC__AR_RABENSEIFNER;
}

/* The same on every member: the setting, the topology, whether the
 * group may be used and the vector's length (which members that
 * disagree on it learn of from the data) are the communicator's. */
static int choose(struct ibmc_comm *c, size_t len)
{
	int a = c->algo[IBMC__C_ALLREDUCE];
	int mc = !c->mcast_err && c->ghandle >= 0;
	const struct ibmc__topo *t;

	/* Auto takes node shared memory when some node holds two members
	 * and the result can be multicast. */
	if (a == IBMC__AR_SHM_MCAST || (!a && mc)) {
		t = ibmc__comm_topo(c);
		if (t && (a == IBMC__AR_SHM_MCAST || t->max_local >= 2))
			return IBMC__AR_SHM_MCAST;
	}
	if (mc && (a == IBMC__AR_MCAST || (!a && c->size >= 4)))
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
	a->tag_algo = 0;
	if (sendbuf != IBMC_IN_PLACE && len)
		memmove(recvbuf, sendbuf, len);
	return a;
}

/* A multicasting call's state between its stages. */
struct mar {
	struct ibmc__ar_args *a;	/* the reduce task's, until it starts */
	void *buf;
	size_t len;
	int algo;
	int bad;	/* the reduce's disagreement, carried by the result */
};

/*
 * Stage 0 reduces to rank 0 (up a tree, or through node shared memory
 * and then up the node leaders' tree); stage 1 broadcasts the result by
 * multicast (the broadcast engine falls back to point-to-point where it
 * must).
 */
static int mcast_stage(struct ibmc__stages *s, int k, int prev)
{
	struct mar *m = s->priv;
	struct ibmc__args args = { .buf = m->buf, .len = m->len };
	struct ibmc__ar_args *a = m->a;
	struct ibmc_request *req;

	/* Members that disagree (count, datatype, operation) are seen only
	 * on the way up, by some ranks; the others wait for the broadcast:
	 * it still goes, carrying the root's error to every member. */
	if (!ibmc__stages_carry_on(prev))
		return prev;
	req = ibmc__stages_req(s);
	if (!req)
		return -ENOMEM;
	if (k == 0) {
		m->a = NULL;	/* the task's from here on */
		return ibmc__task_start(s->comm, IBMC__C_ALLREDUCE, m->algo,
					m->algo == IBMC__AR_SHM_MCAST ?
					&ibmc__allreduce_shm_ops :
					&ibmc__allreduce_tree_ops, &args, a,
					req);
	}
	m->bad = prev;
	return ibmc__bcast_start_error(s->comm, m->buf, m->len, 0,
				       s->comm->rank ? 0 : m->bad, req);
}

static int mcast_end(struct ibmc_comm *c, void *priv, int rc)
{
	struct mar *m = priv;

	if (!rc && m)
		rc = m->bad;
	if (m) {
		ibmc__ar_count(c, rc, m->algo);
		free(m->a);
	}
	free(m);
	return rc;
}

static const struct ibmc__stages_ops mcast_ops = {
	.stage = mcast_stage,
	.end = mcast_end,
};

/* Start the call for req (lock held): a's from here on. */
static int start(ibmc_comm_t *c, struct ibmc__ar_args *a,
		 struct ibmc_request *req)
{
	struct ibmc__args args = {
		.buf = a->buf, .len = a->count * ibmc__dtype_size(a->dtype),
	};
	int algo = choose(c, args.len);
	struct mar *m;

	if (algo != IBMC__AR_MCAST && algo != IBMC__AR_SHM_MCAST)
		return ibmc__task_start(c, IBMC__C_ALLREDUCE, algo,
					algo == IBMC__AR_RABENSEIFNER ?
					&ibmc__allreduce_rab_ops :
					&ibmc__allreduce_rd_ops, &args, a,
					req);
	m = calloc(1, sizeof(*m));
	if (!m) {
		free(a);
		return -ENOMEM;
	}
	m->a = a;
	m->buf = args.buf;
	m->len = args.len;
	m->algo = algo;
	return ibmc__stages_start(c, 2, 2, 1, &mcast_ops, m, req);
}

int ibmc_allreduce(ibmc_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t count, ibmc_dtype_t dtype, ibmc_op_t op)
{
	struct ibmc_request req = { 0 };
	struct ibmc__ar_args *a;
	int rc = check(c, sendbuf, recvbuf, count, dtype, op);

	if (rc)
		return rc;
	pthread_mutex_lock(&c->ctx->lock);
	rc = ibmc__switch_gate(c);
	a = rc ? NULL : args_new(sendbuf, recvbuf, count, dtype, op);
	if (!rc)
		rc = a ? start(c, a, &req) : -ENOMEM;
	if (!rc)
		rc = ibmc__wait(&req);
	pthread_mutex_unlock(&c->ctx->lock);
	return rc;
}

int ibmc_iallreduce(ibmc_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t count, ibmc_dtype_t dtype, ibmc_op_t op,
		    ibmc_request_t **out)
{
	struct ibmc_request *req;
	struct ibmc__ar_args *a;
	int rc = check(c, sendbuf, recvbuf, count, dtype, op);

	if (rc || !out)
		return rc ? rc : -EINVAL;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->heap = 1;
	pthread_mutex_lock(&c->ctx->lock);
	rc = ibmc__switch_gate(c);
	a = rc ? NULL : args_new(sendbuf, recvbuf, count, dtype, op);
	if (!rc)
		rc = a ? start(c, a, req) : -ENOMEM;
	pthread_mutex_unlock(&c->ctx->lock);
	if (rc) {
		free(req);
		return rc;
	}
	*out = req;
	return 0;
}
