/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibmc_bcast(): algorithm selection at the root (the others learn the
 * root's choice from its packets, so ranks never disagree), then the
 * progress loop that pulls datagrams for every communicator of the context
 * until this broadcast is done.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/clock.h"
#include "libjob/bcast_op.h"
#include "libjob/dispatch.h"
#include "libjob/env.h"

/* Failed multicast broadcasts in a row before auto stops multicasting, and
 * for how many broadcasts it then stays point-to-point. */
#define MC_FAIL_LIMIT 2
#define MC_SUSPEND 32

static int may_mcast(const struct ibmc_comm *c)
{
	return !c->mcast_err && c->st.bcasts >= c->mc_suspend_until;
}

/* Auto: multicast when the communicator may and the size is worth it
 * (IBMCAST_MCAST_MIN_BYTES, default: always from 4 ranks on, beyond one
 * fragment on 2 or 3 ranks where a unicast tree is as short); else the
 * postal tree for one-fragment messages (latency-bound) and binomial for
 * pipelined larger ones. */
static int choose(const struct ibmc_comm *c, size_t len)
{
	const struct ibmc__env *e = &c->ctx->env;
	size_t frag = c->ctx->mtu - IBMC__WIRE_HDR;
	long min = e->mcast_min;

	if (c->algo == IBMC__A_MCAST && may_mcast(c))
		return IBMC__A_MCAST;
	if (c->algo == IBMC__A_BINOMIAL || c->algo == IBMC__A_POSTAL)
		return c->algo;
	if (min < 0)
		min = c->size >= 4 ? 0 : (long)frag + 1;
	if (may_mcast(c) && (long long)len >= min)
		return IBMC__A_MCAST;
	return len <= frag ? IBMC__A_POSTAL : IBMC__A_BINOMIAL;
}

static void remember(struct ibmc_comm *c, const struct ibmc__op *op)
{
	struct ibmc__hdr *t = &c->last_tmpl;

	c->last_valid = 1;
	c->last_seq = op->seq;
	c->last_nfrags = op->nfrags;
	c->last_parent = op->tree.parent;
	memset(t, 0, sizeof(*t));
	t->algo = op->algo;
	t->lambda = op->lambda;
	t->comm_id = c->id;
	t->version = c->version;
	t->seq = op->seq;
	t->root = op->root;
	t->len = (uint32_t)op->len;
	t->fragsz = op->fragsz;
}

/* The root notices multicast that reached nobody. */
static void mcast_health(struct ibmc_comm *c, const struct ibmc__op *op)
{
	if (op->algo != IBMC__A_MCAST || op->me != op->root || op->rc ||
	    !op->tree.nchildren)
		return;
	if (op->child_mc) {
		c->mc_fail_streak = 0;
		return;
	}
	if (++c->mc_fail_streak >= MC_FAIL_LIMIT)
		c->mc_suspend_until = c->st.bcasts + MC_SUSPEND;
}

static int run(struct ibmc_comm *c, struct ibmc__op *op)
{
	struct ibmc_context *ctx = c->ctx;
	int rc = 0;

	while (!op->done) {
		int64_t now = ibmc__op_now(), d = INT64_MAX, t;
		struct ibmc_comm *o;

		/* Every broadcast in progress on this context moves on,
		 * whichever thread holds the lock. */
		for (o = ctx->comms; o; o = o->next)
			if (o->op) {
				ibmc__op_progress(o->op, now);
				t = ibmc__op_next_deadline(o->op);
				if (t < d)
					d = t;
			}
		if (op->done)
			break;
		/* Timers are in us, the receive timeout in ms: round up. */
		t = d == INT64_MAX ? 10 : (d - now + 999) / 1000;
		if (t < 0)
			t = 0;
		if (t > 10)
			t = 10;
		rc = ibmc__pump(ctx, (int)t);
		if (rc) {
			op->rc = rc;
			break;
		}
		/* Let another thread's broadcast on this context in. */
		pthread_mutex_unlock(&ctx->lock);
		pthread_mutex_lock(&ctx->lock);
	}
	return op->rc;
}

int ibmc_bcast(ibmc_comm_t *c, void *buf, size_t len, int root)
{
	struct ibmc_context *ctx;
	struct ibmc__op op;
	int rc, algo = IBMC__A_AUTO;

	if (!c || root < 0 || root >= c->size || (len && !buf))
		return -EINVAL;
	if (len > UINT32_MAX)
		return -EMSGSIZE;
	ctx = c->ctx;
	pthread_mutex_lock(&ctx->lock);
	if (c->op) {
		pthread_mutex_unlock(&ctx->lock);
		return -EBUSY;	/* calls on one communicator are serial */
	}
	if (c->size == 1) {
		c->next_seq++;
		c->st.bcasts++;
		c->last_algo = IBMC__A_BINOMIAL;
		pthread_mutex_unlock(&ctx->lock);
		return 0;
	}
	if (c->rank == root)
		algo = choose(c, len);
	rc = ibmc__op_start(&op, c, buf, len, root, algo);
	if (rc) {
		ibmc__op_fini(&op);
		pthread_mutex_unlock(&ctx->lock);
		return rc;
	}
	c->next_seq++;
	c->op = &op;
	ibmc__replay_comm(c);
	rc = run(c, &op);
	c->op = NULL;
	if (op.known) {
		remember(c, &op);
		c->last_algo = op.algo;
	}
	mcast_health(c, &op);
	if (!rc) {
		c->st.bcasts++;
		if (op.algo == IBMC__A_MCAST)
			c->st.mcast_bcasts++;
	}
	ibmc__op_fini(&op);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int ibmc_comm_set_bcast_algo(ibmc_comm_t *c, const char *name)
{
	int a = ibmc__algo_parse(name);

	if (!c || a < 0)
		return -EINVAL;
	pthread_mutex_lock(&c->ctx->lock);
	c->algo = a;
	pthread_mutex_unlock(&c->ctx->lock);
	return 0;
}

const char *ibmc_comm_last_bcast_algo(const ibmc_comm_t *c)
{
	if (!c || c->last_algo < 0)
		return "none";
	return ibmc__algo_name(c->last_algo);
}
