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

/* qsort context: the node hash of each rank (no reentrant qsort_r in
 * every libc, so the hashes travel with the indices). */
struct by_node {
	uint32_t hash;
	int rank;		/* context rank */
};

static int cmp_node(const void *a, const void *b)
{
	const struct by_node *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->rank - y->rank;
}

/* The n ranks (ranks NULL: 0..n-1) sorted by node: each node's ranks
 * form a run. NULL without memory. */
static struct by_node *sort_by_node(const struct ibmc_context *ctx,
				    const int *ranks, int n)
{
	struct by_node *v = malloc(sizeof(*v) * (size_t)n);
	int i;

	if (!v)
		return NULL;
	for (i = 0; i < n; i++) {
		v[i].rank = ranks ? ranks[i] : i;
		v[i].hash = ctx->node[v[i].rank];
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_node);
	return v;
}

/* Distinct nodes of a sorted list; *set (may be NULL) their hash. */
static int count_nodes(const struct by_node *v, int n, uint32_t *set)
{
	uint32_t h = IBMC__FNV32_INIT;
	int i, k = 0;

	for (i = 0; i < n; i++)
		if (!i || v[i].hash != v[i - 1].hash) {
			h = ibmc__fnv1a32(h, &v[i].hash, sizeof(v[i].hash));
			k++;
		}
	if (set)
		*set = h ? h : 1;
	return k;
}

uint32_t ibmc__comm_node_subset(const struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;
	struct by_node *v;
	uint32_t set;
	int mine;

	if (!ctx->nnodes) {
		v = sort_by_node(ctx, NULL, ctx->size);
		if (!v)
			return 0;
		ctx->nnodes = count_nodes(v, ctx->size, NULL);
		free(v);
	}
	v = sort_by_node(ctx, c->members, c->size);
	if (!v)
		return 0;
	mine = count_nodes(v, c->size, &set);
	free(v);
	return mine < ctx->nnodes ? set : 0;
}

/* c's node names as a hostlist, or NULL (a name too long to have gone
 * round, or no memory). */
static char *member_nodes(const struct ibmc_comm *c)
{
	const struct ibmc_context *ctx = c->ctx;
	struct by_node *v = sort_by_node(ctx, c->members, c->size);
	char **names = calloc((size_t)c->size, sizeof(*names));
	char *list = NULL;
	int i, n = 0;

	if (!names || !v)
		goto out;
	for (i = 0; i < c->size; i++) {
		if (i && v[i].hash == v[i - 1].hash)
			continue;
		names[n] = ctx->node_name[v[i].rank];
		if (!names[n++][0])
			goto out;
	}
	list = ibmc__hostlist_compress(names, (size_t)n);
out:
	free(names);
	free(v);
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

/* The widening of w's group, sent once the narrowing it follows is over
 * (the server must see them in that order). 0, or -errno. */
static int widen_send(struct ibmc_context *ctx, struct ibmc__widen *w)
{
	const struct ibmc__env *e = &ctx->env;
	struct ibmc__reshape_ask ask = {
		.server = e->server, .munge_socket = e->munge_socket,
		.job = e->job, .group = (unsigned)w->group,
	};
	int rc = ibmc__reshape_req_start(&ask, &w->req);

	if (rc)
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: widening group %d back could not start: %s; it stays narrowed until the job ends",
			 ctx->rank, w->group, strerror(-rc));
	return rc;
}

void ibmc__reshape_retire(struct ibmc_context *ctx,
			  struct ibmc__reshape_req *req, int widen_group)
{
	struct ibmc__widen *w;

	if (!req)
		return;
	/* The request stops following its group after the exchange under
	 * way; a widening goes out after it, even when a narrowing failed
	 * or was cut short (the server may have done it, and the same
	 * shape twice is no change). Nothing here waits. */
	ibmc__reshape_req_cancel(req);
	w = calloc(1, sizeof(*w));
	if (!w) {
		ibmc__reshape_req_free(req);
		if (widen_group >= 0)
			ibmc_log(IBMC_LOG_WARN,
				 "libibmcast: rank %d: out of memory widening group %d back; it stays narrowed until the job ends",
				 ctx->rank, widen_group);
		return;
	}
	w->prune = req;
	w->group = widen_group;
	w->next = ctx->widens;
	ctx->widens = w;
}

void ibmc__prune_release(struct ibmc_comm *c)
{
	ibmc__reshape_retire(c->ctx, c->prune, c->prune_group);
	c->prune = NULL;
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

/* Move w on: 1 while under way, 0 once over (w may be freed). */
static int widen_step(struct ibmc_context *ctx, struct ibmc__widen *w,
		      int block)
{
	struct ibmc__reshape_result res;
	int rc;

	if (w->prune) {
		if (block)
			ibmc__reshape_req_wait(w->prune);
		if (ibmc__reshape_req_poll(w->prune, &res) == 1)
			return 1;
		ibmc__reshape_req_free(w->prune);
		w->prune = NULL;
		if (w->group < 0 || widen_send(ctx, w))
			return 0;	/* a grow: nothing to undo */
	}
	if (block)
		ibmc__reshape_req_wait(w->req);
	rc = ibmc__reshape_req_poll(w->req, &res);
	if (rc == 1)
		return 1;
	widen_done(ctx, w, rc, &res);
	return 0;
}

static void widen_free(struct ibmc__widen *w)
{
	ibmc__reshape_req_free(w->prune);
	ibmc__reshape_req_free(w->req);
	free(w);
}

void ibmc__widen_poll(struct ibmc_context *ctx)
{
	struct ibmc__widen **pp = &ctx->widens, *w;

	while ((w = *pp)) {
		if (widen_step(ctx, w, 0)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		widen_free(w);
	}
}

void ibmc__widen_free_all(struct ibmc_context *ctx)
{
	struct ibmc__widen *w;

	/* Let every request finish: a widening cut short would leave the
	 * group narrowed for the rest of the job. Each is one exchange. */
	while ((w = ctx->widens)) {
		ctx->widens = w->next;
		widen_step(ctx, w, 1);
		widen_free(w);
	}
}
