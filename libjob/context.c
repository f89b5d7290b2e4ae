/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibmc_init()/ibmc_finalize(): read IBMCAST_*, open the transport, and
 * exchange every rank's endpoint address (and its view of the pool, so all
 * ranks agree whether multicast is usable) through the caller's bootstrap.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fnv.h"
#include "common/log.h"
#include "common/mgid.h"
#include "libjob/comm.h"
#include "libjob/context.h"
#include "libjob/dispatch.h"
#include "libjob/live.h"
#include "libjob/mode.h"
#include "libjob/pool_keep.h"
#include "libjob/prune.h"
#include "libjob/prune_keep.h"
#include "libjob/task.h"
#include "libjob/topo.h"
#include "libjob/wire.h"

/* Longest ibmc_finalize spends finishing what returned calls still owe,
 * and then answering late packets. */
#define DRAIN_OWED_MAX_MS 10000
#define DRAIN_MAX_MS 1000

/* What each rank contributes to the address exchange. */
struct card {
	struct ibmc_tr_addr addr;
	uint32_t mcast_ok;	/* big-endian 0/1 */
	uint32_t pool_hash;	/* big-endian */
	uint32_t node_hash;	/* big-endian: IBMCAST_NODE's hash */
	uint32_t nonce;		/* big-endian: rank 0's is the job's, in
				 * the MGIDs of groups it makes itself */
	char node_name[IBMC__NODE_NAME_MAX];	/* "" when too long */
};

/* Different for two runs of one job id: time and process. */
static uint16_t draw_nonce(void)
{
	uint64_t v = ibmc__now_ns() ^ ((uint64_t)getpid() << 20);

	return (uint16_t)(ibmc__fnv1a32(IBMC__FNV32_INIT, &v, sizeof(v)));
}

static uint32_t pool_hash(const struct ibmc__env *e)
{
	size_t n = sizeof(e->groups[0]) * (size_t)e->ngroups;

	return ibmc__fnv1a32(IBMC__FNV32_INIT, e->groups, n) ^
	       (uint32_t)e->ngroups;
}

static const struct ibmc_tr_ops *pick_transport(const struct ibmc__env *e)
{
	const struct ibmc_tr_ops *ops;
	const char *name = e->transport;

	if (!name)
		name = e->sim_socket ? "sim" : "verbs";
	ops = ibmc__tr_find(name);
	if (!ops)
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: transport \"%s\" is not available in this build%s",
			 name, e->transport ? "" :
			 " (set IBMCAST_SIM_DATAPLANE or IBMCAST_TRANSPORT)");
	return ops;
}

/* Every rank must agree on multicast, or communicators would disagree on
 * how data moves; one rank without it turns it off for all. */
static void agree(struct ibmc_context *ctx, const struct card *cards)
{
	uint32_t h = cards[ctx->rank].pool_hash;
	int r;

	for (r = 0; r < ctx->size && !ctx->mcast_err; r++) {
		if (!be32toh(cards[r].mcast_ok)) {
			snprintf(ctx->why_buf, sizeof(ctx->why_buf),
				 "rank %d cannot multicast (see its log)", r);
			ctx->mcast_err = -ENETDOWN;
			ctx->mcast_why = ctx->why_buf;
		} else if (cards[r].pool_hash != h) {
			snprintf(ctx->why_buf, sizeof(ctx->why_buf),
				 "ranks %d and %d disagree on IBMCAST_GROUPS",
				 ctx->rank, r);
			ctx->mcast_err = -EINVAL;
			ctx->mcast_why = ctx->why_buf;
		}
	}
}

