/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prune_keep.h - mode sm's narrowing of pool groups, kept by world rank 0:
 * each communicator over part of the job that holds a pool group claims
 * it for its members (its rank 0 tells the keeper, at creation and at
 * free), and the keeper narrows every group to the nodes of all its
 * claims together (prune at the control server, in the background),
 * widening it as claims come and narrowing it again as they go.
 *
 * Why one keeper: members agree on a group among themselves only (or take
 * it from their own view), so communicators over disjoint ranks can hold
 * the same group; each narrowing it to its own nodes would take it from
 * the other. The union of the claims never leaves out a holder that has
 * claimed, and a holder that has not claimed yet (its claim in flight)
 * loses nothing: what a narrowed tree does not carry to it, unicast
 * repairs do. Messages travel on a hidden communicator over every rank
 * (IBMC__PRUNE_COMM_ID), resent each IBMCAST_MCAST_TEST_PERIOD_MS until
 * acknowledged and bounded by IBMCAST_BCAST_TIMEOUT_MS.
 */
#ifndef IBMCAST_LIBJOB_PRUNE_KEEP_H
#define IBMCAST_LIBJOB_PRUNE_KEEP_H

#include <stddef.h>
#include <stdint.h>

#include "libjob/comm.h"
#include "libjob/wire.h"

/* The hidden communicator's id (see pool_keep.h's). */
#define IBMC__PRUNE_COMM_ID 0x1bcb0002u

/* ibmc_init in mode sm, every rank: the keeper's channel when
 * IBMCAST_PRUNE, IBMCAST_SERVER and IBMCAST_JOB allow narrowing and
 * multicast is on. 0 (also when not wanted) or -errno: then no group is
 * ever narrowed, which is only slower. */
int ibmc__prk_open(struct ibmc_context *ctx);

/* A communicator that has just taken pool group c->group (ctx->lock
 * held): its rank 0 claims it for the members when they are not every
 * rank of the job. Never fails the creation. */
void ibmc__prk_claim(struct ibmc_comm *c);

/* Its free (ctx->lock held): rank 0 gives the claim back. Idempotent. */
void ibmc__prk_release(struct ibmc_comm *c);

/* A datagram on the hidden communicator (coll IBMC__C_PRUNE). */
void ibmc__prk_input(struct ibmc_comm *hc, const struct ibmc__hdr *h,
		     const unsigned char *payload, size_t plen);

/* Resends and the keeper's requests; the next timer (INT64_MAX: none).
 * ctx->lock held. */
int64_t ibmc__prk_progress(struct ibmc_context *ctx, int64_t now);

/* Finalize (ctx->lock held): this rank's claims given back once, without
 * waiting; the keeper widens every group it narrowed back to the job
 * (prune.h's widenings, joined at finalize); the hidden communicator
 * destroyed. */
void ibmc__prk_free(struct ibmc_context *ctx);

#endif
