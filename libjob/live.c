/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Liveness probes and answers between contexts, and the deaths they reveal
 * (see live.h). One table per context, indexed by context rank, so that
 * every collective waiting for the same member shares one probe stream.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "libjob/coll/coll.h"
#include "libjob/comm.h"
#include "libjob/live.h"
#include "libjob/send.h"
#include "libjob/task.h"

/* Silence before a waiting task first asks, and between the probes of a
 * member that answers: waiting for a rank that computes for an hour costs
 * about one probe and one answer a second, whatever IBMCAST_DEAD_MS is
 * (a death is then known within the bound plus this). */
#define QUIET_US 1000000
/* Between probes of a member that has not answered yet: at most, an
 * eighth of IBMCAST_DEAD_MS when that is shorter, so that a lost probe or
 * answer (the fabric drops some) is asked again well within the bound. */
#define REASK_MAX_US 500000
#define REASK_MIN_US 20000
/* How often a waiting task looks at whom it waits for. */
#define LOOK_US 100000
/* A context that has not run for longer than this (its progress passes
 * come every 10 ms or less while a task waits) was itself stopped: not
 * scheduled on a loaded host, or the whole machine stalled (a virtual
 * machine's CPUs taken away for seconds). */
#define STALL_US 250000

struct ibmc__live_peer {
	int64_t heard;		/* us: its last datagram, 0: none yet */
	int64_t asked;		/* us: first probe since then, 0: none */
	int64_t probed;		/* us: last probe */
	int dead;		/* taken for dead (here, or told) */
	unsigned nasked;	/* probes since it was last heard */
	/* Its last answer: on communicator ans_comm it entered the
	 * collectives below ans_next (ans_nocomm: it has none such). */
	int64_t ans_at;		/* us, 0: none */
	uint32_t ans_comm, ans_next;
	int ans_nocomm;
};

struct ibmc__live {
	struct ibmc__live_peer *peer;	/* per context rank */
	/* The liveness clock: real time less the time this context itself
	 * did not run. A member's silence is counted on it, so that time in
	 * which this rank could not have heard an answer (it was not
	 * scheduled, or the host stalled and every rank with it) is never
	 * taken for the member's silence: after a host stall of 10 s every
	 * rank saw every other silent for 10 s and all took each other
	 * for dead. */
	int64_t last;			/* us, real: the clock's last reading */
	int64_t stalled;		/* us: time it did not run */
	unsigned gen;			/* deaths learnt so far */
	int self_dead;			/* others took this rank for dead */
	/* A death needs a witness (watch): the last datagram from any
	 * member, and the last probe of one asked for no other reason. */
	int64_t heard_any;		/* us, liveness clock */
	int64_t witness_asked;		/* us, liveness clock */
	int witness;			/* context rank last asked */
};

int ibmc__live_init(struct ibmc_context *ctx)
{
	struct ibmc__live *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->peer = calloc((size_t)ctx->size, sizeof(*l->peer));
	if (!l->peer) {
		free(l);
		return -ENOMEM;
	}
	ctx->live = l;
	return 0;
}

void ibmc__live_fini(struct ibmc_context *ctx)
{
	if (!ctx->live)
		return;
	free(ctx->live->peer);
	free(ctx->live);
	ctx->live = NULL;
}

static int64_t now_us(struct ibmc__live *l)
{
	int64_t now = ibmc__task_now(), gap = now - l->last;

	if (l->last && gap > STALL_US)
		l->stalled += gap - STALL_US;
	l->last = now;
	return now - l->stalled;
}

static int64_t dead_us(const struct ibmc_context *ctx)
{
	return (int64_t)ctx->env.dead_ms * 1000;
}

static int64_t reask_us(const struct ibmc_context *ctx)
{
	int64_t q = dead_us(ctx) / 8;

	if (q > REASK_MAX_US)
		q = REASK_MAX_US;
	return q > REASK_MIN_US ? q : REASK_MIN_US;
}

void ibmc__live_heard(struct ibmc_context *ctx, int r)
{
	struct ibmc__live_peer *p;

	if (!ctx->live || r < 0 || r >= ctx->size)
		return;
	p = &ctx->live->peer[r];
	p->heard = now_us(ctx->live);
	ctx->live->heard_any = p->heard;
	p->asked = 0;
	p->nasked = 0;
}

