/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node part of the "shm_mcast" broadcast: only node leaders run the
 * reliable broadcast (bcast_op.c, among the leaders' list, rooted at the
 * root's node leader); each leader publishes through its node's segment
 * (shm.h) the contiguous prefix it holds as it grows, and the node's
 * other ranks copy it out as it appears. A root that is not its node's
 * leader hands its data over through the segment first.
 *
 * The segment holds the data, then (at the next multiple of 8) the
 * network algorithm the leaders ran, so that every rank counts the same
 * broadcast alike, and the leader's modeled clock when it held every
 * byte (model.h: a local rank's copy is charged as a receive from then).
 * The leader's steps word carries (stamp << 32) | bytes published, all
 * of them only once the leader knows what the network ran (0 bytes are
 * published only then: the word's stamp says so). A call writes into the
 * segment only once every local rank took out the previous call's data
 * (ibmc__shm_wait_free).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "libjob/coll/bcast.h"
#include "libjob/comm.h"
#include "libjob/context.h"
#include "libjob/model.h"

enum { S_TURN, S_IN, S_RUN, S_DONE };

/* After the data: the network algorithm (4 bytes, then 4 spare) and the
 * leader's modeled clock (8). */
#define TAIL 16

static size_t algo_off(size_t len)
{
	return (len + 7) & ~(size_t)7;
}

static int mine(const struct ibmc__task *t)
{
	return t->comm->rank == t->args.root;
}

static int start_engine(struct ibmc__bnode *n, struct ibmc__task *t,
			struct ibmc__op *op)
{
	struct ibmc_comm *c = t->comm;
	int algo = 0;

	if (c->rank == n->netroot)
		algo = ibmc__bcast_choose(c, t->args.len, n->topo->nnodes,
					  IBMC__A_MCAST);
	n->started = 1;
	return ibmc__op_start_among(op, c, t->args.buf, t->args.len,
				    n->netroot, algo, t->seq,
				    n->topo->leaders, n->topo->nnodes);
}

int ibmc__bnode_start(struct ibmc__bnode *n, struct ibmc__task *t,
		      struct ibmc__op *op)
{
	struct ibmc_comm *c = t->comm;
	const struct ibmc__topo *tp;
	int rnode, rc;

	memset(n, 0, sizeof(*n));
	tp = n->topo = ibmc__comm_topo(c);
	if (!tp)
		return -ENOMEM;
	rnode = tp->node_of[t->args.root];
	n->leader = tp->local_rank == 0;
	n->net = n->leader && tp->nnodes > 1;
	n->netroot = tp->leaders[rnode];
	n->root_local = -1;
	if (rnode == tp->my_node) {
		n->root_local = 0;
		while (tp->ranks[tp->first[rnode] + n->root_local] !=
		       t->args.root)
			n->root_local++;
	}
	/* The network root waits for a local root's data. */
	if (n->net && !(c->rank == n->netroot && n->root_local > 0)) {
		rc = start_engine(n, t, op);
		if (rc)
			return rc;
	}
	if (tp->local_size == 1) {
		n->state = S_DONE;	/* nobody to serve: no segment */
		return 0;
	}
	/* The last thing that can fail: every local rank numbers the same
	 * calls alike. */
	return ibmc__shm_call_begin(&n->call, c);
}

/* Every rank: this call's turn on the segment, big enough, free; the
 * root puts its data in; every rank states its length. */
static int enter(struct ibmc__bnode *n, struct ibmc__task *t)
{
	struct ibmc__shm *s = n->call.shm;
	struct ibmc__shm_flags *f;
	int rc;

	if (n->state == S_TURN) {
		rc = ibmc__shm_take(&n->call, t->comm,
				    algo_off(t->args.len) + TAIL);
		if (rc)
			return rc;
		n->state = S_IN;
		ibmc__shm_moved(&n->call);
	}
	if (ibmc__shm_wait_free(&n->call, n->topo->local_size))
		return IBMC_INPROGRESS;
	if (mine(t) && !n->leader && t->args.len)
		memcpy(s->data, t->args.buf, t->args.len);
	f = &s->hdr->flag[n->topo->local_rank];
	f->len = t->args.len;
	atomic_store_explicit(&f->written, n->call.stamp, memory_order_release);
	n->state = S_RUN;
	ibmc__shm_moved(&n->call);
	return 0;
}

static void publish_failed(struct ibmc__bnode *n, int rc)
{
	atomic_store_explicit(&n->call.shm->hdr->failed,
			      (uint64_t)n->call.stamp << 32 | (uint32_t)-rc,
			      memory_order_release);
}

/* This rank is done with the segment's data. */
static int finish(struct ibmc__bnode *n)
{
	struct ibmc__shm_flags *f =
		&n->call.shm->hdr->flag[n->topo->local_rank];

	atomic_store_explicit(&f->copied, n->call.stamp, memory_order_release);
	ibmc__shm_call_end(&n->call);
	n->state = S_DONE;
	return 0;
}

/* The leader holds everything (and knows what the network ran: even
 * 0 bytes wait for the root's first packet). */
static int whole(const struct ibmc__bnode *n, const struct ibmc__task *t,
		 const struct ibmc__op *op)
{
	return !n->net || t->comm->rank == n->netroot ||
	       (op->known && op->have == op->nfrags);
}

/* Bytes the leader holds in its buffer. */
static size_t held(const struct ibmc__bnode *n, const struct ibmc__task *t,
		   const struct ibmc__op *op)
{
	size_t b;

	if (whole(n, t, op))
		return t->args.len;
	if (!op->known)
		return 0;
	b = (size_t)op->have * op->fragsz;
	return b < t->args.len ? b : t->args.len;
}

static int lead(struct ibmc__bnode *n, struct ibmc__task *t,
		struct ibmc__op *op)
{
	struct ibmc__shm *s = n->call.shm;
	struct ibmc__shm_flags *rf;
	size_t len = t->args.len, avail;
	uint64_t clock;
	uint32_t algo;
	int rc, all;

	if (n->root_local > 0 && !n->started) {
		if (ibmc__shm_wait_one(&n->call, n->root_local, 0,
				       n->call.stamp))
			return IBMC_INPROGRESS;
		rf = &s->hdr->flag[n->root_local];
		if (rf->len != len) {
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: rank %d: communicator %08x: broadcast #%u: the root (rank %d) gives %llu bytes, this rank %zu: the ranks' arguments disagree",
				 t->comm->rank, t->comm->id, t->seq,
				 t->args.root, (unsigned long long)rf->len,
				 len);
			return -EMSGSIZE;
		}
		if (len)
			memcpy(t->args.buf, s->data, len);
		n->started = 1;
		if (n->net) {
			rc = start_engine(n, t, op);
			if (rc)
				return rc;
		}
		ibmc__shm_moved(&n->call);
	}
	avail = held(n, t, op);
	all = whole(n, t, op);
	/* A local root's data is in the segment already. */
	if (n->root_local <= 0 && avail > n->moved)
		memcpy(s->data + n->moved,
		       (const unsigned char *)t->args.buf + n->moved,
		       avail - n->moved);
	if (all) {
		algo = n->net ? (uint32_t)op->algo : 0;
		n->netalgo = (int)algo;
		memcpy(s->data + algo_off(len), &algo, sizeof(algo));
		clock = ibmc__model_clock(t->comm->ctx);
		memcpy(s->data + algo_off(len) + 8, &clock, sizeof(clock));
	}
	atomic_store_explicit(&s->hdr->beat, ibmc__now_ms(),
			      memory_order_relaxed);
	if (avail != n->moved || all) {
		n->moved = avail;
		atomic_store_explicit(&s->hdr->steps,
				      (uint64_t)n->call.stamp << 32 |
				      (uint32_t)avail, memory_order_release);
		ibmc__shm_moved(&n->call);
	}
	return all ? finish(n) : IBMC_INPROGRESS;
}

static int follow(struct ibmc__bnode *n, struct ibmc__task *t)
{
	struct ibmc__shm *s = n->call.shm;
	struct ibmc__shm_hdr *h = s->hdr;
	size_t len = t->args.len, avail;
	uint64_t clock;
	uint32_t algo, word;
	int rc;

	rc = ibmc__shm_leader_word(&n->call, &n->beat, &word);
	if (rc <= 0)
		return rc ? rc : IBMC_INPROGRESS;
	if (h->flag[0].len != len) {
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: communicator %08x: broadcast #%u: this node's leader broadcasts %llu bytes, this rank %zu: the ranks' arguments disagree",
			 t->comm->rank, t->comm->id, t->seq,
			 (unsigned long long)h->flag[0].len, len);
		finish(n);	/* never hold the next call up */
		return -EMSGSIZE;
	}
	avail = word;
	if (avail > n->moved) {
		if (!mine(t))
			memcpy((unsigned char *)t->args.buf + n->moved,
			       s->data + n->moved, avail - n->moved);
		n->moved = avail;
		ibmc__shm_moved(&n->call);
	}
	if (avail != len)
		return IBMC_INPROGRESS;
	memcpy(&algo, s->data + algo_off(len), sizeof(algo));
	n->netalgo = (int)algo;
	memcpy(&clock, s->data + algo_off(len) + 8, sizeof(clock));
	if (clock)
		ibmc__model_charge(t->comm->ctx, &clock, 1);
	return finish(n);
}

int ibmc__bnode_progress(struct ibmc__bnode *n, struct ibmc__task *t,
			 struct ibmc__op *op)
{
	int timeout = t->comm->ctx->env.timeout_ms, rc = 0;

	if (n->state == S_DONE)
		return 0;
	if (n->state != S_RUN)
		rc = enter(n, t);
	if (!rc)
		rc = n->leader ? lead(n, t, op) : follow(n, t);
	if (rc <= 0)
		return rc;
	/* A leader waiting on the network has the engine's timeouts; the
	 * rest wait on their node, which must keep moving. */
	if ((!n->leader || n->state != S_RUN || !n->started ||
	     !n->net) && ibmc__shm_stale(&n->call, timeout)) {
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: communicator %08x: broadcast #%u: nothing moved on this node for %d ms (a local rank or the node leader is gone?)",
			 t->comm->rank, t->comm->id, t->seq, timeout);
		return -ETIMEDOUT;
	}
	return IBMC_INPROGRESS;
}

void ibmc__bnode_end(struct ibmc__bnode *n, int rc)
{
	if (!n->call.shm)
		return;
	if (rc && n->state != S_DONE) {
		if (n->leader && n->call.shm->hdr && n->state >= S_RUN)
			publish_failed(n, rc);
		ibmc__shm_abandon(n->call.shm);
	}
	ibmc__shm_call_end(&n->call);
}
