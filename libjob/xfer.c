/* SPDX-License-Identifier: BSD-3-Clause */
/* Reliable point-to-point transfers inside a collective (see xfer.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "libjob/comm.h"
#include "libjob/live.h"
#include "libjob/model.h"
#include "libjob/rtt.h"
#include "libjob/send.h"
#include "libjob/xfer.h"

#define MASK_BITS 64
#define MAX_BACKOFF 6
#define TAG_ID(t) ((t) & 0xffffu)
/* Bounds on datagrams kept for a receiver not there yet, per list (per
 * task): beyond them one is dropped and its sender sends it again. */
#define KEPT_MAX 1024
#define KEPT_MAX_BYTES (8u << 20)

struct ibmc__xkept {
	struct ibmc__xkept *next;
	struct ibmc__hdr h;
	uint64_t model_ns;	/* its modeled arrival */
	size_t plen;
	unsigned char payload[];
};

int ibmc__xfers_init(struct ibmc__xfers *xs, struct ibmc__task *t, int n)
{
	int i;

	memset(xs, 0, sizeof(*xs));
	xs->task = t;
	xs->progress_ms = ibmc__now_ms();
	xs->next = INT64_MAX;
	if (!n)
		return 0;
	xs->x = calloc((size_t)n, sizeof(*xs->x));
	if (!xs->x)
		return -ENOMEM;
	xs->n = n;
	for (i = 0; i < n; i++)
		xs->x[i].peer = -1;
	return 0;
}

void ibmc__xfers_fini(struct ibmc__xfers *xs)
{
	int i;

	ibmc__xkept_free(&xs->kept);

	for (i = 0; xs->x && i < xs->n; i++) {
		free(xs->x[i].got);
		free(xs->x[i].t_model);
		free(xs->x[i].scratch);
	}
	free(xs->x);
	xs->x = NULL;
	xs->n = 0;
}

static void fill(const struct ibmc__xfers *xs, struct ibmc__hdr *h, int kind,
		 uint32_t tag)
{
	const struct ibmc__task *t = xs->task;

	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->coll = (uint8_t)t->coll;
	h->comm_id = t->comm->id;
	h->version = t->comm->version;
	h->seq = t->seq;
	h->src = (uint32_t)t->comm->rank;
	h->b = tag;
}

void ibmc__xfers_stop_all(struct ibmc__xfers *xs, const int *group, int n,
			  uint32_t tag)
{
	xs->stop_all = 1;
	xs->stop_group = group;
	xs->stop_n = n;
	xs->stop_tag = tag & ~TAG_ID(~0u);
}

/* The members disagree (err: -EMSGSIZE or -EINVAL): remember it (every
 * send from now on carries it) and, with ibmc__xfers_stop_all, tell the
 * others and stop. Notices are error handling, not modeled. */
static void disagree(struct ibmc__xfers *xs, int err)
{
	struct ibmc_comm *c = xs->task->comm;
	struct ibmc__hdr h;
	int i, k, r;

	if (!xs->error)
		xs->error = err;
	if (!xs->stop_all || xs->stopped)
		return;
	xs->stopped = 1;
	fill(xs, &h, IBMC__K_XSTOP, 0);
	h.flags = xs->error == -EMSGSIZE ? IBMC__F_ESIZE : IBMC__F_EINVAL;
	ibmc__model_quiet_on(c->ctx);
	for (k = 0; k < 2; k++)
		for (i = 0; i < xs->stop_n; i++) {
			r = xs->stop_group ? xs->stop_group[i] : i;
			if (r != c->rank)
				ibmc__send_pkt(c, r, &h, NULL, 0);
		}
	ibmc__model_quiet_off(c->ctx);
}

static size_t frag_len(const struct ibmc__xfer *x, uint32_t f)
{
	size_t off = (size_t)f * x->fragsz;

	if (off >= x->len)
		return 0;
	return x->len - off < x->fragsz ? x->len - off : x->fragsz;
}

