/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliable broadcast engine shared by every algorithm (see bcast_op.h
 * and ibmc_bcast(3)). Acknowledgment scheme after seed 003 section 3:
 * cumulative acks climb a tree rooted at the sender, timers grow with the
 * rank's height, and an inner rank that hears an ack for data it lacks asks
 * that child for it. Per-child acknowledged sequence numbers and selective
 * retransmission to the children that did not acknowledge after seed 001
 * section 5.3.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "libjob/bcast_op.h"
#include "libjob/send.h"

#define MASK_BITS 64
#define MAX_BACKOFF 5

static int held(const struct ibmc__op *op, uint32_t f)
{
	if (!op->got)
		return 1;	/* the root holds everything */
	return (op->got[f >> 3] >> (f & 7)) & 1;
}

static size_t frag_len(const struct ibmc__op *op, uint32_t f)
{
	uint64_t off = (uint64_t)f * op->fragsz;

	if (off >= op->len)
		return 0;
	return op->len - off < op->fragsz ? op->len - off : op->fragsz;
}

static void progress_made(struct ibmc__op *op)
{
	op->last_progress = ibmc__now_ms();
}

static void finish(struct ibmc__op *op, int rc)
{
	op->done = 1;
	op->rc = rc;
}

static void fill_hdr(const struct ibmc__op *op, struct ibmc__hdr *h, int kind)
{
	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->algo = op->algo;
	h->lambda = op->lambda;
	h->comm_id = op->comm->id;
	h->version = op->comm->version;
	h->seq = op->seq;
	h->src = op->me;
	h->root = op->root;
	h->len = (uint32_t)op->len;
	h->fragsz = op->fragsz;
}

int ibmc__op_send_frag(struct ibmc__op *op, int to, uint32_t frag, int retx)
{
	struct ibmc__hdr h;

	fill_hdr(op, &h, IBMC__K_DATA);
	h.a = frag;
	h.flags = retx ? IBMC__F_RETX : 0;
	if (retx)
		op->comm->st.retransmits++;
	return ibmc__send_pkt(op->comm, to, &h,
			      op->buf + (size_t)frag * op->fragsz,
			      frag_len(op, frag));
}

int ibmc__op_mcast_frag(struct ibmc__op *op, uint32_t frag, int retx)
{
	struct ibmc__hdr h;

	fill_hdr(op, &h, IBMC__K_DATA);
	h.a = frag;
	h.flags = retx ? IBMC__F_RETX : 0;
	if (retx)
		op->comm->st.retransmits++;
	return ibmc__mcast_pkt(op->comm, &h,
			       op->buf + (size_t)frag * op->fragsz,
			       frag_len(op, frag));
}

int ibmc__op_send_ctl(struct ibmc__op *op, int to, int kind, uint32_t a,
		      uint32_t b, uint64_t mask, int flags)
{
	struct ibmc__hdr h;

	fill_hdr(op, &h, kind);
	h.a = a;
	h.b = b;
	h.mask = mask;
	h.flags = flags;
	return ibmc__send_pkt(op->comm, to, &h, NULL, 0);
}

/* The fragment count, the tree and the per-child state, once the shape
 * (algorithm, fragment size) is known. */
static int shape(struct ibmc__op *op)
{
	struct ibmc_comm *comm = op->comm;
	int64_t now = ibmc__now_ms();
	int i, rc, talgo;

	op->nfrags = op->len ? (uint32_t)((op->len + op->fragsz - 1) /
					  op->fragsz) : 1;
	talgo = op->algo == IBMC__A_POSTAL ? IBMC__A_POSTAL : IBMC__A_BINOMIAL;
	rc = ibmc__tree_build(&op->tree, talgo, op->lambda, comm->size,
			      op->root, op->me);
	if (rc)
		return rc;
	/* Acks from a rank of height h need h cycles to arrive. */
	op->rto = comm->ctx->env.rto_ms * (op->tree.height + 1);
	if (op->tree.nchildren) {
		op->kids = calloc((size_t)op->tree.nchildren,
				  sizeof(*op->kids));
		if (!op->kids)
			return -ENOMEM;
	}
	for (i = 0; i < op->tree.nchildren; i++) {
		op->kids[i].rank = op->tree.children[i];
		op->kids[i].deadline = now + op->rto;
	}
	if (op->me != op->root) {
		op->got = calloc((size_t)op->nfrags / 8 + 1, 1);
		if (!op->got)
			return -ENOMEM;
	} else {
		op->have = op->nfrags;
	}
	op->cum = op->tree.nchildren ? 0 : op->have;
	op->known = 1;
	return 0;
}

