/* SPDX-License-Identifier: BSD-3-Clause */
/* send.h - one datagram of a communicator to a member or to its group,
 * header encoded in front of the payload, counted in the comm's stats. */
#ifndef IBMCAST_LIBJOB_SEND_H
#define IBMCAST_LIBJOB_SEND_H

#include <stddef.h>

#include "libjob/comm.h"
#include "libjob/wire.h"

/* One datagram to context rank to, outside any communicator (liveness,
 * live.c): modeled as recovery, counted in no communicator's stats. */
int ibmc__send_ctx(struct ibmc_context *ctx, int to,
		   const struct ibmc__hdr *h, const void *payload,
		   size_t plen);

/* Unreliable like the transport: 0 when handed over, -errno else. */
int ibmc__send_pkt(struct ibmc_comm *comm, int to, const struct ibmc__hdr *h,
		   const void *payload, size_t plen);
int ibmc__mcast_pkt(struct ibmc_comm *comm, const struct ibmc__hdr *h,
		    const void *payload, size_t plen);

/* One message (ibmc_comm_stats_t.messages_sent) to member to, counted
 * when to is on another node; to < 0: a multicast, counted once. */
void ibmc__count_message(struct ibmc_comm *comm, int to);

/* The header of a keeper's message (IBMC__K_POOL) from this rank of the
 * keeper's hidden communicator hc: coll IBMC__C_POOL or IBMC__C_PRUNE,
 * operation op in a, seq and b as that keeper says. */
void ibmc__keeper_hdr(const struct ibmc_comm *hc, int coll, int op,
		      uint32_t seq, uint32_t b, struct ibmc__hdr *h);

#endif
