/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * "mcast" allgather: reliable multicast broadcasts with the broadcast
 * engine (early return). With one rank per node, one broadcast per rank.
 * With several ranks on a node, the node's ranks first put their blocks
 * together in the node's shared segment (the node part of "shm_leader",
 * no network), and then each node leader multicasts its whole node's
 * blocks once: L broadcasts instead of P, each block crosses each link of
 * the group's tree once, and every member receives every block once per
 * node.
 *
 * The broadcasts go in windows: a few at once, the next ones once this
 * member has received (or, at their roots, sent) the window's. Every
 * member receives every broadcast, so all of them in flight at once is an
 * incast of the whole result into each host: on the simulated fabric, 32
 * leaders of 4 ranks each broadcasting 256 KiB at once kept every host so
 * far behind that acknowledgement timers fired everywhere, and the
 * retransmissions they sent added more of the same (28 GB on the links
 * for 0.3 GB of data, then a member timed out); on hardware, receive
 * queues overrun the same way. The window holds IBMC__AGM_BUDGET bytes
 * of broadcasts, at least one broadcast; "mcast:N" sets N broadcasts.
 *
 * Either way the call is one request of stages (stages.h): the node
 * gather, then a stage per window, and the blocking call is the
 * non-blocking one and a wait.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/coll/allgather.h"
#include "libjob/coll/coll.h"
#include "libjob/comm.h"
#include "libjob/stages.h"
#include "libjob/task.h"
#include "libjob/topo.h"

/* Bytes of broadcasts a window holds (at least one broadcast): a few
 * MTU-sized windows of the broadcast engine per member, enough to keep
 * its pipeline full, while every host takes in at most this much at
 * once. */
#define IBMC__AGM_BUDGET (512u << 10)

/* A call's state between its stages. */
struct agm {
	unsigned char *recvbuf;
	size_t bl;
	const struct ibmc__topo *t;	/* NULL: one broadcast per rank */
	unsigned char *stage;		/* node order, when some node's ranks
					 * are not consecutive; else NULL */
	int bad;			/* this node's ranks disagree */
	int carried;			/* the first error a broadcast carried
					 * (another node's disagreement) */
	int nbcasts, window;		/* broadcasts in all, and at once */
	int next;			/* the next one to start */
};

/* Broadcasts per window for nbcasts of len bytes each (param: "mcast:N"). */
static int window_of(int nbcasts, size_t len, int param)
{
	size_t w = param > 0 ? (size_t)param :
		   len ? IBMC__AGM_BUDGET / len : (size_t)nbcasts;

	if (w < 1)
		w = 1;
	return w > (size_t)nbcasts ? nbcasts : (int)w;
}

/* Stages of the broadcasts: one per window. */
static int nwindows(const struct agm *a)
{
	return (a->nbcasts + a->window - 1) / a->window;
}

/* How the previous window ended: an error a broadcast carried (a node's
 * ranks disagree, the same on every member) is kept for the end and the
 * next windows still go (ibmc__stages_carry_on); any other ends the
 * call. */
static int window_ended(struct agm *a, int prev)
{
	if (!ibmc__stages_carry_on(prev))
		return prev;
	if (!a->carried)
		a->carried = prev;
	return 0;
}

/* One broadcast of len bytes at buf from root, as the running stage's
 * next task; error: what the root's data carries (ibmc__bcast_start_error,
 * only the root's counts). */
static int bcast(struct ibmc__stages *s, void *buf, size_t len, int root,
		 int error)
{
	struct ibmc_request *req = ibmc__stages_req(s);

	return req ? ibmc__bcast_start_error(s->comm, buf, len, root, error,
					     req) : -ENOMEM;
}

/* Node n's ranks are consecutive communicator ranks: its blocks are one
 * span of recvbuf, where its broadcast can go directly. */
static int contiguous(const struct ibmc__topo *t, int n)
{
	return t->ranks[t->first[n + 1] - 1] - t->ranks[t->first[n]] ==
	       ibmc__topo_count(t, n) - 1;
}

/* Copy node n's blocks between its span in stage (node order) and their
 * ranks' places in recvbuf. */
static void move_node(const struct ibmc__topo *t, int n, unsigned char *stage,
		      unsigned char *recvbuf, size_t bl, int to_stage)
{
	int j;

	for (j = t->first[n]; bl && j < t->first[n + 1]; j++) {
		unsigned char *s = stage + (size_t)j * bl,
			      *r = recvbuf + (size_t)t->ranks[j] * bl;

		memcpy(to_stage ? s : r, to_stage ? r : s, bl);
	}
}

/* Stage 0: the node's blocks into every local rank's recvbuf, through
 * the node's segment (the shm_leader task without network steps). */
