/* SPDX-License-Identifier: BSD-3-Clause */
/* A communicator's nodes, leaders and ranks per node (see topo.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "libjob/comm.h"
#include "libjob/topo.h"

void ibmc__topo_free(struct ibmc__topo *t)
{
	if (!t)
		return;
	free(t->node_of);
	free(t->leaders);
	free(t->first);
	free(t->ranks);
	free(t);
}

int ibmc__topo_build(const uint32_t *node_id, const int *members, int size,
		     int rank, struct ibmc__topo **out)
{
	struct ibmc__topo *t = calloc(1, sizeof(*t));
	int *fill = NULL, i, j, n;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->node_of = malloc(sizeof(int) * (size_t)size);
	t->leaders = malloc(sizeof(int) * (size_t)size);
	t->first = calloc((size_t)size + 1, sizeof(int));
	t->ranks = malloc(sizeof(int) * (size_t)size);
	fill = calloc((size_t)size + 1, sizeof(int));
	if (!t->node_of || !t->leaders || !t->first || !t->ranks || !fill) {
		free(fill);
		ibmc__topo_free(t);
		return -ENOMEM;
	}
	/* A rank's node is the one of the lowest rank with its identity:
	 * scanning ranks upwards meets every node first at its leader. The
	 * quadratic scan only looks at leaders, at most the node count. */
	for (i = 0; i < size; i++) {
		uint32_t id = node_id[members[i]];

		for (n = 0; n < t->nnodes; n++)
			if (node_id[members[t->leaders[n]]] == id)
				break;
		if (n == t->nnodes)
			t->leaders[t->nnodes++] = i;
		t->node_of[i] = n;
		t->first[n + 1]++;
	}
	for (n = 0; n < t->nnodes; n++) {
		t->first[n + 1] += t->first[n];
		fill[n] = t->first[n];
		if (t->first[n + 1] - t->first[n] > t->max_local)
			t->max_local = t->first[n + 1] - t->first[n];
	}
	for (i = 0; i < size; i++) {
		n = t->node_of[i];
		j = fill[n]++;
		t->ranks[j] = i;
		if (i == rank) {
			t->my_node = n;
			t->local_rank = j - t->first[n];
		}
	}
	t->local_size = t->first[t->my_node + 1] - t->first[t->my_node];
	free(fill);
	*out = t;
	return 0;
}

const struct ibmc__topo *ibmc__comm_topo(struct ibmc_comm *c)
{
	if (!c->topo && ibmc__topo_build(c->ctx->node, c->members, c->size,
					 c->rank, &c->topo))
		return NULL;
	return c->topo;
}

int ibmc__node_name(const struct ibmc_context *ctx, char *buf, size_t len)
{
	const char *list = getenv("IBMCAST_LOOPBACK_NODES"), *p, *end;
	int i;

	if (!list || !*list || strcmp(ctx->ops->name, "loopback")) {
		snprintf(buf, len, "%s", ctx->env.node);
		return 0;
	}
	p = list;
	for (i = 0; i < ctx->rank && p; i++) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (!p || !*p || *p == ',') {
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: IBMCAST_LOOPBACK_NODES=\"%s\" names no node for this rank",
			 ctx->rank, list);
		return -EINVAL;
	}
	end = strchr(p, ',');
	snprintf(buf, len, "%.*s", (int)(end ? (size_t)(end - p) : strlen(p)),
		 p);
	return 0;
}