static void send_frag(struct ibmc__xfers *xs, struct ibmc__xfer *x,
		      uint32_t f, int retx)
{
	struct ibmc_context *ctx = xs->task->comm->ctx;
	struct ibmc__hdr h;

	fill(xs, &h, IBMC__K_XDATA, x->tag);
	h.a = f;
	h.len = (uint32_t)x->len;
	h.flags = retx ? IBMC__F_RETX : 0;
	if (xs->error)
		h.flags |= xs->error == -EMSGSIZE ? IBMC__F_ESIZE :
						     IBMC__F_EINVAL;
	if (retx) {
		xs->task->comm->st.retransmits++;
		/* stamped as the first send: a fragment sent before the
		 * peer posted its receive arrives in the model as if it
		 * had been (model.h) */
		ibmc__model_resend_on(ctx, x->t_model ? x->t_model[f] : 0);
	}
	ibmc__send_pkt(xs->task->comm, x->peer, &h,
		       x->buf + (size_t)f * x->fragsz, frag_len(x, f));
	if (retx)
		ibmc__model_resend_off(ctx);
	else if (x->t_model && !x->t_model[f])
		x->t_model[f] = ibmc__model_clock(ctx);
}

/* The fragments the window allows. */
static void send_window(struct ibmc__xfers *xs, struct ibmc__xfer *x)
{
	uint32_t w = (uint32_t)xs->task->comm->ctx->env.window;

	while (x->next < x->nfrags && x->next < x->acked + w)
		send_frag(xs, x, x->next++, 0);
}

static void send_ack(struct ibmc__xfers *xs, struct ibmc__xfer *x)
{
	struct ibmc__hdr h;
	uint64_t m = 0;
	uint32_t i, f;

	for (i = 0; i < MASK_BITS; i++) {
		f = x->have + 1 + i;
		if (f >= x->top)
			break;
		if ((x->got[f >> 3] >> (f & 7)) & 1)
			m |= 1ULL << i;
	}
	fill(xs, &h, IBMC__K_XACK, x->tag);
	h.a = x->have;
	h.mask = m;
	/* reliability, not modeled (xfer.h) */
	ibmc__model_quiet_on(xs->task->comm->ctx);
	ibmc__send_pkt(xs->task->comm, x->peer, &h, NULL, 0);
	ibmc__model_quiet_off(xs->task->comm->ctx);
	x->acked_have = x->have;
}

static void on_data(struct ibmc__xfers *xs, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen);

void ibmc__xkept_add(struct ibmc__xkept_list *l, struct ibmc_context *ctx,
		     const struct ibmc__hdr *h, const unsigned char *payload,
		     size_t plen)
{
	struct ibmc__xkept *k, **pp;

	if (l->n >= KEPT_MAX || l->bytes + plen > KEPT_MAX_BYTES)
		return;
	k = malloc(sizeof(*k) + plen);
	if (!k)
		return;
	k->next = NULL;
	k->h = *h;
	k->model_ns = ibmc__model_arrival(ctx);
	k->plen = plen;
	if (plen)
		memcpy(k->payload, payload, plen);
	for (pp = &l->head; *pp; pp = &(*pp)->next)
		;
	*pp = k;
	l->n++;
	l->bytes += plen;
}

void ibmc__xkept_replay(struct ibmc__xkept_list *l, struct ibmc_context *ctx,
			int (*match)(const struct ibmc__hdr *h,
				     const void *arg),
			void (*fn)(void *arg, const struct ibmc__hdr *h,
				   const unsigned char *payload, size_t plen),
			void *arg)
{
	struct ibmc__xkept **pp = &l->head, *k, *taken = NULL, **tail = &taken;
	struct ibmc__model_pkt now;

	while ((k = *pp)) {
		if (match && !match(&k->h, arg)) {
			pp = &k->next;
			continue;
		}
		*pp = k->next;
		l->n--;
		l->bytes -= k->plen;
		k->next = NULL;
		*tail = k;
		tail = &k->next;
	}
	if (!taken)
		return;
	ibmc__model_save(ctx, &now);
	while ((k = taken)) {
		taken = k->next;
		ibmc__model_input(ctx, k->model_ns);
		fn(arg, &k->h, k->payload, k->plen);
		free(k);
	}
	ibmc__model_restore(ctx, &now);
}

void ibmc__xkept_free(struct ibmc__xkept_list *l)
{
	struct ibmc__xkept *k;

	while ((k = l->head)) {
		l->head = k->next;
		free(k);
	}
	l->n = 0;
	l->bytes = 0;
}

struct kept_for {
	struct ibmc__xfers *xs;
	const struct ibmc__xfer *x;
};

static int kept_match(const struct ibmc__hdr *h, const void *arg)
{
	const struct kept_for *f = arg;

	return (int)h->src == f->x->peer && TAG_ID(h->b) == TAG_ID(f->x->tag);
}

