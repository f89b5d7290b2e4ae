/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A grown group for a communicator (see grow.h): the request runs in
 * reshape_req.c; here its answer becomes the communicator's group,
 * offered to the members, or the reason it stays point-to-point.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "libjob/comm.h"
#include "libjob/grow.h"
#include "libjob/reshape_req.h"
#include "libjob/mcast_switch.h"
#include "libjob/prune.h"

int ibmc__grow_possible(const struct ibmc_comm *c)
{
	const struct ibmc__env *e = &c->ctx->env;

	return e->server && e->job && e->reshape_wait_ms > 0;
}

int ibmc__grow_start(struct ibmc_comm *c)
{
	const struct ibmc__env *e = &c->ctx->env;
	struct ibmc__reshape_ask ask = {
		.server = e->server, .munge_socket = e->munge_socket,
		.job = e->job, .grow = 1, .wait_ms = e->reshape_wait_ms,
	};
	int rc;

	rc = ibmc__reshape_req_start(&ask, &c->grow);
	if (rc)
		snprintf(c->why_buf, sizeof(c->why_buf),
			 "pool exhausted, and growing a group could not start: %s",
			 strerror(-rc));
	return rc;
}

void ibmc__grow_poll(struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;
	struct ibmc__reshape_result res;
	int rc;

	if (!c->grow)
		return;
	rc = ibmc__reshape_req_poll(c->grow, &res);
	if (rc == 1)
		return;
	if (rc)
		snprintf(c->why_buf, sizeof(c->why_buf),
			 "pool exhausted and growing a group failed: %s",
			 res.detail);
	ibmc__reshape_req_free(c->grow);
	c->grow = NULL;
	if (!rc) {
		rc = ctx->ops->mcast_attach(ctx->tr, &res.group);
		if (rc >= 0) {
			c->ghandle = rc;
			c->gmtu = res.group.mtu ? res.group.mtu : ctx->mtu;
			ibmc_log(IBMC_LOG_INFO,
				 "libibmcast: rank %d: communicator %08x: grew group %u (MLID 0x%04x): granted after %lld us, SM-confirmed ready after %lld us",
				 ctx->rank, c->id, res.index, res.group.mlid,
				 (long long)res.granted_us,
				 (long long)res.ready_us);
			ibmc__switch_offer(c, &res.group);
			return;
		}
		snprintf(c->why_buf, sizeof(c->why_buf),
			 "pool exhausted and attaching to grown group %u failed: %s",
			 res.index, strerror(-rc));
	}
	c->mcast_err = rc;
	c->mcast_why = c->why_buf;
	ibmc__switch_abandon(c, -rc);
	ibmc_log(IBMC_LOG_INFO,
		 "libibmcast: rank %d: communicator %08x stays point-to-point: %s",
		 ctx->rank, c->id, c->why_buf);
}

void ibmc__grow_free(struct ibmc_comm *c)
{
	/* A grow still under way is the context's to finish: freeing the
	 * communicator never waits for the server. */
	ibmc__widen_queue(c->ctx, c->grow, -1);
	c->grow = NULL;
}
