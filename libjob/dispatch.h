/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dispatch.h - the receive side shared by all communicators of a context:
 * datagrams are decoded and handed to the communicator and collective task
 * they name (by sequence number, whatever the collective); datagrams for a
 * communicator or collective this rank has not reached yet are kept
 * (bounded) and replayed, late ones about a completed collective go to its
 * lingering task, anything else is dropped and counted.
 */
#ifndef IBMCAST_LIBJOB_DISPATCH_H
#define IBMCAST_LIBJOB_DISPATCH_H

#include "libjob/comm.h"
#include "libjob/context.h"

/* Receive for up to timeout_ms (then drain what is queued) and dispatch.
 * Called with ctx->lock held. 0, or -errno when the transport died. */
int ibmc__pump(struct ibmc_context *ctx, int timeout_ms);

/* Hand kept datagrams to comm: at creation (from the context's list) and
 * when a collective starts (from the communicator's list). */
void ibmc__replay_ctx(struct ibmc_context *ctx, struct ibmc_comm *comm);
void ibmc__replay_comm(struct ibmc_comm *comm);

/* Free kept datagrams. */
void ibmc__early_free(struct ibmc__early_q *q);

#endif