static void kept_data(void *arg, const struct ibmc__hdr *h,
		      const unsigned char *payload, size_t plen)
{
	struct kept_for *f = arg;

	on_data(f->xs, h, payload, plen);
}

/* Receive x was just posted: take in what was kept for it. */
static void take_kept(struct ibmc__xfers *xs, const struct ibmc__xfer *x)
{
	struct kept_for f = { xs, x };

	ibmc__xkept_replay(&xs->kept, xs->task->comm->ctx, kept_match,
			   kept_data, &f);
}

int ibmc__xfer_post(struct ibmc__xfers *xs, int i, int send, int peer,
		    uint32_t tag, void *buf, size_t len)
{
	struct ibmc_comm *c = xs->task->comm;
	struct ibmc__xfer *x;
	size_t mtu = c->ctx->mtu;

	if (i < 0 || i >= xs->n || len > UINT32_MAX)
		return -EINVAL;
	x = &xs->x[i];
	x->peer = peer;
	x->send = send;
	x->tag = tag;
	x->buf = buf;
	x->len = len;
	x->fragsz = (uint32_t)(mtu - IBMC__WIRE_XDATA);
	x->nfrags = len ? (uint32_t)((len + x->fragsz - 1) / x->fragsz) : 1;
	x->t_model = calloc(x->nfrags, sizeof(*x->t_model));
	if (!x->t_model)
		return -ENOMEM;
	if (!send) {
		x->got = calloc((size_t)x->nfrags / 8 + 1, 1);
		if (!x->got)
			return -ENOMEM;
	}
	x->t_progress = x->t_moved = ibmc__task_now();
	x->posted = 1;
	/* At once: the send follows in modeled time what made the
	 * algorithm post it, not whatever else one progress pass takes. */
	if (send) {
		ibmc__count_message(c, peer);
		send_window(xs, x);
	} else if (xs->kept.head)
		take_kept(xs, x);
	return 0;
}

static void consume(struct ibmc__xfers *xs, struct ibmc__xfer *x)
{
	if (x->send || x->charged)
		return;
	x->charged = 1;
	ibmc__model_charge(xs->task->comm->ctx, x->t_model, x->nfrags);
}

int ibmc__xfer_done(struct ibmc__xfers *xs, int i)
{
	if (i < 0 || i >= xs->n || !xs->x[i].done)
		return 0;
	consume(xs, &xs->x[i]);
	return 1;
}

static struct ibmc__xfer *find(struct ibmc__xfers *xs, int send, int peer,
			       uint32_t tag)
{
	int i;

	for (i = 0; i < xs->n; i++) {
		struct ibmc__xfer *x = &xs->x[i];

		if (x->posted && x->send == send && x->peer == peer &&
		    TAG_ID(x->tag) == TAG_ID(tag))
			return x;
	}
	return NULL;
}

/*
 * The sender disagrees on the length or the tag (the datatype or the
 * operation): an erroneous program, which fails with an error, never a
 * timeout. The receive takes the sender's shape, so that the sender
 * completes and every later send carries the error on (only members that
 * see an error may stop, and in an allreduce or allgather every member's
 * result depends on every member's data). Before its first fragment only:
 * 0, or -1 to drop the datagram.
 */
static int adopt(struct ibmc__xfer *x, const struct ibmc__hdr *h)
{
	uint32_t nfrags = h->len ? (h->len + x->fragsz - 1) / x->fragsz : 1;
	unsigned char *scratch, *got;
	uint64_t *t_model;

	if (x->top || x->done || x->scratch)
		return -1;
	scratch = malloc(h->len ? h->len : 1);
	got = calloc((size_t)nfrags / 8 + 1, 1);
	t_model = calloc(nfrags, sizeof(*t_model));
	if (!scratch || !got || !t_model) {
		free(scratch);
		free(got);
		free(t_model);
		return -1;	/* the sender tries again */
	}
	free(x->got);
	free(x->t_model);
	x->got = got;
	x->t_model = t_model;
	x->scratch = scratch;
	x->user = x->buf;
	x->user_len = x->len;
	x->buf = scratch;
	x->len = h->len;
	x->nfrags = nfrags;
	x->tag = h->b;
	return 0;
}

