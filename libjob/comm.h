/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.h - a communicator: its members, its pool group (if any), the
 * broadcast in progress and what is left of the previous one so that late
 * retransmissions for it are still answered.
 */
#ifndef IBMCAST_LIBJOB_COMM_H
#define IBMCAST_LIBJOB_COMM_H

#include <stdint.h>

#include "ibmcast/ibmcast.h"
#include "libjob/context.h"
#include "libjob/wire.h"

struct ibmc__op;

/* A smoothed delay estimate (bcast_op.c), microseconds; srtt 0: none yet. */
struct ibmc__rtt {
	int64_t srtt, rttvar;
};

/* Child subtree heights with their own estimate (deeper ones share the
 * last). */
#define IBMC__RTT_LEVELS 24

/* A datagram kept for later: for a communicator not created yet, or for a
 * broadcast this rank has not entered yet. */
struct ibmc__early {
	struct ibmc__early *next;
	uint32_t comm_id;
	int is_mcast;
	size_t len;
	unsigned char data[];
};

struct ibmc_comm {
	struct ibmc_context *ctx;
	struct ibmc_comm *next;		/* in ctx->comms */
	int rank, size;
	int *members;			/* comm rank -> context rank */
	uint32_t id, version;

	int group;			/* pool slot, -1 when none */
	int ghandle;			/* transport's group handle */
	size_t gmtu;			/* group datagram limit */
	int mcast_err;			/* 0: may multicast */
	const char *mcast_why;

	int algo;			/* chosen by name, IBMC__A_AUTO default */
	int last_algo;
	/* Multicast that delivers nothing (group not programmed yet, link
	 * broken) is noticed by the root: auto then uses point-to-point and
	 * tries multicast again after a while. */
	int mc_fail_streak;
	uint64_t mc_suspend_until;	/* bcast count */

	uint32_t next_seq;		/* the next broadcast's number */
	struct ibmc__op *op;		/* broadcast in progress, or NULL */
	/* The last completed broadcast, to answer late packets about it. */
	int last_valid;
	uint32_t last_seq, last_nfrags;
	int last_parent;
	struct ibmc__hdr last_tmpl;	/* its shape, for replies */

	/* Measured delays, kept across broadcasts: from when a parent holds
	 * a fragment to a child's ack covering it, by the child's height
	 * (retransmission timers); from a final ack to the FIN. */
	struct ibmc__rtt ack_rtt[IBMC__RTT_LEVELS];
	struct ibmc__rtt fin_rtt;
	struct ibmc__rtt nack_rtt;	/* first NACK to its repair */

	struct ibmc__early *early;	/* for broadcasts not entered yet */
	int early_count;
	size_t early_bytes;

	ibmc_comm_stats_t st;
};

/* Free a communicator; ctx->lock held. */
void ibmc__comm_destroy(struct ibmc_comm *c);

#endif
