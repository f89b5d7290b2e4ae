/* SPDX-License-Identifier: BSD-3-Clause */
/* Datagram output of a communicator through its context's transport. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "libjob/model.h"
#include "libjob/send.h"
#include "libjob/topo.h"

static int fill(const struct ibmc__hdr *h, const void *payload, size_t plen,
		unsigned char *hb, struct iovec *iov)
{
	iov[0].iov_base = hb;
	iov[0].iov_len = ibmc__wire_encode(h, hb);
	iov[1].iov_base = (void *)payload;
	iov[1].iov_len = plen;
	return plen ? 2 : 1;
}

int ibmc__send_ctx(struct ibmc_context *ctx, int to,
		   const struct ibmc__hdr *h, const void *payload,
		   size_t plen)
{
	unsigned char hb[IBMC__WIRE_CTL];
	struct iovec iov[2];
	int n = fill(h, payload, plen, hb, iov), quiet, rc;

	if (to < 0 || to >= ctx->size)
		return -EINVAL;
	quiet = ibmc__model_send_begin(ctx, h);
	rc = ctx->ops->send(ctx->tr, ctx->peer[to], iov, n);
	ibmc__model_send_end(ctx, quiet);
	return rc;
}

int ibmc__send_pkt(struct ibmc_comm *comm, int to, const struct ibmc__hdr *h,
		   const void *payload, size_t plen)
{
	if (to < 0 || to >= comm->size)
		return -EINVAL;
	comm->st.packets_sent++;
	comm->st.bytes_sent += plen;
	return ibmc__send_ctx(comm->ctx, comm->members[to], h, payload, plen);
}

int ibmc__mcast_pkt(struct ibmc_comm *comm, const struct ibmc__hdr *h,
		    const void *payload, size_t plen)
{
	struct ibmc_context *ctx = comm->ctx;
	unsigned char hb[IBMC__WIRE_CTL];
	struct iovec iov[2];
	int n = fill(h, payload, plen, hb, iov), quiet, rc;

	if (comm->ghandle < 0)
		return -ENOTCONN;
	comm->st.packets_sent++;
	comm->st.bytes_sent += plen;
	quiet = ibmc__model_send_begin(ctx, h);
	rc = ctx->ops->mcast_send(ctx->tr, comm->ghandle, iov, n);
	ibmc__model_send_end(ctx, quiet);
	return rc;
}

void ibmc__count_message(struct ibmc_comm *comm, int to)
{
	const struct ibmc__topo *t;

	/* Without memory for the topology, every message counts. */
	if (to >= 0 && (t = ibmc__comm_topo(comm)) &&
	    t->node_of[to] == t->my_node)
		return;
	comm->st.messages_sent++;
}

void ibmc__keeper_hdr(const struct ibmc_comm *hc, int coll, int op,
		      uint32_t seq, uint32_t b, struct ibmc__hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->kind = IBMC__K_POOL;
	h->coll = (uint8_t)coll;
	h->comm_id = hc->id;
	h->version = hc->version;
	h->src = (uint32_t)hc->rank;
	h->seq = seq;
	h->a = (uint32_t)op;
	h->b = b;
}