static int exchange(struct ibmc_context *ctx, const ibmc_bootstrap_t *bs)
{
	struct card mine, *all;
	char node[sizeof(ctx->env.node)];
	int r, rc;

	memset(&mine, 0, sizeof(mine));
	rc = ctx->ops->local_addr(ctx->tr, &mine.addr);
	if (rc)
		return rc;
	mine.mcast_ok = htobe32(ctx->mcast_err ? 0 : 1);
	mine.pool_hash = htobe32(pool_hash(&ctx->env));
	rc = ibmc__node_name(ctx, node, sizeof(node));
	if (rc)
		return rc;
	mine.node_hash = htobe32(ibmc__fnv1a32(IBMC__FNV32_INIT, node,
					      strlen(node)));
	if (strlen(node) < sizeof(mine.node_name))
		memcpy(mine.node_name, node, strlen(node));
	mine.nonce = htobe32(draw_nonce());
	all = calloc((size_t)ctx->size, sizeof(*all));
	ctx->peer = calloc((size_t)ctx->size, sizeof(*ctx->peer));
	ctx->node = calloc((size_t)ctx->size, sizeof(*ctx->node));
	ctx->node_name = calloc((size_t)ctx->size, sizeof(*ctx->node_name));
	if (!all || !ctx->peer || !ctx->node || !ctx->node_name) {
		free(all);
		return -ENOMEM;
	}
	rc = bs->allgather(bs->arg, &mine, all, sizeof(mine));
	if (rc) {
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: bootstrap allgather failed: %s",
			 ctx->rank, strerror(rc < 0 ? -rc : rc));
		free(all);
		return rc < 0 ? rc : -EIO;
	}
	for (r = 0; r < ctx->size; r++) {
		rc = ctx->ops->peer_add(ctx->tr, &all[r].addr);
		if (rc < 0) {
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: rank %d: resolving rank %d's address failed: %s",
				 ctx->rank, r, strerror(-rc));
			free(all);
			return rc;
		}
		ctx->peer[r] = rc;
		ctx->node[r] = be32toh(all[r].node_hash);
		memcpy(ctx->node_name[r], all[r].node_name,
		       sizeof(ctx->node_name[r]));
		ctx->node_name[r][sizeof(ctx->node_name[r]) - 1] = 0;
	}
	agree(ctx, all);
	/* Every rank's address at once names this run of the job, the same
	 * on every rank (node shared-memory segments, shm.c). */
	ctx->job_key = ibmc__fnv1a32(IBMC__FNV32_INIT, all,
				     sizeof(*all) * (size_t)ctx->size);
	ctx->own_nonce = (uint16_t)be32toh(all[0].nonce);
	free(all);
	return 0;
}

