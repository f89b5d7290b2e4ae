/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reduce to rank 0 up a binomial tree, the first half of the "mcast"
 * allreduce (coll/allreduce.c multicasts the result with the broadcast
 * engine): every rank receives its children's partial vectors, combines
 * them in a fixed order (its own, then its children by increasing rank:
 * the tree's shape fixes the order, so the result's bits never depend on
 * timing), and sends the result to its parent. It runs among a group of
 * members when asked.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/coll/allreduce.h"
#include "libjob/comm.h"
#include "libjob/reduce.h"
#include "libjob/tree.h"
#include "libjob/wire.h"
#include "libjob/xfer.h"

struct tred {
	struct ibmc__xfers xs;
	struct ibmc__ar_args *a;
	struct ibmc__tree tree;
	int *order;		/* children by increasing rank */
	unsigned char **in;	/* per child (tree order) */
	unsigned char *acc;
	int reduced;
};

static int cmp_int(const void *x, const void *y)
{
	return *(const int *)x - *(const int *)y;
}

static int start(struct ibmc__task *t)
{
	struct ibmc_comm *c = t->comm;
	struct ibmc__ar_args *a = t->priv;
	struct tred *r = calloc(1, sizeof(*r));
	size_t len = t->args.len;
	int i, rc, n, gsize, grank;

	if (!r) {
		free(a);
		t->priv = NULL;
		return -ENOMEM;
	}
	r->a = a;
	a->tag_algo = IBMC__AR_MCAST;
	t->priv = r;
	ibmc__ar_place(a, c, &gsize, &grank);
	rc = ibmc__tree_build(&r->tree, IBMC__A_BINOMIAL, 1, gsize, 0, grank);
	if (rc)
		return rc;
	n = r->tree.nchildren;
	r->acc = malloc(len ? len : 1);
	r->order = calloc((size_t)n + 1, sizeof(int));
	r->in = calloc((size_t)n + 1, sizeof(*r->in));
	if (!r->acc || !r->order || !r->in)
		return -ENOMEM;
	if (n)
		memcpy(r->order, r->tree.children, sizeof(int) * (size_t)n);
	qsort(r->order, (size_t)n, sizeof(int), cmp_int);
	rc = ibmc__xfers_init(&r->xs, t, n + 1);
	for (i = 0; !rc && i < n; i++) {
		r->in[i] = malloc(len ? len : 1);
		if (!r->in[i])
			return -ENOMEM;
		rc = ibmc__xfer_post(&r->xs, i, 0,
				     ibmc__ar_member(a, r->order[i]),
				     ibmc__ar_tag(a, 0), r->in[i], len);
	}
	return rc;
}

static int progress(struct ibmc__task *t, int64_t now)
{
	struct tred *r = t->priv;
	struct ibmc__ar_args *a = r->a;
	int i, n = r->tree.nchildren, rc;

	if (!r->reduced) {
		for (i = 0; i < n; i++)
			if (!ibmc__xfer_done(&r->xs, i))
				break;
		if (i == n) {
			/* This rank's own vector is taken now, not at the
			 * start: "shm_mcast" starts the tree (its receives)
			 * before its node's vectors are reduced into it. */
			if (t->args.len)
				memcpy(r->acc, a->buf, t->args.len);
			/* acc = acc op child, children by increasing rank */
			for (i = 0; i < n; i++) {
				unsigned char *tmp = r->in[i];

				ibmc__reduce(a->op, a->dtype, r->acc, tmp,
					     a->count);
				r->in[i] = r->acc;
				r->acc = tmp;
			}
			r->reduced = 1;
			if (r->tree.parent >= 0) {
				rc = ibmc__xfer_post(&r->xs, n, 1,
						     ibmc__ar_member(a,
							    r->tree.parent),
						     ibmc__ar_tag(a, 0),
						     r->acc, t->args.len);
				if (rc)
					return rc;
			} else {
				if (t->args.len)
					memcpy(a->buf, r->acc,
					       t->args.len);
			}
		}
	}
	ibmc__xfers_progress(&r->xs, now);
	return ibmc__xfers_result(&r->xs, r->reduced);
}

static void fini(struct ibmc__task *t)
{
	struct tred *r = t->priv;
	int i;

	if (!r)
		return;
	ibmc__xfers_fini(&r->xs);
	for (i = 0; r->in && i < r->tree.nchildren; i++)
		free(r->in[i]);
	free(r->in);
	free(r->order);
	free(r->acc);
	ibmc__tree_free(&r->tree);
	free(r->a);
	free(r);
}

const struct ibmc__task_ops ibmc__allreduce_tree_ops = {
	.start = start,
	.input = ibmc__xfers_task_input,
	.progress = progress,
	.deadline = ibmc__xfers_task_deadline,
	.late = ibmc__xfers_task_input,
	.fini = fini,
	.waits_for = ibmc__xfers_task_waits_for,
};
