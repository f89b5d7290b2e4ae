/* SPDX-License-Identifier: BSD-3-Clause */
/* Binomial and postal-model trees over relative ranks (root = 0), mapped
 * back to communicator ranks for one member's use. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "libjob/tree.h"
#include "libjob/wire.h"

/* Nodes a postal broadcast informs by time t when a message takes lambda
 * units to arrive and a sender emits one per unit: N(t) = N(t-1) +
 * N(t-lambda), 1 before lambda. Saturates instead of overflowing. */
static uint64_t postal_reach(int t, int lambda)
{
	uint64_t *n, r;
	int i;

	if (t < lambda)
		return 1;
	n = malloc(sizeof(*n) * (size_t)(t + 1));
	if (!n)
		return UINT64_MAX;
	for (i = 0; i <= t; i++) {
		if (i < lambda)
			n[i] = 1;
		else
			n[i] = n[i - 1] + n[i - lambda];
		if (n[i] > (1ULL << 40))
			n[i] = 1ULL << 40;
	}
	r = n[t];
	free(n);
	return r;
}

/* The relative tree of cnt nodes starting at lo that finishes by time t:
 * lo's first child takes the nodes that child can reach in t - lambda, lo
 * continues with the rest one unit later. Children are recorded in the
 * order lo serves them. */
static void postal_build(int *parent, int lo, int cnt, int t, int lambda)
{
	while (cnt > 1) {
		uint64_t reach = postal_reach(t - lambda, lambda);
		int s = reach >= (uint64_t)(cnt - 1) ? cnt - 1 : (int)reach;
		int child = lo + cnt - s;

		parent[child] = lo;
		postal_build(parent, child, s, t - lambda, lambda);
		cnt -= s;
		t--;
	}
}

static int postal_time(int n, int lambda)
{
	int t = 0;

	while (postal_reach(t, lambda) < (uint64_t)n)
		t++;
	return t;
}

int ibmc__tree_build(struct ibmc__tree *t, int algo, int lambda, int n,
		     int root, int me)
{
	int *parent, *height, v, k, nc = 0, rel = (me - root + n) % n;

	t->children = NULL;
	t->cheight = NULL;
	t->nchildren = 0;
	parent = calloc((size_t)n, sizeof(*parent));
	height = calloc((size_t)n, sizeof(*height));
	if (!parent || !height) {
		free(parent);
		free(height);
		return -ENOMEM;
	}
	parent[0] = -1;
	if (algo == IBMC__A_POSTAL && lambda > 1) {
		postal_build(parent, 0, n, postal_time(n, lambda), lambda);
	} else {
		/* Binomial: v's parent is v without its lowest set bit. */
		for (v = 1; v < n; v++)
			parent[v] = v & (v - 1);
	}
	/* Heights: every parent index is smaller than its child's. */
	for (v = n - 1; v > 0; v--)
		if (height[parent[v]] < height[v] + 1)
			height[parent[v]] = height[v] + 1;
	for (v = 1; v < n; v++)
		if (parent[v] == rel)
			nc++;
	if (nc) {
		t->children = malloc(sizeof(int) * (size_t)nc);
		t->cheight = malloc(sizeof(int) * (size_t)nc);
		if (!t->children || !t->cheight) {
			free(t->children);
			free(t->cheight);
			t->children = t->cheight = NULL;
			free(parent);
			free(height);
			return -ENOMEM;
		}
	}
	/* Serve the largest subtree first: in both trees a parent's children
	 * at higher relative indexes were assigned first and hold more. */
	k = 0;
	for (v = n - 1; v > 0; v--)
		if (parent[v] == rel) {
			t->cheight[k] = height[v];
			t->children[k++] = (v + root) % n;
		}
	t->nchildren = nc;
	t->parent = rel ? (parent[rel] + root) % n : -1;
	t->height = height[rel];
	free(parent);
	free(height);
	return 0;
}

void ibmc__tree_free(struct ibmc__tree *t)
{
	free(t->children);
	free(t->cheight);
	t->children = NULL;
	t->cheight = NULL;
	t->nchildren = 0;
}
