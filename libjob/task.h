/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * task.h - one collective in flight on one member, whatever the collective:
 * the algorithm's operations (start, packet input, progress, timers), the
 * call's arguments, and what is left of it after it completed.
 *
 * Every collective call on a communicator takes the communicator's next
 * sequence number (one count across all collectives, as MPI orders them
 * per communicator), so dispatch.c hands each datagram to the task its
 * (communicator, sequence number) names and never needs to know which
 * collective it is. A completed task lingers, bounded in number, so that
 * a peer that missed its last words (a FIN, a round message) still gets
 * an answer after this member returned.
 */
#ifndef IBMCAST_LIBJOB_TASK_H
#define IBMCAST_LIBJOB_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "ibmcast/ibmcast.h"
#include "libjob/wire.h"

struct ibmc_comm;
struct ibmc_context;
struct ibmc__task;

/* An algorithm's operations. progress returns 0 (done), IBMC_INPROGRESS
 * or -errno; late may be NULL (nothing owed after completion). */
struct ibmc__task_ops {
	int (*start)(struct ibmc__task *t);
	void (*input)(struct ibmc__task *t, const struct ibmc__hdr *h,
		      const unsigned char *payload, size_t plen,
		      int is_mcast);
	int (*progress)(struct ibmc__task *t, int64_t now);
	/* The next timer, us on ibmc__task_now()'s clock; INT64_MAX: none. */
	int64_t (*deadline)(const struct ibmc__task *t);
	/* Completed with rc: count it, free what lingering does not need. */
	void (*complete)(struct ibmc__task *t, int rc);
	void (*late)(struct ibmc__task *t, const struct ibmc__hdr *h,
		     const unsigned char *payload, size_t plen, int is_mcast);
	void (*fini)(struct ibmc__task *t);
	/* Optional: the communicator ranks this member waits for now (at
	 * most max into ranks), so that one silent for long is asked
	 * whether it is alive (live.h). NULL: the task waits for no one
	 * it could not also do without. */
	int (*waits_for)(const struct ibmc__task *t, int *ranks, int max);
};

/* The call's arguments. */
struct ibmc__args {
	void *buf;
	size_t len;
	int root;
	int param;		/* the algorithm's, e.g. the barrier's n */
};

struct ibmc__task {
	struct ibmc__task *next;	/* comm's active or lingering list */
	struct ibmc_comm *comm;
	const struct ibmc__task_ops *ops;
	int coll;			/* enum ibmc__coll */
	int algo;			/* the collective's algorithm id */
	uint32_t seq;
	int done, rc;
	int error;			/* fail with it at the next progress */
	int detached;			/* the caller has its answer; the task
					 * finishes what it owes on its own */
	int background;			/* no caller's call (multicast testing):
					 * neither a call in flight nor one
					 * that returned */
	struct ibmc_request *req;	/* waiting caller, or NULL */
	int inner;			/* a stage of another call (stages.h):
					 * counts nothing as a call of its
					 * own collective */
	int64_t linger_until;		/* us */
	int64_t live_next;		/* us: next look at whom it waits for
					 * (live.h), 0: not started */
	struct ibmc__args args;
	void *priv;			/* the algorithm's state */
};

/* Calls that returned while their task goes on, per communicator, before
 * the next call waits for the oldest. */
#define IBMC__DETACHED_MAX 4

/* A non-blocking call's handle (ibmc_test(3)). */
struct ibmc_request {
	struct ibmc__task *task;	/* NULL once complete */
	struct ibmc_comm *comm;
	int done, rc;
	int heap;			/* freed by test/wait */
	/* A call of several stages (stages.h): its state while in flight,
	 * task NULL. */
	struct ibmc__stages *stages;
	/* A stage's task: it takes seq, reserved at the call (stages.h),
	 * not the communicator's next. */
	int reserved;
	uint32_t seq;
};

/* Monotonic microseconds. */
int64_t ibmc__task_now(void);

/* Give the caller its answer now (rc) while the task goes on in the
 * background: what a member still owes after the call may return (acks,
 * repairs, FINs) is finished by whichever thread progresses the context. */
void ibmc__task_answer(struct ibmc__task *t, int rc);

/*
 * Before a call starts anything on comm (ctx->lock held): wait while
 * IBMC__DETACHED_MAX returned calls are still in flight, then take the
 * error one of them left (comm->deferred_rc). 0 or that error.
 */
int ibmc__task_admit(struct ibmc_comm *comm);

/* The transport failed while req was in flight: its task(s) fail with
 * rc at their next progress. */
void ibmc__request_fail(struct ibmc_request *req, int rc);

/*
 * Start a collective on comm (ctx->lock held): admits the call
 * (ibmc__task_admit) and takes the next sequence number, or, for a
 * stage's request (req->reserved), takes its reserved number as part of
 * a call already admitted; runs ops->start, replays datagrams that came
 * early, and leaves the task in flight with req (may be NULL) to be told its end. priv is
 * the task's from here on (freed by ops->fini, or plainly if the task
 * could not be allocated). 0 or -errno (nothing left in flight then).
 */
int ibmc__task_start(struct ibmc_comm *comm, int coll, int algo,
		     const struct ibmc__task_ops *ops,
		     const struct ibmc__args *args, void *priv,
		     struct ibmc_request *req);

/* One datagram for task t (its comm, version and seq matched). */
void ibmc__task_input(struct ibmc__task *t, const struct ibmc__hdr *h,
		      const unsigned char *payload, size_t plen, int is_mcast);

/* Move every task of the context on; returns the earliest timer. */
int64_t ibmc__progress_all(struct ibmc_context *ctx, int64_t now);

/* Progress (pulling datagrams) until req completes; ctx->lock held. */
int ibmc__wait(struct ibmc_request *req);

/* Progress (pulling datagrams) until done(arg) or timeout_ms passed;
 * ctx->lock held. */
void ibmc__progress_until(struct ibmc_context *ctx, int (*done)(void *),
			  void *arg, int timeout_ms);

/* Progress until comm has no task in flight (each is bounded by its own
 * timeout); ctx->lock held. */
void ibmc__task_settle(struct ibmc_comm *comm);

/* Free comm's tasks (active ones fail with -ECANCELED). */
void ibmc__tasks_free(struct ibmc_comm *comm);

/* Find comm's task (active or lingering) for seq, or NULL. */
struct ibmc__task *ibmc__task_find(struct ibmc_comm *comm, uint32_t seq,
				   int *lingering);

/*
 * Before the context goes away: finish detached tasks (for at most
 * owed_ms), then serve late datagrams while tasks linger and datagrams
 * keep arriving (for at most late_ms). ctx->lock held. 0, or -ETIMEDOUT
 * when something was still owed after owed_ms.
 */
int ibmc__drain(struct ibmc_context *ctx, int owed_ms, int late_ms);

/* The progress thread (progress.c): started by ibmc_init unless
 * IBMCAST_PROGRESS_THREAD=0, stopped by ibmc_finalize (lock not held). */
int ibmc__progress_start(struct ibmc_context *ctx);
void ibmc__progress_stop(struct ibmc_context *ctx);

#endif
