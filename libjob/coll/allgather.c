/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The allgather collective: its algorithm table, auto's choice, and
 * ibmc_allgather()/ibmc_iallgather().
 *
 * "mcast" is one reliable multicast broadcast per node leader carrying
 * its node's blocks (per rank with one rank per node; the broadcast
 * engine with early return, a window of them at a time): every block
 * crosses each link of the group's tree once, where the ring carries it
 * over P - 1 paths. Auto does not choose it yet: the fastest in modeled
 * time, it is slower than shm_leader in wall time on the simulated
 * fabric's one-thread data plane at small blocks (README, Status), so
 * auto takes shm_leader when a node holds two members, else recursive
 * doubling on 2^k ranks and the ring on others. A non-blocking call
 * takes the algorithm the blocking one would: a program that mixes them
 * gets one layout, and the choice never depends on which of them a
 * member called.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/coll/allgather.h"
#include "libjob/coll/coll.h"
#include "libjob/comm.h"
#include "libjob/mcast_switch.h"
#include "libjob/task.h"
#include "libjob/topo.h"

static const struct ibmc__algo_desc algos[] = {
	{ IBMC__AG_RING, "ring",
	  "flat ring, P - 1 pipelined steps (baseline)", 0, 0 },
	{ IBMC__AG_RD, "recursive_doubling",
	  "flat recursive doubling, log2 P rounds (2^k ranks; else ring)",
	  0, 0 },
	{ IBMC__AG_MCAST, "mcast",
	  "node shared memory, then one reliable multicast broadcast per node "
	  "leader (per rank with one rank per node), a window at a time; "
	  "mcast:N: N broadcasts at once", 1, 4096 },
	{ IBMC__AG_SHM, "shm_leader",
	  "node shared memory, node leaders exchange (seed 002)", 0, 0 },
};

const struct ibmc__coll_desc ibmc__allgather_desc = {
	.coll = IBMC__C_ALLGATHER,
	.name = "allgather",
	.env = "IBMCAST_ALLGATHER_ALGO",
	.algos = algos,
	.nalgos = sizeof(algos) / sizeof(algos[0]),
};

static int pow2(int n)
{
	return n > 0 && !(n & (n - 1));
}

void ibmc__ag_count(struct ibmc_comm *c, int rc, int algo)
{
	if (!rc)
		c->st.allgathers++;
	c->last_algo[IBMC__C_ALLGATHER] = algo;
	c->last_param[IBMC__C_ALLGATHER] = 0;
}

/* The same on every member: the setting, the topology and whether the
 * group may be used are the communicator's. */
static int choose(struct ibmc_comm *c)
{
	int a = c->algo[IBMC__C_ALLGATHER];
	int mc = !c->mcast_err && c->ghandle >= 0;
	const struct ibmc__topo *t;

	/* Auto takes the node segment as soon as some node holds two
	 * ranks: calls in flight together take their turns on it
	 * (ibmc__shm_my_turn). */
	if (a == IBMC__AG_SHM || a == 0) {
		t = ibmc__comm_topo(c);
		if (t && (a == IBMC__AG_SHM || t->max_local >= 2))
			return IBMC__AG_SHM;
	}
	if (a == IBMC__AG_MCAST && mc)
		return IBMC__AG_MCAST;
	if (a == IBMC__AG_RING)
		return IBMC__AG_RING;
	return pow2(c->size) ? IBMC__AG_RD : IBMC__AG_RING;
}

static int check(const ibmc_comm_t *c, const void *sendbuf, void *recvbuf,
		 size_t blocklen)
{
	if (!c || (blocklen && (!recvbuf || !sendbuf)))
		return -EINVAL;
	if (blocklen > UINT32_MAX / (size_t)c->size)
		return -EMSGSIZE;
	return 0;
}

static void place_own(ibmc_comm_t *c, const void *sendbuf, void *recvbuf,
		      size_t blocklen)
{
	if (sendbuf != IBMC_IN_PLACE && blocklen)
		memmove((unsigned char *)recvbuf + (size_t)c->rank * blocklen,
			sendbuf, blocklen);
}

/* Start the call for req: lock held, own block in place. */
static int start(ibmc_comm_t *c, void *recvbuf, size_t blocklen,
		 struct ibmc_request *req)
{
	struct ibmc__args args = { .buf = recvbuf, .len = blocklen };
	const struct ibmc__task_ops *ops = &ibmc__allgather_ring_ops;
	int algo = choose(c);

	if (algo == IBMC__AG_MCAST)
		return ibmc__allgather_mcast_start(
			c, recvbuf, blocklen, c->algo_param[IBMC__C_ALLGATHER],
			req);
	if (algo == IBMC__AG_RD)
		ops = &ibmc__allgather_rd_ops;
	else if (algo == IBMC__AG_SHM)
		ops = &ibmc__allgather_shm_ops;
	return ibmc__task_start(c, IBMC__C_ALLGATHER, algo, ops, &args, NULL,
				req);
}

int ibmc_allgather(ibmc_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t blocklen)
{
	struct ibmc_request req = { 0 };
	int rc = check(c, sendbuf, recvbuf, blocklen);

	if (rc)
		return rc;
	pthread_mutex_lock(&c->ctx->lock);
	place_own(c, sendbuf, recvbuf, blocklen);
	rc = ibmc__switch_gate(c);
	if (!rc)
		rc = start(c, recvbuf, blocklen, &req);
	if (!rc)
		rc = ibmc__wait(&req);
	pthread_mutex_unlock(&c->ctx->lock);
	return rc;
}

int ibmc_iallgather(ibmc_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t blocklen, ibmc_request_t **out)
{
	struct ibmc_request *req;
	int rc = check(c, sendbuf, recvbuf, blocklen);

	if (rc || !out)
		return rc ? rc : -EINVAL;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->heap = 1;
	pthread_mutex_lock(&c->ctx->lock);
	place_own(c, sendbuf, recvbuf, blocklen);
	rc = ibmc__switch_gate(c);
	if (!rc)
		rc = start(c, recvbuf, blocklen, req);
	pthread_mutex_unlock(&c->ctx->lock);
	if (rc) {
		free(req);
		return rc;
	}
	*out = req;
	return 0;
}
