/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.h - a communicator's nodes: which members share a node (from the
 * node identity every rank sent in the address exchange), whatever the
 * placement, each node's leader (its lowest communicator rank) and the
 * leaders' list. Nodes are numbered by their leaders' ranks, ascending.
 */
#ifndef IBMCAST_LIBJOB_TOPO_H
#define IBMCAST_LIBJOB_TOPO_H

#include <stddef.h>
#include <stdint.h>

struct ibmc_comm;
struct ibmc_context;

struct ibmc__topo {
	int nnodes;
	int my_node;		/* this rank's node index */
	int local_rank;		/* this rank's index among its node's */
	int local_size;		/* ranks on this rank's node */
	int max_local;		/* ranks on the most populated node */
	int *node_of;		/* comm rank -> node index */
	int *leaders;		/* node index -> leader's comm rank */
	int *first;		/* node index -> its first index in ranks[];
				 * first[nnodes] == comm size */
	int *ranks;		/* comm ranks grouped by node, each group
				 * ascending: the "node order" */
};

/*
 * Build the topology of size members whose node identities are
 * node_id[members[i]] (context rank indexed); rank is this rank's
 * communicator rank. 0 or -ENOMEM.
 */
int ibmc__topo_build(const uint32_t *node_id, const int *members, int size,
		     int rank, struct ibmc__topo **out);
void ibmc__topo_free(struct ibmc__topo *t);

/* The communicator's topology, built at its first use; NULL: no memory. */
const struct ibmc__topo *ibmc__comm_topo(struct ibmc_comm *c);

/* Ranks on node n. */
static inline int ibmc__topo_count(const struct ibmc__topo *t, int n)
{
	return t->first[n + 1] - t->first[n];
}

/*
 * This rank's node name for the address exchange: IBMCAST_NODE (or the
 * host name), unless the loopback transport runs a job of threads and
 * IBMCAST_LOOPBACK_NODES lists a node per rank ("a,a,b,c,c"), which is how
 * the unit tests fake several nodes in one process. 0, or -EINVAL when the
 * list is shorter than the job.
 */
int ibmc__node_name(const struct ibmc_context *ctx, char *buf, size_t len);

#endif
