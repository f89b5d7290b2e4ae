/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The prune keeper (see prune_keep.h): claims from communicators' rank 0,
 * and world rank 0 narrowing each pool group to the nodes of its claims.
 * The keeper has one request per group at the control server at a time
 * and always asks for the shape its claims want now, so a burst of
 * communicators costs as many reshapes as the SM can do, not one each.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "libjob/mode.h"
#include "libjob/prune.h"
#include "libjob/prune_keep.h"
#include "libjob/reshape_req.h"
#include "libjob/send.h"
#include "libjob/task.h"

#define SILENCE_DEFAULT_MS 60000
#define RELEASED 256		/* claims given back, remembered so that a
				 * late copy of their claim adds nothing */
#define KEEPER 0		/* world rank (and hidden rank) */

/* The operation of a keeper message (the header's a); seq is the
 * claiming communicator's id, b the pool group. */
enum op {
	PK_CLAIM = 1,	/* comm rank 0 -> keeper; payload: the members'
			 * world ranks, a bitmask */
	PK_CLAIMED,	/* keeper -> it */
	PK_RELEASE,	/* comm rank 0 -> keeper */
	PK_RELEASED,	/* keeper -> it */
};

/* A claim or release this rank sends until the keeper acknowledges it. */
struct ask {
	struct ask *next;
	int op;
	uint32_t id, group;
	unsigned char *mask;	/* PK_CLAIM */
	int64_t next_us, until_us;
};

/* Keeper: a communicator holding a group, with its members. */
struct claim {
	struct claim *next;
	uint32_t id;
	unsigned char *mask;
};

/* Keeper: one pool group. */
struct kgroup {
	struct claim *claims;
	char *have;		/* the nodes it was last set to; NULL: all */
	char *failed;		/* a shape the server refused: not asked
				 * again until the claims want another */
	struct ibmc__reshape_req *req;
	char *asked;		/* req's shape; NULL: widening */
	int nclaims, asked_claims;
	int dirty;		/* the claims changed: see what they want
				 * (not on every step) */
	int64_t changed_us;	/* when the claims last changed */
};

struct ibmc__prk {
	struct ibmc_comm *hc;
	int64_t period_us, silence_us;
	size_t mlen;			/* bytes of a member bitmask */
	struct ask *asks;
	/* Keeper. */
	struct kgroup g[IBMC__MAX_GROUPS];
	uint32_t released[RELEASED];
	int nreleased, next_released;
	int *ranks;			/* scratch: a union's world ranks */
};

static int bit(const unsigned char *mask, int r)
{
	return mask[r >> 3] >> (r & 7) & 1;
}

static void input(struct ibmc__prk *k, const struct ibmc__hdr *h,
		  const unsigned char *payload, size_t plen);

/* To world rank `to`; the keeper's messages to itself are handled at once
 * (the transport does not loop a rank's datagrams back to it). */
static void prk_send(struct ibmc__prk *k, int to, int op, uint32_t id,
		     uint32_t group, const void *payload, size_t plen)
{
	struct ibmc__hdr h;

	ibmc__keeper_hdr(k->hc, IBMC__C_PRUNE, op, id, group, &h);
	if (to == k->hc->rank)
		input(k, &h, payload, plen);
	else
		ibmc__send_pkt(k->hc, to, &h, payload, plen);
}

/* ---- the keeper ------------------------------------------------------- */

static int was_released(const struct ibmc__prk *k, uint32_t id)
{
	int i;

	for (i = 0; i < k->nreleased; i++)
		if (k->released[i] == id)
			return 1;
	return 0;
}

static void remember_released(struct ibmc__prk *k, uint32_t id)
{
	k->released[k->next_released] = id;
	k->next_released = (k->next_released + 1) % RELEASED;
	if (k->nreleased < RELEASED)
		k->nreleased++;
}

static void keep_claim(struct ibmc__prk *k, struct kgroup *g, uint32_t id,
		       const unsigned char *mask, size_t plen)
{
	struct claim *c;

	if (plen < k->mlen || was_released(k, id))
		return;		/* malformed, or a late copy */
	for (c = g->claims; c; c = c->next)
		if (c->id == id)
			return;	/* a repetition: our answer was lost */
	c = calloc(1, sizeof(*c));
	if (c)
		c->mask = malloc(k->mlen);
	if (!c || !c->mask) {
		free(c);
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: out of memory keeping communicator %08x's claim; its group may be narrowed without its nodes (unicast repairs them)",
			 k->hc->ctx->rank, id);
		return;
	}
	memcpy(c->mask, mask, k->mlen);
	c->id = id;
	c->next = g->claims;
	g->claims = c;
	g->nclaims++;
	g->dirty = 1;
	g->changed_us = ibmc__task_now();
}

