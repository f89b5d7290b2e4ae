/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reliable broadcast engine shared by every algorithm (see bcast_op.h
 * and ibmc_bcast(3)). Acknowledgment scheme after seed 003 section 3:
 * cumulative acks climb a tree rooted at the sender, and an inner rank that
 * hears an ack for data it lacks asks that child for it. Per-child
 * acknowledged sequence numbers and selective retransmission to the
 * children that did not acknowledge after seed 001 section 5.3.
 *
 * Timers are not fixed: each parent measures, per child subtree height,
 * the delay from holding a fragment to the child's ack covering it, and
 * times out at SRTT + 4 RTTVAR (TCP's estimator, RFC 6298; at least
 * 2 SRTT), skipping samples after a resend (Karn) and doubling on expiry.
 * Loss is mostly repaired before any timer: every rank knows the
 * fragment count, so a rank that sees a later fragment than one it lacks
 * (or the root's multicast announcement of how far it sent) NACKs its
 * parent at once, and the parent answers by unicast (or forwards the
 * fragment the moment it gets it itself); each gap is NACKed again only
 * after its own timeout (measured: first NACK to repair), so one loss
 * costs one repair. Acks go twice, and so do repairs once the root sent
 * everything: a lost ack or tail repair otherwise idles everyone for a
 * timeout.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "libjob/bcast_op.h"
#include "libjob/live.h"
#include "libjob/model.h"
#include "libjob/rtt.h"
#include "libjob/send.h"

#define MASK_BITS 64
#define MAX_BACKOFF 6
#define NACK_MAX_US 100000	/* longest wait before re-NACKing */

int64_t ibmc__op_now(void)
{
	return (int64_t)(ibmc__now_ns() / 1000);
}

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

/* ---- delay estimates ---------------------------------------------------- */

static struct ibmc__rtt *ack_est(const struct ibmc__op *op, int height)
{
	if (height >= IBMC__RTT_LEVELS)
		height = IBMC__RTT_LEVELS - 1;
	return &op->comm->ack_rtt[height];
}

/* Base timer for a child of this height: measured, else the configured
 * IBMCAST_BCAST_RTO_MS times (height + 1) as before any measurement. */
static int64_t child_rto(const struct ibmc__op *op, int height)
{
	int64_t base = (int64_t)op->comm->ctx->env.rto_ms * 1000;
	int lvl = height < IBMC__RTT_LEVELS ? height : IBMC__RTT_LEVELS - 1;

	return ibmc__rto_clamp(ibmc__rtt_rto(ack_est(op, height),
					     base * (height + 1))
			       << op->comm->ack_backoff[lvl]);
}

/*
 * A timer of this height expired: later broadcasts start from a doubled
 * timeout until a valid delay sample comes (TCP keeps its backed-off RTO
 * the same way). Without it, on a busy host where every child is late,
 * every timer fires, Karn's rule then discards every sample, and the
 * estimate never leaves its too-short start: every broadcast paid the
 * same spurious timeouts. Once per broadcast and height.
 */
static void back_off(struct ibmc__op *op, int height)
{
	int lvl = height < IBMC__RTT_LEVELS ? height : IBMC__RTT_LEVELS - 1;
	uint32_t bit = 1u << (lvl < 31 ? lvl : 31);

	if (op->backed_off & bit)
		return;
	op->backed_off |= bit;
	if (op->comm->ack_backoff[lvl] < 4)
		op->comm->ack_backoff[lvl]++;
}

/* How long a rank waits for the FIN after its final ack. */
static int64_t fin_rto(const struct ibmc__op *op)
{
	int64_t base = (int64_t)op->comm->ctx->env.rto_ms * 1000;
	int lg = 1;

	while ((1 << lg) < op->nmembers)
		lg++;
	return ibmc__rtt_rto(&op->comm->fin_rtt, base * (lg + 1));
}

/* us: how long a member hears nothing from its parent before it takes the
 * parent for gone: a complete subtree stops waiting for the FIN (linger),
 * a member lacking data that heard nothing new from anyone either asks
 * the root (ask_root). At most a quarter of IBMCAST_BCAST_TIMEOUT_MS:
 * fin_rto grows on a loaded host (up to IBMC__RTO_MAX_US), and a member
 * that gave up before it asked would fail a broadcast the root could
 * still have repaired. */
static int64_t silence_us(const struct ibmc__op *op)
{
	int64_t quiet = 8 * fin_rto(op) + 20000,
		cap = (int64_t)op->comm->ctx->env.timeout_ms * 1000 / 4;

	return cap > 0 && quiet > cap ? cap : quiet;
}

/* How long a NACK waits for its repair before it is sent again: measured
 * from first NACKs to their repairs, else a unicast round trip, about what
 * a leaf's ack takes. */
static int64_t nack_rto(const struct ibmc__op *op)
{
	return ibmc__rtt_rto(&op->comm->nack_rtt, child_rto(op, 0));
}

/* ---- packets ------------------------------------------------------------ */

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
	h->ackint = op->ackint > 255 ? 255 : op->ackint;
}

/* Modeled time around sending fragment frag: a retransmission goes
 * stamped with the first send's time (model.h); a first send records
 * it. */
static void frag_model_on(struct ibmc__op *op, uint32_t frag, int retx)
{
	if (retx)
		ibmc__model_resend_on(op->comm->ctx,
				      op->t_model ? op->t_model[frag] : 0);
}

static void frag_model_off(struct ibmc__op *op, uint32_t frag, int retx)
{
	if (retx)
		ibmc__model_resend_off(op->comm->ctx);
	else if (op->t_model && !op->t_model[frag])
		op->t_model[frag] = ibmc__model_clock(op->comm->ctx);
}

