/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed 000's basic, lazy and pool modes (see mode.h): the groups a job
 * makes itself through the SA, for comparison with the SM-prepared pool.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/mgid.h"
#include "libjob/mcast_switch.h"
#include "libjob/mcast_test.h"
#include "libjob/mode.h"
#include "libjob/pool_keep.h"

/* Whether this rank is the lowest of c's ranks on its node: the one that
 * joins for the node (an SA join is per port, not per QP). */
int ibmc__own_node_leader(const struct ibmc_comm *c)
{
	const struct ibmc_context *ctx = c->ctx;
	uint32_t mine = ctx->node[ctx->rank];
	int i;

	for (i = 0; i < c->rank; i++)
		if (ctx->node[c->members[i]] == mine)
			return 0;
	return 1;
}

static void mcast_off(struct ibmc_comm *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void mcast_off(struct ibmc_comm *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why_buf, sizeof(c->why_buf), fmt, ap);
	va_end(ap);
	c->mcast_err = err;
	c->mcast_why = c->why_buf;
}

int ibmc__mode_join(struct ibmc_comm *c, uint16_t mlid, uint32_t mtu)
{
	struct ibmc_context *ctx = c->ctx;
	struct ibmc_tr_join j = { .qkey = ctx->own_qkey };
	struct ibmc_tr_group g;
	char mgid[IBMC_MGID_STRLEN];
	int rc;

	ibmc__mgid_derive_own(ctx->env.job, ctx->own_nonce, c->id, 0xffff,
			      j.mgid);
	ibmc__mgid_format(j.mgid, mgid);
	if (c->rank == 0 || ibmc__own_node_leader(c)) {
		j.create = c->rank == 0;
		rc = ctx->ops->mcast_join(ctx->tr, &j, &g);
		if (rc) {
			snprintf(c->why_buf, sizeof(c->why_buf),
				 "rank %d: %s group %s through the SA failed: %s",
				 c->rank, j.create ? "creating" : "joining",
				 mgid, strerror(-rc));
			return rc;
		}
		c->own_joined = 1;
	} else {
		memset(&g, 0, sizeof(g));
		memcpy(g.mgid, j.mgid, sizeof(g.mgid));
		g.mlid = mlid;
		g.mtu = mtu;
		g.qkey = ctx->own_qkey;
		g.pkey = 0xffff;
	}
	rc = ctx->ops->mcast_attach(ctx->tr, &g);
	if (rc < 0) {
		snprintf(c->why_buf, sizeof(c->why_buf),
			 "rank %d: attaching the QP to group %s failed: %s",
			 c->rank, mgid, strerror(-rc));
		return rc;
	}
	c->own = g;
	c->ghandle = rc;
	c->gmtu = g.mtu ? g.mtu : ctx->mtu;
	/* Creations at info: what an operator (and libjob_modes.sh) needs
	 * to find the job's own groups at the SA. */
	ibmc_log(j.create ? IBMC_LOG_INFO : IBMC_LOG_DEBUG,
		 "libibmcast: rank %d: communicator %08x: %s group %s (MLID 0x%04x)",
		 ctx->rank, c->id, c->own_joined ? (j.create ?
		 "created through the SA" : "joined through the SA") :
		 "attached to", mgid, g.mlid);
	return 0;
}