static void drop_claim(struct ibmc__prk *k, struct kgroup *g, uint32_t id)
{
	struct claim **pp, *c;

	remember_released(k, id);
	for (pp = &g->claims; (c = *pp); pp = &c->next)
		if (c->id == id) {
			*pp = c->next;
			free(c->mask);
			free(c);
			g->nclaims--;
			g->dirty = 1;
			g->changed_us = ibmc__task_now();
			return;
		}
}

static void keeper_input(struct ibmc__prk *k, const struct ibmc__hdr *h,
			 const unsigned char *payload, size_t plen)
{
	struct ibmc_context *ctx = k->hc->ctx;
	struct kgroup *g;

	if (h->b >= (uint32_t)ctx->env.ngroups)
		return;		/* not a pool group: nothing to keep */
	g = &k->g[h->b];
	if (h->a == PK_CLAIM) {
		keep_claim(k, g, h->seq, payload, plen);
		prk_send(k, (int)h->src, PK_CLAIMED, h->seq, h->b, NULL, 0);
	} else {
		drop_claim(k, g, h->seq);
		prk_send(k, (int)h->src, PK_RELEASED, h->seq, h->b, NULL, 0);
	}
}

/* The nodes the claims of g want, as a hostlist; NULL: every node of the
 * job (no claim, or their nodes are all of them). *err: a name unknown
 * or no memory (then the group is left as it is). */
static char *wanted(struct ibmc__prk *k, const struct kgroup *g, int *err)
{
	struct ibmc_context *ctx = k->hc->ctx;
	const struct claim *c;
	int r, n = 0, all;

	*err = 0;
	if (!g->claims)
		return NULL;
	for (r = 0; r < ctx->size; r++) {
		for (c = g->claims; c && !bit(c->mask, r); c = c->next)
			;
		if (c)
			k->ranks[n++] = r;
	}
	all = ibmc__ctx_nnodes(ctx);
	if (all <= 0 || ibmc__nodes_count(ctx, k->ranks, n) == all) {
		*err = all <= 0;
		return NULL;
	}
	return ibmc__nodes_hostlist(ctx, k->ranks, n, err);
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* g's request finished: log it, and what the group is now. */
static void request_done(struct ibmc__prk *k, int index, struct kgroup *g)
{
	struct ibmc_context *ctx = k->hc->ctx;
	struct ibmc__reshape_result res;
	int rc = ibmc__reshape_req_poll(g->req, &res);

	if (rc == 1)
		return;
	if (rc) {
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: group %d not %s %s (it stays as it was): %s",
			 ctx->rank, index, g->asked ? "pruned to" : "widened back to",
			 g->asked ? g->asked : "the job's nodes", res.detail);
		free(g->failed);
		g->failed = g->asked;
	} else {
		if (g->asked)
			ibmc_log(IBMC_LOG_INFO,
				 "libibmcast: rank %d: pruned group %u (MLID 0x%04x) to its %u member port(s): SM-confirmed ready after %lld us (%s, the nodes of the %d communicator(s) holding it)",
				 ctx->rank, res.index, res.group.mlid,
				 res.members, (long long)res.ready_us,
				 g->asked, g->asked_claims);
		else
			ibmc_log(IBMC_LOG_INFO,
				 "libibmcast: rank %d: widened group %u (MLID 0x%04x) back to the job's %u member port(s): SM-confirmed ready after %lld us",
				 ctx->rank, res.index, res.group.mlid,
				 res.members, (long long)res.ready_us);
		free(g->have);
		g->have = g->asked;
		free(g->failed);
		g->failed = NULL;
	}
	/* Claims that changed meanwhile left the group dirty; a refusal
	 * alone is not asked again (a server that is down is not asked a
	 * period later, over and over). */
	g->asked = NULL;
	ibmc__reshape_req_free(g->req);
	g->req = NULL;
}