static void live_hdr(const struct ibmc_comm *c, uint32_t seq, int op,
		     struct ibmc__hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->kind = IBMC__K_LIVE;
	h->coll = IBMC__C_LIVE;
	h->comm_id = c->id;
	h->version = c->version;
	h->seq = seq;
	h->src = (uint32_t)c->rank;
	h->a = (uint32_t)op;
	h->b = (uint32_t)c->ctx->rank;
}

static struct ibmc_comm *comm_by_id(struct ibmc_context *ctx, uint32_t id)
{
	struct ibmc_comm *c;

	for (c = ctx->comms; c; c = c->next)
		if (c->id == id && !c->zombie)
			return c;
	return NULL;
}

static const char *node_of(const struct ibmc_context *ctx, int r)
{
	return ctx->node_name && ctx->node_name[r][0] ? ctx->node_name[r] :
	       "?";
}

/* Context rank r is dead: remember it, once. 1 when it is news. */
static int mark_dead(struct ibmc_context *ctx, int r)
{
	struct ibmc__live_peer *p = &ctx->live->peer[r];

	if (p->dead)
		return 0;
	p->dead = 1;
	ctx->live->gen++;
	return 1;
}

/* Errors collective coll ends with on every member alike: one is dead,
 * members called different collectives, or (allgather, allreduce:
 * ibmc_allreduce(3)) they disagree on the length, datatype or operation.
 * Not those of one rank alone: a deadline, memory, a broadcast member's
 * own length (the others complete). */
static int shared_failure(int coll, int rc)
{
	if (rc == -ESRCH || rc == -EPROTO)
		return 1;
	return (coll == IBMC__C_ALLGATHER || coll == IBMC__C_ALLREDUCE) &&
	       (rc == -EMSGSIZE || rc == -EINVAL);
}

/* The answerer's collective seq on c failed with err for every member:
 * this rank's, if still waiting, fails alike. */
static void failed_there(struct ibmc_comm *c, uint32_t seq, int err)
{
	struct ibmc__task *t;
	int lingering;

	t = ibmc__task_find(c, seq, &lingering);
	if (!t || lingering || t->done || t->error ||
	    !shared_failure(t->coll, -err))
		return;
	ibmc_log(IBMC_LOG_WARN,
		 "libibmcast: rank %d: communicator %08x: %s #%u: a member says it failed there (%s); failing it here too",
		 c->rank, c->id, ibmc__coll_name(t->coll), seq,
		 strerror(err));
	t->error = -err;
}

static void answer(struct ibmc_context *ctx, const struct ibmc__hdr *q)
{
	struct ibmc_comm *c = comm_by_id(ctx, q->comm_id);
	struct ibmc__task *t;
	struct ibmc__hdr h;
	int lingering;

	memset(&h, 0, sizeof(h));
	h.kind = IBMC__K_LIVE;
	h.coll = IBMC__C_LIVE;
	h.comm_id = q->comm_id;
	h.version = q->version;
	h.seq = q->seq;
	h.a = IBMC__LIVE_ALIVE;
	h.b = (uint32_t)ctx->rank;
	if (c) {
		h.src = (uint32_t)c->rank;
		h.mask = c->next_seq;
		t = ibmc__task_find(c, q->seq, &lingering);
		if (t && lingering && shared_failure(t->coll, t->rc)) {
			h.flags = IBMC__F_FAILED;
			h.mask |= (uint64_t)(uint32_t)-t->rc << 32;
		}
	} else {
		h.flags = IBMC__F_NOCOMM;
	}
	ibmc__send_ctx(ctx, (int)q->b, &h, NULL, 0);
}

