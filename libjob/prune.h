/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prune.h - what narrowing pool groups to nodes needs besides its keeper
 * (prune_keep.h): the nodes of a set of ranks, as a count and as the
 * hostlist the control server takes, and the widenings and requests that
 * the context finishes in the background once no one waits for them.
 */
#ifndef IBMCAST_LIBJOB_PRUNE_H
#define IBMCAST_LIBJOB_PRUNE_H

#include <stdint.h>

struct ibmc_comm;
struct ibmc_context;
struct ibmc__reshape_req;

/* Whether c's members span fewer nodes than the context's ranks: the
 * hash of c's node set (whatever the members' order), 0 when it spans
 * them all. Sorts: O(n log n) in the ranks. */
uint32_t ibmc__comm_node_subset(const struct ibmc_comm *c);

/* The job's nodes (counted once); -ENOMEM. */
int ibmc__ctx_nnodes(struct ibmc_context *ctx);

/* The distinct nodes of the n context ranks (NULL: 0..n-1); -ENOMEM. */
int ibmc__nodes_count(const struct ibmc_context *ctx, const int *ranks,
		      int n);

/* Their node names as a hostlist (malloc'd); NULL with *err set when a
 * name was too long to go round at init, or without memory. */
char *ibmc__nodes_hostlist(const struct ibmc_context *ctx, const int *ranks,
			   int n, int *err);

/* Whether IBMCAST_PRUNE, IBMCAST_SERVER and IBMCAST_JOB allow narrowing. */
int ibmc__prune_allowed(const struct ibmc_context *ctx);

/* Hand a request over to the context without waiting for it (a
 * communicator's grow at free, the prune keeper's at finalize): it is
 * told to stop (req may be NULL), and when it has, widen_group (>= 0) is
 * widened back to the job. */
void ibmc__widen_queue(struct ibmc_context *ctx,
		       struct ibmc__reshape_req *req, int widen_group);

/* Reap finished requests and widenings (progress), or wait for all
 * (finalize; each is one exchange with the server). */
void ibmc__widen_poll(struct ibmc_context *ctx);
void ibmc__widen_free_all(struct ibmc_context *ctx);

#endif