int ibmc_init(const ibmc_bootstrap_t *bs, ibmc_context_t **out)
{
	struct ibmc_tr_config cfg;
	struct ibmc_context *ctx;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!bs || !bs->allgather || bs->size < 1 || bs->rank < 0 ||
	    bs->rank >= bs->size)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->rank = bs->rank;
	ctx->size = bs->size;
	rc = ibmc__env_read(&ctx->env);
	if (rc)
		goto err_free;
	ctx->mcast_err = ctx->env.mcast_err;
	ctx->mcast_why = ctx->env.mcast_why;
	ctx->ops = pick_transport(&ctx->env);
	if (!ctx->ops) {
		rc = -ENODEV;
		goto err_free;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.node = ctx->env.node;
	cfg.qkey = ctx->env.ngroups ? ctx->env.groups[0].qkey :
		   ctx->env.job ? ibmc__qkey_for_job(ctx->env.job) : 0;
	cfg.sim_socket = ctx->env.sim_socket;
	cfg.device = getenv("IBMCAST_VERBS_DEVICE");
	cfg.hub = ctx->env.hub;
	cfg.rank = ctx->rank;
	cfg.size = ctx->size;
	ctx->own_qkey = cfg.qkey ? cfg.qkey :
			ibmc__qkey_for_job(ctx->env.job);
	rc = ctx->ops->open(&cfg, &ctx->tr);
	if (rc) {
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: opening transport %s failed: %s",
			 ctx->rank, ctx->ops->name, strerror(-rc));
		goto err_free;
	}
	ctx->mtu = ctx->ops->mtu(ctx->tr);
	if (ctx->mtu < IBMC__WIRE_CTL + 16) {
		rc = -EMSGSIZE;
		goto err_close;
	}
	if (!ctx->mcast_err && ctx->ops->mcast_supported(ctx->tr)) {
		ctx->mcast_err = -ENOTSUP;
		ctx->mcast_why = "the transport has no multicast";
	}
	pthread_mutex_init(&ctx->lock, NULL);
	rc = exchange(ctx, bs);
	if (!rc)
		rc = ibmc__live_init(ctx);
	if (rc)
		goto err_lock;
	ibmc__pool_attach(ctx);
	ibmc__progress_start(ctx);
	if (ctx->env.comm_mode == IBMC__MODE_POOL) {
		/* The keeper's channel first: the pool's groups are built
		 * over every rank, like it. */
		rc = ibmc__pk_open(ctx);
		if (rc)
			snprintf(ctx->own_pool_why, sizeof(ctx->own_pool_why),
				 "no keeper: its hidden communicator failed: %s",
				 strerror(-rc));
		ibmc__own_pool_build(ctx);	/* seed 000: at init */
	}
	rc = ibmc__prk_open(ctx);
	if (rc)
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: no prune keeper (its hidden communicator failed: %s): pool groups stay as wide as the job",
			 ctx->rank, strerror(-rc));
	if (ctx->mcast_err && ctx->env.comm_mode == IBMC__MODE_SM)
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: multicast off: %s", ctx->rank,
			 ctx->mcast_why);
	*out = ctx;
	return 0;

err_lock:
	pthread_mutex_destroy(&ctx->lock);
	ibmc__live_fini(ctx);
	free(ctx->peer);
	free(ctx->node);
	free(ctx->node_name);
err_close:
	ctx->ops->close(ctx->tr);
err_free:
	free(ctx);
	return rc;
}

int ibmc_finalize(ibmc_context_t *ctx)
{
	struct ibmc_comm *c;

	if (!ctx)
		return -EINVAL;
	ibmc__progress_stop(ctx);
	pthread_mutex_lock(&ctx->lock);
	/* Multicast testing still under way is owed to no one. */
	for (c = ctx->comms; c; c = c->next)
		if (c->mtest)
			c->mtest->error = -ECANCELED;
	/* Peers may still miss this rank's last words (a FIN, a round
	 * message): answer them for a while, bounded. */
	ibmc__drain(ctx, ctx->env.timeout_ms && ctx->env.timeout_ms <
			 DRAIN_OWED_MAX_MS ? ctx->env.timeout_ms :
			 DRAIN_OWED_MAX_MS, DRAIN_MAX_MS);
	ibmc__pk_free(ctx);
	ibmc__prk_free(ctx);
	while (ctx->comms)
		ibmc__comm_destroy(ctx->comms);
	ibmc__widen_free_all(ctx);
	ibmc__pool_detach(ctx);
	ibmc__own_pool_free(ctx);
	ibmc__early_free(&ctx->early);
	pthread_mutex_unlock(&ctx->lock);
	ctx->ops->close(ctx->tr);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx->ids);
	ibmc__live_fini(ctx);
	free(ctx->peer);
	free(ctx->node);
	free(ctx->node_name);
	free(ctx);
	return 0;
}

int ibmc_context_rank(const ibmc_context_t *ctx)
{
	return ctx ? ctx->rank : -EINVAL;
}

int ibmc_context_size(const ibmc_context_t *ctx)
{
	return ctx ? ctx->size : -EINVAL;
}

int ibmc_set_wait_hook(ibmc_context_t *ctx, ibmc_wait_hook_t hook, void *arg)
{
	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ctx->wait_hook = hook;
	ctx->wait_hook_arg = arg;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}