static void on_data(struct ibmc__xfers *xs, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen)
{
	struct ibmc__xfer *x = find(xs, 0, (int)h->src, h->b);
	uint32_t f = h->a, other = (h->b ^ xs->stop_tag) & ~TAG_ID(~0u);

	if (xs->stop_all && other) {
		/* Another algorithm, datatype or operation: its rounds need
		 * not be ours (no transfer may ever match it). */
		if (!xs->stopped)
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: rank %d: communicator %08x: rank %u sends tag %08x where this rank's tags are %08x: the ranks' arguments disagree",
				 xs->task->comm->rank, xs->task->comm->id,
				 h->src, h->b, xs->stop_tag);
		disagree(xs, other & IBMC__XTAG_ALGO_MASK ? -EMSGSIZE :
			     -EINVAL);
		return;
	}
	if (!x) {
		/* not posted yet */
		ibmc__xkept_add(&xs->kept, xs->task->comm->ctx, h, payload,
				plen);
		return;
	}
	if (h->flags & (IBMC__F_ESIZE | IBMC__F_EINVAL))
		disagree(xs, h->flags & IBMC__F_ESIZE ? -EMSGSIZE : -EINVAL);
	if (x->tag != h->b || h->len != x->len) {
		if (!x->scratch)
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: rank %d: communicator %08x: rank %u sends %u bytes (tag %08x) where this rank expects %zu (tag %08x): the ranks' arguments disagree",
				 xs->task->comm->rank, xs->task->comm->id,
				 h->src, h->len, h->b, x->len, x->tag);
		disagree(xs, h->len != x->len ||
			     ((h->b ^ x->tag) & IBMC__XTAG_ALGO_MASK) ?
			     -EMSGSIZE : -EINVAL);
		if (adopt(x, h))
			return;
	}
	if (x->done) {
		/* our final ack was lost: recovery, not modeled */
		ibmc__model_quiet_on(xs->task->comm->ctx);
		send_ack(xs, x);
		ibmc__model_quiet_off(xs->task->comm->ctx);
		return;
	}
	if (f >= x->nfrags || plen != frag_len(x, f))
		return;
	if ((x->got[f >> 3] >> (f & 7)) & 1) {
		xs->task->comm->st.duplicates++;
		/* A resend: the sender did not hear our last ack. */
		if (h->flags & IBMC__F_RETX) {
			ibmc__model_quiet_on(xs->task->comm->ctx);
			send_ack(xs, x);
			ibmc__model_quiet_off(xs->task->comm->ctx);
		}
		return;
	}
	/* charged when the algorithm consumes the receive */
	x->t_model[f] = ibmc__model_defer(xs->task->comm->ctx);
	if (plen)
		memcpy(x->buf + (size_t)f * x->fragsz, payload, plen);
	x->got[f >> 3] |= 1 << (f & 7);
	xs->progress_ms = ibmc__now_ms();
	if (f + 1 > x->top)
		x->top = f + 1;
	while (x->have < x->nfrags && ((x->got[x->have >> 3] >>
					 (x->have & 7)) & 1))
		x->have++;
	if (x->have == x->nfrags) {
		x->done = 1;
		if (x->user) {
			/* what fits of the sender's data (adopt) */
			memcpy(x->user, x->scratch, x->user_len < x->len ?
			       x->user_len : x->len);
			x->user = NULL;
		}
		send_ack(xs, x);
		send_ack(xs, x);
		return;
	}
	/* A gap below a fresh fragment: report it now. */
	if (x->have < f || x->have - x->acked_have >= 16)
		send_ack(xs, x);
}

static void on_ack(struct ibmc__xfers *xs, const struct ibmc__hdr *h)
{
	struct ibmc__xfer *x = find(xs, 1, (int)h->src, h->b);
	int64_t now = ibmc__task_now();
	uint32_t i, f;

	if (!x || x->done || h->a > x->nfrags)
		return;
	if (h->a > x->acked || (h->a == x->acked && (h->mask & ~x->amask))) {
		x->t_progress = x->t_moved = now;
		x->backoff = 0;
		xs->progress_ms = ibmc__now_ms();
	}
	if (h->a >= x->acked) {
		x->amask = h->a > x->acked ? h->mask : x->amask | h->mask;
		x->acked = h->a;
	}
	if (x->acked == x->nfrags) {
		x->done = 1;
		return;
	}
	/* Fragments below the highest it holds are missing: resend them,
	 * once per half round trip. */
	if (h->mask && now - x->t_resend >= IBMC__RTO_MIN_US / 2) {
		uint32_t hi = x->acked + 64 - (uint32_t)__builtin_clzll(h->mask);

		for (f = x->acked; f < hi && f < x->next; f++) {
			i = f - x->acked;
			if (i && ((x->amask >> (i - 1)) & 1))
				continue;
			send_frag(xs, x, f, 1);
		}
		x->t_resend = now;
	}
}

