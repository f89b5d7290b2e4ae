/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "shm_leader" allgather (seed 002): every rank writes its block into its
 * node's shared segment; the node leaders exchange whole nodes' blocks,
 * by recursive doubling over 2^k nodes and by a ring otherwise; every
 * local rank copies each network step's blocks out of the segment while
 * its leader runs the next step. Only leaders touch the network, once per
 * node instead of once per rank.
 *
 * The segment holds the blocks in node order (topo.h: a node's ranks
 * together, nodes by their leaders' ranks), so that what a leader sends
 * in a step is one contiguous span whatever the placement; each rank puts
 * every block at its communicator rank's place in its own buffer.
 *
 * With IBMC__AG_SHM_NODE_ONLY the task stops after the node part (every
 * local rank holds its node's blocks): the "mcast" allgather's first half.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "libjob/coll/allgather.h"
#include "libjob/comm.h"
#include "libjob/shm.h"
#include "libjob/topo.h"
#include "libjob/xfer.h"

/* How often a rank waiting on its node's flags looks again (us): the
 * progress loop sleeps in the transport's receive in between. */
#define POLL_US 200

enum { S_ATTACH, S_FREE, S_GATHER, S_STEPS, S_DONE };

struct ag {
	struct ibmc__xfers xs;	/* first: the xfers task helpers use it */
	const struct ibmc__topo *topo;
	struct ibmc__shm *shm;
	struct ibmc__shm_call call;
	int state;
	int leader;
	int rd;			/* leaders: recursive doubling, else ring */
	int nsteps;		/* network steps */
	int copied;		/* steps this rank copied out */
	int sent;		/* leader: sends posted */
	int64_t beat;		/* the leader's last beat seen */
};

static size_t blen(const struct ibmc__task *t)
{
	return t->args.len;
}

/* Copy node n's blocks from the segment to their ranks' places. */
static void copy_node(struct ibmc__task *t, struct ag *a, int n)
{
	const struct ibmc__topo *tp = a->topo;
	size_t bl = blen(t);
	int j, r;

	for (j = tp->first[n]; bl && j < tp->first[n + 1]; j++) {
		r = tp->ranks[j];
		if (r != t->comm->rank)
			memcpy((unsigned char *)t->args.buf + (size_t)r * bl,
			       a->shm->data + (size_t)j * bl, bl);
	}
}

/* The nodes network step s brings to node m: [*lo, *hi). */
static void step_nodes(const struct ag *a, int s, int *lo, int *hi)
{
	int L = a->topo->nnodes, m = a->topo->my_node, span = 1 << s;

	if (a->rd) {
		*lo = (m ^ span) & ~(span - 1);
		*hi = *lo + span;
	} else {
		*lo = (m - s - 1 + L) % L;
		*hi = *lo + 1;
	}
}

static unsigned char *node_ptr(const struct ag *a, size_t bl, int n)
{
	return a->shm->data + (size_t)a->topo->first[n] * bl;
}

static size_t nodes_len(const struct ag *a, size_t bl, int lo, int hi)
{
	return (size_t)(a->topo->first[hi] - a->topo->first[lo]) * bl;
}

/* Leader: post send number k (its step's span of nodes). */
static int post_send(struct ibmc__task *t, struct ag *a, int k)
{
	const struct ibmc__topo *tp = a->topo;
	int L = tp->nnodes, m = tp->my_node, lo, hi, peer, span = 1 << k;
	size_t bl = blen(t);

	if (a->rd) {
		lo = m & ~(span - 1);
		hi = lo + span;
		peer = tp->leaders[m ^ span];
	} else {
		lo = (m - k + L) % L;
		hi = lo + 1;
		peer = tp->leaders[(m + 1) % L];
	}
	a->sent++;
	return ibmc__xfer_post(&a->xs, a->nsteps + k, 1, peer, (uint32_t)k,
			       node_ptr(a, bl, lo), nodes_len(a, bl, lo, hi));
}

/* Leader: every receive at once (their places are known), as soon as the
 * segment is free for this call, so that a faster peer leader's first
 * fragments find them. */
static int post_recvs(struct ibmc__task *t, struct ag *a)
{
	const struct ibmc__topo *tp = a->topo;
	int L = tp->nnodes, m = tp->my_node, s, lo, hi, peer, rc = 0;
	size_t bl = blen(t);

	for (s = 0; !rc && s < a->nsteps; s++) {
		step_nodes(a, s, &lo, &hi);
		peer = a->rd ? tp->leaders[m ^ (1 << s)] :
		       tp->leaders[(m - 1 + L) % L];
		rc = ibmc__xfer_post(&a->xs, s, 0, peer, (uint32_t)s,
				     node_ptr(a, bl, lo),
				     nodes_len(a, bl, lo, hi));
	}
	return rc;
}

static int start(struct ibmc__task *t)
{
	struct ibmc_comm *c = t->comm;
	struct ag *a = calloc(1, sizeof(*a));
	int L;

	if (!a)
		return -ENOMEM;
	t->priv = a;
	a->topo = ibmc__comm_topo(c);
	if (!a->topo)
		return -ENOMEM;
	L = a->topo->nnodes;
	a->leader = a->topo->local_rank == 0;
	a->rd = L > 0 && !(L & (L - 1));
	if (t->args.param == IBMC__AG_SHM_NODE_ONLY)
		a->nsteps = 0;
	else if (a->rd)
		while ((1 << a->nsteps) < L)
			a->nsteps++;
	else
		a->nsteps = L - 1;
	if (ibmc__xfers_init(&a->xs, t, a->leader ? 2 * a->nsteps : 0))
		return -ENOMEM;
	/* The last thing that can fail: every local rank numbers the
	 * same calls alike. */
	if (ibmc__shm_call_begin(&a->call, c))
		return -ENOMEM;
	a->shm = a->call.shm;
	return 0;
}

/* Own block in; the first call in a segment finds it free, a later one
 * waits until every local rank took out the previous call's blocks. */
static int gather_in(struct ibmc__task *t, struct ag *a)
{
	const struct ibmc__topo *tp = a->topo;
	struct ibmc__shm_flags *f;
	size_t bl = blen(t);

	if (ibmc__shm_wait_free(&a->call, tp->local_size))
		return IBMC_INPROGRESS;
	if (bl)
		memcpy(a->shm->data + (size_t)(tp->first[tp->my_node] +
					       tp->local_rank) * bl,
		       (unsigned char *)t->args.buf +
		       (size_t)t->comm->rank * bl, bl);
	f = &a->shm->hdr->flag[tp->local_rank];
	f->len = bl;
	atomic_store_explicit(&f->written, a->call.stamp,
			      memory_order_release);
	return 0;
}

/* Every local rank's block in: check they agree, take the node's out.
 * On a disagreement the other local ranks fail at once; a leader with
 * network steps runs them all, every send flagged with the error (xfer.h),
 * and fails at their end, so that every other node learns it from the
 * data instead of by its timeout. */
static int gather_wait(struct ibmc__task *t, struct ag *a)
{
	const struct ibmc__topo *tp = a->topo;
	int i;

	if (ibmc__shm_wait_all(&a->call, tp->local_size, 0, a->call.stamp))
		return IBMC_INPROGRESS;
	for (i = 0; i < tp->local_size; i++)
		if (a->shm->hdr->flag[i].len != blen(t)) {
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: rank %d: communicator %08x: allgather: a rank on this node gives %llu bytes per block, this rank %zu: the ranks' arguments disagree",
				 t->comm->rank, t->comm->id,
				 (unsigned long long)a->shm->hdr->flag[i].len,
				 blen(t));
			if (!a->leader || !a->nsteps)
				return -EMSGSIZE;
			a->xs.error = -EMSGSIZE;
			return 0;
		}
	copy_node(t, a, tp->my_node);
	return 0;
}

/* Steps the leader has finished, as its node sees them. */
static int steps_done(struct ibmc__task *t, struct ag *a)
{
	struct ibmc__shm_hdr *h = a->shm->hdr;
	uint32_t done;
	int s, rc;

	if (a->leader) {
		for (s = a->copied; s < a->nsteps; s++)
			if (!ibmc__xfer_done(&a->xs, s))
				break;
		atomic_store_explicit(&h->beat, a->xs.progress_ms,
				      memory_order_relaxed);
		/* After a disagreement the node is told only the failure
		 * (complete), so that no local rank returns the data. */
		if (a->xs.error)
			return s;
		atomic_store_explicit(&h->steps, (uint64_t)a->call.stamp << 32 |
				      (uint32_t)s, memory_order_release);
		return s;
	}
	rc = ibmc__shm_leader_word(&a->call, &a->beat, &done);
	return rc > 0 ? (int)done : rc;
}

static int run_steps(struct ibmc__task *t, struct ag *a, int64_t now)
{
	int done, s, lo, hi, n, rc;

	if (a->leader) {
		/* A send carries what earlier steps brought: the ring's
		 * the previous step's node, doubling's all of them. */
		while (a->sent < a->nsteps) {
			for (s = a->rd ? 0 : a->sent - 1; s < a->sent; s++)
				if (!ibmc__xfer_done(&a->xs, s))
					break;
			if (s < a->sent)
				break;
			rc = post_send(t, a, a->sent);
			if (rc)
				return rc;
		}
		ibmc__xfers_progress(&a->xs, now);
	}
	done = steps_done(t, a);
	if (done < 0)
		return done;
	/* Copy out what the finished steps brought while the leader runs
	 * the next one. */
	for (; a->copied < done; a->copied++) {
		step_nodes(a, a->copied, &lo, &hi);
		for (n = lo; n < hi; n++)
			copy_node(t, a, n);
		ibmc__shm_moved(&a->call);
	}
	if (a->copied < a->nsteps)
		return IBMC_INPROGRESS;
	if (a->leader && !ibmc__xfers_all_done(&a->xs))
		return IBMC_INPROGRESS;
	if (a->xs.error)
		return a->xs.error;	/* every step ran, every send flagged */
	atomic_store_explicit(&a->shm->hdr->flag[a->topo->local_rank].copied,
			      a->call.stamp, memory_order_release);
	return 0;
}

static int progress(struct ibmc__task *t, int64_t now)
{
	struct ag *a = t->priv;
	int timeout = t->comm->ctx->env.timeout_ms, rc = 0;

	while (rc == 0 && a->state != S_DONE) {
		switch (a->state) {
		case S_ATTACH:
			rc = ibmc__shm_take(&a->call, t->comm,
					    (size_t)t->comm->size * blen(t));
			break;
		case S_FREE:
			rc = gather_in(t, a);
			if (!rc && a->leader)
				rc = post_recvs(t, a);
			break;
		case S_GATHER:
			/* The node's blocks are in: the first send can go. */
			rc = gather_wait(t, a);
			if (!rc && a->leader && a->nsteps)
				rc = post_send(t, a, 0);
			break;
		case S_STEPS:
			rc = run_steps(t, a, now);
			break;
		}
		if (!rc) {
			a->state++;
			ibmc__shm_moved(&a->call);
		}
	}
	if (rc < 0)
		return rc;
	if (a->state == S_DONE)
		return 0;
	/* A leader in its steps ends only on its transfers' silence: a
	 * disagreement seen in the data does not end the steps (they pass
	 * it on, see gather_wait). */
	if (a->leader && a->state == S_STEPS)
		return ibmc__xfers_result(&a->xs, 0);
	if (ibmc__shm_stale(&a->call, timeout)) {
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: communicator %08x: allgather #%u: nothing moved on this node for %d ms (a local rank or the node leader is gone?)",
			 t->comm->rank, t->comm->id, t->seq, timeout);
		return -ETIMEDOUT;
	}
	return IBMC_INPROGRESS;
}

