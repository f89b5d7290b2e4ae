/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node part of the "shm_mcast" allreduce: every rank writes its
 * vector into its node's shared segment; the node leader reduces them in
 * rank order (the result's bits never depend on timing), then the leaders
 * reduce among themselves, as an inner task over the leaders: by
 * recursive doubling (allreduce_rd.c: log2 L rounds) for vectors up to
 * IBMC__AR_SHORT_BYTES or shorter than one element per leader, else by
 * reduce-scatter and a gather to rank 0 (allreduce_rab.c with to_root:
 * each leader sends about 2 (L - 1) / L vectors, in pieces). Either way
 * rank 0 holds the result, which coll/allreduce.c multicasts to every
 * member. Only leaders touch the network before the result's multicast.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "libjob/coll/allreduce.h"
#include "libjob/comm.h"
#include "libjob/reduce.h"
#include "libjob/shm.h"
#include "libjob/topo.h"
#include "libjob/xfer.h"

#define POLL_US 200

enum { S_ATTACH, S_FREE, S_LOCAL, S_NET, S_DONE };

struct ars {
	struct ibmc__ar_args *a;
	const struct ibmc__topo *topo;
	struct ibmc__shm *shm;
	struct ibmc__shm_call call;
	int state;
	int leader;
	struct ibmc__task inner;	/* leaders: their reduce */
	int inner_on;
	/* A peer leader's datagrams before the inner task starts (this
	 * leader still waits for the previous call to leave the segment,
	 * as calls made back to back do). */
	struct ibmc__xkept_list early;
};

/* What the node's ranks must agree on: the vector's bytes, its type and
 * operation. */
static uint64_t agreement(const struct ibmc__task *t, const struct ars *s)
{
	return (uint64_t)ibmc__ar_tag(s->a, 0) << 32 | (uint32_t)t->args.len;
}

static int start(struct ibmc__task *t)
{
	struct ibmc__ar_args *a = t->priv;
	struct ars *s = calloc(1, sizeof(*s));

	if (!s) {
		free(a);
		t->priv = NULL;
		return -ENOMEM;
	}
	s->a = a;
	t->priv = s;
	s->topo = ibmc__comm_topo(t->comm);
	if (!s->topo || ibmc__shm_call_begin(&s->call, t->comm))
		return -ENOMEM;
	s->shm = s->call.shm;
	s->leader = s->topo->local_rank == 0;
	return 0;
}

/* Own vector in, once every local rank is done with the previous call. */
static int write_in(struct ibmc__task *t, struct ars *s)
{
	const struct ibmc__topo *tp = s->topo;
	struct ibmc__shm_flags *f;

	if (ibmc__shm_wait_free(&s->call, tp->local_size))
		return IBMC_INPROGRESS;
	f = &s->shm->hdr->flag[tp->local_rank];
	if (t->args.len)
		memcpy(s->shm->data + (size_t)tp->local_rank * t->args.len,
		       s->a->buf, t->args.len);
	f->len = agreement(t, s);
	atomic_store_explicit(&f->written, s->call.stamp, memory_order_release);
	/* A local rank is done with the segment now: the result comes by
	 * the broadcast. */
	if (!s->leader)
		atomic_store_explicit(&f->copied, s->call.stamp,
				      memory_order_release);
	return 0;
}

/* 0 when every local rank passed what this one did; else logs the first
 * that did not and returns -EMSGSIZE (another length) or -EINVAL. */
static int node_disagrees(struct ibmc__task *t, struct ars *s)
{
	const struct ibmc__topo *tp = s->topo;
	uint64_t o;
	int i;

	for (i = 0; i < tp->local_size; i++) {
		o = s->shm->hdr->flag[i].len;
		if (o == agreement(t, s))
			continue;
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: communicator %08x: allreduce: rank %d on this node passes %u bytes (tag %08x), this rank %zu (tag %08x): the ranks' arguments disagree",
			 t->comm->rank, t->comm->id,
			 tp->ranks[tp->first[tp->my_node] + i],
			 (uint32_t)o, (uint32_t)(o >> 32), t->args.len,
			 ibmc__ar_tag(s->a, 0));
		return (uint32_t)o != (uint32_t)t->args.len ? -EMSGSIZE :
		       -EINVAL;
	}
	return 0;
}