/* The error the data carries, on every fragment (ibmc__op.error). */
static int error_flag(const struct ibmc__op *op)
{
	if (!op->error)
		return 0;
	return op->error == -EMSGSIZE ? IBMC__F_ESIZE : IBMC__F_EINVAL;
}

int ibmc__op_send_frag(struct ibmc__op *op, int to, uint32_t frag, int retx)
{
	struct ibmc__hdr h;
	int rc;

	fill_hdr(op, &h, IBMC__K_DATA);
	h.a = frag;
	h.flags = (retx ? IBMC__F_RETX : 0) | error_flag(op);
	if (retx)
		op->comm->st.retransmits++;
	else if (frag == 0)	/* a child's copy starts */
		ibmc__count_message(op->comm, to);
	frag_model_on(op, frag, retx);
	rc = ibmc__send_pkt(op->comm, to, &h,
			    op->buf + (size_t)frag * op->fragsz,
			    frag_len(op, frag));
	frag_model_off(op, frag, retx);
	return rc;
}

int ibmc__op_mcast_frag(struct ibmc__op *op, uint32_t frag, int retx)
{
	struct ibmc__hdr h;
	int rc;

	fill_hdr(op, &h, IBMC__K_DATA);
	h.a = frag;
	h.flags = (retx ? IBMC__F_RETX : 0) | error_flag(op);
	if (retx)
		op->comm->st.retransmits++;
	else if (op->t_avail)
		op->t_avail[frag] = ibmc__op_now();
	if (!retx && frag == 0)
		ibmc__count_message(op->comm, -1);
	frag_model_on(op, frag, retx);
	rc = ibmc__mcast_pkt(op->comm, &h,
			     op->buf + (size_t)frag * op->fragsz,
			     frag_len(op, frag));
	frag_model_off(op, frag, retx);
	return rc;
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

/* Ask member to for fragment 0, which carries the broadcast's shape (a
 * REQ of one fragment: its holder answers it as a NACK). */
static void ask_first_fragment(struct ibmc__op *op, int to)
{
	ibmc__op_send_ctl(op, to, IBMC__K_REQ, 0, 0, 1, 0);
}

/* Communicator rank r's place among the op's members (-1: none). */
static int index_of(const struct ibmc__op *op, int r)
{
	int i;

	if (!op->members)
		return r;
	for (i = 0; i < op->nmembers; i++)
		if (op->members[i] == r)
			return i;
	return -1;
}

/* The fragment count, the tree and the per-child state, once the shape
 * (algorithm, fragment size) is known. */
static int shape(struct ibmc__op *op)
{
	int i, rc;

	op->nfrags = op->len ? (uint32_t)((op->len + op->fragsz - 1) /
					  op->fragsz) : 1;
	if (!op->ackint)
		op->ackint = 1;
	rc = ibmc__tree_build(&op->tree, op->strat->tree, op->lambda,
			      op->nmembers, index_of(op, op->root),
			      index_of(op, op->me));
	if (rc)
		return rc;
	if (op->members) {
		if (op->tree.parent >= 0)
			op->tree.parent = op->members[op->tree.parent];
		for (i = 0; i < op->tree.nchildren; i++)
			op->tree.children[i] =
				op->members[op->tree.children[i]];
	}
	if (op->tree.nchildren) {
		op->kids = calloc((size_t)op->tree.nchildren,
				  sizeof(*op->kids));
		op->t_avail = calloc(op->nfrags, sizeof(*op->t_avail));
		op->t_model = calloc(op->nfrags, sizeof(*op->t_model));
		if (!op->kids || !op->t_avail || !op->t_model)
			return -ENOMEM;
	}
	for (i = 0; i < op->tree.nchildren; i++) {
		op->kids[i].rank = op->tree.children[i];
		op->kids[i].height = op->tree.cheight[i];
	}
	if (op->me != op->root) {
		op->got = calloc((size_t)op->nfrags / 8 + 1, 1);
		op->t_nack = calloc(op->nfrags, sizeof(*op->t_nack));
		op->n_nack = calloc(op->nfrags, 1);
		if (!op->got || !op->t_nack || !op->n_nack)
			return -ENOMEM;
	} else {
		op->have = op->top = op->nfrags;
	}
	op->cum = op->tree.nchildren ? 0 : op->have;
	op->parent_heard = ibmc__op_now();
	op->known = 1;
	return 0;
}

int ibmc__op_start(struct ibmc__op *op, struct ibmc_comm *comm, void *buf,
		   size_t len, int root, int algo, uint32_t seq)
{
	return ibmc__op_start_among(op, comm, buf, len, root, algo, seq,
				    NULL, comm->size);
}

int ibmc__op_start_among(struct ibmc__op *op, struct ibmc_comm *comm,
			 void *buf, size_t len, int root, int algo,
			 uint32_t seq, const int *members, int n)
{
	struct ibmc_context *ctx = comm->ctx;
	size_t mtu;

	memset(op, 0, sizeof(*op));
	op->comm = comm;
	op->seq = seq;
	op->members = members;
	op->nmembers = n;
	if (index_of(op, root) < 0 || index_of(op, comm->rank) < 0)
		return -EINVAL;
	op->root = root;
	op->me = comm->rank;
	op->buf = buf;
	op->len = len;
	op->remcast_ok = 1;
	op->last_progress = ibmc__now_ms();
	if (op->me != root)
		return 0;
	op->algo = algo;
	op->strat = ibmc__bcast_strategy(algo);
	if (!op->strat)
		return -EINVAL;
	op->lambda = op->strat->tree == IBMC__A_POSTAL ? ctx->env.lambda : 1;
	/* Acks once per quarter window keep the window open with few acks:
	 * per half window, the ack for the first half comes back (up a tree
	 * of busy hosts) only after the second half went out, and the root
	 * sends in whole-window bursts, waiting in between. */
	op->ackint = ctx->env.window > 3 ? (uint32_t)ctx->env.window / 4 : 1;
	if (op->ackint > 255)
		op->ackint = 255;
	mtu = ctx->mtu;
	if (op->strat->uses_group && comm->gmtu && comm->gmtu < mtu)
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
	free(op->t_avail);
	free(op->t_model);
	free(op->t_nack);
	free(op->n_nack);
	free(op->scratch);
	op->kids = NULL;
	op->got = NULL;
	op->t_avail = NULL;
	op->t_model = NULL;
	op->t_nack = NULL;
	op->n_nack = NULL;
	op->scratch = NULL;
	op->user_buf = NULL;
}

/*
 * This member's length differs from the root's: an erroneous program that
 * MPI reports only on the ranks concerned (MPI_ERR_TRUNCATE), so this rank
 * must not leave the protocol, or its subtree would never get its data,
 * repairs or FIN and would time out. It relays the root's message from a
 * scratch buffer instead, as any member, and its caller gets -EMSGSIZE.
 */
static int relay(struct ibmc__op *op, size_t root_len)
{
	op->scratch = malloc(root_len ? root_len : 1);
	if (!op->scratch)
		return -ENOMEM;
	op->user_buf = op->buf;
	op->user_len = op->len;
	op->buf = op->scratch;
	op->len = root_len;
	return 0;
}

int ibmc__op_deliver(struct ibmc__op *op)
{
	if (!op->scratch)
		return op->error;
	if (op->user_buf) {
		size_t n = op->user_len < op->len ? op->user_len : op->len;

		if (n)
			memcpy(op->user_buf, op->scratch, n);
		op->user_buf = NULL;
	}
	return -EMSGSIZE;
}

/* A non-root learns the root's choice from the first fragment it gets. */
static void learn(struct ibmc__op *op, const struct ibmc__hdr *h)
{
	int rc;

	if ((int)h->root != op->root) {
		finish(op, -EINVAL);	/* members disagree on the root */
		return;
	}
	if (h->flags & (IBMC__F_ESIZE | IBMC__F_EINVAL))
		op->error = h->flags & IBMC__F_ESIZE ? -EMSGSIZE : -EINVAL;
	if (h->len != op->len) {
		rc = relay(op, h->len);	/* members disagree on the length */
		if (rc) {
			finish(op, rc);
			return;
		}
	}
	op->algo = h->algo;
	op->strat = ibmc__bcast_strategy(h->algo);
	if (!op->strat) {
		finish(op, -EPROTO);
		return;
	}
	op->lambda = h->lambda ? h->lambda : 1;
	op->fragsz = h->fragsz;
	op->ackint = h->ackint;
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

/* When the acks that raise the subtree's prefix to cum arrived, in
 * modeled time: for each child the first of its recent acks covering
 * cum, the latest over the children. Independent of the order they were
 * handled in. */
static uint64_t cum_arrival(const struct ibmc__op *op, uint32_t cum)
{
	uint64_t t = 0, first;
	unsigned i, n;
	int k;

	for (k = 0; k < op->tree.nchildren; k++) {
		const struct ibmc__child *c = &op->kids[k];

		n = c->ncum_at < 8 ? c->ncum_at : 8;
		first = UINT64_MAX;
		for (i = 0; i < n; i++)
			if (c->cum_at[i].cum >= cum &&
			    c->cum_at[i].t_ns < first)
				first = c->cum_at[i].t_ns;
		if (first != UINT64_MAX && first > t)
			t = first;
	}
	return t;
}

/*
 * Modeled time: acks cost the root once per advance of the prefix every
 * member holds (what opens its window), at the arrival of the last ack
 * that made it; an inner member's children's acks cost it nothing, since
 * whether real time hands them to it before or after its own last
 * fragment would decide its modeled return (model.h).
 */
static void update_cum(struct ibmc__op *op)
{
	uint32_t c = op->have;
	int i;

	for (i = 0; i < op->tree.nchildren; i++)
		if (op->kids[i].cum < c)
			c = op->kids[i].cum;
	if (c != op->cum) {
		if (c > op->cum && op->me == op->root && op->tree.nchildren)
			ibmc__model_take_at(op->comm->ctx,
					    cum_arrival(op, c));
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
		if (f >= op->top)
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

/* The point up to which child c must have acknowledged once this rank
 * holds (root: has sent) limit fragments: children ack when their
 * cumulative count crosses a multiple of ackint, and at the end. */
static uint32_t ack_point(const struct ibmc__op *op, uint32_t limit)
{
	if (limit >= op->nfrags)
		return op->nfrags;
	return limit / op->ackint * op->ackint;
}

/*
 * Unmatched-ack repair (seed 003, 3.3.4): child c acknowledges fragments
 * this inner rank never received (it missed the multicast, its subtree did
 * not). Ask c for them by unicast instead of waiting for the parent's
 * timer, which is longer.
 */
static void request_repair(struct ibmc__op *op, struct ibmc__child *c)
{
	int64_t now = ibmc__op_now();
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
	ibmc__op_send_ctl(op, c->rank, IBMC__K_REQ, op->have, op->have, want,
			  0);
	op->req_next = now + nack_rto(op);
}

/* How long the n-th NACK of a fragment waits for its repair: doubling,
 * but never long, since a child's NACKs also hold back its parent's timer
 * (they are its only way out when repairs keep getting lost). */
static int64_t nack_wait(const struct ibmc__op *op, int n)
{
	int64_t w = nack_rto(op) << (n > 1 ? (n < 4 ? n - 1 : 3) : 0);

	return w < NACK_MAX_US ? w : NACK_MAX_US;
}

/* One NACK, sent twice: a lost NACK costs a whole NACK timeout (more than
 * the broadcast itself when it is small), a second copy 36 bytes. The
 * parent answers the first copy only. */
static void nack_pkt(struct ibmc__op *op, uint32_t lo, uint64_t want)
{
	int i;

	for (i = 0; i < 2; i++)
		ibmc__op_send_ctl(op, op->tree.parent, IBMC__K_REQ, lo,
				  op->have, want, 0);
}

/*
 * NACK: the fragments below top this rank lacks, to its parent. A gap is
 * asked for the moment it shows (a later fragment, the root's multicast
 * announcement of how far it sent, or a probe), then again only when its
 * own NACK timeout (a unicast round trip, doubling) passed without the
 * repair: a fragment whose repair may still be on its way is not asked for
 * again, so each loss costs one repair, not one per later fragment. The
 * parent sends what it holds and forwards the rest when it gets it. One
 * request covers up to 64 fragments from its first.
 */
static void send_nack(struct ibmc__op *op, int64_t now)
{
	int64_t next = INT64_MAX, due;
	uint64_t want = 0;
	uint32_t f, lo = 0;

	if (op->me == op->root || !op->t_nack || op->have >= op->top)
		return;
	if (op->top <= op->nack_hi && now < op->nack_next)
		return;
	for (f = op->have; f < op->top; f++) {
		if (held(op, f))
			continue;
		if (op->t_nack[f]) {
			due = op->t_nack[f] + nack_wait(op, op->n_nack[f]);
			if (now < due) {
				if (due < next)
					next = due;
				continue;
			}
		}
		if (want && f - lo >= MASK_BITS) {
			nack_pkt(op, lo, want);
			want = 0;
		}
		if (!want)
			lo = f;
		want |= 1ULL << (f - lo);
		op->t_nack[f] = now;
		if (op->n_nack[f] < 255)
			op->n_nack[f]++;
		due = now + nack_wait(op, op->n_nack[f]);
		if (due < next)
			next = due;
	}
	if (want)
		nack_pkt(op, lo, want);
	op->nack_hi = op->top;
	op->nack_next = next;
}

/*
 * A repair for child c's NACK. Once the root sent everything, it goes
 * twice: then nothing else is in flight, and a lost repair leaves the
 * broadcast idle for a whole NACK timeout (with 5% loss, about one per
 * small broadcast); a second copy costs one fragment. Earlier, the data
 * still streaming hides most of that wait, and copies would cost the most
 * bytes. Not to a child already probed: its NACK most likely answers our
 * probe (it was slow, not lossy: the spurious timeouts of a loss-free run).
 */
static void repair_frag(struct ibmc__op *op, struct ibmc__child *c,
			int to, uint32_t f)
{
	uint32_t reach = op->me == op->root ? op->sent : op->top;

	ibmc__op_send_frag(op, to, f, 1);
	if (c && !c->backoff && reach >= op->nfrags)
		ibmc__op_send_frag(op, to, f, 1);
}

static void on_data(struct ibmc__op *op, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen, int is_mcast)
{
	uint32_t f = h->a;
	int64_t now = ibmc__op_now();
	int i;

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
	ibmc__model_take(op->comm->ctx);
	/* A repair this rank sends its children goes stamped with this
	 * arrival (model.h: loss recovery is not modeled). */
	if (op->t_model && !op->t_model[f])
		op->t_model[f] = ibmc__model_arrival(op->comm->ctx);
	if (plen)
		memcpy(op->buf + (size_t)f * op->fragsz, payload, plen);
	op->got[f >> 3] |= 1 << (f & 7);
	/* A repair of a fragment NACKed once: the NACK's round trip. */
	if (!is_mcast && op->t_nack[f] && op->n_nack[f] == 1 &&
	    now > op->t_nack[f])
		ibmc__rtt_sample(&op->comm->nack_rtt, now - op->t_nack[f]);
	if (op->t_avail)	/* repaired fragments give no delay sample */
		op->t_avail[f] = (h->flags & IBMC__F_RETX) ? -now : now;
	while (op->have < op->nfrags && held(op, op->have))
		op->have++;
	if (f + 1 > op->top)
		op->top = f + 1;
	if (op->have > op->top)
		op->top = op->have;
	progress_made(op);
	/* Children that asked for it while we lacked it get it now. */
	for (i = 0; i < op->tree.nchildren; i++) {
		struct ibmc__child *c = &op->kids[i];
		uint32_t d = f - c->want_lo;

		if (c->want && f >= c->want_lo && d < MASK_BITS &&
		    ((c->want >> d) & 1)) {
			c->want &= ~(1ULL << d);
			c->karn = 1;
			c->kick = now;
			op->comm->st.repairs++;
			repair_frag(op, c, c->rank, f);
		}
	}
	if (op->strat->forward)
		op->strat->forward(op, f);
	/* Fragments skipped below a fresh one: lost (or, rarely, late). */
	if (op->have < op->top)
		send_nack(op, now);
	update_cum(op);
}

static void on_ack(struct ibmc__op *op, const struct ibmc__hdr *h)
{
	struct ibmc__child *c = kid(op, (int)h->src);
	int64_t now = ibmc__op_now();
	int moved = 0;
	uint32_t old_cum;

	if (!c || h->a > op->nfrags || h->b > h->a)
		return;
	c->heard = 1;
	old_cum = c->cum;
	if (h->a > c->have) {
		c->have = h->a;
		c->mask = h->mask;
		moved = 1;
	} else if (h->a == c->have) {
		c->mask |= h->mask;
	}
	if (h->b > c->cum) {
		c->cum = h->b;
		c->cum_at[c->ncum_at % 8].cum = h->b;
		c->cum_at[c->ncum_at % 8].t_ns = ibmc__model_arrival(
			op->comm->ctx);
		c->ncum_at++;
		moved = 1;
	}
	if (h->flags & IBMC__F_MC) {
		c->mc = 1;
		op->child_mc = 1;
		if (moved)
			op->remcast_ok = 1;
	}
	if (c->cum > old_cum && op->t_avail) {
		int64_t t = op->t_avail[c->cum - 1];

		/* Karn: no sample after a resend or probe to c, nor for
		 * data this rank itself got late. */
		if (!c->karn && t > 0 && now > t) {
			int lvl = c->height < IBMC__RTT_LEVELS ? c->height :
				  IBMC__RTT_LEVELS - 1;

			ibmc__rtt_sample(ack_est(op, c->height), now - t);
			op->comm->ack_backoff[lvl] = 0;
		}
	}
	if (moved) {
		c->backoff = 0;
		c->karn = 0;
		progress_made(op);
	}
	if (op->me != op->root && c->have > op->have)
		request_repair(op, c);
	/* A repeated final ack: our FIN to it was lost (recovery, not
	 * modeled). */
	if (c->cum == op->nfrags && (c->fin_sent || op->fin)) {
		ibmc__model_quiet_on(op->comm->ctx);
		ibmc__op_send_ctl(op, c->rank, IBMC__K_FIN, 0, 0, 0, 0);
		ibmc__model_quiet_off(op->comm->ctx);
		c->fin_sent = 1;
	}
	update_cum(op);
}

/* A repair request from the parent (unmatched-ack repair upside down) or
 * a NACK from a child: send what we hold; a child's NACK for what we lack
 * is remembered and answered when the fragment arrives. */
static void on_req(struct ibmc__op *op, const struct ibmc__hdr *h)
{
	struct ibmc__child *c = kid(op, (int)h->src);
	int64_t now = ibmc__op_now();
	uint32_t i, f;
	int lacking = 0;

	if (c) {
		/* The second copy of a NACK (or a duplicate): answered. A
		 * NACK is repeated only after IBMC__RTO_MIN_US or more. */
		if (h->a == c->req_a && h->mask == c->req_mask &&
		    now - c->req_at < IBMC__RTO_MIN_US / 2)
			return;
		c->req_a = h->a;
		c->req_mask = h->mask;
		c->req_at = now;
		/* It is alive and repairing itself: its timer waits. */
		c->heard = 1;
		c->kick = now;
		if (h->b > c->have && h->b <= op->nfrags) {
			c->have = h->b;
			c->mask = 0;
		}
	}
	for (i = 0; i < MASK_BITS; i++) {
		if (!((h->mask >> i) & 1))
			continue;
		f = h->a + i;
		if (f >= op->nfrags)
			break;
		if (!held(op, f) || (op->me == op->root && f >= op->sent)) {
			if (c) {
				if (!c->want || f < c->want_lo ||
				    f - c->want_lo >= MASK_BITS) {
					c->want = 0;
					c->want_lo = f;
				}
				c->want |= 1ULL << (f - c->want_lo);
				lacking = 1;
			}
			continue;
		}
		op->comm->st.repairs++;
		if (c) {
			c->karn = 1;
			c->kick = now;
		}
		repair_frag(op, c, (int)h->src, f);
	}
	/* We lack them too: ask our own parent now, not after a timer. */
	if (lacking && op->me != op->root) {
		uint32_t top = h->a + 64 - (uint32_t)__builtin_clzll(h->mask);

		if (top > op->nfrags)
			top = op->nfrags;
		if (top > op->top)
			op->top = top;
		send_nack(op, now);
	}
}

static void on_fin(struct ibmc__op *op, const struct ibmc__hdr *h,
		   int is_mcast)
{
	int64_t now = ibmc__op_now();

	/* From the parent, or multicast by the root: either way the root
	 * held every acknowledgment, so every member holds the data. */
	if (op->fin || (!is_mcast && (int)h->src != op->tree.parent) ||
	    (is_mcast && (int)h->src != op->root))
		return;
	if (op->final_acks == 1 && now > op->final_ack)
		ibmc__rtt_sample(&op->comm->fin_rtt, now - op->final_ack);
	ibmc__model_take(op->comm->ctx);
	op->fin = is_mcast ? 2 : 1;
	progress_made(op);
}

void ibmc__op_input(struct ibmc__op *op, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen, int is_mcast)
{
	if (op->done)
		return;
	if (!op->known) {
		if (h->kind == IBMC__K_ACK && h->a > 0 &&
		    (int)h->src != op->root) {
			/* A child holds data we never saw (nor its shape). */
			ask_first_fragment(op, (int)h->src);
			return;
		}
		if (h->kind != IBMC__K_DATA)
			return;
		learn(op, h);
		if (op->done)
			return;
	} else if (h->kind == IBMC__K_DATA &&
		   (h->algo != op->algo || h->fragsz != op->fragsz ||
		    h->len != op->len || (int)h->root != op->root)) {
		op->comm->st.stale_dropped++;
		return;
	}
	if ((int)h->src == op->tree.parent && !is_mcast)
		op->parent_heard = ibmc__op_now();
	if ((int)h->src == op->tree.parent && op->linger_until)
		op->linger_until = ibmc__op_now() + silence_us(op);
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
		/* a: what the parent holds, or (multicast) what the root
		 * sent; below it, gaps are ours. The parent's probe also
		 * asks for an ack; the root's announcement does not. */
		if (is_mcast && (int)h->src != op->root)
			break;
		if (h->a > op->top && h->a <= op->nfrags)
			op->top = h->a;
		if (op->have < op->top)
			send_nack(op, ibmc__op_now());
		if (!is_mcast)
			op->ack_due = 1;
		break;
	case IBMC__K_FIN:
		on_fin(op, h, is_mcast);
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

/* When child c is late, or INT64_MAX while it owes nothing. A child whose
 * larger (slower) siblings already acknowledged is given less slack: the
 * data reached them, it most likely missed it. */
static int64_t child_deadline(const struct ibmc__op *op,
			      const struct ibmc__child *c, uint32_t limit)
{
	uint32_t pt = ack_point(op, limit);
	const struct ibmc__rtt *r;
	int64_t ref, rto;
	int i, ahead = 0;

	if (c->cum >= pt || !pt)
		return INT64_MAX;
	ref = op->t_avail[pt - 1];
	if (ref < 0)
		ref = -ref;
	if (c->kick > ref)
		ref = c->kick;
	rto = child_rto(op, c->height);
	r = ack_est(op, c->height);
	if (!c->backoff && r->srtt) {
		for (i = 0; i < op->tree.nchildren; i++)
			if (op->kids[i].height > c->height &&
			    op->kids[i].cum >= pt)
				ahead = 1;
		if (ahead && r->srtt + 2 * r->rttvar + IBMC__RTO_GRAIN_US < rto)
			rto = r->srtt + 2 * r->rttvar + IBMC__RTO_GRAIN_US;
	}
	/* The doubled timer is clamped too, as TCP bounds its backed-off
	 * RTO. rto alone may already be IBMC__RTO_MAX_US (a loaded host's
	 * measured delay times ack_backoff), and the give-up time
	 * (IBMCAST_BCAST_TIMEOUT_MS) counts from the last progress: once a
	 * child's answers moved nothing for four rounds (lost probes or
	 * acks, its own subtree still lagging) the next round came 16 s
	 * later, 31 s after the first, when everyone had given up; a window
	 * waiting for that child's ack stalled the whole broadcast. */
	return ref + ibmc__retry_wait(ibmc__rto_clamp(rto << c->backoff),
				      ref - op->last_progress * 1000);
}

static uint32_t op_limit(const struct ibmc__op *op)
{
	return op->me == op->root ? op->sent : op->have;
}

/*
 * A late child is first only probed: it NACKs its gaps (its own timers
 * already ask for what it knows it lacks) or acks, so a slow ack or a
 * repair under way costs 24 bytes, not data sent twice. Data goes at once
 * only to a child that acknowledged nothing yet in this broadcast (it may
 * not even know its shape: multicast reached nobody), and to any child
 * whose probe went unanswered.
 */
static void run_timers_now(struct ibmc__op *op, int64_t now);

/* What the timers send is recovery: no modeled cost (model.h). */
static void run_timers(struct ibmc__op *op, int64_t now)
{
	ibmc__model_quiet_on(op->comm->ctx);
	run_timers_now(op, now);
	ibmc__model_quiet_off(op->comm->ctx);
}

static void run_timers_now(struct ibmc__op *op, int64_t now)
{
	struct ibmc__child *due[64];
	uint32_t limit = op_limit(op);
	int i, ndue = 0;

	for (i = 0; i < op->tree.nchildren; i++) {
		struct ibmc__child *c = &op->kids[i];

		if (now < child_deadline(op, c, limit))
			continue;
		if (ibmc__live_absent(op->comm, c->rank, op->seq)) {
			/* Alive, not in this broadcast yet: what it lacks
			 * reaches it when it enters (live.h). */
			c->kick = now;
			if (c->backoff < MAX_BACKOFF)
				c->backoff++;
			continue;
		}
		op->comm->st.timeouts++;
		back_off(op, c->height);
		if (c->backoff < MAX_BACKOFF)
			c->backoff++;
		c->kick = now;
		c->karn = 1;
		if (c->heard && c->backoff == 1)
			ibmc__op_send_ctl(op, c->rank, IBMC__K_PROBE, limit,
					  0, 0, 0);
		else if (ndue < 64)
			due[ndue++] = c;
	}
	if (!ndue)
		return;
	if (op->me == op->root && op->strat->retransmit)
		op->strat->retransmit(op, due, ndue);
	for (i = 0; i < ndue; i++) {
		struct ibmc__child *c = due[i];

		if (!c)
			continue;
		if (c->have < limit && limit - c->have <= 4) {
			resend_to(op, c, limit);
		} else {
			/* Its acks are coalesced, so what it holds is not
			 * known: tell it how far we are (it NACKs its gaps)
			 * and resend the tail, a gap it cannot see. */
			ibmc__op_send_ctl(op, c->rank, IBMC__K_PROBE, limit,
					  0, 0, 0);
			if (c->have < limit && !kid_holds(c, limit - 1))
				ibmc__op_send_frag(op, c->rank, limit - 1, 1);
		}
	}
}

/* Acks are coalesced: one when the held or the subtree's prefix crosses a
 * multiple of ackint, at the end, when asked, and again while the FIN does
 * not come. Each goes twice: the window moves on acks only, so a lost one
 * holds the root (and at 5% loss some ack in a 32-rank tree is lost about
 * every quarter window) until the next ack or a timer; a copy is 36 bytes
 * per ackint fragments. */
static void send_ack(struct ibmc__op *op, int64_t now)
{
	int flags = (op->mc_seen || op->child_mc) ? IBMC__F_MC : 0;
	int final = op->cum == op->nfrags, n = 2, again, own;
	uint32_t k = op->ackint;

	if (!op->ack_due && op->have / k == op->acked_have / k &&
	    op->cum / k == op->acked_cum / k &&
	    (op->have < op->nfrags || op->acked_have == op->nfrags) &&
	    (!final || (op->acked_cum == op->nfrags &&
			(op->fin || now < op->ack_resend))))
		return;
	if (final && op->acked_cum != op->nfrags) {
		n = 2;
		op->final_ack = now;
	}
	/* Modeled time (model.h): asked for (a probe, a duplicate) or the
	 * final ack again while no FIN comes is recovery, which real-time
	 * timers drive: quiet. An ack only the children's acks made (the
	 * subtree's prefix moved, not what this rank holds) passes their
	 * progress on in zero modeled time, stamped when the last of them
	 * arrived: whether real time hands them in before this rank's own
	 * last fragment must not move its modeled return. */
	again = op->ack_due || (final && op->acked_cum == op->nfrags);
	own = op->have / k != op->acked_have / k ||
	      (op->have == op->nfrags && op->acked_have != op->nfrags);
	if (again)
		ibmc__model_quiet_on(op->comm->ctx);
	else if (!own)
		ibmc__model_resend_on(op->comm->ctx, cum_arrival(op, op->cum));
	while (n--)
		ibmc__op_send_ctl(op, op->tree.parent, IBMC__K_ACK, op->have,
				  op->cum, held_mask(op), flags);
	if (again)
		ibmc__model_quiet_off(op->comm->ctx);
	else if (!own)
		ibmc__model_resend_off(op->comm->ctx);
	if (final) {
		op->ack_resend = now + (fin_rto(op) << (op->final_acks < 6 ?
							op->final_acks : 6));
		op->final_acks++;
	}
	op->acked_have = op->have;
	op->acked_cum = op->cum;
	op->ack_due = 0;
}

/*
 * Root, multicast: after each burst, a small multicast probe announcing how
 * far it sent, so that a member that lost the burst's last fragments (a gap
 * no later fragment reveals) NACKs them at once instead of after its
 * parent's timer; twice after the last fragment, where no later burst
 * follows. Members that never got a fragment do not know the broadcast's
 * shape and ignore it: their parents' timers cover them.
 */
static void announce(struct ibmc__op *op)
{
	struct ibmc__hdr h;
	int i, n = op->sent == op->nfrags ? 2 : 1;

	if (op->nfrags < 2)
		return;
	fill_hdr(op, &h, IBMC__K_PROBE);
	h.a = op->sent;
	for (i = 0; i < n; i++)
		ibmc__mcast_pkt(op->comm, &h, NULL, 0);
}

/* After an early return the FIN only lets members free their state: it
 * is not modeled (no member waits for it to return), so that it never
 * queues in the model before another broadcast's data that real time
 * happened to handle later (model.h). */
static void fin_quiet(struct ibmc__op *op, int on)
{
	if (!op->returned)
		return;
	if (on)
		ibmc__model_quiet_on(op->comm->ctx);
	else
		ibmc__model_quiet_off(op->comm->ctx);
}

static void send_fins(struct ibmc__op *op)
{
	int i;

	fin_quiet(op, 1);
	for (i = 0; i < op->tree.nchildren; i++) {
		ibmc__op_send_ctl(op, op->kids[i].rank, IBMC__K_FIN, 0, 0, 0,
				  0);
		op->kids[i].fin_sent = 1;
	}
	fin_quiet(op, 0);
}

/* The root is done: one multicast FIN (three times, against loss) reaches every
 * member when multicast works; else it goes down the tree. */
static void root_fin(struct ibmc__op *op)
{
	struct ibmc__hdr h;
	int i;

	if (!op->strat->uses_group || !op->child_mc || op->comm->ghandle < 0) {
		send_fins(op);
		return;
	}
	fill_hdr(op, &h, IBMC__K_FIN);
	fin_quiet(op, 1);
	for (i = 0; i < 3; i++)
		ibmc__mcast_pkt(op->comm, &h, NULL, 0);
	fin_quiet(op, 0);
	for (i = 0; i < op->tree.nchildren; i++)
		op->kids[i].fin_sent = 1;
}

/* us: when a member that has not seen one fragment yet asks the root for
 * the first (ask_shape); INT64_MAX for the root. */
static int64_t ask_shape_at(const struct ibmc__op *op)
{
	int64_t quiet = silence_us(op), t = op->root_req_next;

	if (op->me == op->root || op->known)
		return INT64_MAX;
	if (op->last_progress * 1000 + quiet > t)
		t = op->last_progress * 1000 + quiet;
	return t;
}

/*
 * A member that heard nothing of the broadcast for a while asks the root
 * for its first fragment. Its parent may have left before it forwarded a
 * byte (it returned early, then crashed or exited): without the shape the
 * member knows neither its tree nor what it lacks, so ask_root() cannot
 * act, and nobody else will send to it. A root that has not sent that
 * fragment yet (it is late, the common case) ignores the request. The
 * interval doubles from one silence (at most a quarter of the timeout)
 * so that members waiting for a late root send a few packets, not a
 * stream.
 */
static void ask_shape(struct ibmc__op *op, int64_t now)
{
	if (now < ask_shape_at(op))
		return;
	ask_first_fragment(op, op->root);
	op->root_req_next = now + (silence_us(op) << op->shape_asks);
	if (op->shape_asks < 8)
		op->shape_asks++;
}

/* us: when ask_root() may ask next, for a member lacking data whose
 * parent is not the root; INT64_MAX else. */
static int64_t ask_root_at(const struct ibmc__op *op)
{
	int64_t quiet = silence_us(op), t = op->root_req_next;

	if (op->me == op->root || op->tree.parent == op->root || !op->got ||
	    op->have >= op->nfrags)
		return INT64_MAX;
	if (op->parent_heard + quiet > t)
		t = op->parent_heard + quiet;
	if (op->last_progress * 1000 + quiet > t)
		t = op->last_progress * 1000 + quiet;
	return t;
}

/*
 * A member whose parent fell silent while it still lacks data asks the
 * root. An inner member may leave once it holds every byte (early return,
 * then a crash or _exit): what its subtree lost on the way down, a gap or
 * a tail that no later fragment reveals, has no one left to repair it but
 * the root, which keeps the data until the whole tree acknowledged it and
 * so cannot have finished. A live parent answers NACKs and probes a lost
 * tail sooner, and while data still streams in nobody asks. The request
 * covers the first 64 missing fragments, as a NACK does; the root answers
 * it as one (on_req), and since the asker is not its child, none of its
 * timers moves.
 */
static void ask_root(struct ibmc__op *op, int64_t now)
{
	uint64_t want = 0;
	uint32_t i, f;

	if (now < ask_root_at(op))
		return;
	for (i = 0; i < MASK_BITS; i++) {
		f = op->have + i;
		if (f >= op->nfrags)
			break;
		if (!held(op, f))
			want |= 1ULL << i;
	}
	ibmc__op_send_ctl(op, op->root, IBMC__K_REQ, op->have, op->have, want,
			  0);
	op->root_req_next = now + nack_rto(op);
}

void ibmc__op_progress(struct ibmc__op *op, int64_t now)
{
	int timeout = op->comm->ctx->env.timeout_ms;

	if (op->done)
		return;
	if (op->known) {
		if (op->me == op->root) {
			if (op->strat->push(op) && op->strat->uses_group)
				announce(op);
		}
		run_timers(op, now);
		if (op->me != op->root &&
		    (op->fin == 2 || (op->fin && op->cum == op->nfrags))) {
			/* The root held every ack: all members hold the
			 * data. A FIN that came down the tree goes on down. */
			if (op->fin == 1)
				send_fins(op);
			finish(op, 0);
			return;
		}
		if (op->me != op->root) {
			send_nack(op, now);
			ask_root(op, now);
			send_ack(op, now);
		}
		if (op->me == op->root && op->cum == op->nfrags) {
			root_fin(op);
			finish(op, 0);
			return;
		}
		if (op->me != op->root && op->cum == op->nfrags) {
			/* Our subtree is complete. Wait for the FIN,
			 * re-sending the final ack; a parent silent for long
			 * has left: go anyway. */
			if (!op->linger_until)
				op->linger_until = now + silence_us(op);
			if (now >= op->linger_until) {
				send_fins(op);
				finish(op, 0);
			}
			return;
		}
	} else {
		ask_shape(op, now);
	}
	if (timeout && ibmc__now_ms() - op->last_progress > timeout)
		finish(op, -ETIMEDOUT);
}

int ibmc__op_waits_for(const struct ibmc__op *op, int *ranks, int max)
{
	int i, n = 0;

	if (op->done || max < 1)
		return 0;
	if (!op->known)
		return op->me == op->root ? 0 : (ranks[n++] = op->root, n);
	if (op->me != op->root && op->have < op->nfrags)
		ranks[n++] = op->root;
	for (i = 0; i < op->tree.nchildren && n < max; i++)
		if (op->kids[i].cum < op->nfrags)
			ranks[n++] = op->kids[i].rank;
	return n;
}

int64_t ibmc__op_next_deadline(const struct ibmc__op *op)
{
	uint32_t limit;
	int64_t d = INT64_MAX, t;
	int i;

	if (op->done)
		return d;
	if (!op->known)
		return ask_shape_at(op);
	limit = op_limit(op);
	for (i = 0; i < op->tree.nchildren; i++) {
		t = child_deadline(op, &op->kids[i], limit);
		if (t < d)
			d = t;
	}
	if (op->linger_until && op->linger_until < d)
		d = op->linger_until;
	if (op->ack_resend && op->cum == op->nfrags && op->ack_resend < d)
		d = op->ack_resend;
	if (op->me != op->root && op->have < op->top && op->nack_next < d)
		d = op->nack_next;
	t = ask_root_at(op);
	return t < d ? t : d;
}

const struct ibmc__bcast_strategy *ibmc__bcast_strategy(int algo)
{
	switch (algo) {
	case IBMC__A_MCAST:
		return &ibmc__bcast_mcast;
	case IBMC__A_BINOMIAL:
		return &ibmc__bcast_binomial;
	case IBMC__A_POSTAL:
		return &ibmc__bcast_postal;
	default:
		return NULL;
	}
}
