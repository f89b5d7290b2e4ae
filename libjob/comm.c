/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Communicators: members, identity, and the pool group taken at creation
 * without any join, test or wait (the SM prepared every group to reach all
 * of the job's nodes; attaching the QP is local).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/log.h"
#include "libjob/coll/coll.h"
#include "libjob/comm.h"
#include "libjob/dispatch.h"
#include "libjob/grow.h"
#include "libjob/mcast_switch.h"
#include "libjob/mode.h"
#include "libjob/prune.h"
#include "libjob/prune_keep.h"
#include "libjob/shm.h"
#include "libjob/topo.h"

/*
 * A communicator's id must be equal on all its members without asking
 * anyone: the hash of its member list plus how many communicators with
 * that very member list this context created before. Every member of the
 * set saw the same creations, whatever other communicators exist.
 */
static int comm_identity(struct ibmc_context *ctx, struct ibmc_comm *c,
			 uint32_t agreed)
{
	uint32_t h = ibmc__fnv1a32(IBMC__FNV32_INIT, &c->size, sizeof(c->size));
	uint32_t count;
	void *grown;
	int i;

	for (i = 0; i < c->size; i++)
		h = ibmc__fnv1a32(h, &c->members[i], sizeof(c->members[i]));
	c->version = h ? h : 1;
	/* The caller agreed on an id among the members: creation order,
	 * and the count below, do not matter. */
	if (agreed) {
		c->id = agreed;
		return 0;
	}
	for (i = 0; i < ctx->nids; i++)
		if (ctx->ids[i].hash == h)
			break;
	if (i == ctx->nids) {
		grown = realloc(ctx->ids, sizeof(*ctx->ids) * (size_t)(i + 1));
		if (!grown)
			return -ENOMEM;
		ctx->ids = grown;
		ctx->ids[i].hash = h;
		ctx->ids[i].count = 0;
		ctx->nids++;
	}
	count = ctx->ids[i].count++;
	c->id = ibmc__fnv1a32(h, &count, sizeof(count));
	return 0;
}

/* Pool exhausted: rank 0 asks the SM for one more group, every member
 * expects to be offered it; point-to-point until then. */
static void grow_group(struct ibmc_comm *c)
{
	c->mcast_err = -ENOSPC;
	c->mcast_why = "pool exhausted: every group of the job is taken by another communicator";
	if (c->size < 2 || !ibmc__grow_possible(c))
		return;
	if (ibmc__switch_expect(c))
		return;
	if (c->rank == 0 && ibmc__grow_start(c)) {
		c->mcast_why = c->why_buf;
		return;
	}
	c->mcast_err = -EINPROGRESS;
	c->mcast_why = "pool exhausted: rank 0 asked the SM for one more group (grow); point-to-point until the SM confirms it ready and every member switched";
}

/* The next free pool group, or the one the members agreed on (group, as
 * in ibmc_comm_attr_t), attached; on any failure the communicator stays
 * point-to-point with the reason. */
static void take_group(struct ibmc_context *ctx, struct ibmc_comm *c,
		       int group)
{
	int g = 0, i, start, rc;

	c->group = -1;
	c->ghandle = -1;
	if (c->mode == IBMC__MODE_P2P) {
		c->mcast_err = -ECANCELED;
		c->mcast_why = "multicast off by IBMCAST_COMM_MODE=p2p";
		return;
	}
	if (ctx->mcast_err) {
		c->mcast_err = ctx->mcast_err;
		c->mcast_why = ctx->mcast_why;
		return;
	}
	if (group == IBMC_GROUP_NONE) {
		/* Agreed by every member: none is free on all of them. */
		grow_group(c);
		return;
	}
	if (group > 0) {
		/* (in range: checked at creation) */
		g = group - 1;
		if (ctx->pool_used[g]) {
			c->mcast_err = -EBUSY;
			c->mcast_why = "the pool group the members agreed on is taken on this rank";
			return;
		}
		/* Members agree on what is free among themselves only:
		 * communicators over disjoint ranks (halves of a split
		 * whose colors are n apart) can agree on the same group;
		 * the prune keeper narrows it to all their nodes. */
		goto attach;
	}
	/* No agreement (group 0): each member takes from its own view.
	 * A communicator over some of the nodes starts its search where
	 * its node set says, so that communicators over other nodes,
	 * created at the same time by other processes, rarely take the
	 * same group (which the keeper would narrow to both). */
	start = (int)(ibmc__comm_node_subset(c) % (uint32_t)ctx->env.ngroups);
	for (i = 0; i < ctx->env.ngroups; i++) {
		g = (start + i) % ctx->env.ngroups;
		if (!ctx->pool_used[g])
			break;
	}
	if (i == ctx->env.ngroups) {
		grow_group(c);
		return;
	}
attach:
	rc = ctx->pool_handle[g];
	if (rc < 0)
		rc = ctx->pool_handle[g] =
			ctx->ops->mcast_attach(ctx->tr, &ctx->env.groups[g]);
	if (rc < 0) {
		c->mcast_err = rc;
		c->mcast_why = "attaching the QP to the pool group failed";
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: attaching to pool group %d failed: %s; communicator uses point-to-point",
			 ctx->rank, g, strerror(-rc));
		return;
	}
	ctx->pool_used[g] = 1;
	/* (members must take the same group: tests compare these lines) */
	ibmc_log(IBMC_LOG_DEBUG,
		 "libibmcast: rank %d: communicator %08x (%d members): pool group %d",
		 ctx->rank, c->id, c->size, g);
	c->group = g;
	c->ghandle = rc;
	c->gmtu = ctx->env.groups[g].mtu;
	c->mcast_err = 0;
	c->mcast_why = NULL;
	ibmc__prk_claim(c);
}

