/* SPDX-License-Identifier: BSD-3-Clause */
/* Reliable short messages by receiver pulls (see msg.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/comm.h"
#include "libjob/live.h"
#include "libjob/msg.h"
#include "libjob/model.h"
#include "libjob/rtt.h"
#include "libjob/send.h"

#define PULL_MAX_US 20000	/* longest wait between pulls: they are small,
				 * and a slow pull stalls every later round */

int ibmc__msgs_init(struct ibmc__msgs *m, struct ibmc__task *t, int nslots)
{
	int i;

	memset(m, 0, sizeof(*m));
	m->task = t;
	m->nslots = nslots;
	if (!nslots)
		return 0;
	m->out = calloc((size_t)nslots, sizeof(*m->out));
	m->in = calloc((size_t)nslots, sizeof(*m->in));
	if (!m->out || !m->in) {
		ibmc__msgs_fini(m);
		return -ENOMEM;
	}
	for (i = 0; i < nslots; i++)
		m->out[i].peer = m->in[i].peer = -1;
	return 0;
}

void ibmc__msgs_fini(struct ibmc__msgs *m)
{
	int i;

	for (i = 0; m->out && i < m->nslots; i++)
		free(m->out[i].data);
	for (i = 0; m->in && i < m->nslots; i++)
		free(m->in[i].data);
	free(m->out);
	free(m->in);
	m->out = NULL;
	m->in = NULL;
	m->nslots = 0;
}

/* How long the n-th pull of a slot waits: the measured pull round trip
 * (else IBMCAST_BCAST_RTO_MS), doubling, at most PULL_MAX_US; longer
 * once the slot has been waited for long (ibmc__retry_wait). */
static int64_t pull_wait(const struct ibmc_comm *c, int n, int64_t waited)
{
	int64_t w = ibmc__rtt_rto(&c->msg_rtt,
				  (int64_t)c->ctx->env.rto_ms * 1000)
		    << (n < 3 ? n : 3);

	return ibmc__retry_wait(w < PULL_MAX_US ? w : PULL_MAX_US, waited);
}

void ibmc__msgs_expect(struct ibmc__msgs *m, int slot, int peer)
{
	if (slot >= 0 && slot < m->nslots)
		m->in[slot].peer = peer;
}

void ibmc__msgs_wait(struct ibmc__msgs *m, int slot, int64_t now)
{
	struct ibmc__msg_in *in;
	const struct ibmc_comm *c = m->task->comm;

	if (slot < 0 || slot >= m->nslots)
		return;
	in = &m->in[slot];
	if (in->got || in->wait_since)
		return;
	in->wait_since = now;
	in->next_pull = now + pull_wait(c, 0, 0);
}

int ibmc__msgs_got(const struct ibmc__msgs *m, int slot)
{
	return slot >= 0 && slot < m->nslots && m->in[slot].got;
}

static void fill_hdr(const struct ibmc__msgs *m, struct ibmc__hdr *h,
		     int kind, int slot)
{
	const struct ibmc__task *t = m->task;

	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->coll = (uint8_t)t->coll;
	h->comm_id = t->comm->id;
	h->version = t->comm->version;
	h->seq = t->seq;
	h->src = (uint32_t)t->comm->rank;
	h->a = (uint32_t)slot;
}

static int send_out(struct ibmc__msgs *m, int slot, int retx)
{
	struct ibmc__msg_out *o = &m->out[slot];
	struct ibmc_context *ctx = m->task->comm->ctx;
	struct ibmc__hdr h;
	int rc;

	fill_hdr(m, &h, IBMC__K_MSG, slot);
	h.b = o->word;
	h.flags = retx ? IBMC__F_RETX : 0;
	if (!retx) {
		rc = ibmc__send_pkt(m->task->comm, o->peer, &h, o->data,
				    o->len);
		o->t_model = ibmc__model_clock(ctx);
		return rc;
	}
	/* loss recovery: arrives in the model as the first send would */
	ibmc__model_resend_on(ctx, o->t_model);
	rc = ibmc__send_pkt(m->task->comm, o->peer, &h, o->data, o->len);
	ibmc__model_resend_off(ctx);
	return rc;
}

