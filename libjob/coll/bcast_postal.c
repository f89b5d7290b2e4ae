/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point broadcast down the postal-model tree of seed 001 5.5
 * (each rank sends to a child every time unit while a message takes
 * lambda units to arrive: wider than binomial near the root, so a
 * one-fragment, latency-bound broadcast ends sooner). Data moves as on the
 * binomial tree (coll/bcast_binomial.c); the tree is built by tree.c.
 */
#include "config.h"

#include "libjob/bcast_op.h"

const struct ibmc__bcast_strategy ibmc__bcast_postal = {
	.tree = IBMC__A_POSTAL,
	.push = ibmc__bcast_tree_push,
	.forward = ibmc__bcast_tree_forward,
};
