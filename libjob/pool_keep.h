/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pool_keep.h - the keeper of mode pool's own pool (seed 000, sections
 * 3-4): world rank 0 decides which communicator takes which group, so
 * that every rank, members or not, sees one view. A communicator's rank 0
 * asks it; it tells every rank the slot taken (members take the group,
 * the others detach and their nodes leave it at the SA, so that OpenSM
 * narrows the tree to the communicator's nodes), then creates, has every
 * rank join and attach, tests and hands out a replacement for the slot in
 * the background. Its messages travel on a hidden communicator over every
 * rank (IBMC__POOL_COMM_ID), outside the collectives' sequence numbers,
 * as the switch to multicast does (mcast_switch.h). Every exchange is
 * resent each IBMCAST_MCAST_TEST_PERIOD_MS and bounded by
 * IBMCAST_BCAST_TIMEOUT_MS (tries: IBMCAST_MCAST_TEST_TRIES).
 */
#ifndef IBMCAST_LIBJOB_POOL_KEEP_H
#define IBMCAST_LIBJOB_POOL_KEEP_H

#include <stddef.h>
#include <stdint.h>

#include "libjob/comm.h"
#include "libjob/wire.h"

/* The hidden communicator's id: not a hash of any member list (those of
 * applications' communicators are, comm.c), reserved for the keeper. */
#define IBMC__POOL_COMM_ID 0x1bcb0001u

/* ibmc_init in mode pool, every rank, before the pool is built: the
 * hidden communicator. 0 or -errno (then there is no keeper, and pool
 * communicators go lazy, with the reason). */
int ibmc__pk_open(struct ibmc_context *ctx);

/* Every member of a new pool communicator c (ctx->lock held): rank 0
 * asks the keeper, every member waits for its answer, bounded. 0: c owns
 * a tested group of the pool (c->own, c->ghandle); -ENOSPC: the pool is
 * empty; other -errno: no answer or no group, c->why_buf says why. */
int ibmc__pk_take(struct ibmc_comm *c);

/* A datagram on the hidden communicator (coll IBMC__C_POOL). */
void ibmc__pk_input(struct ibmc_comm *hc, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen, int is_mcast);

/* Resends, rounds of the replacement, give-ups; the next timer
 * (INT64_MAX: none). ctx->lock held. */
int64_t ibmc__pk_progress(struct ibmc_context *ctx, int64_t now);

/* Finalize (ctx->lock held): a replacement in flight is abandoned, the
 * group this rank attached to or joined for it detached and left; the
 * hidden communicator destroyed. Waits for nothing. */
void ibmc__pk_free(struct ibmc_context *ctx);

#endif