/* Leader: every vector in, reduced in rank order into its buffer, where
 * the leaders' reduce takes it from. */
static int reduce_node(struct ibmc__task *t, struct ars *s)
{
	const struct ibmc__topo *tp = s->topo;
	struct ibmc__xfers *xs = s->inner.priv;
	size_t len = t->args.len;
	int i, err;

	if (!s->leader)
		return 0;
	if (ibmc__shm_wait_all(&s->call, tp->local_size, 0, s->call.stamp))
		return IBMC_INPROGRESS;
	err = node_disagrees(t, s);
	if (err) {
		if (!s->inner_on || !xs)
			return err;
		/* The leaders' reduce still runs to its end, every send
		 * flagged with the error (xfer.h; its state starts with its
		 * transfers), and ends with it: rank 0 learns it from the
		 * data and its broadcast of the result carries it to every
		 * member, where the other nodes timed out. */
		if (!xs->error)
			xs->error = err;
	} else if (len) {
		/* acc = v0 op (v1 op (... op vn-1)): the lower rank on the
		 * left. */
		memcpy(s->a->buf, s->shm->data + (size_t)(tp->local_size - 1) *
		       len, len);
		for (i = tp->local_size - 2; i >= 0; i--)
			ibmc__reduce(s->a->op, s->a->dtype,
				     s->shm->data + (size_t)i * len, s->a->buf,
				     s->a->count);
	}
	atomic_store_explicit(&s->shm->hdr->flag[0].copied, s->call.stamp,
			      memory_order_release);
	return 0;
}

static void inner_input(void *arg, const struct ibmc__hdr *h,
			const unsigned char *payload, size_t plen)
{
	struct ars *s = arg;

	s->inner.ops->input(&s->inner, h, payload, plen, 0);
}

/* Leader: the leaders' reduce, started (its receives posted) as soon as
 * this call owns the segment, so that a peer leader's vector is not
 * dropped while this node is still reducing; it takes this rank's vector
 * at its first progress, from S_NET on. Every leader sees the same length
 * and leader count: they choose alike. */
static int start_leaders(struct ibmc__task *t, struct ars *s)
{
	const struct ibmc__topo *tp = s->topo;
	struct ibmc__ar_args *ia = malloc(sizeof(*ia));
	int rd = t->args.len <= IBMC__AR_SHORT_BYTES ||
		 s->a->count < (size_t)tp->nnodes, rc;

	if (!ia)
		return -ENOMEM;
	*ia = *s->a;
	ia->group = tp->leaders;
	ia->gsize = tp->nnodes;
	ia->grank = tp->my_node;
	ia->to_root = !rd;
	s->inner = *t;
	s->inner.next = NULL;
	s->inner.req = NULL;
	s->inner.ops = rd ? &ibmc__allreduce_rd_ops :
		       &ibmc__allreduce_rab_ops;
	s->inner.priv = ia;
	s->inner_on = 1;
	rc = s->inner.ops->start(&s->inner);
	if (!rc)
		ibmc__xkept_replay(&s->early, t->comm->ctx, NULL, inner_input,
				   s);
	return rc;
}