/* Ask for the shape g's claims want, when it is not the one it has. */
static void reshape(struct ibmc__prk *k, int index, struct kgroup *g)
{
	struct ibmc_context *ctx = k->hc->ctx;
	const struct ibmc__env *e = &ctx->env;
	struct ibmc__reshape_ask ask = {
		.server = e->server, .munge_socket = e->munge_socket,
		.job = e->job, .group = (unsigned)index,
		.wait_ms = e->reshape_wait_ms,
	};
	int err, rc;
	char *want = wanted(k, g, &err);

	if (err || same(want, g->have) || (want && same(want, g->failed))) {
		free(want);
		return;
	}
	ask.nodes = want;
	rc = ibmc__reshape_req_start(&ask, &g->req);
	if (rc) {
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: reshaping group %d to %s could not start: %s",
			 ctx->rank, index, want ? want : "the job's nodes",
			 strerror(-rc));
		free(want);
		g->req = NULL;
		return;
	}
	g->asked = want;
	g->asked_claims = g->nclaims;
}

/* The requests that ended, and new ones for the claims that settled: a
 * group is reshaped once its claims were left alone for a period, so
 * that the communicators of one split, claiming together, get the union
 * at once rather than the first one's nodes for a moment. The next time
 * to look (INT64_MAX: none). */
static int64_t keeper_progress(struct ibmc__prk *k, int64_t now)
{
	struct ibmc_context *ctx = k->hc->ctx;
	int64_t next = INT64_MAX, settled;
	struct kgroup *g;
	int i;

	for (i = 0; i < ctx->env.ngroups; i++) {
		g = &k->g[i];
		if (g->req)
			request_done(k, i, g);
		settled = g->changed_us + k->period_us;
		if (!g->req && g->dirty && now >= settled) {
			g->dirty = 0;
			reshape(k, i, g);
		}
		/* The server's answers come on the requests' threads:
		 * look again a period later while one is out. */
		if (g->req && now + k->period_us < next)
			next = now + k->period_us;
		else if (!g->req && g->dirty && settled < next)
			next = settled;
	}
	return next;
}

/* ---- every rank --------------------------------------------------------- */

static void ask_send(struct ibmc__prk *k, const struct ask *a)
{
	prk_send(k, KEEPER, a->op, a->id, a->group, a->mask,
		 a->mask ? k->mlen : 0);
}

static struct ask **ask_find(struct ibmc__prk *k, uint32_t id)
{
	struct ask **pp;

	for (pp = &k->asks; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id)
			return pp;
	return NULL;
}

static void ask_free(struct ask *a)
{
	free(a->mask);
	free(a);
}

/* Queue (and send once) op for communicator id; a release replaces the
 * claim still unanswered. */
static void ask(struct ibmc__prk *k, int op, uint32_t id, uint32_t group,
		unsigned char *mask)
{
	struct ask **pp = ask_find(k, id), *a;
	int64_t now = ibmc__task_now();

	if (pp) {
		a = *pp;
		*pp = a->next;
		ask_free(a);
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		free(mask);
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: out of memory telling the prune keeper about communicator %08x",
			 k->hc->ctx->rank, id);
		return;
	}
	a->op = op;
	a->id = id;
	a->group = group;
	a->mask = mask;
	a->next_us = now + k->period_us;
	a->until_us = now + k->silence_us;
	a->next = k->asks;
	k->asks = a;
	ask_send(k, a);
}

static void answer_input(struct ibmc__prk *k, const struct ibmc__hdr *h)
{
	struct ask **pp = ask_find(k, h->seq), *a;

	if (!pp)
		return;
	a = *pp;
	if ((a->op == PK_CLAIM) != (h->a == PK_CLAIMED))
		return;		/* the answer to an older ask */
	*pp = a->next;
	ask_free(a);
}

static void input(struct ibmc__prk *k, const struct ibmc__hdr *h,
		  const unsigned char *payload, size_t plen)
{
	switch (h->a) {
	case PK_CLAIM:
	case PK_RELEASE:
		if (k->hc->rank == KEEPER)
			keeper_input(k, h, payload, plen);
		break;
	case PK_CLAIMED:
	case PK_RELEASED:
		answer_input(k, h);
		break;
	}
}

void ibmc__prk_input(struct ibmc_comm *hc, const struct ibmc__hdr *h,
		     const unsigned char *payload, size_t plen)
{
	struct ibmc__prk *k = hc->ctx->prk;

	if (k && k->hc == hc)
		input(k, h, payload, plen);
}

void ibmc__prk_claim(struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;
	struct ibmc__prk *k = ctx->prk;
	unsigned char *mask;
	int i;

	/* A communicator over every rank holds its group on all of them:
	 * no other can hold it meanwhile, and it spans every node. */
	if (!k || c->rank != 0 || c->group < 0 || c->size >= ctx->size)
		return;
	mask = calloc(1, k->mlen);
	if (!mask) {
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: communicator %08x: no memory to claim group %d; it stays as wide as the job",
			 ctx->rank, c->id, c->group);
		return;
	}
	for (i = 0; i < c->size; i++)
		mask[c->members[i] >> 3] |= (unsigned char)(1u << (c->members[i] & 7));
	c->claimed_group = c->group;
	ask(k, PK_CLAIM, c->id, (uint32_t)c->group, mask);
}

