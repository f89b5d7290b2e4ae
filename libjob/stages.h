/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stages.h - one call made of several collectives run one after the
 * other (the multicast allgather's node gather, then its broadcasts; the
 * multicast allreduce's reduce, then its broadcast) as one request:
 * when a stage's tasks have all answered, the next stage starts, from
 * whatever progresses the context (the caller's test or wait, the
 * progress thread), and the request completes with how the last stage
 * ended, or with the first error that stopped it.
 *
 * A stage's tasks take sequence numbers reserved at the call: every
 * member numbers them alike, whatever it calls while the request is in
 * flight, and datagrams for a stage not started yet are kept
 * (dispatch.c) until it starts.
 */
#ifndef IBMCAST_LIBJOB_STAGES_H
#define IBMCAST_LIBJOB_STAGES_H

#include <errno.h>
#include <stdint.h>

struct ibmc_comm;
struct ibmc_request;
struct ibmc__stages;

struct ibmc__stages_ops {
	/*
	 * Start stage k (0 first), each of its tasks on a request from
	 * ibmc__stages_req(). prev: how stage k - 1 ended (0, or the first
	 * error of its tasks; 0 for stage 0). 0: started (a stage that
	 * started no task ends at once); -errno: the call ends with it
	 * once the tasks this stage did start have answered.
	 */
	int (*stage)(struct ibmc__stages *s, int k, int prev);
	/* The call ended with rc (maybe before stage 0 started): count it,
	 * free priv, and return what the caller gets. */
	int (*end)(struct ibmc_comm *comm, void *priv, int rc);
};

struct ibmc__stages {
	struct ibmc__stages *next;	/* the communicator's, oldest first */
	struct ibmc_comm *comm;
	struct ibmc_request *req;	/* the caller's */
	const struct ibmc__stages_ops *ops;
	void *priv;			/* the collective's */
	int k, nstages;
	/* Reserved and not given to a task yet: [seq, seq_end). */
	uint32_t seq, seq_end;
	struct ibmc_request *sub;	/* the running stage's requests */
	int nsub, maxsub;
	int rc;				/* the running stage's first error */
	int stop;			/* its start failed: no next stage */
};

/*
 * Start a call of nstages stages on comm for req (ctx->lock held): as
 * any call, wait for room among the calls that returned early and take
 * a deferred error (ibmc__task_admit), then reserve nseqs sequence
 * numbers and start stage 0. A stage starts at most maxsub tasks. priv
 * is ops->end's to free from here on, whatever this returns. 0 (req
 * completes later, or already did with an error) or -errno (nothing was
 * reserved).
 */
int ibmc__stages_start(struct ibmc_comm *comm, int nstages, uint32_t nseqs,
		       int maxsub, const struct ibmc__stages_ops *ops,
		       void *priv, struct ibmc_request *req);

/* A request for the next task of the running stage, carrying the next
 * reserved sequence number; NULL when maxsub or the reservation is used
 * up (a bug: -ENOMEM for the caller). */
struct ibmc_request *ibmc__stages_req(struct ibmc__stages *s);

/* Move comm's calls on: a stage whose tasks all answered ends, and the
 * next starts or the call completes. 1 when a task was started (its
 * timers are not in this pass's deadline yet), else 0. Called by
 * ibmc__progress_all, outside any task's operation. */
int ibmc__stages_poll(struct ibmc_comm *comm);

/* 1 when seq is reserved on comm for a stage not started yet. */
int ibmc__stages_reserved(const struct ibmc_comm *comm, uint32_t seq);

/*
 * Whether a stage that ended with rc lets the next one start anyway: the
 * members disagree (-EMSGSIZE, -EINVAL), which some see before the
 * others; the later stages still go, their data carrying the error to
 * every member, so that none waits for a message that never comes. Any
 * other error ends the call.
 */
static inline int ibmc__stages_carry_on(int rc)
{
	return !rc || rc == -EMSGSIZE || rc == -EINVAL;
}

/* The transport failed under s: its running tasks fail with rc. */
void ibmc__stages_fail(struct ibmc__stages *s, int rc);

/* Complete comm's calls with -ECANCELED (after ibmc__tasks_free). */
void ibmc__stages_free(struct ibmc_comm *comm);

#endif
