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
struct ibmc__early;

struct ibmc_context {
	int rank, size;
	struct ibmc__env env;
	const struct ibmc_tr_ops *ops;
	struct ibmc_tr *tr;
	size_t mtu;			/* transport datagram limit */
	int *peer;			/* transport handle per context rank */
	uint32_t *node;			/* node name hash per context rank */

	/* Pool: a group is taken by the lowest-numbered free slot. */
	int mcast_err;
	const char *mcast_why;		/* points into env or a literal */
	char why_buf[200];
	unsigned char pool_used[IBMC__MAX_GROUPS];

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
	struct ibmc__early *early;	/* packets for unknown communicators */
	size_t early_bytes;
	int early_count;
	uint64_t dropped;		/* datagrams that were not ours */
	uint64_t received;		/* datagrams received */
};

#endif