static int progress(struct ibmc__task *t, int64_t now)
{
	struct ars *s = t->priv;
	int timeout = t->comm->ctx->env.timeout_ms, rc = 0;
	size_t need = (size_t)s->topo->local_size * t->args.len;

	while (rc == 0 && s->state != S_DONE) {
		switch (s->state) {
		case S_ATTACH:
			rc = ibmc__shm_take(&s->call, t->comm, need);
			break;
		case S_FREE:
			rc = write_in(t, s);
			if (!rc && s->leader)
				rc = start_leaders(t, s);
			break;
		case S_LOCAL:
			rc = reduce_node(t, s);
			break;
		case S_NET:
			rc = s->inner_on ?
			     s->inner.ops->progress(&s->inner, now) : 0;
			break;
		}
		if (!rc) {
			s->state++;
			ibmc__shm_moved(&s->call);
		}
	}
	if (rc < 0)
		return rc;
	if (s->state == S_DONE || s->state == S_NET)
		return s->state == S_DONE ? 0 : IBMC_INPROGRESS;
	if (ibmc__shm_stale(&s->call, timeout)) {
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: communicator %08x: allreduce #%u: nothing moved on this node for %d ms (a local rank is gone?)",
			 t->comm->rank, t->comm->id, t->seq, timeout);
		return -ETIMEDOUT;
	}
	return IBMC_INPROGRESS;
}

static void input(struct ibmc__task *t, const struct ibmc__hdr *h,
		  const unsigned char *payload, size_t plen, int is_mcast)
{
	struct ars *s = t->priv;

	if (s->inner_on)
		s->inner.ops->input(&s->inner, h, payload, plen, is_mcast);
	else if (s->leader && !is_mcast)
		ibmc__xkept_add(&s->early, t->comm->ctx, h, payload, plen);
}

static void late(struct ibmc__task *t, const struct ibmc__hdr *h,
		 const unsigned char *payload, size_t plen, int is_mcast)
{
	struct ars *s = t->priv;

	/* A failed call answers too once every transfer of the leaders'
	 * reduce is done (a disagreement runs them all to their end, see
	 * reduce_node): then input only acknowledges again. */
	if (s->inner_on &&
	    (!t->rc || (s->inner.priv &&
			ibmc__xfers_all_done(s->inner.priv))))
		s->inner.ops->late(&s->inner, h, payload, plen, is_mcast);
}

static int64_t deadline(const struct ibmc__task *t)
{
	const struct ars *s = t->priv;

	if (s->state == S_NET && s->inner_on)
		return s->inner.ops->deadline(&s->inner);
	return ibmc__task_now() + POLL_US;
}

static void complete(struct ibmc__task *t, int rc)
{
	struct ars *s = t->priv;
	struct ibmc__shm_hdr *h = s && s->shm ? s->shm->hdr : NULL;

	if (!s)
		return;
	ibmc__shm_call_end(&s->call);
	if (!rc || !s->shm)
		return;
	/* Tell the node at once rather than by its timeout. */
	if (s->leader && h && s->state > S_ATTACH)
		atomic_store_explicit(&h->failed, (uint64_t)s->call.stamp << 32 |
				      (uint32_t)-rc, memory_order_release);
	ibmc__shm_abandon(s->shm);
}

static void fini(struct ibmc__task *t)
{
	struct ars *s = t->priv;

	if (!s)
		return;
	if (s->inner_on)
		s->inner.ops->fini(&s->inner);
	ibmc__xkept_free(&s->early);
	free(s->a);
	free(s);
}

/* The leaders' network reduce's peers while it runs; else whom it waits
 * for on its node (live.h). */
static int waits_for(const struct ibmc__task *t, int *ranks, int max)
{
	const struct ars *s = t->priv;

	if (s->state == S_DONE)
		return 0;
	if (s->state == S_NET && s->inner_on)
		return s->inner.ops->waits_for ?
		       s->inner.ops->waits_for(&s->inner, ranks, max) : 0;
	return ibmc__shm_waits_for(&s->call, t->comm, ranks, max);
}

const struct ibmc__task_ops ibmc__allreduce_shm_ops = {
	.start = start,
	.input = input,
	.progress = progress,
	.deadline = deadline,
	.complete = complete,
	.late = late,
	.fini = fini,
	.waits_for = waits_for,
};
