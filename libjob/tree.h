/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tree.h - the spanning trees a broadcast uses, rooted at its sender.
 *
 * Binomial: acknowledgments of the multicast broadcast climb it (seed 003)
 * and the point-to-point binomial broadcast sends down it. Postal: the
 * latency-optimal tree of Bar-Noy and Kipnis for a latency ratio lambda
 * (seed 001, 5.5): every node keeps sending while its first receivers are
 * still in flight.
 */
#ifndef IBMCAST_LIBJOB_TREE_H
#define IBMCAST_LIBJOB_TREE_H

/* One rank's view of a tree, in communicator ranks. */
struct ibmc__tree {
	int parent;		/* -1 at the root */
	int nchildren;
	int *children;		/* first-served first */
	int *cheight;		/* each child's height */
	int height;		/* 0 for a leaf: levels of acks below this rank */
};

/* Fills t for communicator rank me of n with the tree rooted at root.
 * algo: IBMC__A_BINOMIAL or IBMC__A_POSTAL (lambda >= 1). 0 or -ENOMEM. */
int ibmc__tree_build(struct ibmc__tree *t, int algo, int lambda, int n,
		     int root, int me);
void ibmc__tree_free(struct ibmc__tree *t);

#endif
