/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The broadcast collective: its algorithm table, the root's choice (the
 * others learn it from the root's packets, so ranks never disagree), the
 * task that runs the reliable broadcast engine (bcast_op.c) with the
 * chosen strategy, and ibmc_bcast()/ibmc_ibcast().
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/bcast_op.h"
#include "libjob/coll/bcast.h"
#include "libjob/coll/coll.h"
#include "libjob/dispatch.h"
#include "libjob/mcast_switch.h"
#include "libjob/env.h"
#include "libjob/send.h"
#include "libjob/shm.h"

static const struct ibmc__algo_desc algos[] = {
	{ IBMC__A_MCAST, "mcast",
	  "multicast from the root over the pool group, acks and repairs up and down a binomial tree", 0, 0 },
	{ IBMC__A_BINOMIAL, "binomial",
	  "point-to-point, fragments pipelined down a binomial tree", 0, 0 },
	{ IBMC__A_POSTAL, "postal",
	  "point-to-point down the postal-model tree (latency-bound messages)", 0, 0 },
	{ IBMC__A_SHM_MCAST, "shm_mcast",
	  "node leaders broadcast among themselves (multicast when the group is usable, else their point-to-point tree), the other ranks are served from their node's shared memory", 0, 0 },
};

const struct ibmc__coll_desc ibmc__bcast_desc = {
	.coll = IBMC__C_BCAST,
	.name = "bcast",
	.env = "IBMCAST_BCAST_ALGO",
	.algos = algos,
	.nalgos = sizeof(algos) / sizeof(algos[0]),
};

/* Failed multicast broadcasts in a row before auto stops multicasting, and
 * for how many broadcasts it then stays point-to-point. */
#define MC_FAIL_LIMIT 2
#define MC_SUSPEND 32

/* A broadcast task: the engine's state, and after completion what a late
 * packet about it needs for an answer. */
struct bcast_task {
	struct ibmc__op op;
	unsigned char *copy;		/* the data, once the caller has it
					 * back: repairs are sent from here */
	int counted;			/* in the communicator's stats */
	int last_valid;
	uint32_t last_nfrags;
	int last_parent;
	struct ibmc__hdr tmpl;		/* its shape, for replies */
	struct ibmc__bnode *node;	/* "shm_mcast": &node_part, and op
					 * runs on leaders only; else NULL */
	struct ibmc__bnode node_part;
	int node_done;
};

/* How often a rank waiting on its node looks again (us). */
#define NODE_POLL_US 200

static int may_mcast(const struct ibmc_comm *c)
{
	/* Lazy mode's tested group serves broadcasts before the switch
	 * (mcast_switch.h): their root's choice travels in every fragment,
	 * so members need not learn of the test's success at the same
	 * collective (comm.h). */
	return (!c->mcast_err || (c->lazy_ready && c->ghandle >= 0)) &&
	       c->st.bcasts >= c->mc_suspend_until;
}

/* Auto: multicast when the communicator may and the size is worth it
 * (IBMCAST_MCAST_MIN_BYTES, default: always from 4 ranks on, beyond one
 * fragment on 2 or 3 ranks where a unicast tree is as short); else the
 * postal tree for one-fragment messages (latency-bound) and binomial for
 * pipelined larger ones. */
int ibmc__bcast_choose(const struct ibmc_comm *c, size_t len, int n,
		       int algo)
{
	const struct ibmc__env *e = &c->ctx->env;
	size_t frag = c->ctx->mtu - IBMC__WIRE_HDR;
	long min = e->mcast_min;

	if (algo == IBMC__A_MCAST && may_mcast(c))
		return IBMC__A_MCAST;
	if (algo == IBMC__A_BINOMIAL || algo == IBMC__A_POSTAL)
		return algo;
	if (min < 0)
		min = n >= 4 ? 0 : (long)frag + 1;
	if (may_mcast(c) && (long long)len >= min)
		return IBMC__A_MCAST;
	return len <= frag ? IBMC__A_POSTAL : IBMC__A_BINOMIAL;
}

static int choose(const struct ibmc_comm *c, size_t len)
{
	return ibmc__bcast_choose(c, len, c->size, c->algo[IBMC__C_BCAST]);
}

