/* SPDX-License-Identifier: BSD-3-Clause */
/* allgather.h - the allgather's algorithms (coll/allgather_*.c), for
 * coll/allgather.c. */
#ifndef IBMCAST_LIBJOB_COLL_ALLGATHER_H
#define IBMCAST_LIBJOB_COLL_ALLGATHER_H

#include "libjob/task.h"

enum {
	IBMC__AG_RING = 1,
	IBMC__AG_RD = 2,	/* recursive doubling, 2^k ranks */
	IBMC__AG_MCAST = 3,	/* one multicast broadcast per node
				 * (per rank with one rank per node) */
	IBMC__AG_SHM = 4,	/* node segments, leaders exchange */
};

/* args.param of the shm_leader task: only the node part (every local
 * rank gets its node's blocks through the segment), no network. */
#define IBMC__AG_SHM_NODE_ONLY 1

/* args.buf: recvbuf (own block already in place), args.len: blocklen. */
extern const struct ibmc__task_ops ibmc__allgather_ring_ops;
extern const struct ibmc__task_ops ibmc__allgather_rd_ops;
extern const struct ibmc__task_ops ibmc__allgather_shm_ops;

struct ibmc_comm;

/* An allgather ended with rc, by algorithm algo: count it (coll/
 * allgather.c). */
void ibmc__ag_count(struct ibmc_comm *c, int rc, int algo);

/* Start the multicast allgather (coll/allgather_mcast.c) for req:
 * ctx->lock held, own block in place; param: "mcast:N"'s N, broadcasts
 * in flight at once (0: the default budget). 0 (req completes later, or
 * did with an error) or -errno. */
int ibmc__allgather_mcast_start(struct ibmc_comm *c, void *recvbuf,
				size_t blocklen, int param,
				struct ibmc_request *req);

#endif
