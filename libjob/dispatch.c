/* SPDX-License-Identifier: BSD-3-Clause */
/* Datagram demultiplexing for a context (see dispatch.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/dispatch.h"
#include "libjob/live.h"
#include "libjob/mcast_switch.h"
#include "libjob/model.h"
#include "libjob/pool_keep.h"
#include "libjob/prune_keep.h"
#include "libjob/stages.h"
#include "libjob/task.h"

/* Bounds on kept datagrams: the protocol retransmits what is dropped, so
 * these only need to cover ordinary skew between ranks. */
#define EARLY_MAX_COUNT 4096
#define EARLY_MAX_BYTES (16u << 20)
#define DRAIN_MAX 256

static struct ibmc__early *keep(const struct ibmc_context *ctx,
				const void *data, size_t len,
				uint32_t comm_id, int is_mcast)
{
	struct ibmc__early *e = malloc(sizeof(*e) + len);

	if (!e)
		return NULL;
	e->next = NULL;
	e->comm_id = comm_id;
	e->is_mcast = is_mcast;
	e->model_ns = ctx->pkt_model_ns;
	e->len = len;
	memcpy(e->data, data, len);
	return e;
}

static void push(struct ibmc__early_q *q, struct ibmc__early *e)
{
	e->next = NULL;
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	q->count++;
	q->bytes += e->len;
}

/* Unlink e, whose predecessor is prev (NULL: e is the head). */
static void unlink_after(struct ibmc__early_q *q, struct ibmc__early *prev,
			 struct ibmc__early *e)
{
	if (prev)
		prev->next = e->next;
	else
		q->head = e->next;
	if (q->tail == e)
		q->tail = prev;
	q->count--;
	q->bytes -= e->len;
}

void ibmc__early_free(struct ibmc__early_q *q)
{
	struct ibmc__early *e, *n;

	for (e = q->head; e; e = n) {
		n = e->next;
		free(e);
	}
	memset(q, 0, sizeof(*q));
}

/* Collectives this rank has not entered yet whose datagrams are kept:
 * members run ahead by their non-blocking calls, by the calls an early
 * return let them make, and by a multicast allgather's one broadcast per
 * rank (P sequence numbers at once); what is kept is bounded by count and
 * bytes below, so the window itself can be wide. */
#define EARLY_SEQS 4096

static void comm_input(struct ibmc_comm *comm, const void *data, size_t len,
		       int is_mcast)
{
	struct ibmc__hdr h;
	struct ibmc__task *t;
	const unsigned char *p = data;
	size_t plen;
	int32_t ahead;
	int lingering;

	if (ibmc__wire_decode(data, len, &h))
		return;
	if (h.version != comm->version) {
		comm->st.stale_dropped++;	/* another membership */
		return;
	}
	if (h.src >= (uint32_t)comm->size || h.root >= (uint32_t)comm->size ||
	    (int)h.src == comm->rank)
		return;
	plen = len > h.hlen ? len - h.hlen : 0;
	if (h.coll == IBMC__C_SWITCH) {
		ibmc__switch_input(comm, &h, p + h.hlen, plen);
		return;
	}
	if (h.coll == IBMC__C_POOL) {
		ibmc__pk_input(comm, &h, p + h.hlen, plen, is_mcast);
		return;
	}
	if (h.coll == IBMC__C_PRUNE) {
		ibmc__prk_input(comm, &h, p + h.hlen, plen);
		return;
	}
	t = ibmc__task_find(comm, h.seq, &lingering);
	if (t && !lingering) {
		ibmc__task_input(t, &h, p + h.hlen, plen, is_mcast);
		return;
	}
	if (t) {
		/* A peer still finishing a collective we completed. */
		if (h.coll == t->coll && t->ops->late)
			t->ops->late(t, &h, p + h.hlen, plen, is_mcast);
		return;
	}
	ahead = (int32_t)(h.seq - comm->next_seq);
	if ((ahead >= 0 && ahead < EARLY_SEQS) ||
	    ibmc__stages_reserved(comm, h.seq)) {
		/* A collective this rank has not entered yet, or a stage of
		 * a call it made that has not started yet. */
		struct ibmc__early *e;

		if (comm->early.count >= EARLY_MAX_COUNT ||
		    comm->early.bytes + len > EARLY_MAX_BYTES) {
			comm->st.stale_dropped++;
			return;
		}
		e = keep(comm->ctx, data, len, comm->id, is_mcast);
		if (e)
			push(&comm->early, e);
		return;
	}
	comm->st.stale_dropped++;
}