void ibmc__xfers_input(struct ibmc__xfers *xs, const struct ibmc__hdr *h,
		       const unsigned char *payload, size_t plen)
{
	if (h->kind == IBMC__K_XDATA)
		on_data(xs, h, payload, plen);
	else if (h->kind == IBMC__K_XACK)
		on_ack(xs, h);
	else if (h->kind == IBMC__K_XSTOP && xs->stop_all)
		disagree(xs, h->flags & IBMC__F_ESIZE ? -EMSGSIZE : -EINVAL);
}

int64_t ibmc__xfers_progress(struct ibmc__xfers *xs, int64_t now)
{
	struct ibmc_comm *c = xs->task->comm;
	int64_t next = INT64_MAX, rto, due;
	int i;

	rto = ibmc__rtt_rto(&c->msg_rtt, (int64_t)c->ctx->env.rto_ms * 1000);
	for (i = 0; i < xs->n; i++) {
		struct ibmc__xfer *x = &xs->x[i];
		uint32_t f;

		if (!x->posted || x->done || !x->send)
			continue;
		send_window(xs, x);
		due = x->t_progress + ibmc__retry_wait(rto << x->backoff,
						       x->t_progress - x->t_moved);
		if (now >= due && ibmc__live_absent(c, x->peer, xs->task->seq)) {
			/* Alive, not in this collective yet: it takes what
			 * it is sent when it enters (live.h). */
			x->t_progress = now;
			due = now + ibmc__retry_wait(rto << x->backoff,
						     now - x->t_moved);
		} else if (now >= due) {
			/* Nothing heard: the first unacknowledged few. */
			for (f = x->acked; f < x->next && f < x->acked + 4; f++)
				send_frag(xs, x, f, 1);
			c->st.timeouts++;
			if (x->backoff < MAX_BACKOFF)
				x->backoff++;
			x->t_progress = now;
			due = now + ibmc__retry_wait(rto << x->backoff,
						     now - x->t_moved);
		}
		if (due < next)
			next = due;
	}
	xs->next = next;
	return next;
}

int ibmc__xfers_waits_for(const struct ibmc__xfers *xs, int *ranks, int max)
{
	int i, n = 0;

	for (i = 0; i < xs->n && n < max; i++)
		if (xs->x[i].posted && !xs->x[i].done && xs->x[i].peer >= 0)
			ranks[n++] = xs->x[i].peer;
	return n;
}

int ibmc__xfers_task_waits_for(const struct ibmc__task *t, int *ranks,
			       int max)
{
	return ibmc__xfers_waits_for(t->priv, ranks, max);
}

int ibmc__xfers_all_done(struct ibmc__xfers *xs)
{
	int i;

	for (i = 0; i < xs->n; i++)
		if (xs->x[i].posted && !xs->x[i].done)
			return 0;
	for (i = 0; i < xs->n; i++)
		if (xs->x[i].posted)
			consume(xs, &xs->x[i]);
	return 1;
}

int ibmc__xfers_check(const struct ibmc__xfers *xs)
{
	int timeout = xs->task->comm->ctx->env.timeout_ms;

	if (xs->error)
		return xs->error;
	if (timeout && ibmc__now_ms() - xs->progress_ms > timeout)
		return -ETIMEDOUT;
	return 0;
}

int ibmc__xfers_result(struct ibmc__xfers *xs, int finished)
{
	int timeout = xs->task->comm->ctx->env.timeout_ms;

	if (xs->stopped)
		return xs->error;
	if (finished && ibmc__xfers_all_done(xs))
		return xs->error;
	/* A peer that ran another shape of the call (auto chose another
	 * algorithm for another length) may never answer: the disagreement,
	 * when this rank saw it, says more than the timeout. */
	if (timeout && ibmc__now_ms() - xs->progress_ms > timeout)
		return xs->error ? xs->error : -ETIMEDOUT;
	return IBMC_INPROGRESS;
}

void ibmc__xfers_task_input(struct ibmc__task *t, const struct ibmc__hdr *h,
			    const unsigned char *payload, size_t plen,
			    int is_mcast)
{
	(void)is_mcast;
	ibmc__xfers_input(t->priv, h, payload, plen);
}

int64_t ibmc__xfers_task_deadline(const struct ibmc__task *t)
{
	const struct ibmc__xfers *xs = t->priv;

	return xs->next;
}
