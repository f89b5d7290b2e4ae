/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Recursive-doubling allgather, flat, on 2^k ranks (seed 002, 2.1): in
 * round k a rank and its partner rank ^ 2^k swap the 2^k blocks each
 * holds (contiguous in recvbuf), log2 P rounds. coll/allgather.c uses the
 * ring for other rank counts.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "libjob/coll/allgather.h"
#include "libjob/comm.h"
#include "libjob/xfer.h"

struct rd {
	struct ibmc__xfers xs;
	int rounds;
};

static unsigned char *block(const struct ibmc__task *t, int b)
{
	return (unsigned char *)t->args.buf + (size_t)b * t->args.len;
}

static int post_send(struct ibmc__task *t, struct rd *d, int k)
{
	int me = t->comm->rank, span = 1 << k;

	return ibmc__xfer_post(&d->xs, d->rounds + k, 1, me ^ span,
			       (uint32_t)k, block(t, me & ~(span - 1)),
			       (size_t)span * t->args.len);
}

static int start(struct ibmc__task *t)
{
	struct ibmc_comm *c = t->comm;
	struct rd *d = calloc(1, sizeof(*d));
	int k, rc, span;

	if (!d)
		return -ENOMEM;
	t->priv = d;
	while ((1 << d->rounds) < c->size)
		d->rounds++;
	if ((1 << d->rounds) != c->size)
		return -EINVAL;		/* coll/allgather.c never asks */
	rc = ibmc__xfers_init(&d->xs, t, 2 * d->rounds);
	for (k = 0; !rc && k < d->rounds; k++) {
		span = 1 << k;
		rc = ibmc__xfer_post(&d->xs, k, 0, c->rank ^ span,
				     (uint32_t)k,
				     block(t, (c->rank ^ span) & ~(span - 1)),
				     (size_t)span * t->args.len);
	}
	if (!rc && d->rounds)
		rc = post_send(t, d, 0);
	return rc;
}

static int progress(struct ibmc__task *t, int64_t now)
{
	struct rd *d = t->priv;
	int k, rc;

	/* Round k sends every block of rounds 0 .. k - 1: all of them
	 * must be in (a later round's partner may have been faster). */
	for (k = 1; k < d->rounds; k++) {
		if (!ibmc__xfer_done(&d->xs, k - 1))
			break;
		if (!d->xs.x[d->rounds + k].posted) {
			rc = post_send(t, d, k);
			if (rc)
				return rc;
		}
	}
	ibmc__xfers_progress(&d->xs, now);
	if (!d->rounds)
		return 0;
	return ibmc__xfers_result(&d->xs, d->xs.x[2 * d->rounds - 1].posted);
}

static void complete(struct ibmc__task *t, int rc)
{
	ibmc__ag_count(t->comm, rc, IBMC__AG_RD);
}

static void fini(struct ibmc__task *t)
{
	struct rd *d = t->priv;

	if (!d)
		return;
	ibmc__xfers_fini(&d->xs);
	free(d);
}

const struct ibmc__task_ops ibmc__allgather_rd_ops = {
	.start = start,
	.input = ibmc__xfers_task_input,
	.progress = progress,
	.deadline = ibmc__xfers_task_deadline,
	.complete = complete,
	.late = ibmc__xfers_task_input,
	.fini = fini,
	.waits_for = ibmc__xfers_task_waits_for,
};
