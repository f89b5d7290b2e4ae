/* SPDX-License-Identifier: BSD-3-Clause */
/* Calls of several stages run as one request (see stages.h): reserving
 * their sequence numbers, starting each stage when the one before it
 * answered, and completing the caller's request. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "libjob/comm.h"
#include "libjob/stages.h"
#include "libjob/task.h"

/* The call is over (rc): nothing stays reserved, the collective counts
 * it, and the caller has its answer. */
static void end(struct ibmc__stages *s, int rc)
{
	struct ibmc__stages **pp;
	struct ibmc_request *req = s->req;

	for (pp = &s->comm->stages; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	s->seq = s->seq_end;
	rc = s->ops->end(s->comm, s->priv, rc);
	req->done = 1;
	req->rc = rc;
	req->task = NULL;
	req->stages = NULL;
	free(s->sub);
	free(s);
}

/* Stage s->k's first error once all its tasks answered, or
 * IBMC_INPROGRESS. The first by task order, as the blocking calls'
 * loops reported. */
static int stage_rc(const struct ibmc__stages *s)
{
	int i, rc = s->rc;

	for (i = 0; i < s->nsub; i++)
		if (!s->sub[i].done)
			return IBMC_INPROGRESS;
	for (i = 0; !rc && i < s->nsub; i++)
		rc = s->sub[i].rc;
	return rc;
}

/* Start stage s->k; 0 when it has tasks in flight, else 1 (it ended at
 * once). */
static int begin(struct ibmc__stages *s, int prev)
{
	int i, rc;

	s->nsub = 0;
	s->rc = 0;
	rc = s->ops->stage(s, s->k, prev);
	if (rc) {
		s->rc = rc;
		s->stop = 1;
	}
	/* A request whose task did not start has nothing to wait for. */
	for (i = 0; i < s->nsub; i++)
		if (!s->sub[i].done && !s->sub[i].task)
			s->sub[i].done = 1;
	return stage_rc(s) != IBMC_INPROGRESS;
}

/* Run s on from its current stage as far as it goes now: 1 when it
 * started tasks, and s may be gone (the call ended) when it returns. */
static int advance(struct ibmc__stages *s)
{
	int rc, started = 0;

	while ((rc = stage_rc(s)) != IBMC_INPROGRESS) {
		if (s->stop || ++s->k >= s->nstages) {
			end(s, rc);
			return started;
		}
		if (!begin(s, rc))
			started = 1;
	}
	return started;
}

int ibmc__stages_start(struct ibmc_comm *comm, int nstages, uint32_t nseqs,
		       int maxsub, const struct ibmc__stages_ops *ops,
		       void *priv, struct ibmc_request *req)
{
	struct ibmc__stages *s = calloc(1, sizeof(*s)), **pp;
	int rc = s ? ibmc__task_admit(comm) : -ENOMEM;

	if (!rc) {
		s->sub = calloc((size_t)(maxsub > 0 ? maxsub : 1),
				sizeof(*s->sub));
		if (!s->sub)
			rc = -ENOMEM;
	}
	if (rc) {
		if (s)
			free(s->sub);
		free(s);
		ops->end(comm, priv, rc);	/* frees priv */
		return rc;
	}
	s->comm = comm;
	s->req = req;
	s->ops = ops;
	s->priv = priv;
	s->nstages = nstages;
	s->maxsub = maxsub;
	s->seq = comm->next_seq;
	s->seq_end = comm->next_seq + nseqs;
	comm->next_seq = s->seq_end;
	for (pp = &comm->stages; *pp; pp = &(*pp)->next)
		;
	*pp = s;
	req->comm = comm;
	req->task = NULL;
	req->done = 0;
	req->rc = 0;
	req->stages = s;
	/* A first stage that ended at once (it started nothing, or its
	 * tasks answered at their start) moves the call on now. */
	begin(s, 0);
	advance(s);
	return 0;
}

struct ibmc_request *ibmc__stages_req(struct ibmc__stages *s)
{
	struct ibmc_request *r;

	if (s->nsub >= s->maxsub || s->seq == s->seq_end)
		return NULL;
	r = &s->sub[s->nsub++];
	*r = (struct ibmc_request){ .comm = s->comm, .reserved = 1,
				    .seq = s->seq++ };
	return r;
}

int ibmc__stages_poll(struct ibmc_comm *comm)
{
	struct ibmc__stages *s, *next;
	int started = 0;

	for (s = comm->stages; s; s = next) {
		next = s->next;	/* s may end */
		started |= advance(s);
	}
	return started;
}

int ibmc__stages_reserved(const struct ibmc_comm *comm, uint32_t seq)
{
	const struct ibmc__stages *s;

	for (s = comm->stages; s; s = s->next)
		if ((int32_t)(seq - s->seq) >= 0 &&
		    (int32_t)(seq - s->seq_end) < 0)
			return 1;
	return 0;
}

void ibmc__stages_fail(struct ibmc__stages *s, int rc)
{
	int i;

	for (i = 0; i < s->nsub; i++)
		if (!s->sub[i].done && s->sub[i].task)
			s->sub[i].task->error = rc;
}

void ibmc__stages_free(struct ibmc_comm *comm)
{
	/* Their tasks were completed (cancelled) already. */
	while (comm->stages) {
		comm->stages->stop = 1;
		comm->stages->rc = -ECANCELED;
		end(comm->stages, -ECANCELED);
	}
}