static struct ibmc_comm *find_comm(struct ibmc_context *ctx, uint32_t id)
{
	struct ibmc_comm *c;

	for (c = ctx->comms; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void deliver(struct ibmc_context *ctx, const void *data, size_t len,
		    int is_mcast)
{
	struct ibmc__hdr h;
	struct ibmc_comm *comm;
	struct ibmc__early *e;

	ctx->received++;
	if (ibmc__wire_decode(data, len, &h)) {
		ctx->dropped++;
		return;
	}
	if (h.coll == IBMC__C_LIVE) {
		ibmc__live_input(ctx, &h);
		return;
	}
	comm = find_comm(ctx, h.comm_id);
	if (comm) {
		/* Any datagram of a member says it is alive (live.h). */
		if (h.src < (uint32_t)comm->size)
			ibmc__live_heard(ctx, comm->members[h.src]);
		comm_input(comm, data, len, is_mcast);
		return;
	}
	/* A communicator not created here yet (or a foreign one sharing the
	 * group): keep a bounded number, the sender retransmits the rest. */
	while (ctx->early.head && (ctx->early.count >= EARLY_MAX_COUNT ||
				   ctx->early.bytes + len > EARLY_MAX_BYTES)) {
		/* Full: the oldest go first (likely a foreign
		 * communicator's traffic that nobody here will claim). */
		e = ctx->early.head;
		unlink_after(&ctx->early, NULL, e);
		ctx->dropped++;
		free(e);
	}
	e = keep(ctx, data, len, h.comm_id, is_mcast);
	if (e)
		push(&ctx->early, e);
}

static void deliver_pkt(struct ibmc_context *ctx,
			const struct ibmc_tr_pkt *pkt)
{
	ibmc__model_input(ctx, pkt->model_ns);
	deliver(ctx, pkt->data, pkt->len, pkt->is_mcast);
	ibmc__model_input_done(ctx);
}

/* Kept datagrams of collectives entered since: first, as they came
 * before anything the transport holds now. */
static void replay_due(struct ibmc_context *ctx)
{
	struct ibmc_comm *c;

	for (c = ctx->comms; c && !ibmc__model_busy(ctx); c = c->next)
		if (c->replay_due)
			ibmc__replay_comm(c);
}

/* On a modeled transport a datagram the collectives needed ends the
 * pump: they progress before the next one is taken (model.h). */
int ibmc__pump(struct ibmc_context *ctx, int timeout_ms)
{
	struct ibmc_tr_pkt pkt;
	int rc, i;

	replay_due(ctx);
	if (ibmc__model_busy(ctx))
		return 0;
	rc = ctx->ops->recv(ctx->tr, &pkt, timeout_ms);
	if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EINTR)
		return 0;
	if (rc)
		return rc;
	deliver_pkt(ctx, &pkt);
	for (i = 0; i < DRAIN_MAX && !ibmc__model_busy(ctx); i++) {
		rc = ctx->ops->recv(ctx->tr, &pkt, 0);
		if (rc)
			break;
		deliver_pkt(ctx, &pkt);
	}
	return 0;
}

void ibmc__replay_ctx(struct ibmc_context *ctx, struct ibmc_comm *comm)
{
	struct ibmc__early *prev = NULL, *e, *next;

	for (e = ctx->early.head; e; e = next) {
		next = e->next;
		if (e->comm_id != comm->id) {
			prev = e;
			continue;
		}
		unlink_after(&ctx->early, prev, e);
		ibmc__model_input(ctx, e->model_ns);
		comm_input(comm, e->data, e->len, e->is_mcast);
		ibmc__model_input_done(ctx);
		free(e);
	}
}

/* On a modeled transport it stops after a datagram the collective
 * needed, as the pump does; the rest stays kept, after those kept again,
 * in their order, and the next pump goes on with it. */
void ibmc__replay_comm(struct ibmc_comm *comm)
{
	struct ibmc_context *ctx = comm->ctx;
	struct ibmc__early *list = comm->early.head, *e;

	/* Detach first: datagrams still ahead are kept again in order. */
	memset(&comm->early, 0, sizeof(comm->early));
	comm->replay_due = 0;
	while ((e = list)) {
		list = e->next;
		if (ibmc__model_busy(ctx)) {
			/* The rest after those kept again meanwhile. */
			comm->replay_due = 1;
			push(&comm->early, e);
			continue;
		}
		ibmc__model_input(ctx, e->model_ns);
		comm_input(comm, e->data, e->len, e->is_mcast);
		ibmc__model_input_done(ctx);
		free(e);
	}
}
