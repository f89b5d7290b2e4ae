/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point broadcast down a binomial tree (the postal tree,
 * coll/bcast_postal.c, moves data the same way): the root unicasts each fragment to its children inside
 * the window, and every inner rank forwards each fragment to its children
 * the moment it first holds it, so fragments pipeline down the tree. The
 * transport is unreliable UD: acks, timers and retransmissions are the
 * engine's (bcast_op.c), exactly as for multicast.
 */
#include "config.h"

#include "libjob/bcast_op.h"

int ibmc__bcast_tree_push(struct ibmc__op *op)
{
	uint32_t w = (uint32_t)op->comm->ctx->env.window, old = op->sent;
	int i;

	while (op->sent < op->nfrags && op->sent < op->cum + w) {
		op->t_avail[op->sent] = ibmc__op_now();
		for (i = 0; i < op->tree.nchildren; i++)
			ibmc__op_send_frag(op, op->kids[i].rank, op->sent, 0);
		op->sent++;
	}
	return op->sent != old;
}

void ibmc__bcast_tree_forward(struct ibmc__op *op, uint32_t frag)
{
	int i;

	for (i = 0; i < op->tree.nchildren; i++)
		if (op->kids[i].have <= frag)
			ibmc__op_send_frag(op, op->kids[i].rank, frag, 0);
}

const struct ibmc__bcast_strategy ibmc__bcast_binomial = {
	.tree = IBMC__A_BINOMIAL,
	.push = ibmc__bcast_tree_push,
	.forward = ibmc__bcast_tree_forward,
};