static int64_t deadline(const struct ibmc__task *t)
{
	const struct ag *a = t->priv;
	int64_t poll = ibmc__task_now() + POLL_US;

	/* A leader whose node has nothing left to wait for sleeps until
	 * its transfers' next timer (a datagram wakes it earlier). */
	if (a->leader && a->state == S_STEPS && a->copied == a->nsteps)
		return a->xs.next;
	return a->xs.next < poll ? a->xs.next : poll;
}

static void complete(struct ibmc__task *t, int rc)
{
	struct ag *a = t->priv;
	struct ibmc__shm_hdr *h = a->shm ? a->shm->hdr : NULL;
	int node_only = t->args.param == IBMC__AG_SHM_NODE_ONLY;

	ibmc__shm_call_end(&a->call);
	if (!rc) {
		/* The node part of another allgather is not one itself. */
		if (!node_only)
			t->comm->st.allgathers++;
	} else if (a->shm) {
		/* Tell the node at once rather than by its timeout, and make
		 * sure no name outlives a node that never finished mapping. */
		if (a->leader && h && a->state > S_ATTACH)
			atomic_store_explicit(&h->failed,
					      (uint64_t)a->call.stamp << 32 |
					      (uint32_t)-rc,
					      memory_order_release);
		ibmc__shm_abandon(a->shm);
	}
	if (!node_only) {
		t->comm->last_algo[IBMC__C_ALLGATHER] = IBMC__AG_SHM;
		t->comm->last_param[IBMC__C_ALLGATHER] = 0;
	}
}

