/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives in flight (see task.h): starting, feeding, progressing and
 * completing tasks, the wait loop that pulls datagrams for every
 * communicator of the context, and the bounded lingering of completed
 * tasks.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "libjob/coll/coll.h"
#include "libjob/comm.h"
#include "libjob/dispatch.h"
#include "libjob/grow.h"
#include "libjob/live.h"
#include "libjob/mcast_switch.h"
#include "libjob/model.h"
#include "libjob/pool_keep.h"
#include "libjob/prune.h"
#include "libjob/prune_keep.h"
#include "libjob/stages.h"
#include "libjob/task.h"

/* Completed tasks kept per communicator to answer late packets, and for
 * how long at most: a peer that missed this member's last words asks
 * within a few retransmission timeouts, and collectives on a
 * communicator are ordered, so peers are never far behind in calls. In
 * tasks they can be: a call of several stages completes many at once (a
 * multicast allgather: one broadcast per node), and with a few such calls
 * in flight 8 tasks were passed before a peer's resend came, which then
 * went unanswered until the timeout. So at least LINGER_MIN and at most
 * LINGER_MAX, the ones beyond LINGER_MIN only while the kept calls'
 * lengths stay within LINGER_BYTES (a long vector's task holds buffers
 * of its size until it is freed). */
#define LINGER_MIN 8
#define LINGER_MAX 64
#define LINGER_BYTES ((size_t)64 << 20)
#define LINGER_US 10000000
/* Finalize: serve late packets until none came for this long: several
 * of the peers' longest retry intervals (20 ms), so that even under 20%
 * loss a peer still asking is heard. */
#define DRAIN_QUIET_MS 150

int64_t ibmc__task_now(void)
{
	return (int64_t)(ibmc__now_ns() / 1000);
}

static void task_free(struct ibmc__task *t)
{
	if (t->ops->fini)
		t->ops->fini(t);
	free(t);
}

/* Drop lingering tasks beyond the bound or past their time, and note when
 * the first of the others expires: progress passes come thousands of
 * times a second on every communicator, and walking each one's lingering
 * list on every pass took a third of a waiting rank's CPU in a mix of
 * small collectives on 129 communicators. */
static void trim_lingering(struct ibmc_comm *c, int64_t now)
{
	struct ibmc__task **pp = &c->lingering, *t;
	size_t bytes = 0;
	int n = 0;

	c->linger_next = INT64_MAX;
	while ((t = *pp)) {
		if (n >= LINGER_MAX || now >= t->linger_until ||
		    (n >= LINGER_MIN && bytes + t->args.len > LINGER_BYTES)) {
			*pp = t->next;
			c->nlinger--;
			task_free(t);
			continue;
		}
		n++;
		bytes += t->args.len;
		if (t->linger_until < c->linger_next)
			c->linger_next = t->linger_until;
		pp = &t->next;
	}
}

void ibmc__task_answer(struct ibmc__task *t, int rc)
{
	if (t->req) {
		t->req->done = 1;
		t->req->rc = rc;
		t->req->task = NULL;
		t->req = NULL;
	}
	t->detached = 1;
}

static void complete(struct ibmc__task *t, int rc, int64_t now)
{
	struct ibmc_comm *c = t->comm;
	struct ibmc__task **pp;

	for (pp = &c->tasks; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->done = 1;
	t->rc = rc;
	if (t->ops->complete)
		t->ops->complete(t, rc);
	if (t->detached && rc && rc != -ECANCELED) {
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: communicator %08x: %s #%u failed after this rank returned from it: %s (reported by the next call)",
			 c->rank, c->id, ibmc__coll_name(t->coll), t->seq,
			 strerror(-rc));
		if (!c->deferred_rc)
			c->deferred_rc = rc;
	}
	ibmc__task_answer(t, rc);
	t->linger_until = now + LINGER_US;
	t->next = c->lingering;
	c->lingering = t;
	c->nlinger++;
	trim_lingering(c, now);
}

static int ndetached(const struct ibmc_comm *c)
{
	const struct ibmc__task *t;
	int n = 0;

	for (t = c->tasks; t; t = t->next)
		n += t->detached && !t->background;
	return n;
}

/*
 * Pump and progress once, waiting at most until the next timer or 10 ms;
 * ctx->lock held. What already arrived is taken in before any timer is
 * looked at: on a busy host this thread may have been off the CPU for
 * longer than a timeout, with the acknowledgment that answers it waiting
 * in the queue, and running the timers first fired them for nothing (the
 * spurious timeouts and resends of a loaded node).
 */
static void step(struct ibmc_context *ctx, struct ibmc_request *req)
{
	int64_t now, d, t;
	int rc;

	rc = ibmc__pump(ctx, 0);
	if (rc && req)
		ibmc__request_fail(req, rc);	/* the transport died */
	now = ibmc__task_now();
	d = ibmc__progress_all(ctx, now);
	if (req && req->done)
		return;
	/* Timers are in us, the receive timeout in ms: round up. */
	t = d == INT64_MAX ? 10 : (d - now + 999) / 1000;
	if (t < 0)
		t = 0;
	/* A caller's wait hook (ibmc_set_wait_hook) runs between steps:
	 * about every millisecond. */
	if (t > (ctx->wait_hook ? 1 : 10))
		t = ctx->wait_hook ? 1 : 10;
	rc = ibmc__pump(ctx, (int)t);
	if (rc && req)
		ibmc__request_fail(req, rc);	/* the transport died */
}

