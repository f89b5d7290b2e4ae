/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mode.h - seed 000's ways for a job to get multicast groups itself, next
 * to ours (sm: the SM-prepared pool, comm.c): basic, lazy and pool
 * (ibmcast(7)). Groups are created and joined through the real SA (the
 * transport's mcast_join: one create by the communicator's rank 0, one join
 * per node by the node's lowest rank, the other ranks only attach), tested
 * by mcast_test.c, and left at communicator free and at finalize.
 */
#ifndef IBMCAST_LIBJOB_MODE_H
#define IBMCAST_LIBJOB_MODE_H

#include <stdint.h>

#include "libjob/comm.h"
#include "libjob/context.h"

/* Give a communicator of mode basic, lazy or pool its group (ctx->lock
 * held, c already in ctx->comms): pool takes a tested group of the job's
 * own pool at once (its keeper's word, pool_keep.h); lazy starts testing
 * in the background (point-to-point until it succeeds); basic tests
 * before returning. Never fails the
 * communicator: multicast trouble leaves it point-to-point with a reason.
 * 0, or -errno for what fails the creation itself (out of memory). */
int ibmc__mode_start(struct ibmc_comm *c);

/* This rank's part in making c's group usable: rank 0 creates it
 * (mlid/mtu unused), a node's lowest rank joins, the others take mlid and
 * mtu from rank 0's invitation; then attach. 0, or -errno with
 * c->why_buf saying why. */
int ibmc__mode_join(struct ibmc_comm *c, uint16_t mlid, uint32_t mtu);

/* Give c's group up (ctx->lock held): detach, and leave it at the SA
 * when this rank joined it (or, for a group taken from the job's own
 * pool, is the lowest member on its node). Such a group never goes back
 * to the pool: it no longer spans every node. */
void ibmc__mode_release(struct ibmc_comm *c);

/* Whether this rank is the lowest of c's ranks on its node: the one that
 * joins (and leaves) for the node (an SA join is per port, not per QP). */
int ibmc__own_node_leader(const struct ibmc_comm *c);

/* The SA leave of a group this rank's node joined; a failure is only
 * logged (the group then lives on at the SA, as after a crash). */
void ibmc__own_leave(struct ibmc_context *ctx, const uint8_t mgid[16]);

/* The pool mode's pool (ibmc_init, collective over every rank; finalize:
 * every group detached and left). */
void ibmc__own_pool_build(struct ibmc_context *ctx);
void ibmc__own_pool_free(struct ibmc_context *ctx);

/* Communicator creation with an explicit mode (comm.c), used by the pool's
 * construction. */
int ibmc__comm_create_mode(struct ibmc_context *ctx, const int *ranks, int n,
			   int mode, uint32_t id, int group,
			   struct ibmc_comm **out);

#endif