static void remember(struct bcast_task *b)
{
	const struct ibmc__op *op = &b->op;
	struct ibmc__hdr *t = &b->tmpl;

	b->last_valid = 1;
	b->last_nfrags = op->nfrags;
	b->last_parent = op->tree.parent;
	memset(t, 0, sizeof(*t));
	t->coll = IBMC__C_BCAST;
	t->algo = op->algo;
	t->lambda = op->lambda;
	t->comm_id = op->comm->id;
	t->version = op->comm->version;
	t->seq = op->seq;
	t->root = op->root;
	t->len = (uint32_t)op->len;
	t->fragsz = op->fragsz;
}

/* The root notices multicast that reached nobody. Broadcasts already
 * started when a failure was counted do not count again: an early
 * returning root may have several in flight before its peers attached. */
static void mcast_health(struct ibmc_comm *c, const struct ibmc__op *op)
{
	if (op->algo != IBMC__A_MCAST || op->me != op->root || op->rc ||
	    !op->tree.nchildren)
		return;
	if (op->child_mc) {
		c->mc_fail_streak = 0;
		return;
	}
	if ((int32_t)(op->seq - c->mc_fail_seq) < 0)
		return;
	c->mc_fail_seq = c->next_seq;
	if (++c->mc_fail_streak >= MC_FAIL_LIMIT)
		c->mc_suspend_until = c->st.bcasts + MC_SUSPEND;
}

static int t_start(struct ibmc__task *t)
{
	struct bcast_task *b = t->priv;
	int rc;

	if (b->node)
		return ibmc__bnode_start(b->node, t, &b->op);
	rc = ibmc__op_start(&b->op, t->comm, t->args.buf, t->args.len,
			    t->args.root, t->algo, t->seq);
	/* ibmc__bcast_start_error: the data the root sends is wrong */
	if (!rc && t->comm->rank == t->args.root)
		b->op.error = t->args.param;
	return rc;
}

/* The engine runs on this rank (every rank but in "shm_mcast", where
 * only node leaders run it, a network root once it has the data). */
static int engine(const struct bcast_task *b)
{
	return !b->node || (b->node->net && b->node->started);
}

static void t_input(struct ibmc__task *t, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen, int is_mcast)
{
	struct bcast_task *b = t->priv;

	/* Multicast reaches every rank of the communicator: only the
	 * engine's ranks take part. */
	if (engine(b))
		ibmc__op_input(&b->op, h, payload, plen, is_mcast);
}

static void count(struct ibmc__task *t, struct bcast_task *b)
{
	struct ibmc_comm *c = t->comm;

	if (b->counted)
		return;
	b->counted = 1;
	/* A stage of an allgather or allreduce is not a broadcast the
	 * caller made (what it moved and repaired still counts). */
	if (t->inner)
		return;
	c->st.bcasts++;
	if (b->node) {
		/* Every rank of a node counts what its leaders ran. */
		if (b->node->netalgo == IBMC__A_MCAST ||
		    (engine(b) && b->op.known && b->op.algo == IBMC__A_MCAST))
			c->st.mcast_bcasts++;
		c->last_algo[IBMC__C_BCAST] = IBMC__A_SHM_MCAST;
		return;
	}
	if (b->op.algo == IBMC__A_MCAST)
		c->st.mcast_bcasts++;
	c->last_algo[IBMC__C_BCAST] = b->op.algo;
}

/*
 * Early return (ibmc_bcast(3)): the root once its buffer may be reused,
 * a member once it holds every byte. What either still owes (the root's
 * remaining fragments and repairs, a member's acks, repairs to its
 * subtree, FINs) is sent from a copy by the progress thread or the next
 * call; the engine itself is unchanged. IBMCAST_BCAST_SYNC=1 keeps the
 * synchronizing return: when every member holds the data.
 */
static int may_return(const struct ibmc__task *t, const struct bcast_task *b)
{
	const struct ibmc__op *op = &b->op;

	if (t->detached || !t->req || t->comm->ctx->env.bcast_sync)
		return 0;
	if (b->node && (!b->node_done || !engine(b)))
		return 0;
	if (!op->known || op->done)
		return 0;
	return op->me == op->root || op->have == op->nfrags;
}