void ibmc__live_input(struct ibmc_context *ctx, const struct ibmc__hdr *h)
{
	struct ibmc__live_peer *p;
	struct ibmc_comm *c;
	int from = (int)h->b;

	if (!ctx->live || h->b >= (uint32_t)ctx->size)
		return;
	switch (h->a) {
	case IBMC__LIVE_ASK:
		if (from == ctx->rank)
			return;
		ibmc__live_heard(ctx, from);
		answer(ctx, h);
		return;
	case IBMC__LIVE_ALIVE:
		if (from == ctx->rank)
			return;
		ibmc__live_heard(ctx, from);
		p = &ctx->live->peer[from];
		p->ans_at = now_us(ctx->live);
		p->ans_comm = h->comm_id;
		p->ans_next = (uint32_t)h->mask;
		p->ans_nocomm = !!(h->flags & IBMC__F_NOCOMM);
		if ((h->flags & IBMC__F_FAILED) &&
		    (c = comm_by_id(ctx, h->comm_id)))
			failed_there(c, h->seq, (int)(h->mask >> 32));
		return;
	case IBMC__LIVE_DEAD:
		/* b is the dead rank here; the teller is src of comm_id. */
		if (from == ctx->rank) {
			/* Taken for dead (stopped too long, cut off): the
			 * others failed their collectives, so this rank's
			 * would wait for them forever. */
			if (!ctx->live->self_dead) {
				ctx->live->self_dead = 1;
				ctx->live->gen++;
				ibmc_log(IBMC_LOG_ERROR,
					 "libibmcast: rank %d (node %s): the other members took this rank for dead (it answered no liveness probe within IBMCAST_DEAD_MS: stopped, or cut off?); its collectives fail",
					 ctx->rank, node_of(ctx, ctx->rank));
			}
			return;
		}
		if (mark_dead(ctx, from))
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: rank %d: rank %d (node %s) is dead: another member saw it answer no liveness probe within IBMCAST_DEAD_MS (%d ms)",
				 ctx->rank, from, node_of(ctx, from),
				 ctx->env.dead_ms);
		return;
	}
}

/* Tell every member of c but the dead one that context rank dead is. */
static void spread(struct ibmc_comm *c, uint32_t seq, int dead)
{
	struct ibmc__hdr h;
	int i;

	live_hdr(c, seq, IBMC__LIVE_DEAD, &h);
	h.b = (uint32_t)dead;
	for (i = 0; i < c->size; i++) {
		if (i == c->rank || c->members[i] == dead)
			continue;
		/* Twice: a lost notice leaves that member to find out by
		 * its own probes, a whole bound later. */
		ibmc__send_pkt(c, i, &h, NULL, 0);
		ibmc__send_pkt(c, i, &h, NULL, 0);
	}
}

/*
 * Before suspect (a context rank) is taken for dead: was anyone heard
 * within half the bound? 1 when so, or when nobody can tell (no other
 * rank, or none answered for three bounds: this rank is cut off, and its
 * waits must still end). Else 0, and another live rank is asked, as a
 * witness that the fabric carries this rank's probes and their answers:
 * when the whole fabric stalls (a switch reset, a data plane off the CPU,
 * a link flapping), every rank saw every other silent at once, and
 * without this each took all the others for dead.
 */
static int witnessed(struct ibmc_comm *c, uint32_t seq, int suspect,
		     int64_t asked, int64_t now)
{
	struct ibmc_context *ctx = c->ctx;
	struct ibmc__live *l = ctx->live;
	struct ibmc__hdr h;
	int i, w;

	if (now - l->heard_any < dead_us(ctx) / 2 ||
	    now - asked >= 3 * dead_us(ctx))
		return 1;
	if (l->witness_asked && now - l->witness_asked < reask_us(ctx))
		return 0;
	for (i = 1, w = -1; i <= ctx->size && w < 0; i++) {
		w = (l->witness + i) % ctx->size;
		if (w == ctx->rank || w == suspect || l->peer[w].dead)
			w = -1;
	}
	if (w < 0)
		return 1;		/* nobody else to ask */
	l->witness = w;
	l->witness_asked = now;
	live_hdr(c, seq, IBMC__LIVE_ASK, &h);
	c->st.probes_sent++;
	ibmc__send_ctx(ctx, w, &h, NULL, 0);
	return 0;
}

/* Member r of t's communicator, which t waits for: 0 while it is alive
 * (or not silent long enough to tell), -ESRCH once it is dead. now: on
 * the liveness clock. */
