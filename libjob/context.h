/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * context.h - one process's context: its transport (one UD QP), every
 * rank's address, the job's group pool, and the lock under which whichever
 * thread is inside the library pulls datagrams for all communicators.
 */
#ifndef IBMCAST_LIBJOB_CONTEXT_H
#define IBMCAST_LIBJOB_CONTEXT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ibmcast/ibmcast.h"
#include "libjob/env.h"
#include "libjob/transport.h"

struct ibmc_comm;
/* A datagram kept for later: for a communicator not created yet, or for a
 * collective this rank has not entered yet. */
struct ibmc__early {
	struct ibmc__early *next;
	uint32_t comm_id;
	int is_mcast;
	uint64_t model_ns;		/* modeled arrival (model.h) */
	size_t len;
	unsigned char data[];
};

/* Kept datagrams in arrival order. The tail makes keeping one O(1): a
 * context's queue fills to thousands with the traffic of communicators
 * of other processes that share its groups, and walking it for each
 * datagram kept took a waiting rank's CPU (dispatch.c). */
struct ibmc__early_q {
	struct ibmc__early *head, *tail;
	int count;
	size_t bytes;
};
struct ibmc__reshape_req;
struct ibmc__pk;
struct ibmc__prk;
struct ibmc__live;

/* Node names longer than this are not sent round (prune needs them; a
 * hostlist name is at most 63 bytes). */
#define IBMC__NODE_NAME_MAX 64

struct ibmc_context {
	int rank, size;
	struct ibmc__env env;
	const struct ibmc_tr_ops *ops;
	struct ibmc_tr *tr;
	size_t mtu;			/* transport datagram limit */
	int *peer;			/* transport handle per context rank */
	uint32_t *node;			/* node name hash per context rank */
	char (*node_name)[IBMC__NODE_NAME_MAX];	/* ... and the name */
	int nnodes;			/* distinct nodes, 0: not counted yet */
	uint32_t job_key;		/* hash of every rank's address */
	struct ibmc__live *live;	/* who is alive (live.h) */

	/* Pool: a group is taken by the lowest-numbered free slot. */
	int mcast_err;
	const char *mcast_why;		/* points into env or a literal */
	char why_buf[200];
	unsigned char pool_used[IBMC__MAX_GROUPS];
	/* This rank's attachment to each pool group, made at ibmc_init and
	 * kept until finalize (comm.h: ibmc__pool_attach); -1: none. */
	int pool_handle[IBMC__MAX_GROUPS];

	/* Groups the job makes itself (mode.c): rank 0's nonce in their
	 * MGIDs, their Q_Key, and the pool mode's own pool. */
	uint16_t own_nonce;
	uint32_t own_qkey;
	struct ibmc__own_slot {
		struct ibmc_tr_group g;
		int ghandle;		/* this rank's attachment */
		int joined;		/* this rank joined it: leave */
		int empty;		/* its group was taken by a
					 * communicator and not replaced yet */
	} own_pool[IBMC__MAX_GROUPS];
	struct ibmc__pk *pk;		/* its keeper's messages (pool_keep.h) */
	struct ibmc__prk *prk;		/* mode sm: the prune keeper's
					 * (prune_keep.h) */
	int own_npool;
	char own_pool_why[200];		/* why the pool is smaller, if it is */

	/* Requests of freed communicators (prune.c): pool groups being
	 * widened back after a narrowing, grows cut short; owned by the
	 * context, reaped by progress and joined at finalize. */
	struct ibmc__widen {
		struct ibmc__widen *next;
		struct ibmc__reshape_req *prune;	/* told to stop; the
							 * widening waits for it */
		struct ibmc__reshape_req *req;	/* the widening, once sent */
		int group;
	} *widens;

	/* Communicator ids: member-set hash and how often it was used. */
	struct { uint32_t hash, count; } *ids;
	int nids;

	/* The barrier algorithm auto chose by measurement, per communicator
	 * size and node layout (coll/barrier.c). */
	struct { uint32_t key; int algo, n; } bar_cache[32];
	int nbar_cache;

	/* The progress thread (progress.c): it moves collectives on while
	 * no caller is inside the library (in_call counts those). */
	pthread_t progress;
	int progress_on, progress_stop;
	int in_call;
	pthread_cond_t call_done;
	/* The caller's progress, run while a blocking call waits
	 * (ibmc_set_wait_hook): set before any call, read under lock. */
	ibmc_wait_hook_t wait_hook;
	void *wait_hook_arg;

	pthread_mutex_t lock;		/* everything below and every comm */
	struct ibmc_comm *comms;	/* list of live communicators */
	struct ibmc__early_q early;	/* for unknown communicators */
	uint64_t dropped;		/* datagrams that were not ours */
	uint64_t received;		/* datagrams received */

	/* Modeled time (model.h), on transports with model_take only. */
	uint64_t pkt_model_ns;	/* arrival of the packet being input */
	int pkt_taken;		/* it was charged already */
	int model_pending;	/* a charged packet awaits progress */
	int model_quiet;	/* > 0: sends are not charged */
	uint64_t model_quiet_at;	/* their stamp, 0: the clock's */
	uint64_t call_return_ns;	/* the clock when the last blocking
					 * call returned */
};

#endif
