/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The nodes of sets of ranks, and the widenings and requests the context
 * finishes in the background (see prune.h); the requests run in
 * reshape_req.c. A pool group's index at the server is its position in
 * IBMCAST_GROUPS.
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

int ibmc__nodes_count(const struct ibmc_context *ctx, const int *ranks,
		      int n)
{
	struct by_node *v = sort_by_node(ctx, ranks, n);
	int k;

	if (!v)
		return -ENOMEM;
	k = count_nodes(v, n, NULL);
	free(v);
	return k;
}

int ibmc__ctx_nnodes(struct ibmc_context *ctx)
{
	int k;

	if (!ctx->nnodes) {
		k = ibmc__nodes_count(ctx, NULL, ctx->size);
		if (k < 0)
			return k;
		ctx->nnodes = k;
	}
	return ctx->nnodes;
}

uint32_t ibmc__comm_node_subset(const struct ibmc_comm *c)
{
	struct by_node *v;
	uint32_t set;
	int mine, all = ibmc__ctx_nnodes(c->ctx);

	if (all < 0)
		return 0;
	v = sort_by_node(c->ctx, c->members, c->size);
	if (!v)
		return 0;
	mine = count_nodes(v, c->size, &set);
	free(v);
	return mine < all ? set : 0;
}

char *ibmc__nodes_hostlist(const struct ibmc_context *ctx, const int *ranks,
			   int n, int *err)
{
	struct by_node *v = sort_by_node(ctx, ranks, n);
	char **names = calloc((size_t)n, sizeof(*names));
	char *list = NULL;
	int i, k = 0;

	*err = 1;
	if (!names || !v)
		goto out;
	for (i = 0; i < n; i++) {
		if (i && v[i].hash == v[i - 1].hash)
			continue;
		names[k] = ctx->node_name[v[i].rank];
		if (!names[k++][0])
			goto out;
	}
	list = ibmc__hostlist_compress(names, (size_t)k);
	*err = !list;
out:
	free(names);
	free(v);
	return list;
}

int ibmc__prune_allowed(const struct ibmc_context *ctx)
{
	const struct ibmc__env *e = &ctx->env;

	return e->prune && e->server && e->job && e->reshape_wait_ms > 0;
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

void ibmc__widen_queue(struct ibmc_context *ctx,
		       struct ibmc__reshape_req *req, int widen_group)
{
	struct ibmc__widen *w;

	if (!req && widen_group < 0)
		return;
	/* The request stops following its group after the exchange under
	 * way; a widening goes out after it, even when a narrowing failed
	 * or was cut short (the server may have done it, and the same
	 * shape twice is no change). Nothing here waits. */
	if (req)
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
	if (!req && widen_send(ctx, w)) {
		free(w);
		return;
	}
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