int ibmc__op_start(struct ibmc__op *op, struct ibmc_comm *comm, void *buf,
		   size_t len, int root, int algo)
{
	struct ibmc_context *ctx = comm->ctx;
	size_t mtu;

	memset(op, 0, sizeof(*op));
	op->comm = comm;
	op->seq = comm->next_seq;
	op->root = root;
	op->me = comm->rank;
	op->buf = buf;
	op->len = len;
	op->remcast_ok = 1;
	op->last_progress = ibmc__now_ms();
	if (op->me != root)
		return 0;
	op->algo = algo;
	op->lambda = algo == IBMC__A_POSTAL ? ctx->env.lambda : 1;
	mtu = ctx->mtu;
	if (algo == IBMC__A_MCAST && comm->gmtu && comm->gmtu < mtu)
		mtu = comm->gmtu;
	if (mtu > 65535 + IBMC__WIRE_HDR)
		mtu = 65535 + IBMC__WIRE_HDR;
	op->fragsz = (uint32_t)(mtu - IBMC__WIRE_HDR);
	return shape(op);
}

void ibmc__op_fini(struct ibmc__op *op)
{
	ibmc__tree_free(&op->tree);
	free(op->kids);
	free(op->got);
	op->kids = NULL;
	op->got = NULL;
}

/* A non-root learns the root's choice from the first packet it gets. */
static void learn(struct ibmc__op *op, const struct ibmc__hdr *h)
{
	int rc;

	if ((int)h->root != op->root) {
		finish(op, -EINVAL);	/* members disagree on the root */
		return;
	}
	if (h->len != op->len) {
		finish(op, -EMSGSIZE);	/* members disagree on the length */
		return;
	}
	op->algo = h->algo;
	op->lambda = h->lambda ? h->lambda : 1;
	op->fragsz = h->fragsz;
	rc = shape(op);
	if (rc)
		finish(op, rc);
}

static struct ibmc__child *kid(struct ibmc__op *op, int rank)
{
	int i;

	for (i = 0; i < op->tree.nchildren; i++)
		if (op->kids[i].rank == rank)
			return &op->kids[i];
	return NULL;
}

static void update_cum(struct ibmc__op *op)
{
	uint32_t c = op->have;
	int i;

	for (i = 0; i < op->tree.nchildren; i++)
		if (op->kids[i].cum < c)
			c = op->kids[i].cum;
	if (c != op->cum) {
		op->cum = c;
		progress_made(op);
	}
}

/* Fragments have+1 .. have+64 that this rank holds, for its acks. */
static uint64_t held_mask(const struct ibmc__op *op)
{
	uint64_t m = 0;
	uint32_t i, f;

	for (i = 0; i < MASK_BITS; i++) {
		f = op->have + 1 + i;
		if (f >= op->nfrags)
			break;
		if (held(op, f))
			m |= 1ULL << i;
	}
	return m;
}

static int kid_holds(const struct ibmc__child *c, uint32_t f)
{
	if (f < c->have)
		return 1;
	if (f == c->have)
		return 0;
	if (f - c->have - 1 < MASK_BITS)
		return (c->mask >> (f - c->have - 1)) & 1;
	return 0;
}

/*
 * Unmatched-ack repair (seed 003, 3.3.4): child c acknowledges fragments
 * this inner rank never received (it missed the multicast, its subtree did
 * not). Ask c for them by unicast instead of waiting for the parent's
 * timer, which is longer.
 */
static void request_repair(struct ibmc__op *op, struct ibmc__child *c)
{
	int64_t now = ibmc__now_ms();
	uint64_t want = 0;
	uint32_t i, f;

	if (now < op->req_next)
		return;
	for (i = 0; i < MASK_BITS; i++) {
		f = op->have + i;
		if (f >= op->nfrags)
			break;
		if (!held(op, f) && kid_holds(c, f))
			want |= 1ULL << i;
	}
	if (!want)
		return;
	ibmc__op_send_ctl(op, c->rank, IBMC__K_REQ, op->have, 0, want, 0);
	op->req_next = now + op->comm->ctx->env.rto_ms;
}

