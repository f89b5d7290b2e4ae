/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The n-way dissemination barrier (seed 004): in round r rank p notifies
 * (p + i (n+1)^r) mod P and waits for (p - i (n+1)^r) mod P, i = 1..n,
 * for ceil(log_{n+1} P) rounds (log base n + 1: the paper's round formula
 * is wrong for n = 1); a peer that would be p itself is skipped. After
 * round r a rank has heard, directly or not, from the (n+1)^(r+1) - 1
 * ranks before it, so after the last it knows every rank entered. The n
 * messages of a round are in flight at once, which is the point: the
 * network carries them in parallel. Loss is repaired by pulls (msg.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "libjob/coll/barrier.h"
#include "libjob/comm.h"
#include "libjob/msg.h"

struct nway {
	struct ibmc__msgs m;
	int n, rounds, round;
	int64_t *stride;	/* (n+1)^r per round */
	int64_t next;		/* us: next pull */
	int64_t last_progress;	/* ms */
};

int ibmc__nway_rounds(int p, int n)
{
	int64_t s = 1;
	int r = 0;

	while (s < p) {
		s *= n + 1;
		r++;
	}
	return r;
}

static int slot_of(const struct nway *w, int r, int i)
{
	return r * w->n + i - 1;
}

/* The offset of peer i in round r, 0 when it is the rank itself. */
static int offset(const struct nway *w, int size, int r, int i)
{
	return (int)((i * w->stride[r]) % size);
}

static void send_round(struct ibmc__task *t, struct nway *w, int r)
{
	int i, off, me = t->comm->rank, size = t->comm->size;

	for (i = 1; i <= w->n; i++) {
		off = offset(w, size, r, i);
		if (off)
			ibmc__msgs_send(&w->m, slot_of(w, r, i),
					(me + off) % size, 0, NULL, 0);
	}
}

static int start(struct ibmc__task *t)
{
	struct ibmc_comm *c = t->comm;
	struct nway *w = calloc(1, sizeof(*w));
	int r, i, off, rc;

	if (!w)
		return -ENOMEM;
	t->priv = w;
	w->n = t->args.param;
	w->rounds = ibmc__nway_rounds(c->size, w->n);
	w->next = INT64_MAX;
	w->last_progress = ibmc__now_ms();
	w->stride = calloc((size_t)w->rounds + 1, sizeof(*w->stride));
	if (!w->stride)
		return -ENOMEM;
	for (r = 0; r < w->rounds; r++)
		w->stride[r] = r ? w->stride[r - 1] * (w->n + 1) : 1;
	rc = ibmc__msgs_init(&w->m, t, w->rounds * w->n);
	if (rc)
		return rc;
	for (r = 0; r < w->rounds; r++)
		for (i = 1; i <= w->n; i++) {
			off = offset(w, c->size, r, i);
			if (off)
				ibmc__msgs_expect(&w->m, slot_of(w, r, i),
						  (c->rank - off + c->size) %
						  c->size);
		}
	if (w->rounds)
		send_round(t, w, 0);
	return 0;
}

/* Round r complete? Starts the pull timers of what it still waits for. */
static int round_done(struct ibmc__task *t, struct nway *w, int r,
		      int64_t now)
{
	int i, slot, done = 1;

	for (i = 1; i <= w->n; i++) {
		slot = slot_of(w, r, i);
		if (!offset(w, t->comm->size, r, i) ||
		    ibmc__msgs_got(&w->m, slot))
			continue;
		ibmc__msgs_wait(&w->m, slot, now);
		done = 0;
	}
	/* Consumed: its messages are charged in modeled-arrival order,
	 * before the next round's sends, however real time brought them. */
	if (done)
		ibmc__msgs_consume(&w->m, slot_of(w, r, 1), w->n);
	return done;
}

static int progress(struct ibmc__task *t, int64_t now)
{
	struct nway *w = t->priv;
	int timeout = t->comm->ctx->env.timeout_ms;

	while (w->round < w->rounds && round_done(t, w, w->round, now)) {
		w->round++;
		w->last_progress = ibmc__now_ms();
		if (w->round < w->rounds)
			send_round(t, w, w->round);
	}
	if (w->round == w->rounds)
		return 0;
	w->next = ibmc__msgs_progress(&w->m, now);
	if (timeout && ibmc__now_ms() - w->last_progress > timeout)
		return -ETIMEDOUT;
	return IBMC_INPROGRESS;
}

static void input(struct ibmc__task *t, const struct ibmc__hdr *h,
		  const unsigned char *payload, size_t plen, int is_mcast)
{
	struct nway *w = t->priv;

	(void)is_mcast;
	ibmc__msgs_input(&w->m, h, payload, plen);
}

static int64_t deadline(const struct ibmc__task *t)
{
	const struct nway *w = t->priv;

	return w->next;
}

static void complete(struct ibmc__task *t, int rc)
{
	if (!rc)
		t->comm->st.barriers++;
	t->comm->last_algo[IBMC__C_BARRIER] = IBMC__BA_NWAY;
	t->comm->last_param[IBMC__C_BARRIER] = t->args.param;
}

/* Completed: a peer that missed our message of some round pulls it. */
static void late(struct ibmc__task *t, const struct ibmc__hdr *h,
		 const unsigned char *payload, size_t plen, int is_mcast)
{
	struct nway *w = t->priv;

	(void)is_mcast;
	if (h->kind == IBMC__K_PULL)
		ibmc__msgs_input(&w->m, h, payload, plen);
}

static int waits_for(const struct ibmc__task *t, int *ranks, int max)
{
	const struct nway *w = t->priv;

	return ibmc__msgs_waits_for(&w->m, ranks, max);
}

static void fini(struct ibmc__task *t)
{
	struct nway *w = t->priv;

	if (!w)
		return;
	ibmc__msgs_fini(&w->m);
	free(w->stride);
	free(w);
}

const struct ibmc__task_ops ibmc__barrier_nway_ops = {
	.start = start,
	.input = input,
	.progress = progress,
	.deadline = deadline,
	.complete = complete,
	.late = late,
	.fini = fini,
	.waits_for = waits_for,
};