static int watch(struct ibmc__task *t, int r, int64_t now)
{
	struct ibmc_comm *c = t->comm;
	struct ibmc_context *ctx = c->ctx;
	struct ibmc__live_peer *p;
	struct ibmc__hdr h;
	int cr;

	if (r < 0 || r >= c->size || r == c->rank)
		return 0;
	cr = c->members[r];
	p = &ctx->live->peer[cr];
	if (p->dead)
		return -ESRCH;
	if (p->heard && now - p->heard < QUIET_US)
		return 0;
	if (p->asked && now - p->asked >= dead_us(ctx) &&
	    witnessed(c, t->seq, cr, p->asked, now)) {
		if (mark_dead(ctx, cr)) {
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: rank %d: communicator %08x: %s #%u: rank %d (node %s) answered no liveness probe for %d ms (IBMCAST_DEAD_MS): it is taken for dead (%u probes; last datagram from it %.1f s ago)",
				 c->rank, c->id, ibmc__coll_name(t->coll),
				 t->seq, r, node_of(ctx, cr),
				 ctx->env.dead_ms, p->nasked,
				 p->heard ? (now - p->heard) / 1e6 : -1.0);
			spread(c, t->seq, cr);
		}
		return -ESRCH;
	}
	if (p->asked && now - p->probed < reask_us(ctx))
		return 0;
	if (!p->asked)
		p->asked = now;
	p->probed = now;
	/* Half the bound gone: say so, once, so that a death (or a stall
	 * that looks like one) can be looked at while it lasts. */
	if (p->nasked && now - p->asked >= dead_us(ctx) / 2 &&
	    now - p->asked - reask_us(ctx) < dead_us(ctx) / 2)
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: communicator %08x: %s #%u: rank %d (node %s) has answered no liveness probe for %.1f s (%u probes); it is taken for dead at %d ms (IBMCAST_DEAD_MS)",
			 c->rank, c->id, ibmc__coll_name(t->coll), t->seq, r,
			 node_of(ctx, cr), (now - p->asked) / 1e6, p->nasked,
			 ctx->env.dead_ms);
	p->nasked++;
	live_hdr(c, t->seq, IBMC__LIVE_ASK, &h);
	c->st.probes_sent++;
	ibmc__send_pkt(c, r, &h, NULL, 0);
	return 0;
}

int64_t ibmc__live_check(struct ibmc__task *t, int64_t now)
{
	struct ibmc_context *ctx = t->comm->ctx;
	int ranks[IBMC__LIVE_WAITS_MAX], n, i, rc;
	int64_t lnow;

	if (!ctx->live || !ctx->env.dead_ms || !t->ops->waits_for ||
	    t->done || t->error)
		return INT64_MAX;
	/* (every pass: the liveness clock sees this context's own stalls) */
	lnow = now_us(ctx->live);
	/* A collective that completes within the quiet time never asks
	 * (its peers' datagrams would have said enough anyway). */
	if (!t->live_next)
		t->live_next = now + QUIET_US;
	if (now < t->live_next)
		return t->live_next;
	t->live_next = now + (LOOK_US < reask_us(ctx) ? LOOK_US :
			      reask_us(ctx));
	n = t->ops->waits_for(t, ranks, IBMC__LIVE_WAITS_MAX);
	for (i = 0; i < n; i++) {
		rc = watch(t, ranks[i], lnow);
		if (rc) {
			t->error = rc;
			return INT64_MAX;
		}
	}
	return t->live_next;
}

int ibmc__live_dead_member(struct ibmc_comm *c)
{
	struct ibmc__live *l = c->ctx->live;
	int i;

	if (!l || !l->gen)
		return -1;
	if (c->live_gen != l->gen) {
		c->live_gen = l->gen;
		c->dead_member = -1;
		if (l->self_dead)
			c->dead_member = c->rank;
		for (i = 0; i < c->size && c->dead_member < 0; i++)
			if (l->peer[c->members[i]].dead)
				c->dead_member = i;
	}
	return c->dead_member;
}

int ibmc__live_absent(const struct ibmc_comm *c, int r, uint32_t seq)
{
	const struct ibmc_context *ctx = c->ctx;
	const struct ibmc__live_peer *p;

	if (!ctx->live || r < 0 || r >= c->size || r == c->rank)
		return 0;
	p = &ctx->live->peer[c->members[r]];
	/* Stale after two probe periods: it may have entered since. */
	if (!p->ans_at || ctx->live->last - ctx->live->stalled - p->ans_at >
	    2 * QUIET_US ||
	    p->ans_comm != c->id)
		return 0;
	return p->ans_nocomm || (int32_t)(p->ans_next - seq) <= 0;
}
