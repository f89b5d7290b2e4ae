/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ring allgather, flat (one rank, one endpoint), the baseline: in step s
 * every rank sends the block it got in step s - 1 (its own first) to its
 * right neighbour and receives the next one from its left, P - 1 steps.
 * A block is forwarded the moment it is complete, so steps pipeline.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "libjob/coll/allgather.h"
#include "libjob/comm.h"
#include "libjob/xfer.h"

struct ring {
	struct ibmc__xfers xs;
};

static unsigned char *block(const struct ibmc__task *t, int b)
{
	return (unsigned char *)t->args.buf + (size_t)b * t->args.len;
}

static int start(struct ibmc__task *t)
{
	struct ibmc_comm *c = t->comm;
	struct ring *r = calloc(1, sizeof(*r));
	int P = c->size, me = c->rank, s, rc;

	if (!r)
		return -ENOMEM;
	t->priv = r;
	rc = ibmc__xfers_init(&r->xs, t, 2 * (P - 1));
	for (s = 0; !rc && s < P - 1; s++)
		rc = ibmc__xfer_post(&r->xs, s, 0, (me - 1 + P) % P,
				     (uint32_t)s,
				     block(t, (me - s - 1 + P) % P),
				     t->args.len);
	if (!rc && P > 1)
		rc = ibmc__xfer_post(&r->xs, P - 1, 1, (me + 1) % P, 0,
				     block(t, me), t->args.len);
	return rc;
}

static int progress(struct ibmc__task *t, int64_t now)
{
	struct ring *r = t->priv;
	int P = t->comm->size, me = t->comm->rank, s, rc;

	if (P == 1)
		return 0;
	for (s = 1; s < P - 1; s++)
		if (!r->xs.x[P - 1 + s].posted && ibmc__xfer_done(&r->xs, s - 1)) {
			rc = ibmc__xfer_post(&r->xs, P - 1 + s, 1, (me + 1) % P,
					     (uint32_t)s,
					     block(t, (me - s + P) % P),
					     t->args.len);
			if (rc)
				return rc;
		}
	ibmc__xfers_progress(&r->xs, now);
	return ibmc__xfers_result(&r->xs, r->xs.x[2 * P - 3].posted);
}

static void complete(struct ibmc__task *t, int rc)
{
	ibmc__ag_count(t->comm, rc, IBMC__AG_RING);
}

static void fini(struct ibmc__task *t)
{
	struct ring *r = t->priv;

	if (!r)
		return;
	ibmc__xfers_fini(&r->xs);
	free(r);
}

const struct ibmc__task_ops ibmc__allgather_ring_ops = {
	.start = start,
	.input = ibmc__xfers_task_input,
	.progress = progress,
	.deadline = ibmc__xfers_task_deadline,
	.complete = complete,
	.late = ibmc__xfers_task_input,
	.fini = fini,
	.waits_for = ibmc__xfers_task_waits_for,
};
