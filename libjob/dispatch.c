/* SPDX-License-Identifier: BSD-3-Clause */
/* Datagram demultiplexing for a context (see dispatch.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/bcast_op.h"
#include "libjob/dispatch.h"
#include "libjob/send.h"

/* Bounds on kept datagrams: the protocol retransmits what is dropped, so
 * these only need to cover ordinary skew between ranks. */
#define EARLY_MAX_COUNT 4096
#define EARLY_MAX_BYTES (16u << 20)
#define DRAIN_MAX 256

static struct ibmc__early *keep(const void *data, size_t len,
				uint32_t comm_id, int is_mcast)
{
	struct ibmc__early *e = malloc(sizeof(*e) + len);

	if (!e)
		return NULL;
	e->next = NULL;
	e->comm_id = comm_id;
	e->is_mcast = is_mcast;
	e->len = len;
	memcpy(e->data, data, len);
	return e;
}

static void append(struct ibmc__early **list, struct ibmc__early *e)
{
	while (*list)
		list = &(*list)->next;
	*list = e;
}

void ibmc__early_free(struct ibmc__early **list)
{
	struct ibmc__early *e, *n;

	for (e = *list; e; e = n) {
		n = e->next;
		free(e);
	}
	*list = NULL;
}

/* Answer a late datagram about the last completed broadcast: a parent
 * still retransmitting or probing missed our final ack; a child still
 * acking missed our FIN. */
static void answer_late(struct ibmc_comm *comm, const struct ibmc__hdr *h,
			int is_mcast)
{
	struct ibmc__hdr r = comm->last_tmpl;

	r.src = (uint32_t)comm->rank;
	r.flags = 0;
	r.b = 0;
	r.mask = 0;
	if ((h->kind == IBMC__K_DATA || h->kind == IBMC__K_PROBE) &&
	    !is_mcast) {
		if (comm->last_parent < 0)
			return;
		r.kind = IBMC__K_ACK;
		r.a = r.b = comm->last_nfrags;
		ibmc__send_pkt(comm, comm->last_parent, &r, NULL, 0);
	} else if (h->kind == IBMC__K_ACK && h->b == comm->last_nfrags) {
		r.kind = IBMC__K_FIN;
		r.a = 0;
		ibmc__send_pkt(comm, (int)h->src, &r, NULL, 0);
	}
}

static void comm_input(struct ibmc_comm *comm, const void *data, size_t len,
		       int is_mcast)
{
	struct ibmc__hdr h;
	struct ibmc__op *op = comm->op;
	const unsigned char *p = data;
	int32_t ahead;

	if (ibmc__wire_decode(data, len, &h))
		return;
	if (h.version != comm->version) {
		comm->st.stale_dropped++;	/* another membership */
		return;
	}
	if (h.src >= (uint32_t)comm->size || h.root >= (uint32_t)comm->size ||
	    (int)h.src == comm->rank)
		return;
	if (op && h.seq == op->seq) {
		ibmc__op_input(op, &h, p + IBMC__WIRE_HDR,
			       len - IBMC__WIRE_HDR, is_mcast);
		return;
	}
	ahead = (int32_t)(h.seq - comm->next_seq);
	if (ahead >= 0 && ahead < 4) {
		/* A broadcast this rank has not entered yet. */
		struct ibmc__early *e;

		if (comm->early_count >= EARLY_MAX_COUNT ||
		    comm->early_bytes + len > EARLY_MAX_BYTES) {
			comm->st.stale_dropped++;
			return;
		}
		e = keep(data, len, comm->id, is_mcast);
		if (!e)
			return;
		append(&comm->early, e);
		comm->early_count++;
		comm->early_bytes += len;
		return;
	}
	if (comm->last_valid && h.seq == comm->last_seq) {
		answer_late(comm, &h, is_mcast);
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

	if (ibmc__wire_decode(data, len, &h)) {
		ctx->dropped++;
		return;
	}
	comm = find_comm(ctx, h.comm_id);
	if (comm) {
		comm_input(comm, data, len, is_mcast);
		return;
	}
	/* A communicator not created here yet (or a foreign one sharing the
	 * group): keep a bounded number, the sender retransmits the rest. */
	while (ctx->early && (ctx->early_count >= EARLY_MAX_COUNT ||
			      ctx->early_bytes + len > EARLY_MAX_BYTES)) {
		/* Full: the oldest go first (likely a foreign
		 * communicator's traffic that nobody here will claim). */
		e = ctx->early;
		ctx->early = e->next;
		ctx->early_count--;
		ctx->early_bytes -= e->len;
		ctx->dropped++;
		free(e);
	}
	e = keep(data, len, h.comm_id, is_mcast);
	if (!e)
		return;
	append(&ctx->early, e);
	ctx->early_count++;
	ctx->early_bytes += len;
}

int ibmc__pump(struct ibmc_context *ctx, int timeout_ms)
{
	struct ibmc_tr_pkt pkt;
	int rc, i;

	rc = ctx->ops->recv(ctx->tr, &pkt, timeout_ms);
	if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EINTR)
		return 0;
	if (rc)
		return rc;
	deliver(ctx, pkt.data, pkt.len, pkt.is_mcast);
	for (i = 0; i < DRAIN_MAX; i++) {
		rc = ctx->ops->recv(ctx->tr, &pkt, 0);
		if (rc)
			break;
		deliver(ctx, pkt.data, pkt.len, pkt.is_mcast);
	}
	return 0;
}

void ibmc__replay_ctx(struct ibmc_context *ctx, struct ibmc_comm *comm)
{
	struct ibmc__early **pp = &ctx->early, *e;

	while ((e = *pp)) {
		if (e->comm_id != comm->id) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		ctx->early_count--;
		ctx->early_bytes -= e->len;
		comm_input(comm, e->data, e->len, e->is_mcast);
		free(e);
	}
}

void ibmc__replay_comm(struct ibmc_comm *comm)
{
	struct ibmc__early *list = comm->early, *e;

	/* Detach first: datagrams still ahead are kept again in order. */
	comm->early = NULL;
	comm->early_count = 0;
	comm->early_bytes = 0;
	while ((e = list)) {
		list = e->next;
		comm_input(comm, e->data, e->len, e->is_mcast);
		free(e);
	}
}