int ibmc__msgs_send(struct ibmc__msgs *m, int slot, int peer, uint32_t word,
		    const void *data, size_t len)
{
	struct ibmc__msg_out *o;

	if (slot < 0 || slot >= m->nslots)
		return -EINVAL;
	o = &m->out[slot];
	o->peer = peer;
	o->word = word;
	if (len) {
		o->data = malloc(len);
		if (!o->data)
			return -ENOMEM;
		memcpy(o->data, data, len);
		o->len = len;
	}
	o->sent = 1;
	/* Lost or not, the slot is sent: a pull brings it again. */
	send_out(m, slot, 0);
	return 0;
}

void ibmc__msgs_consume(struct ibmc__msgs *m, int first, int n)
{
	uint64_t arrival[64], *a = arrival;
	size_t k = 0;
	int i;

	if (first < 0 || n <= 0 || first + n > m->nslots)
		return;
	if ((size_t)n > sizeof(arrival) / sizeof(arrival[0])) {
		a = malloc((size_t)n * sizeof(*a));
		if (!a)
			return;		/* unmodeled rather than wrong */
	}
	for (i = first; i < first + n; i++) {
		struct ibmc__msg_in *in = &m->in[i];

		if (in->got && !in->charged && in->peer >= 0) {
			in->charged = 1;
			a[k++] = in->model_ns;
		}
	}
	ibmc__model_charge(m->task->comm->ctx, a, k);
	if (a != arrival)
		free(a);
}

int ibmc__msgs_input(struct ibmc__msgs *m, const struct ibmc__hdr *h,
		     const unsigned char *payload, size_t plen)
{
	struct ibmc_comm *c = m->task->comm;
	struct ibmc__msg_in *in;
	int64_t now;

	if (h->a >= (uint32_t)m->nslots)
		return 0;
	if (h->kind == IBMC__K_PULL) {
		struct ibmc__msg_out *o = &m->out[h->a];

		if (o->sent && o->peer == (int)h->src)
			send_out(m, (int)h->a, 1);
		return 0;
	}
	if (h->kind != IBMC__K_MSG)
		return 0;
	in = &m->in[h->a];
	if (in->got || in->peer != (int)h->src)
		return 0;
	if (plen) {
		in->data = malloc(plen);
		if (!in->data)
			return 0;	/* as if lost: it is pulled again */
		memcpy(in->data, payload, plen);
		in->len = plen;
	}
	/* charged when its round is consumed (ibmc__msgs_consume) */
	in->model_ns = ibmc__model_defer(c->ctx);
	in->got = 1;
	in->word = h->b;
	now = ibmc__task_now();
	/* An answer to our only pull: its round trip (a first send that
	 * was merely late says nothing about the network). */
	if ((h->flags & IBMC__F_RETX) && in->npull == 1 &&
	    now > in->first_pull)
		ibmc__rtt_sample(&c->msg_rtt, now - in->first_pull);
	return 1;
}

int ibmc__msgs_waits_for(const struct ibmc__msgs *m, int *ranks, int max)
{
	int i, n = 0;

	for (i = 0; i < m->nslots && n < max; i++)
		if (!m->in[i].got && m->in[i].wait_since && m->in[i].peer >= 0)
			ranks[n++] = m->in[i].peer;
	return n;
}

int64_t ibmc__msgs_progress(struct ibmc__msgs *m, int64_t now)
{
	struct ibmc_comm *c = m->task->comm;
	int64_t next = INT64_MAX;
	struct ibmc__hdr h;
	int i;

	for (i = 0; i < m->nslots; i++) {
		struct ibmc__msg_in *in = &m->in[i];

		if (in->got || !in->wait_since || in->peer < 0)
			continue;
		/* A sender alive but not in this collective yet has
		 * nothing to send again: it sends the slot when it enters
		 * (live.h). Look again a pull period later. */
		if (now >= in->next_pull &&
		    ibmc__live_absent(c, in->peer, m->task->seq)) {
			in->next_pull = now + ibmc__retry_wait(PULL_MAX_US,
							now - in->wait_since);
		} else if (now >= in->next_pull) {
			fill_hdr(m, &h, IBMC__K_PULL, i);
			ibmc__send_pkt(c, in->peer, &h, NULL, 0);
			c->st.pulls++;
			if (!in->npull)
				in->first_pull = now;
			if (in->npull < 16)
				in->npull++;
			in->next_pull = now + pull_wait(c, in->npull,
							now - in->wait_since);
		}
		if (in->next_pull < next)
			next = in->next_pull;
	}
	return next;
}