/* After completion only a peer leader's lost acknowledgments matter. A
 * failed call answers them too once every transfer it posted is done (a
 * disagreement runs them all to their end): then input only acknowledges
 * again; else it takes nothing more into the segment. */
static void late(struct ibmc__task *t, const struct ibmc__hdr *h,
		 const unsigned char *payload, size_t plen, int is_mcast)
{
	struct ag *a = t->priv;

	if (!t->rc || (a->leader && ibmc__xfers_all_done(&a->xs)))
		ibmc__xfers_task_input(t, h, payload, plen, is_mcast);
}

static void fini(struct ibmc__task *t)
{
	struct ag *a = t->priv;

	if (!a)
		return;
	ibmc__xfers_fini(&a->xs);
	free(a);
}

/* A leader in its steps: its transfers' peers; and, until the call is
 * done, whom it waits for on its node (live.h). */
static int waits_for(const struct ibmc__task *t, int *ranks, int max)
{
	const struct ag *a = t->priv;
	int n = 0;

	if (a->leader && a->state == S_STEPS)
		n = ibmc__xfers_waits_for(&a->xs, ranks, max);
	if (a->state != S_DONE)
		n += ibmc__shm_waits_for(&a->call, t->comm, ranks + n,
					 max - n);
	return n;
}

const struct ibmc__task_ops ibmc__allgather_shm_ops = {
	.start = start,
	.input = ibmc__xfers_task_input,
	.progress = progress,
	.deadline = deadline,
	.complete = complete,
	.late = late,
	.fini = fini,
	.waits_for = waits_for,
};
