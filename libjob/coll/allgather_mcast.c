/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "mcast" allgather: reliable multicast broadcasts with the broadcast
 * engine (early return, all of them in flight at once). With one rank per
 * node, one broadcast per rank. With several ranks on a node, the node's
 * ranks first put their blocks together in the node's shared segment (the
 * node part of "shm_leader", no network), and then each node leader
 * multicasts its whole node's blocks once: L broadcasts instead of P, each
 * block crosses each link of the group's tree once, and every member
 * receives every block once per node.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/coll/allgather.h"
#include "libjob/coll/coll.h"
#include "libjob/comm.h"
#include "libjob/task.h"
#include "libjob/topo.h"

/* One broadcast per rank; lock held. */
static int per_rank(struct ibmc_comm *c, void *recvbuf, size_t blocklen)
{
	struct ibmc_request *req = calloc((size_t)c->size, sizeof(*req));
	int r, rc = 0, rc2;

	if (!req)
		return -ENOMEM;
	for (r = 0; r < c->size; r++) {
		rc = ibmc__bcast_start(c, (unsigned char *)recvbuf +
				       (size_t)r * blocklen, blocklen, r,
				       &req[r]);
		if (rc)
			break;
	}
	/* Started ones run to their end whatever failed after them. */
	while (r-- > 0) {
		rc2 = ibmc__wait(&req[r]);
		if (!rc)
			rc = rc2;
	}
	free(req);
	return rc;
}

/* Node n's ranks are consecutive communicator ranks: its blocks are one
 * span of recvbuf, where its broadcast can go directly. */
static int contiguous(const struct ibmc__topo *t, int n)
{
	return t->ranks[t->first[n + 1] - 1] - t->ranks[t->first[n]] ==
	       ibmc__topo_count(t, n) - 1;
}

/* Copy node n's blocks between its span in stage (node order) and their
 * ranks' places in recvbuf. */
static void move_node(const struct ibmc__topo *t, int n, unsigned char *stage,
		      unsigned char *recvbuf, size_t bl, int to_stage)
{
	int j;

	for (j = t->first[n]; bl && j < t->first[n + 1]; j++) {
		unsigned char *s = stage + (size_t)j * bl,
			      *r = recvbuf + (size_t)t->ranks[j] * bl;

		memcpy(to_stage ? s : r, to_stage ? r : s, bl);
	}
}

/* The node's blocks into every local rank's recvbuf, through the node's
 * segment (the shm_leader task without network steps). */
static int node_gather(struct ibmc_comm *c, void *recvbuf, size_t bl)
{
	struct ibmc__args args = { .buf = recvbuf, .len = bl,
				   .param = IBMC__AG_SHM_NODE_ONLY };
	struct ibmc_request req = { 0 };
	int rc;

	rc = ibmc__task_start(c, IBMC__C_ALLGATHER, IBMC__AG_SHM,
			      &ibmc__allgather_shm_ops, &args, NULL, &req);
	return rc ? rc : ibmc__wait(&req);
}

/* One broadcast per node, from its leader; lock held. */
static int per_node(struct ibmc_comm *c, const struct ibmc__topo *t,
		    unsigned char *recvbuf, size_t bl)
{
	struct ibmc_request *req = calloc((size_t)t->nnodes, sizeof(*req));
	unsigned char *stage = NULL, *buf;
	int n, rc, rc2, staged = 0;

	if (!req)
		return -ENOMEM;
	rc = node_gather(c, recvbuf, bl);
	for (n = 0; n < t->nnodes; n++)
		staged |= !contiguous(t, n);
	if (!rc && staged && bl) {
		stage = malloc((size_t)c->size * bl);
		if (!stage)
			rc = -ENOMEM;
		else
			move_node(t, t->my_node, stage, recvbuf, bl, 1);
	}
	for (n = 0; !rc && n < t->nnodes; n++) {
		buf = contiguous(t, n) || !bl ?
		      recvbuf + (size_t)t->ranks[t->first[n]] * bl :
		      stage + (size_t)t->first[n] * bl;
		rc = ibmc__bcast_start(c, buf, (size_t)ibmc__topo_count(t, n) *
				       bl, t->leaders[n], &req[n]);
		if (rc)
			break;
	}
	/* Started ones run to their end whatever failed after them. */
	while (n-- > 0) {
		rc2 = ibmc__wait(&req[n]);
		if (!rc)
			rc = rc2;
	}
	for (n = 0; !rc && stage && n < t->nnodes; n++)
		if (n != t->my_node && !contiguous(t, n))
			move_node(t, n, stage, recvbuf, bl, 0);
	free(stage);
	free(req);
	return rc;
}

int ibmc__allgather_mcast(struct ibmc_comm *c, void *recvbuf, size_t blocklen)
{
	const struct ibmc__topo *t = ibmc__comm_topo(c);
	struct ibmc__inner_mark mark;
	int rc;

	if (!t)
		return -ENOMEM;
	ibmc__inner_begin(c, &mark);
	rc = t->max_local >= 2 ? per_node(c, t, recvbuf, blocklen) :
	     per_rank(c, recvbuf, blocklen);
	ibmc__inner_end(c, &mark, false);
	ibmc__ag_count(c, rc, IBMC__AG_MCAST);
	return rc;
}
