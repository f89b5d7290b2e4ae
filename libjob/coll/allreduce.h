/* SPDX-License-Identifier: BSD-3-Clause */
/* allreduce.h - the allreduce's algorithms (coll/allreduce_*.c), for
 * coll/allreduce.c. */
#ifndef IBMCAST_LIBJOB_COLL_ALLREDUCE_H
#define IBMCAST_LIBJOB_COLL_ALLREDUCE_H

#include "ibmcast/ibmcast.h"
#include "libjob/task.h"

struct ibmc_comm;

enum {
	IBMC__AR_RD = 1,	/* recursive doubling */
	IBMC__AR_MCAST = 2,	/* reduce up a tree, result by multicast */
	IBMC__AR_SHM_MCAST = 3,	/* node shared memory, leaders' reduce,
				 * result by multicast */
	IBMC__AR_RABENSEIFNER = 4,	/* reduce-scatter + allgather */
};

/* Vectors up to this many bytes are latency-bound: recursive doubling
 * (log2 P whole-vector rounds) beats reduce-scatter + allgather (2 log2 P
 * rounds of shrinking pieces), as MPICH decides at the same size. */
#define IBMC__AR_SHORT_BYTES 2048

/* What an allreduce task reduces (its priv, allocated by the caller). */
struct ibmc__ar_args {
	ibmc_dtype_t dtype;
	ibmc_op_t op;
	size_t count;
	void *buf;		/* recvbuf, holding this rank's vector */
	/* The reduce among some members only (the node leaders):
	 * group[i] is member i's communicator rank, this rank is
	 * group[grank]; group NULL: every member. */
	const int *group;
	int gsize, grank;
	/* Rabenseifner: the result on group member 0 only (a gather instead
	 * of the allgather), for a multicast of it. */
	int to_root;
	/* The algorithm running (IBMC__AR_*), set at its start: in every
	 * tag (ibmc__ar_tag), so that members that ran different ones see
	 * it in the first datagram, even where the lengths happen to agree. */
	int tag_algo;
};

/* The members an algorithm runs among (the group, or the whole
 * communicator): their number and this rank's index. */
void ibmc__ar_place(const struct ibmc__ar_args *a, const struct ibmc_comm *c,
		    int *size, int *rank);
/* Group index -> communicator rank. */
int ibmc__ar_member(const struct ibmc__ar_args *a, int i);

/* An allreduce ended with rc, by algorithm algo: count it. */
void ibmc__ar_count(struct ibmc_comm *c, int rc, int algo);

/* args.buf/len: recvbuf and its bytes; priv: struct ibmc__ar_args. The
 * algorithms take this rank's vector from buf at their first progress,
 * not at their start (which only posts receives): "shm_mcast" starts them
 * before its node's vectors are reduced into buf. */
extern const struct ibmc__task_ops ibmc__allreduce_rd_ops;
/* Reduce-scatter by recursive halving, then recursive-doubling allgather
 * (or, with to_root, a binomial gather to group member 0). */
extern const struct ibmc__task_ops ibmc__allreduce_rab_ops;
/* Reduces to rank 0 only (the first half of "mcast"). */
extern const struct ibmc__task_ops ibmc__allreduce_tree_ops;

/* Node shared-memory reduce, then the leaders' reduce (recursive doubling
 * for short vectors, reduce-scatter + gather for long ones) to rank 0 (the
 * first half of "shm_mcast"). */
extern const struct ibmc__task_ops ibmc__allreduce_shm_ops;

/* The transfer tag: the round (low 16 bits: xfer.h), and what every rank
 * must agree on: the datatype, the operation and the algorithm. */
uint32_t ibmc__ar_tag(const struct ibmc__ar_args *a, int round);

#endif
