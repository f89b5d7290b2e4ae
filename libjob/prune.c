/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Narrowing a sub-communicator's pool group to its nodes, and widening it
 * back (see prune.h); the requests run in reshape_req.c. A pool group's
 * index at the server is its position in IBMCAST_GROUPS.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "libjob/comm.h"
#include "libjob/prune.h"
#include "libjob/reshape_req.h"

/* Distinct entries of a node-hash list, in first-seen order. */
static int distinct(const uint32_t *node, const int *ranks, int n,
		    int *first)
{
	int i, j, k = 0;

	for (i = 0; i < n; i++) {
		uint32_t h = node[ranks ? ranks[i] : i];

		for (j = 0; j < k; j++)
			if (node[ranks ? ranks[first[j]] : first[j]] == h)
				break;
		if (j == k)
			first[k++] = i;
	}
	return k;
}

uint32_t ibmc__comm_node_subset(const struct ibmc_comm *c)
{
	const struct ibmc_context *ctx = c->ctx;
	int *first = malloc(sizeof(int) * (size_t)ctx->size);
	uint32_t h = IBMC__FNV32_INIT;
	int mine, all, i;

	if (!first)
		return 0;
	mine = distinct(ctx->node, c->members, c->size, first);
	for (i = 0; i < mine; i++)
		h = ibmc__fnv1a32(h, &ctx->node[c->members[first[i]]],
				  sizeof(uint32_t));
	all = distinct(ctx->node, NULL, ctx->size, first);
	free(first);
	if (mine >= all)
		return 0;
	return h ? h : 1;
}

/* c's node names as a hostlist, or NULL (a name too long to have gone
 * round, or no memory). */
static char *member_nodes(const struct ibmc_comm *c)
{
	const struct ibmc_context *ctx = c->ctx;
	char **names = calloc((size_t)c->size, sizeof(*names));
	char *list = NULL;
	int *first = malloc(sizeof(int) * (size_t)c->size);
	int n, i;

	if (!names || !first)
		goto out;
	n = distinct(ctx->node, c->members, c->size, first);
	for (i = 0; i < n; i++) {
		names[i] = ctx->node_name[c->members[first[i]]];
		if (!names[i][0])
			goto out;
	}
	list = ibmc__hostlist_compress(names, (size_t)n);
out:
	free(names);
	free(first);
	return list;
}

static int allowed(const struct ibmc_comm *c)
{
	const struct ibmc__env *e = &c->ctx->env;

	return e->prune && e->server && e->job && e->reshape_wait_ms > 0;
}

void ibmc__prune_start(struct ibmc_comm *c)
{
	const struct ibmc__env *e = &c->ctx->env;
	struct ibmc__reshape_ask ask = {
		.server = e->server, .munge_socket = e->munge_socket,
		.job = e->job, .wait_ms = e->reshape_wait_ms,
	};
	char *nodes;
	int rc;

	if (c->rank != 0 || c->group < 0 || !allowed(c) ||
	    !ibmc__comm_node_subset(c))
		return;
	nodes = member_nodes(c);
	if (!nodes) {
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: communicator %08x: its nodes' names are not known; group %d stays as wide as the job",
			 c->ctx->rank, c->id, c->group);
		return;
	}
	ask.group = (unsigned)c->group;
	ask.nodes = nodes;
	rc = ibmc__reshape_req_start(&ask, &c->prune);
	if (rc)
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: communicator %08x: pruning group %d to %s could not start: %s",
			 c->ctx->rank, c->id, c->group, nodes, strerror(-rc));
	else
		c->prune_group = c->group;
	free(nodes);
}

void ibmc__prune_poll(struct ibmc_comm *c)
{
	struct ibmc__reshape_result res;
	int rc;

	if (!c->prune || c->prune_done)
		return;
	rc = ibmc__reshape_req_poll(c->prune, &res);
	if (rc == 1)
		return;
	c->prune_done = 1;
	if (rc)
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: communicator %08x: group %d not pruned (it stays as wide as the job): %s",
			 c->ctx->rank, c->id, c->prune_group, res.detail);
	else
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: communicator %08x: pruned group %u (MLID 0x%04x) to its %u member port(s)%s: SM-confirmed ready after %lld us",
			 c->ctx->rank, c->id, res.index, res.group.mlid,
			 res.members, res.changed ? "" :
			 " (already that shape)", (long long)res.ready_us);
}

void ibmc__prune_release(struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;
	const struct ibmc__env *e = &ctx->env;
	struct ibmc__reshape_ask ask = {
		.server = e->server, .munge_socket = e->munge_socket,
		.job = e->job,
	};
	struct ibmc__widen *w;
	int rc;

	if (!c->prune)
		return;
	ibmc__reshape_req_free(c->prune);
	c->prune = NULL;
	/* Widen even when the narrowing failed or was cut short: the
	 * server may have done it, and the same shape twice is no change. */
	w = calloc(1, sizeof(*w));
	ask.group = (unsigned)c->prune_group;
	rc = w ? ibmc__reshape_req_start(&ask, &w->req) : -ENOMEM;
	if (rc) {
		free(w);
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: widening group %d back could not start: %s; it stays narrowed until the job ends",
			 ctx->rank, c->prune_group, strerror(-rc));
		return;
	}
	w->group = c->prune_group;
	w->next = ctx->widens;
	ctx->widens = w;
}

static void widen_done(struct ibmc_context *ctx, struct ibmc__widen *w, int rc,
		       const struct ibmc__reshape_result *res)
{
	if (rc)
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: widening group %d back failed: %s",
			 ctx->rank, w->group, res->detail);
	else
		ibmc_log(IBMC_LOG_DEBUG,
			 "libibmcast: rank %d: group %d widened back to the job's nodes",
			 ctx->rank, w->group);
}

void ibmc__widen_poll(struct ibmc_context *ctx)
{
	struct ibmc__widen **pp = &ctx->widens, *w;
	struct ibmc__reshape_result res;
	int rc;

	while ((w = *pp)) {
		rc = ibmc__reshape_req_poll(w->req, &res);
		if (rc == 1) {
			pp = &w->next;
			continue;
		}
		widen_done(ctx, w, rc, &res);
		*pp = w->next;
		ibmc__reshape_req_free(w->req);
		free(w);
	}
}

void ibmc__widen_free_all(struct ibmc_context *ctx)
{
	struct ibmc__widen *w;
	struct ibmc__reshape_result res;
	int rc;

	while ((w = ctx->widens)) {
		ctx->widens = w->next;
		/* Let the request finish: a widening cut short would leave
		 * the group narrowed for the rest of the job. */
		while ((rc = ibmc__reshape_req_poll(w->req, &res)) == 1)
			ibmc__reshape_req_wait(w->req);
		widen_done(ctx, w, rc, &res);
		ibmc__reshape_req_free(w->req);
		free(w);
	}
}