static int t_progress(struct ibmc__task *t, int64_t now)
{
	struct bcast_task *b = t->priv;
	int rc;

	if (b->node && !b->node_done) {
		rc = ibmc__bnode_progress(b->node, t, &b->op);
		if (rc < 0)
			return rc;
		b->node_done = !rc;
	}
	if (b->node && !engine(b))
		return b->node_done ? 0 : IBMC_INPROGRESS;
	if (!b->op.done)
		ibmc__op_progress(&b->op, now);
	if (b->op.done) {
		if (b->op.rc)
			return b->op.rc;
		if (b->node && !b->node_done)
			return IBMC_INPROGRESS;
		/* A member whose length differed relayed the broadcast to
		 * the end: its caller, if still waiting, gets -EMSGSIZE
		 * (or the error the data carries). */
		return t->detached ? 0 : ibmc__op_deliver(&b->op);
	}
	if (may_return(t, b)) {
		if (b->op.scratch) {
			/* The rest is relayed from the scratch buffer. */
			count(t, b);
			b->op.returned = 1;
			ibmc__task_answer(t, ibmc__op_deliver(&b->op));
			return IBMC_INPROGRESS;
		}
		if (b->op.len) {
			b->copy = malloc(b->op.len);
			if (!b->copy)
				return IBMC_INPROGRESS;	/* then at the end */
			memcpy(b->copy, b->op.buf, b->op.len);
			b->op.buf = b->copy;
		}
		count(t, b);
		b->op.returned = 1;
		ibmc__task_answer(t, b->op.error);
	}
	return IBMC_INPROGRESS;
}

static int64_t t_deadline(const struct ibmc__task *t)
{
	const struct bcast_task *b = t->priv;
	int64_t d = engine(b) ? ibmc__op_next_deadline(&b->op) : INT64_MAX,
		poll;

	/* The node part polls its segment while it is not done. */
	if (b->node && !b->node_done) {
		poll = ibmc__task_now() + NODE_POLL_US;
		if (poll < d)
			d = poll;
	}
	return d;
}

static void t_complete(struct ibmc__task *t, int rc)
{
	struct bcast_task *b = t->priv;
	struct ibmc_comm *c = t->comm;

	if (b->node)
		ibmc__bnode_end(b->node, rc);
	if (engine(b) && b->op.known) {
		remember(b);
		if (!b->node)
			t->algo = b->op.algo;
	}
	b->op.rc = rc;
	mcast_health(c, &b->op);
	if (!rc || rc == b->op.error || (rc == -EMSGSIZE && b->op.scratch))
		count(t, b);
	/* Lingering needs only the template. */
	ibmc__op_fini(&b->op);
	free(b->copy);
	b->copy = NULL;
}

/* A late datagram about this completed broadcast: a parent still
 * retransmitting or probing missed our final ack; a child still acking
 * missed our FIN. */
static void t_late(struct ibmc__task *t, const struct ibmc__hdr *h,
		   const unsigned char *payload, size_t plen, int is_mcast)
{
	struct bcast_task *b = t->priv;
	struct ibmc__hdr r = b->tmpl;
	struct ibmc_comm *comm = t->comm;

	(void)payload;
	(void)plen;
	if (!b->last_valid)
		return;
	r.src = (uint32_t)comm->rank;
	r.flags = 0;
	r.b = 0;
	r.mask = 0;
	if ((h->kind == IBMC__K_DATA || h->kind == IBMC__K_PROBE) &&
	    !is_mcast) {
		if (b->last_parent < 0)
			return;
		r.kind = IBMC__K_ACK;
		r.a = r.b = b->last_nfrags;
		ibmc__send_pkt(comm, b->last_parent, &r, NULL, 0);
	} else if (h->kind == IBMC__K_ACK && h->b == b->last_nfrags) {
		r.kind = IBMC__K_FIN;
		r.a = 0;
		ibmc__send_pkt(comm, (int)h->src, &r, NULL, 0);
	}
}

static void t_fini(struct ibmc__task *t)
{
	struct bcast_task *b = t->priv;

	ibmc__op_fini(&b->op);
	free(b->copy);
	free(b);
}

/* Whom the engine waits for, and on the node-leader layout whom the
 * node's part waits for until it is done (live.h). */
