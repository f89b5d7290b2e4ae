/* SPDX-License-Identifier: BSD-3-Clause */
/* allreduce.h - the allreduce's algorithms (coll/allreduce_*.c), for
 * coll/allreduce.c. */
#ifndef IBMCAST_LIBJOB_COLL_ALLREDUCE_H
#define IBMCAST_LIBJOB_COLL_ALLREDUCE_H

#include "ibmcast/ibmcast.h"
#include "libjob/task.h"

enum {
	IBMC__AR_RD = 1,	/* recursive doubling */
	IBMC__AR_MCAST = 2,	/* reduce up a tree, result by multicast */
	IBMC__AR_SHM_MCAST = 3,	/* node shared memory, leaders' tree,
				 * result by multicast */
};

/* What an allreduce task reduces (its priv, allocated by the caller). */
struct ibmc__ar_args {
	ibmc_dtype_t dtype;
	ibmc_op_t op;
	size_t count;
	void *buf;		/* recvbuf, holding this rank's vector */
	/* The tree reduce among some members only (the node leaders):
	 * group[i] is member i's communicator rank, this rank is
	 * group[grank]; group NULL: every member. */
	const int *group;
	int gsize, grank;
};

/* args.buf/len: recvbuf and its bytes; priv: struct ibmc__ar_args. */
extern const struct ibmc__task_ops ibmc__allreduce_rd_ops;
/* Reduces to rank 0 only (the first half of "mcast"). */
extern const struct ibmc__task_ops ibmc__allreduce_tree_ops;

/* Node shared-memory reduce, then the leaders' tree reduce to rank 0 (the
 * first half of "shm_mcast"). */
extern const struct ibmc__task_ops ibmc__allreduce_shm_ops;

/* The transfer tag: the round, and what every rank must agree on. */
uint32_t ibmc__ar_tag(const struct ibmc__ar_args *a, int round);

#endif
