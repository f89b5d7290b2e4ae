/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bcast.h - what the broadcast task (coll/bcast.c) shares with its node
 * part (coll/bcast_node.c): the root's choice of a network algorithm and
 * the node-leader layout, where only node leaders run the reliable
 * broadcast and every other rank is served from its node's segment.
 */
#ifndef IBMCAST_LIBJOB_COLL_BCAST_H
#define IBMCAST_LIBJOB_COLL_BCAST_H

#include <stddef.h>
#include <stdint.h>

#include "libjob/bcast_op.h"
#include "libjob/shm.h"
#include "libjob/task.h"
#include "libjob/topo.h"

/* The root's choice among "mcast", "binomial" and "postal" for len bytes
 * over n ranks, given the requested algorithm (auto for anything else). */
int ibmc__bcast_choose(const struct ibmc_comm *c, size_t len, int n,
		       int algo);

/* One broadcast's node part. */
struct ibmc__bnode {
	const struct ibmc__topo *topo;
	struct ibmc__shm_call call;	/* call.shm NULL: alone on its
					 * node, no segment */
	int state;
	int leader;			/* this rank leads its node */
	int net;			/* it runs the engine among leaders */
	int netroot;			/* the root's node leader */
	int root_local;			/* the root's local rank here,
					 * -1: the root is elsewhere */
	int started;			/* the engine runs */
	int netalgo;			/* what the leaders ran, 0: none */
	size_t moved;			/* bytes published (leader) or
					 * copied out (the others) */
	int64_t beat;			/* the leader's last beat seen */
};

/* Fill n for task t (t->args: buffer, length, root); the engine is
 * started here unless this rank is the network root still waiting for a
 * local root's data. 0 or -errno. */
int ibmc__bnode_start(struct ibmc__bnode *n, struct ibmc__task *t,
		      struct ibmc__op *op);

/* Move the node part on: 0 once this rank's part is done (a leader
 * published every byte, another rank copied every byte out), else
 * IBMC_INPROGRESS or -errno. Starts the engine when the local root's
 * data arrives. */
int ibmc__bnode_progress(struct ibmc__bnode *n, struct ibmc__task *t,
			 struct ibmc__op *op);

/* The call is over (rc): free the segment for the next call, tell the
 * node at once about a failure. */
void ibmc__bnode_end(struct ibmc__bnode *n, int rc);

#endif