static void on_data(struct ibmc__op *op, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen, int is_mcast)
{
	uint32_t f = h->a;

	if (f >= op->nfrags || plen != frag_len(op, f) || !op->got)
		return;
	if (is_mcast)
		op->mc_seen = 1;
	if (held(op, f)) {
		op->comm->st.duplicates++;
		/* A retransmission from the parent: our ack was lost. */
		if (!is_mcast && (int)h->src == op->tree.parent)
			op->ack_due = 1;
		return;
	}
	if (plen)
		memcpy(op->buf + (size_t)f * op->fragsz, payload, plen);
	op->got[f >> 3] |= 1 << (f & 7);
	while (op->have < op->nfrags && held(op, op->have))
		op->have++;
	progress_made(op);
	if (op->algo != IBMC__A_MCAST)
		ibmc__p2p_forward(op, f);
	update_cum(op);
}

static void on_ack(struct ibmc__op *op, const struct ibmc__hdr *h)
{
	struct ibmc__child *c = kid(op, (int)h->src);
	int64_t now = ibmc__now_ms();
	int moved = 0;

	if (!c || h->a > op->nfrags || h->b > h->a)
		return;
	if (h->a > c->have) {
		c->have = h->a;
		c->mask = h->mask;
		moved = 1;
	} else if (h->a == c->have) {
		c->mask |= h->mask;
	}
	if (h->b > c->cum) {
		c->cum = h->b;
		moved = 1;
	}
	if (h->flags & IBMC__F_MC) {
		c->mc = 1;
		op->child_mc = 1;
		if (moved)
			op->remcast_ok = 1;
	}
	if (moved) {
		c->backoff = 0;
		c->deadline = now + op->rto;
		progress_made(op);
	}
	if (op->me != op->root && c->have > op->have)
		request_repair(op, c);
	/* A repeated final ack: our FIN to it was lost. */
	if (c->cum == op->nfrags && c->fin_sent)
		ibmc__op_send_ctl(op, c->rank, IBMC__K_FIN, 0, 0, 0, 0);
	update_cum(op);
}

static void on_req(struct ibmc__op *op, const struct ibmc__hdr *h)
{
	uint32_t i, f;

	for (i = 0; i < MASK_BITS; i++) {
		if (!((h->mask >> i) & 1))
			continue;
		f = h->a + i;
		if (f >= op->nfrags || !held(op, f))
			continue;
		op->comm->st.repairs++;
		ibmc__op_send_frag(op, (int)h->src, f, 1);
	}
}

void ibmc__op_input(struct ibmc__op *op, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen, int is_mcast)
{
	if (op->done)
		return;
	if (!op->known) {
		learn(op, h);
		if (op->done)
			return;
	} else if (h->algo != op->algo || h->fragsz != op->fragsz ||
		   h->len != op->len || (int)h->root != op->root) {
		op->comm->st.stale_dropped++;
		return;
	}
	if ((int)h->src == op->tree.parent && op->linger_until)
		op->linger_until = ibmc__now_ms() + 8 * op->rto + 20;
	switch (h->kind) {
	case IBMC__K_DATA:
		on_data(op, h, payload, plen, is_mcast);
		break;
	case IBMC__K_ACK:
		on_ack(op, h);
		break;
	case IBMC__K_REQ:
		on_req(op, h);
		break;
	case IBMC__K_PROBE:
		op->ack_due = 1;
		break;
	case IBMC__K_FIN:
		if ((int)h->src == op->tree.parent && !op->fin) {
			op->fin = 1;
			progress_made(op);
		}
		break;
	}
}

/* Unicast what child c lacks below limit, at most a mask's span. */
static void resend_to(struct ibmc__op *op, struct ibmc__child *c,
		      uint32_t limit)
{
	uint32_t f, end = c->have + MASK_BITS + 1;

	if (end > limit)
		end = limit;
	for (f = c->have; f < end; f++) {
		if (kid_holds(c, f) || !held(op, f))
			continue;
		if (op->me != op->root)
			op->comm->st.repairs++;
		ibmc__op_send_frag(op, c->rank, f, 1);
	}
}