void ibmc__prk_release(struct ibmc_comm *c)
{
	struct ibmc__prk *k = c->ctx->prk;

	if (c->claimed_group < 0)
		return;
	if (k)
		ask(k, PK_RELEASE, c->id, (uint32_t)c->claimed_group, NULL);
	c->claimed_group = -1;
}

int64_t ibmc__prk_progress(struct ibmc_context *ctx, int64_t now)
{
	struct ibmc__prk *k = ctx->prk;
	struct ask **pp = &k->asks, *a;
	int64_t next = INT64_MAX, t;

	while ((a = *pp)) {
		if (now >= a->until_us) {
			ibmc_log(IBMC_LOG_INFO,
				 "libibmcast: rank %d: the prune keeper (rank %d) did not answer communicator %08x's %s of group %u; the group may stay %s",
				 ctx->rank, KEEPER, a->id,
				 a->op == PK_CLAIM ? "claim" : "release",
				 a->group, a->op == PK_CLAIM ?
				 "narrowed without its nodes (unicast repairs them)" :
				 "wider than needed");
			*pp = a->next;
			ask_free(a);
			continue;
		}
		if (now >= a->next_us) {
			ask_send(k, a);
			a->next_us = now + k->period_us;
		}
		if (a->next_us < next)
			next = a->next_us;
		pp = &a->next;
	}
	if (k->hc->rank == KEEPER) {
		t = keeper_progress(k, now);
		if (t < next)
			next = t;
	}
	return next;
}

/* ---- setup and teardown ------------------------------------------------ */

int ibmc__prk_open(struct ibmc_context *ctx)
{
	const struct ibmc__env *e = &ctx->env;
	struct ibmc__prk *k;
	int rc, ms;

	if (e->comm_mode != IBMC__MODE_SM || !ibmc__prune_allowed(ctx) ||
	    ctx->mcast_err || ctx->size < 2)
		return 0;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->mlen = ((size_t)ctx->size + 7) / 8;
	if (IBMC__WIRE_POOL + k->mlen > ctx->mtu) {
		free(k);
		return -EMSGSIZE;
	}
	if (ctx->rank == KEEPER) {
		k->ranks = malloc(sizeof(*k->ranks) * (size_t)ctx->size);
		if (!k->ranks) {
			free(k);
			return -ENOMEM;
		}
	}
	ms = e->timeout_ms ? e->timeout_ms : SILENCE_DEFAULT_MS;
	k->silence_us = (int64_t)ms * 1000;
	k->period_us = (int64_t)e->mtest_period_ms * 1000;
	rc = ibmc__comm_create_mode(ctx, NULL, ctx->size, IBMC__MODE_P2P,
				    IBMC__PRUNE_COMM_ID, IBMC_GROUP_NEXT,
				    &k->hc);
	if (rc) {
		free(k->ranks);
		free(k);
		return rc;
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->prk = k;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

void ibmc__prk_free(struct ibmc_context *ctx)
{
	struct ibmc__prk *k = ctx->prk;
	struct ibmc_comm *c;
	struct claim *cl;
	struct kgroup *g;
	struct ask *a;
	int i;

	if (!k)
		return;
	/* This rank's claims go back once: a keeper still running widens
	 * what no one holds any more; nothing here waits for it. */
	for (c = ctx->comms; c; c = c->next)
		ibmc__prk_release(c);
	ctx->prk = NULL;
	while ((a = k->asks)) {
		k->asks = a->next;
		ask_free(a);
	}
	for (i = 0; i < IBMC__MAX_GROUPS; i++) {
		g = &k->g[i];
		/* Every group the keeper narrowed, or was narrowing, goes
		 * back to the whole job before the job's end. */
		if (g->have || g->asked)
			ibmc__widen_queue(ctx, g->req, i);
		else
			ibmc__reshape_req_free(g->req);
		while ((cl = g->claims)) {
			g->claims = cl->next;
			free(cl->mask);
			free(cl);
		}
		free(g->have);
		free(g->asked);
		free(g->failed);
	}
	ibmc__comm_destroy(k->hc);
	free(k->ranks);
	free(k);
}