void ibmc__request_fail(struct ibmc_request *req, int rc)
{
	if (req->task)
		req->task->error = rc;
	else if (req->stages)
		ibmc__stages_fail(req->stages, rc);
}

static void call_enter(struct ibmc_context *ctx)
{
	ctx->in_call++;
}

static void call_leave(struct ibmc_context *ctx)
{
	if (!--ctx->in_call)
		pthread_cond_signal(&ctx->call_done);
}

void ibmc__task_settle(struct ibmc_comm *comm)
{
	call_enter(comm->ctx);
	/* A call of several stages (stages.h) is in flight until its last
	 * stage ended. */
	while (comm->tasks || comm->stages)
		step(comm->ctx, NULL);
	call_leave(comm->ctx);
}

void ibmc__progress_until(struct ibmc_context *ctx, int (*done)(void *),
			  void *arg, int timeout_ms)
{
	int64_t end = ibmc__now_ms() + timeout_ms;
	ibmc_wait_hook_t hook;
	void *harg;

	call_enter(ctx);
	while (!done(arg) && ibmc__now_ms() < end) {
		step(ctx, NULL);
		/* As ibmc__wait: the caller's progress engine runs too (its
		 * peer may be waiting for this rank in it). */
		hook = ctx->wait_hook;
		harg = ctx->wait_hook_arg;
		if (!hook)
			continue;
		pthread_mutex_unlock(&ctx->lock);
		hook(harg);
		pthread_mutex_lock(&ctx->lock);
	}
	call_leave(ctx);
}

/*
 * A member of c is dead (live.h): every collective in flight on c fails
 * with -ESRCH, on every survivor alike (ULFM's rule: an operation that
 * involves a failed process raises an error rather than wait), and so
 * does every later one (ibmc__task_start).
 */
static void fail_dead(struct ibmc_comm *c)
{
	struct ibmc__task *t;
	int dead = c->dead_member;

	for (t = c->tasks; t; t = t->next) {
		if (t->error || t->done || t->background)
			continue;
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: communicator %08x: %s #%u fails: %s rank %d (node %s) is dead",
			 c->rank, c->id, ibmc__coll_name(t->coll), t->seq,
			 dead == c->rank ? "the others took this" : "its",
			 dead, c->ctx->node_name[c->members[dead]]);
		t->error = -ESRCH;
	}
}

int ibmc__task_admit(struct ibmc_comm *comm)
{
	int rc;

	/* Bound what returned calls leave behind: a root that broadcasts
	 * in a loop waits here for its oldest broadcast to finish. */
	if (ndetached(comm) >= IBMC__DETACHED_MAX) {
		call_enter(comm->ctx);
		while (ndetached(comm) >= IBMC__DETACHED_MAX)
			step(comm->ctx, NULL);
		call_leave(comm->ctx);
	}
	rc = comm->deferred_rc;
	comm->deferred_rc = 0;
	/* A dead member: nothing on this communicator can complete. */
	if (!rc && ibmc__live_dead_member(comm) >= 0)
		rc = -ESRCH;
	return rc;
}

int ibmc__task_start(struct ibmc_comm *comm, int coll, int algo,
		     const struct ibmc__task_ops *ops,
		     const struct ibmc__args *args, void *priv,
		     struct ibmc_request *req)
{
	struct ibmc__task *t = calloc(1, sizeof(*t)), **pp;
	int staged = req && req->reserved, rc;

	if (!t) {
		free(priv);	/* nothing in it yet */
		return -ENOMEM;
	}
	/* A stage's task may start from inside ibmc__progress_all: it
	 * never waits, and its call was admitted when it was made. */
	rc = staged ? 0 : ibmc__task_admit(comm);
	if (rc) {
		free(t);
		free(priv);
		return rc;
	}
	t->comm = comm;
	t->ops = ops;
	t->coll = coll;
	t->algo = algo;
	t->seq = staged ? req->seq : comm->next_seq;
	t->inner = staged;
	t->args = *args;
	t->priv = priv;
	rc = ops->start(t);
	if (rc) {
		task_free(t);
		return rc;
	}
	if (!staged)
		comm->next_seq++;
	for (pp = &comm->tasks; *pp; pp = &(*pp)->next)
		;
	*pp = t;
	if (req) {
		req->task = t;
		req->comm = comm;
		req->done = 0;
		req->rc = 0;
		t->req = req;
	}
	ibmc__replay_comm(comm);
	return 0;
}

