/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prune.h - a communicator of mode sm whose members sit on fewer nodes
 * than the job's ranks narrows its pool group to its own nodes: rank 0
 * asks the control server (prune) in the background at creation, and the
 * communicator multicasts on the group all along (OpenSM keeps the old
 * tree, which reaches every member, until it writes the narrow one). At
 * free, rank 0 widens the group back, also in the background, before
 * another communicator needs the whole tree.
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

/* Rank 0, at creation with pool group c->group (ctx->lock held): ask for
 * the narrowing when c spans a subset of the nodes and IBMCAST_PRUNE,
 * IBMCAST_SERVER and IBMCAST_JOB allow it. Never fails the creation. */
void ibmc__prune_start(struct ibmc_comm *c);

/* Rank 0, from progress: log the SM's confirmation, or why not. */
void ibmc__prune_poll(struct ibmc_comm *c);

/* At free (ctx->lock held): stop following the narrowing and, if one was
 * asked, widen the group back in the background (the context owns that
 * request). */
void ibmc__prune_release(struct ibmc_comm *c);

/* Hand a request over to the context without waiting for it (a
 * communicator's grow or prune at free): it is told to stop, and when it
 * has, widen_group (>= 0) is widened back. */
void ibmc__reshape_retire(struct ibmc_context *ctx,
			  struct ibmc__reshape_req *req, int widen_group);

/* Reap finished requests and widenings (progress), or wait for all
 * (finalize; each is one exchange with the server). */
void ibmc__widen_poll(struct ibmc_context *ctx);
void ibmc__widen_free_all(struct ibmc_context *ctx);

#endif