static int t_waits_for(const struct ibmc__task *t, int *ranks, int max)
{
	const struct bcast_task *b = t->priv;
	int n = 0;

	if (b->node && !b->node_done)
		n = ibmc__shm_waits_for(&b->node->call, t->comm, ranks,
					max);
	if (engine(b) && !b->op.done)
		n += ibmc__op_waits_for(&b->op, ranks + n, max - n);
	return n;
}

static const struct ibmc__task_ops bcast_ops = {
	.start = t_start,
	.input = t_input,
	.progress = t_progress,
	.deadline = t_deadline,
	.complete = t_complete,
	.late = t_late,
	.fini = t_fini,
	.waits_for = t_waits_for,
};

/* node: the node-leader layout ("shm_mcast"), which every rank picks
 * alike from the communicator's setting: non-leaders never see the
 * root's packets, so they cannot learn it from them. error: what the
 * root's data carries (ibmc__bcast_start_error). */
static int start(struct ibmc_comm *c, void *buf, size_t len, int root,
		 struct ibmc_request *req, int node, int error)
{
	struct ibmc__args args = { .buf = buf, .len = len, .root = root,
				   .param = error };
	struct bcast_task *b;
	int rc, algo = IBMC__A_AUTO;

	req->comm = c;
	if (c->size == 1) {
		/* A stage's number was taken at its call. */
		if (!req->reserved) {
			c->next_seq++;
			c->st.bcasts++;
			c->last_algo[IBMC__C_BCAST] = IBMC__A_BINOMIAL;
		}
		req->done = 1;
		req->rc = 0;
		return 0;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	if (node) {
		algo = IBMC__A_SHM_MCAST;
		b->node = &b->node_part;
	} else if (c->rank == root) {
		algo = choose(c, len);
	}
	rc = ibmc__task_start(c, IBMC__C_BCAST, algo, &bcast_ops, &args, b,
			      req);
	return rc;
}

int ibmc__bcast_start(struct ibmc_comm *c, void *buf, size_t len, int root,
		      struct ibmc_request *req)
{
	/* Collectives built on broadcasts use today's layout: theirs may
	 * hold the node's segment already. */
	return start(c, buf, len, root, req, 0, 0);
}

int ibmc__bcast_start_error(struct ibmc_comm *c, void *buf, size_t len,
			    int root, int error, struct ibmc_request *req)
{
	return start(c, buf, len, root, req, 0, error);
}

/* The caller's broadcast: in the node-leader layout when asked for. */
static int user_start(struct ibmc_comm *c, void *buf, size_t len, int root,
		      struct ibmc_request *req)
{
	return start(c, buf, len, root, req,
		     c->algo[IBMC__C_BCAST] == IBMC__A_SHM_MCAST, 0);
}

static int check_args(const ibmc_comm_t *c, const void *buf, size_t len,
		      int root)
{
	if (!c || root < 0 || root >= c->size || (len && !buf))
		return -EINVAL;
	if (len > UINT32_MAX)
		return -EMSGSIZE;
	return 0;
}

int ibmc_bcast(ibmc_comm_t *c, void *buf, size_t len, int root)
{
	struct ibmc_request req = { 0 };
	int rc = check_args(c, buf, len, root);

	if (rc)
		return rc;
	pthread_mutex_lock(&c->ctx->lock);
	rc = ibmc__switch_gate(c);
	if (!rc)
		rc = user_start(c, buf, len, root, &req);
	if (!rc)
		rc = ibmc__wait(&req);
	pthread_mutex_unlock(&c->ctx->lock);
	return rc;
}

int ibmc_ibcast(ibmc_comm_t *c, void *buf, size_t len, int root,
		ibmc_request_t **out)
{
	struct ibmc_request *req;
	int rc = check_args(c, buf, len, root);

	if (rc || !out)
		return rc ? rc : -EINVAL;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->heap = 1;
	pthread_mutex_lock(&c->ctx->lock);
	rc = ibmc__switch_gate(c);
	if (!rc)
		rc = user_start(c, buf, len, root, req);
	pthread_mutex_unlock(&c->ctx->lock);
	if (rc) {
		free(req);
		return rc;
	}
	*out = req;
	return 0;
}