static int node_gather(struct ibmc__stages *s, struct agm *a)
{
	struct ibmc__args args = { .buf = a->recvbuf, .len = a->bl,
				   .param = IBMC__AG_SHM_NODE_ONLY };
	struct ibmc_request *req = ibmc__stages_req(s);

	if (!req)
		return -ENOMEM;
	return ibmc__task_start(s->comm, IBMC__C_ALLGATHER, IBMC__AG_SHM,
				&ibmc__allgather_shm_ops, &args, NULL, req);
}

/* Before the first window: node order for the broadcasts when some
 * node's ranks are not consecutive. */
static int stage_nodes(struct ibmc__stages *s, struct agm *a)
{
	const struct ibmc__topo *t = a->t;
	int n, staged = 0;

	for (n = 0; n < t->nnodes; n++)
		staged |= !contiguous(t, n);
	if (!staged || !a->bl)
		return 0;
	a->stage = malloc((size_t)s->comm->size * a->bl);
	if (!a->stage)
		return -ENOMEM;
	move_node(t, t->my_node, a->stage, a->recvbuf, a->bl, 1);
	return 0;
}

/* Broadcast i: rank i's block (one rank per node), or node i's blocks
 * from its leader (their span of recvbuf, or of the staging buffer),
 * this node's carrying a->bad. */
static int bcast_nth(struct ibmc__stages *s, struct agm *a, int i)
{
	const struct ibmc__topo *t = a->t;
	size_t bl = a->bl;
	unsigned char *buf;

	if (!t)
		return bcast(s, a->recvbuf + (size_t)i * bl, bl, i, 0);
	buf = contiguous(t, i) || !bl ?
	      a->recvbuf + (size_t)t->ranks[t->first[i]] * bl :
	      a->stage + (size_t)t->first[i] * bl;
	return bcast(s, buf, (size_t)ibmc__topo_count(t, i) * bl,
		     t->leaders[i], i == t->my_node ? a->bad : 0);
}

/* The next window of broadcasts, as the running stage's tasks. */
static int bcast_window(struct ibmc__stages *s, struct agm *a)
{
	int rc = 0, end = a->next + a->window;

	for (; !rc && a->next < end && a->next < a->nbcasts; a->next++)
		rc = bcast_nth(s, a, a->next);
	return rc;
}

/* One rank per node: a window of the ranks' broadcasts per stage. */
static int per_rank(struct ibmc__stages *s, int k, int prev)
{
	struct agm *a = s->priv;
	int rc;

	(void)k;
	if ((rc = window_ended(a, prev)))
		return rc;
	return bcast_window(s, a);
}

static int per_node(struct ibmc__stages *s, int k, int prev)
{
	struct agm *a = s->priv;
	int rc;

	if (k == 0)
		return node_gather(s, a);
	if (k == 1) {
		/* The node's ranks disagree on the block length (seen in
		 * the segment, by them only): the broadcasts still go,
		 * this node's carrying the error, so that every member
		 * fails with it and none waits for a broadcast that never
		 * comes. */
		if (!ibmc__stages_carry_on(prev))
			return prev;
		a->bad = prev;
		if ((rc = stage_nodes(s, a)))
			return rc;
	} else if ((rc = window_ended(a, prev))) {
		return rc;
	}
	return bcast_window(s, a);
}

static int end(struct ibmc_comm *c, void *priv, int rc)
{
	struct agm *a = priv;
	int n;

	if (!rc && a)
		rc = a->bad ? a->bad : a->carried;
	for (n = 0; !rc && a && a->stage && n < a->t->nnodes; n++)
		if (n != a->t->my_node && !contiguous(a->t, n))
			move_node(a->t, n, a->stage, a->recvbuf, a->bl, 0);
	if (a)
		free(a->stage);
	free(a);
	ibmc__ag_count(c, rc, IBMC__AG_MCAST);
	return rc;
}

static const struct ibmc__stages_ops per_rank_ops = {
	.stage = per_rank,
	.end = end,
};

static const struct ibmc__stages_ops per_node_ops = {
	.stage = per_node,
	.end = end,
};

int ibmc__allgather_mcast_start(struct ibmc_comm *c, void *recvbuf,
				size_t blocklen, int param,
				struct ibmc_request *req)
{
	const struct ibmc__topo *t = ibmc__comm_topo(c);
	struct agm *a = calloc(1, sizeof(*a));

	if (!t || !a) {
		free(a);
		return -ENOMEM;
	}
	a->recvbuf = recvbuf;
	a->bl = blocklen;
	if (t->max_local < 2) {
		a->nbcasts = c->size;
		a->window = window_of(a->nbcasts, blocklen, param);
		return ibmc__stages_start(c, nwindows(a), (uint32_t)c->size,
					  a->window, &per_rank_ops, a, req);
	}
	a->t = t;
	a->nbcasts = t->nnodes;
	/* (the largest node's broadcast sizes the window) */
	a->window = window_of(a->nbcasts, (size_t)t->max_local * blocklen,
			      param);
	return ibmc__stages_start(c, 1 + nwindows(a),
				  1 + (uint32_t)t->nnodes, a->window,
				  &per_node_ops, a, req);
}
