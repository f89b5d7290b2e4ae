/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.h - a communicator: its members, its pool group (if any), its
 * collectives in flight and the last ones completed (so that late packets
 * about them are still answered), and what its algorithms learnt and chose.
 */
#ifndef IBMCAST_LIBJOB_COMM_H
#define IBMCAST_LIBJOB_COMM_H

#include <stdint.h>

#include "ibmcast/ibmcast.h"
#include "libjob/context.h"
#include "libjob/rtt.h"
#include "libjob/task.h"
#include "libjob/wire.h"

/* Child subtree heights with their own estimate (deeper ones share the
 * last). */
#define IBMC__RTT_LEVELS 24

struct ibmc__topo;
struct ibmc__shm;
struct ibmc__switch;
struct ibmc__reshape_req;
struct ibmc__stages;

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

	/* basic, lazy and pool (mode.c): the group this communicator
	 * created and joined itself, or took from the job's own pool. */
	int mode;			/* enum ibmc__comm_mode */
	struct ibmc_tr_group own;
	int own_joined;			/* this rank joined it through the SA
					 * (its node's lowest rank): leave */
	int own_slot;			/* the job's own pool slot, -1: none */
	int lazy_ready;			/* lazy: testing succeeded, broadcasts
					 * may multicast (the other
					 * collectives after the switch) */
	struct ibmc__task *mtest;	/* multicast testing in flight */
	int64_t mtest_start_us;
	char why_buf[200];		/* mcast_why when made here */

	/* Started point-to-point, switches to multicast later at the same
	 * collective on every member (mcast_switch.c): a group grown for it
	 * (grow.c, mode sm with the pool exhausted; rank 0 asks) or lazy
	 * testing that succeeded. */
	struct ibmc__switch *sw;
	struct ibmc__reshape_req *grow;
	/* Rank 0 of a communicator over part of the job: the pool group it
	 * claimed with the prune keeper (prune_keep.h), -1: none. */
	int claimed_group;

	/* Per collective (enum ibmc__coll): the algorithm chosen by name
	 * (0: auto) and the one the last call used (-1: none yet). */
	int algo[IBMC__C_COUNT];
	int algo_param[IBMC__C_COUNT];	/* "name:N": N, else 0 */
	int last_algo[IBMC__C_COUNT];
	int last_param[IBMC__C_COUNT];	/* ... and its N, 0: none */
	char last_name[24];		/* ibmc_comm_last_algo's "name:N" */
	/* Multicast that delivers nothing (group not programmed yet, link
	 * broken) is noticed by the broadcast root: auto then uses
	 * point-to-point and tries multicast again after a while. */
	int mc_fail_streak;
	uint32_t mc_fail_seq;		/* failures before it are not counted */
	uint64_t mc_suspend_until;	/* bcast count */

	uint32_t next_seq;		/* the next collective's number */
	struct ibmc__task *tasks;	/* in flight, oldest first */
	struct ibmc__task *lingering;	/* completed, newest first */
	int nlinger;
	int64_t linger_next;		/* us: the first of them to expire */
	struct ibmc__stages *stages;	/* calls of several stages in
					 * flight (stages.h), oldest first */

	/* Broadcast: measured delays, kept across broadcasts: from when a
	 * parent holds a fragment to a child's ack covering it, by the
	 * child's height (retransmission timers); from a final ack to the
	 * FIN; from a first NACK to its repair. */
	struct ibmc__rtt ack_rtt[IBMC__RTT_LEVELS];
	uint8_t ack_backoff[IBMC__RTT_LEVELS];	/* doublings kept until a
						 * valid sample (bcast_op.c) */
	struct ibmc__rtt fin_rtt;
	struct ibmc__rtt nack_rtt;
	/* Round messages (msg.h): from waiting for one to getting it after
	 * a pull; barrier release: from arrival to release. */
	struct ibmc__rtt msg_rtt;
	struct ibmc__rtt rel_rtt;
	/* Barrier: what auto chose by measurement (coll/barrier.c);
	 * bar_n 0: not measured yet. */
	int bar_algo, bar_n;

	/* Freed by the caller while peers may still need its last words:
	 * kept, without its group, answering late packets until its
	 * lingering tasks expire (task.c) or the context is finalized. */
	int zombie;
	/* A collective that failed after this rank returned from it: the
	 * next call on the communicator reports it (as MPI reports errors
	 * of completed calls: later). */
	int deferred_rc;
	/* A member known dead (live.h): every collective fails with it.
	 * dead_member is valid for the context's live_gen-th death. */
	unsigned live_gen;
	int dead_member;

	/* The communicator's nodes (topo.c) and this rank's view of its
	 * node's shared-memory segment (shm.c), both built at first use. */
	struct ibmc__topo *topo;
	struct ibmc__shm *shm;

	struct ibmc__early_q early;	/* for collectives not entered yet */
	int replay_due;			/* some left for the next pump */

	ibmc_comm_stats_t st;
};

/* Free a communicator; ctx->lock held. */
void ibmc__comm_destroy(struct ibmc_comm *c);

/*
 * The job's pool groups are attached once, at ibmc_init, and stay attached
 * until finalize: a communicator then takes its group without touching the
 * transport, and no member can attach after the root's first multicast and
 * miss it (it would wait for repairs down the ack tree, one retransmission
 * timeout per level). A group that could not be attached at init is
 * attached at creation, as before. Without a usable pool: nothing.
 */
void ibmc__pool_attach(struct ibmc_context *ctx);
void ibmc__pool_detach(struct ibmc_context *ctx);

#endif