static void run_timers(struct ibmc__op *op, int64_t now)
{
	struct ibmc__child *due[64];
	uint32_t limit = op->me == op->root ? op->sent : op->have;
	int i, ndue = 0;

	for (i = 0; i < op->tree.nchildren; i++) {
		struct ibmc__child *c = &op->kids[i];

		if (c->cum >= limit) {
			/* Nothing outstanding: the clock starts when
			 * something is. */
			c->deadline = now + op->rto;
			continue;
		}
		if (now < c->deadline)
			continue;
		op->comm->st.timeouts++;
		if (c->backoff < MAX_BACKOFF)
			c->backoff++;
		c->deadline = now + ((int64_t)op->rto << c->backoff);
		if (ndue < 64)
			due[ndue++] = c;
	}
	if (!ndue)
		return;
	if (op->me == op->root && op->algo == IBMC__A_MCAST)
		ibmc__mcast_retransmit(op, due, ndue);
	for (i = 0; i < ndue; i++) {
		struct ibmc__child *c = due[i];

		if (!c)
			continue;
		if (c->have < limit)
			resend_to(op, c, limit);
		else	/* its subtree lags or its ack was lost: ask */
			ibmc__op_send_ctl(op, c->rank, IBMC__K_PROBE, 0, 0, 0,
					  0);
	}
}

static void send_ack(struct ibmc__op *op, int64_t now)
{
	uint64_t mask = held_mask(op);
	int flags = (op->mc_seen || op->child_mc) ? IBMC__F_MC : 0;

	if (!op->ack_due && op->have == op->acked_have &&
	    op->cum == op->acked_cum && mask == op->acked_mask &&
	    !(op->cum == op->nfrags && !op->fin && now >= op->ack_resend))
		return;
	ibmc__op_send_ctl(op, op->tree.parent, IBMC__K_ACK, op->have, op->cum,
			  mask, flags);
	op->acked_have = op->have;
	op->acked_cum = op->cum;
	op->acked_mask = mask;
	op->ack_due = 0;
	op->ack_resend = now + 2 * op->rto + op->comm->ctx->env.rto_ms;
}

static void send_fins(struct ibmc__op *op)
{
	int i;

	for (i = 0; i < op->tree.nchildren; i++) {
		ibmc__op_send_ctl(op, op->kids[i].rank, IBMC__K_FIN, 0, 0, 0,
				  0);
		op->kids[i].fin_sent = 1;
	}
}

void ibmc__op_progress(struct ibmc__op *op, int64_t now)
{
	int timeout = op->comm->ctx->env.timeout_ms;

	if (op->done)
		return;
	if (op->known) {
		if (op->me == op->root) {
			if (op->algo == IBMC__A_MCAST)
				ibmc__mcast_push(op);
			else
				ibmc__p2p_push(op);
		}
		run_timers(op, now);
		if (op->me != op->root)
			send_ack(op, now);
		if (op->me == op->root && op->cum == op->nfrags) {
			send_fins(op);
			finish(op, 0);
			return;
		}
		if (op->me != op->root && op->cum == op->nfrags) {
			/* Our subtree is complete. Wait for the FIN that says
			 * the parent heard us, re-sending the final ack; a
			 * parent silent for long has left: go anyway. */
			if (!op->linger_until)
				op->linger_until = now + 8 * op->rto + 20;
			if (op->fin || now >= op->linger_until) {
				send_fins(op);
				finish(op, 0);
			}
			return;
		}
	}
	if (timeout && now - op->last_progress > timeout)
		finish(op, -ETIMEDOUT);
}

int64_t ibmc__op_next_deadline(const struct ibmc__op *op)
{
	int64_t d = INT64_MAX;
	int i;

	if (!op->known || op->done)
		return d;
	for (i = 0; i < op->tree.nchildren; i++)
		if (op->kids[i].deadline < d)
			d = op->kids[i].deadline;
	if (op->linger_until && op->linger_until < d)
		d = op->linger_until;
	if (op->ack_resend && op->cum == op->nfrags && op->ack_resend < d)
		d = op->ack_resend;
	return d;
}