int ibmc__mode_start(struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;
	struct ibmc_request req;
	int rc;

	c->mtest_start_us = ibmc__task_now();
	if (!ctx->ops->mcast_join || ctx->ops->mcast_supported(ctx->tr)) {
		mcast_off(c, -ENOTSUP,
			  "mode %s needs SA joins, which the %s transport cannot do",
			  ibmc__comm_mode_name(c->mode), ctx->ops->name);
		return 0;
	}
	if (c->mode == IBMC__MODE_POOL) {
		/* The keeper's word, a round trip or two: no SA join and no
		 * test here. */
		rc = ibmc__pk_take(c);
		if (!rc) {
			c->mcast_err = 0;
			c->mcast_why = NULL;
			return 0;
		}
		if (rc != -ENOSPC) {
			c->mcast_err = rc;
			c->mcast_why = c->why_buf;
			ibmc_log(IBMC_LOG_INFO,
				 "libibmcast: rank %d: communicator %08x stays point-to-point: %s",
				 ctx->rank, c->id, c->why_buf);
			return rc == -ENOMEM ? rc : 0;
		}
		/* Seed 000: pool empty -> lazy. */
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: communicator %08x: the job's own pool is empty%s%s; testing a new group lazily",
			 ctx->rank, c->id, ctx->own_pool_why[0] ? ": " : "",
			 ctx->own_pool_why);
		c->mode = IBMC__MODE_LAZY;
	}
	mcast_off(c, -EINPROGRESS,
		  "multicast testing in progress (mode %s): point-to-point until every member acknowledged",
		  ibmc__comm_mode_name(c->mode));
	if (c->mode == IBMC__MODE_LAZY) {
		/* Once tested, every collective switches to multicast at
		 * the same call on every member (mcast_switch.h). */
		rc = ibmc__switch_expect(c);
		return rc ? rc : ibmc__mtest_start(c, NULL);
	}
	memset(&req, 0, sizeof(req));
	rc = ibmc__mtest_start(c, &req);
	if (rc)
		return rc;
	ibmc__wait(&req);	/* basic: blocking; the outcome is c's state */
	return 0;
}

/* The SA leave of a group this rank joined; a failure is only logged (the
 * group then lives on at the SA, as after a crash). */
void ibmc__own_leave(struct ibmc_context *ctx, const uint8_t mgid[16])
{
	char text[IBMC_MGID_STRLEN];
	int rc = ctx->ops->mcast_leave(ctx->tr, mgid);

	if (rc) {
		ibmc__mgid_format(mgid, text);
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: leaving group %s failed: %s",
			 ctx->rank, text, strerror(-rc));
	}
}

void ibmc__mode_release(struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;

	/* A group taken from the job's own pool is the communicator's (its
	 * other nodes left it at the taking, pool_keep.c): left like one it
	 * made itself, never back to the pool. */
	if (c->group < 0 && c->ghandle >= 0) {
		ctx->ops->mcast_detach(ctx->tr, c->ghandle);
		c->ghandle = -1;
	}
	if (c->own_joined) {
		c->own_joined = 0;
		ibmc__own_leave(ctx, c->own.mgid);
	}
}

void ibmc__own_pool_build(struct ibmc_context *ctx)
{
	struct ibmc__own_slot *s;
	struct ibmc_comm *c;
	int i, rc;

	for (i = 0; i < ctx->env.pool_groups; i++) {
		/* Each group as basic makes it, over every rank. */
		rc = ibmc__comm_create_mode(ctx, NULL, ctx->size,
					    IBMC__MODE_BASIC, 0,
					    IBMC_GROUP_NEXT, &c);
		if (rc) {
			snprintf(ctx->own_pool_why, sizeof(ctx->own_pool_why),
				 "building group %d failed: %s", i,
				 strerror(-rc));
			break;
		}
		pthread_mutex_lock(&ctx->lock);
		if (c->mcast_err) {
			snprintf(ctx->own_pool_why, sizeof(ctx->own_pool_why),
				 "group %d: %s", i, c->mcast_why);
			pthread_mutex_unlock(&ctx->lock);
			ibmc_comm_free(c);
			break;
		}
		s = &ctx->own_pool[ctx->own_npool++];
		s->g = c->own;
		s->ghandle = c->ghandle;
		s->joined = c->own_joined;
		s->empty = 0;
		/* The pool owns the group now. */
		c->ghandle = -1;
		c->own_joined = 0;
		c->mcast_err = -ECANCELED;
		pthread_mutex_unlock(&ctx->lock);
		ibmc_comm_free(c);
	}
	if (ctx->own_npool < ctx->env.pool_groups)
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: the job's own pool has %d of %d groups: %s",
			 ctx->rank, ctx->own_npool, ctx->env.pool_groups,
			 ctx->own_pool_why);
}

void ibmc__own_pool_free(struct ibmc_context *ctx)
{
	struct ibmc__own_slot *s;
	int i;

	for (i = 0; i < ctx->own_npool; i++) {
		s = &ctx->own_pool[i];
		if (s->empty)
			continue;	/* taken, not replaced (yet) */
		ctx->ops->mcast_detach(ctx->tr, s->ghandle);
		if (s->joined)
			ibmc__own_leave(ctx, s->g.mgid);
	}
	ctx->own_npool = 0;
}