void ibmc__task_input(struct ibmc__task *t, const struct ibmc__hdr *h,
		      const unsigned char *payload, size_t plen, int is_mcast)
{
	if (t->done || t->error)
		return;
	if (h->coll != t->coll) {
		/* Members called different collectives as their n-th on
		 * this communicator: report it, never mix them. */
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: communicator %08x collective #%u: this rank called %s, rank %u called %s (collectives must be called in the same order on every member)",
			 t->comm->rank, t->comm->id, t->seq,
			 ibmc__coll_name(t->coll), h->src,
			 ibmc__coll_name(h->coll));
		t->error = -EPROTO;
		return;
	}
	t->ops->input(t, h, payload, plen, is_mcast);
}

int64_t ibmc__progress_all(struct ibmc_context *ctx, int64_t now)
{
	struct ibmc_comm *c;
	struct ibmc__task *t, *next;
	int64_t d = INT64_MAX, td;
	int rc;

	struct ibmc_comm *cnext;

	ibmc__model_progressed(ctx);
	for (c = ctx->comms; c; c = cnext) {
		cnext = c->next;
		if (c->tasks && ibmc__live_dead_member(c) >= 0)
			fail_dead(c);
		for (t = c->tasks; t; t = next) {
			next = t->next;
			rc = t->error ? t->error : t->ops->progress(t, now);
			if (rc == IBMC_INPROGRESS && !t->background)
				td = ibmc__live_check(t, now);
			else
				td = INT64_MAX;
			if (rc == IBMC_INPROGRESS && t->error)
				rc = t->error;	/* a member it waits for died */
			if (rc != IBMC_INPROGRESS) {
				complete(t, rc, now);
				continue;
			}
			if (td < d)
				d = td;
			td = t->ops->deadline(t);
			if (td < d)
				d = td;
		}
		/* A stage that started tasks: progress again at once (their
		 * timers are not in d). */
		if (c->stages && ibmc__stages_poll(c))
			d = now;
		if (c->grow)
			ibmc__grow_poll(c);
		if (c->sw) {
			td = ibmc__switch_progress(c, now);
			if (td < d)
				d = td;
		}
		if (c->lingering && now >= c->linger_next)
			trim_lingering(c, now);
		if (c->zombie && !c->tasks && !c->lingering && !c->stages)
			ibmc__comm_destroy(c);	/* nothing owed any more */
	}
	if (ctx->widens)
		ibmc__widen_poll(ctx);
	if (ctx->pk) {
		td = ibmc__pk_progress(ctx, now);
		if (td < d)
			d = td;
	}
	if (ctx->prk) {
		td = ibmc__prk_progress(ctx, now);
		if (td < d)
			d = td;
	}
	return d;
}

int ibmc__wait(struct ibmc_request *req)
{
	struct ibmc_context *ctx = req->comm->ctx;
	ibmc_wait_hook_t hook;
	void *arg;

	call_enter(ctx);
	while (!req->done) {
		step(ctx, req);
		if (req->done)
			break;
		/* Let another thread's collective on this context in, and
		 * the caller's own progress engine run. */
		hook = ctx->wait_hook;
		arg = ctx->wait_hook_arg;
		pthread_mutex_unlock(&ctx->lock);
		if (hook)
			hook(arg);
		pthread_mutex_lock(&ctx->lock);
	}
	ibmc__model_call_return(ctx);
	call_leave(ctx);
	return req->rc;
}

struct ibmc__task *ibmc__task_find(struct ibmc_comm *comm, uint32_t seq,
				   int *lingering)
{
	struct ibmc__task *t;

	for (t = comm->tasks; t; t = t->next)
		if (t->seq == seq) {
			*lingering = 0;
			return t;
		}
	for (t = comm->lingering; t; t = t->next)
		if (t->seq == seq) {
			*lingering = 1;
			return t;
		}
	return NULL;
}

void ibmc__tasks_free(struct ibmc_comm *comm)
{
	struct ibmc__task *t;

	while ((t = comm->tasks))
		complete(t, -ECANCELED, ibmc__task_now());
	ibmc__stages_free(comm);
	while ((t = comm->lingering)) {
		comm->lingering = t->next;
		task_free(t);
	}
	comm->nlinger = 0;
}

static int any_tasks(const struct ibmc_context *ctx, int lingering)
{
	const struct ibmc_comm *c;

	for (c = ctx->comms; c; c = c->next)
		if (c->tasks || c->stages || (lingering && c->lingering))
			return 1;
	return 0;
}

int ibmc__drain(struct ibmc_context *ctx, int owed_ms, int late_ms)
{
	int64_t start = ibmc__now_ms(), quiet;
	uint64_t rx;
	int rc;

	call_enter(ctx);
	while (any_tasks(ctx, 0) && ibmc__now_ms() - start < owed_ms)
		step(ctx, NULL);
	rc = any_tasks(ctx, 0) ? -ETIMEDOUT : 0;
	start = quiet = ibmc__now_ms();
	while (any_tasks(ctx, 1) && ibmc__now_ms() - start < late_ms &&
	       ibmc__now_ms() - quiet < DRAIN_QUIET_MS) {
		rx = ctx->received;
		if (ibmc__pump(ctx, 5))
			break;
		ibmc__progress_all(ctx, ibmc__task_now());
		if (ctx->received != rx)
			quiet = ibmc__now_ms();
	}
	call_leave(ctx);
	return rc;
}