int ibmc__comm_create_mode(struct ibmc_context *ctx, const int *ranks, int n,
			   int mode, uint32_t id, int group,
			   struct ibmc_comm **out)
{
	struct ibmc_comm *c;
	unsigned char *seen = NULL;
	int i, rc;

	if (!ctx || !out)
		return -EINVAL;
	*out = NULL;
	if (!ranks)
		n = ctx->size;
	if (n < 1 || n > ctx->size || group < IBMC_GROUP_NONE ||
	    group > ctx->env.ngroups)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->members = malloc(sizeof(int) * (size_t)n);
	if (!c->members) {
		free(c);
		return -ENOMEM;
	}
	c->ctx = ctx;
	c->size = n;
	c->rank = -1;
	c->mode = mode;
	c->group = -1;
	c->ghandle = -1;
	c->own_slot = -1;
	c->claimed_group = -1;
	/* (a bit per rank of the context: a repeated member is found in
	 * linear time, also for communicators of many thousand ranks) */
	seen = calloc((size_t)ctx->size / 8 + 1, 1);
	if (!seen) {
		free(c->members);
		free(c);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		int r = ranks ? ranks[i] : i;

		if (r < 0 || r >= ctx->size ||
		    (seen[r >> 3] & (1u << (r & 7))))
			goto err_inval;
		seen[r >> 3] |= (unsigned char)(1u << (r & 7));
		c->members[i] = r;
		if (r == ctx->rank)
			c->rank = i;
	}
	free(seen);
	seen = NULL;
	if (c->rank < 0)
		goto err_inval;	/* only members call it */
	for (i = 0; i < IBMC__C_COUNT; i++) {
		c->algo[i] = ctx->env.algo[i];
		c->algo_param[i] = ctx->env.algo_param[i];
		c->last_algo[i] = -1;
	}
	pthread_mutex_lock(&ctx->lock);
	rc = comm_identity(ctx, c, id);
	if (rc) {
		pthread_mutex_unlock(&ctx->lock);
		free(c->members);
		free(c);
		return rc;
	}
	if (mode == IBMC__MODE_SM || mode == IBMC__MODE_P2P)
		take_group(ctx, c, group);
	c->next = ctx->comms;
	ctx->comms = c;
	ibmc__replay_ctx(ctx, c);
	if (mode != IBMC__MODE_SM && mode != IBMC__MODE_P2P) {
		/* Joins, and for basic the whole test, happen here. */
		rc = ibmc__mode_start(c);
		if (rc) {
			ibmc__comm_destroy(c);
			pthread_mutex_unlock(&ctx->lock);
			return rc;
		}
	}
	if (ctx->env.barrier_measure_create) {
		rc = ibmc__barrier_measure_now(c);
		if (rc) {
			ibmc__comm_destroy(c);
			pthread_mutex_unlock(&ctx->lock);
			return rc;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	*out = c;
	return 0;

err_inval:
	free(seen);
	free(c->members);
	free(c);
	return -EINVAL;
}

int ibmc_comm_create(ibmc_context_t *ctx, const int *ranks, int n,
		     ibmc_comm_t **out)
{
	if (!ctx)
		return -EINVAL;
	return ibmc__comm_create_mode(ctx, ranks, n, ctx->env.comm_mode, 0,
				      IBMC_GROUP_NEXT, out);
}

int ibmc_comm_create_attr(ibmc_context_t *ctx, const int *ranks, int n,
			  const ibmc_comm_attr_t *attr, ibmc_comm_t **out)
{
	int mode;

	if (!ctx)
		return -EINVAL;
	mode = attr && attr->mode ? ibmc__comm_mode_parse(attr->mode) :
				    ctx->env.comm_mode;
	if (mode < 0) {
		if (out)
			*out = NULL;
		return -EINVAL;
	}
	return ibmc__comm_create_mode(ctx, ranks, n, mode, attr ? attr->id : 0,
				      attr ? attr->group : IBMC_GROUP_NEXT,
				      out);
}

int ibmc_pool_free(ibmc_context_t *ctx, uint64_t *mask)
{
	int g;

	if (!ctx || !mask)
		return -EINVAL;
	*mask = 0;
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->mcast_err)
		for (g = 0; g < ctx->env.ngroups && g < 64; g++)
			if (!ctx->pool_used[g])
				*mask |= UINT64_C(1) << g;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

void ibmc__pool_attach(struct ibmc_context *ctx)
{
	int g, rc;

	for (g = 0; g < IBMC__MAX_GROUPS; g++)
		ctx->pool_handle[g] = -1;
	if (ctx->mcast_err)
		return;
	for (g = 0; g < ctx->env.ngroups; g++) {
		rc = ctx->ops->mcast_attach(ctx->tr, &ctx->env.groups[g]);
		if (rc < 0) {
			ibmc_log(IBMC_LOG_WARN,
				 "libibmcast: rank %d: attaching to pool group %d at init failed: %s; tried again by the communicator that takes it",
				 ctx->rank, g, strerror(-rc));
			continue;
		}
		ctx->pool_handle[g] = rc;
	}
}

void ibmc__pool_detach(struct ibmc_context *ctx)
{
	int g;

	for (g = 0; g < IBMC__MAX_GROUPS; g++)
		if (ctx->pool_handle[g] >= 0) {
			ctx->ops->mcast_detach(ctx->tr, ctx->pool_handle[g]);
			ctx->pool_handle[g] = -1;
		}
}

/* Called with the lock held, also from ibmc_finalize. */
void ibmc__comm_destroy(struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;
	struct ibmc_comm **pp;

	for (pp = &ctx->comms; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (c->group >= 0)
		ctx->pool_used[c->group] = 0;	/* (stays attached) */
	ibmc__tasks_free(c);
	ibmc__prk_release(c);
	ibmc__grow_free(c);
	ibmc__switch_free(c);
	ibmc__mode_release(c);
	ibmc__early_free(&c->early);
	ibmc__shm_free(c->shm);
	ibmc__topo_free(c->topo);
	free(c->members);
	free(c);
}

int ibmc_comm_free(ibmc_comm_t *c)
{
	struct ibmc_context *ctx;
	struct ibmc__task *t;

	if (!c || c->zombie)
		return -EINVAL;
	ctx = c->ctx;
	pthread_mutex_lock(&ctx->lock);
	if (c->stages) {
		pthread_mutex_unlock(&ctx->lock);
		return -EBUSY;	/* a non-blocking call in flight */
	}
	for (t = c->tasks; t; t = t->next)
		if (!t->detached && !t->background) {
			pthread_mutex_unlock(&ctx->lock);
			return -EBUSY;	/* a non-blocking call in flight */
		}
	/* Lazy testing that has not finished is of no use any more. */
	if (c->mtest)
		c->mtest->error = -ECANCELED;
	/* Returned broadcasts still in flight may need the group (the
	 * root's remaining fragments go by multicast): finish them first. */
	ibmc__task_settle(c);
	if (!c->lingering) {
		ibmc__comm_destroy(c);
		pthread_mutex_unlock(&ctx->lock);
		return 0;
	}
	/* Peers may still ask for this rank's last messages (answered by
	 * unicast): the group goes back to the pool now, the rest when they
	 * stopped asking. */
	if (c->group >= 0) {
		ctx->pool_used[c->group] = 0;
		c->group = -1;
		c->ghandle = -1;
	}
	ibmc__prk_release(c);
	ibmc__grow_free(c);
	ibmc__switch_free(c);
	ibmc__mode_release(c);
	c->zombie = 1;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int ibmc_comm_rank(const ibmc_comm_t *c)
{
	return c ? c->rank : -EINVAL;
}

int ibmc_comm_size(const ibmc_comm_t *c)
{
	return c ? c->size : -EINVAL;
}

int ibmc_comm_mcast_state(const ibmc_comm_t *c, const char **why)
{
	if (!c) {
		if (why)
			*why = "no communicator";
		return -EINVAL;
	}
	if (c->lazy_ready && c->mcast_err) {
		if (why)
			*why = "multicast tested and ready for broadcasts (lazy mode: the other collectives go point-to-point until every member switched)";
		return 0;
	}
	if (!c->mcast_err && c->st.bcasts < c->mc_suspend_until) {
		if (why)
			*why = "multicast delivered nothing in the last broadcasts (group not programmed yet?); point-to-point until it is tried again";
		return -EHOSTUNREACH;
	}
	if (why)
		*why = c->mcast_err ? c->mcast_why : "multicast ready";
	return c->mcast_err;
}

int ibmc_comm_get_stats(const ibmc_comm_t *c, ibmc_comm_stats_t *st)
{
	if (!c || !st)
		return -EINVAL;
	pthread_mutex_lock(&c->ctx->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->ctx->lock);
	return 0;
}
