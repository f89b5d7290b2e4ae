/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keeper of mode pool's own pool (see pool_keep.h). Only the keeper's
 * view of which slot is free counts: a rank's own view would let two
 * communicators over disjoint ranks take one group, each unaware of the
 * other. Every message the keeper must be sure of (a slot taken, a slot
 * filled) is resent to whoever has not acknowledged it, each period,
 * until the collective timeout; so a lost datagram costs a period and a
 * dead rank a logged give-up, never a hang.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/groups.h"
#include "common/log.h"
#include "common/mgid.h"
#include "libjob/mode.h"
#include "libjob/pool_keep.h"
#include "libjob/send.h"
#include "libjob/task.h"

#define SILENCE_DEFAULT_MS 60000
#define RECENT 256		/* answers remembered: repeated asks, grants
				 * heard before their communicator exists */
#define NONE 0xffffffffu	/* "no slot": the pool is empty */
#define KEEPER 0		/* world rank (and hidden rank) of the keeper */

/* The operation of a pool message (the header's a); seq and b below. */
enum op {
	P_TAKE = 1,	/* rank 0 of a new communicator -> keeper: seq = its
			 * id; payload: its members' world ranks, a bitmask */
	P_GRANT,	/* keeper -> every rank: seq = id, b = slot or NONE;
			 * payload: the members' bitmask */
	P_GACK,		/* -> keeper: seq = id */
	P_INV,		/* keeper -> rank: seq = generation, b = slot;
			 * payload: "MGID/MLID/QKEY/PKEY/MTU" of the new group */
	P_JOINED,	/* -> keeper: seq = generation, b = 0 or errno */
	P_PING,		/* keeper -> the new group, by multicast: seq = gen */
	P_PACK,		/* -> keeper: got that ping by multicast */
	P_FILL,		/* keeper -> every rank: seq = gen, b = slot: the new
			 * group is the slot's now */
	P_FACK,		/* -> keeper: seq = gen */
	P_DROP,		/* keeper -> every rank: replacement gen failed */
};

struct ring {
	uint32_t id[RECENT], slot[RECENT];
	int n, next;
};

/* Keeper: a message every rank in owed must acknowledge. */
struct notice {
	struct notice *next;
	int op;
	uint32_t seq, b;
	unsigned char *payload;
	size_t plen;
	unsigned char *owed;
	int nowed;
	int64_t next_us, until_us;
};

/* A communicator's rank 0 asking the keeper, until it hears. */
struct ask {
	struct ask *next;
	uint32_t id;
	unsigned char *mask;
	int64_t next_us;
};

/* A group granted to a communicator this rank is a member of, held until
 * the communicator takes it (its creation here may come later). */
struct resv {
	struct resv *next;
	uint32_t id;
	int slot;
	struct ibmc_tr_group g;
	int ghandle, joined;
};

enum phase { R_IDLE, R_INVITE, R_PING, R_FILL };
enum kslot { K_FREE, K_TAKEN, K_FILLING, K_LOST };

/* A replacement that fails (the SA refused, a rank never answered, the
 * test never got through) is tried again after a pause that doubles,
 * REPL_ATTEMPTS times in all: a fabric that drops multicast for a while,
 * or an SM busy with a sweep, costs the pool a slot only while it lasts;
 * a dead rank costs a few bounded attempts. */
#define REPL_ATTEMPTS 4
#define REPL_PAUSE_US 1000000ll

struct ibmc__pk {
	struct ibmc_comm *hc;
	int64_t period_us, silence_us;
	int tries_max;
	size_t mlen;			/* bytes of a member bitmask */
	struct ring heard;		/* grants this rank received */
	struct ask *asks;
	struct resv *resv;
	/* The replacement this rank attached to (and joined for its node):
	 * the keeper's own creation too. */
	struct {
		struct ibmc_tr_group g;
		int ghandle, joined;
		uint32_t gen;
	} pend;
	uint32_t filled_gen;		/* the last one that filled a slot */
	/* Keeper. */
	struct ring answered;
	enum kslot k[IBMC__MAX_GROUPS];
	int fails[IBMC__MAX_GROUPS];		/* in a row, per slot */
	int64_t retry_us[IBMC__MAX_GROUPS];	/* not before, after one */
	struct notice *notices;
	uint32_t gen;
	struct {
		enum phase phase;
		int slot;
		uint32_t gen;
		unsigned char *done;
		int ndone, rounds, tries;
		int64_t next_us;
		char mgid[IBMC_MGID_STRLEN];
		char addr[IBMC_GROUP_STRLEN];
	} r;
};

static int bit(const unsigned char *mask, int r)
{
	return mask[r >> 3] >> (r & 7) & 1;
}

static int ring_find(const struct ring *g, uint32_t id, uint32_t *slot)
{
	int i;

	for (i = 0; i < g->n; i++)
		if (g->id[i] == id) {
			if (slot)
				*slot = g->slot[i];
			return 1;
		}
	return 0;
}

static void ring_add(struct ring *g, uint32_t id, uint32_t slot)
{
	g->id[g->next] = id;
	g->slot[g->next] = slot;
	g->next = (g->next + 1) % RECENT;
	if (g->n < RECENT)
		g->n++;
}

static void input(struct ibmc__pk *pk, const struct ibmc__hdr *h,
		  const unsigned char *payload, size_t plen, int is_mcast);

/* To world rank `to`; the keeper's messages to itself are handled at once
 * (the transport does not loop a rank's datagrams back to it). */
static void pk_send(struct ibmc__pk *pk, int to, int op, uint32_t seq,
		    uint32_t b, const void *payload, size_t plen)
{
	struct ibmc__hdr h;

	ibmc__keeper_hdr(pk->hc, IBMC__C_POOL, op, seq, b, &h);
	if (to == pk->hc->rank)
		input(pk, &h, payload, plen, 0);
	else
		ibmc__send_pkt(pk->hc, to, &h, payload, plen);
}

/* The SA leave and detach of a group this rank holds. */
static void drop_group(struct ibmc_context *ctx, const struct ibmc_tr_group *g,
		       int *ghandle, int *joined)
{
	if (*ghandle >= 0)
		ctx->ops->mcast_detach(ctx->tr, *ghandle);
	*ghandle = -1;
	if (*joined)
		ibmc__own_leave(ctx, g->mgid);
	*joined = 0;
}

/* ---- every rank --------------------------------------------------------- */

/* Whether a rank of the bitmask runs on this rank's node. */
static int node_has(const struct ibmc_context *ctx, const unsigned char *mask)
{
	int r;

	for (r = 0; r < ctx->size; r++)
		if (bit(mask, r) && ctx->node[r] == ctx->node[ctx->rank])
			return 1;
	return 0;
}

/* The lowest world rank of its node joins for it (an SA join is per port). */
static int world_node_leader(const struct ibmc_context *ctx)
{
	int r;

	for (r = 0; r < ctx->rank; r++)
		if (ctx->node[r] == ctx->node[ctx->rank])
			return 0;
	return 1;
}

static void rank_grant(struct ibmc__pk *pk, const struct ibmc__hdr *h,
		       const unsigned char *mask, size_t plen)
{
	struct ibmc_context *ctx = pk->hc->ctx;
	struct ibmc__own_slot *s;
	struct resv *v;
	char text[IBMC_MGID_STRLEN];
	uint32_t slot = h->b;

	if (ring_find(&pk->heard, h->seq, NULL)) {
		/* A repetition: our acknowledgement was lost. */
		pk_send(pk, KEEPER, P_GACK, h->seq, 0, NULL, 0);
		return;
	}
	if (plen < pk->mlen ||
	    (slot != NONE && slot >= (uint32_t)ctx->own_npool))
		return;		/* malformed: not ours to act on */
	s = slot != NONE ? &ctx->own_pool[slot] : NULL;
	if (s && s->empty) {
		/* Not NONE: a member must not go lazy alone (the others
		 * multicast on the group); it finds no group to take and
		 * stays point-to-point, which unicast repairs cover. */
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: the keeper gave slot %u of the job's own pool to communicator %08x, but this rank holds no group there",
			 ctx->rank, slot, h->seq);
		s = NULL;
	}
	if (s && bit(mask, ctx->rank)) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return;	/* unacknowledged: the keeper resends */
		v->id = h->seq;
		v->slot = (int)slot;
		v->g = s->g;
		v->ghandle = s->ghandle;
		v->joined = s->joined;
		v->next = pk->resv;
		pk->resv = v;
	} else if (s) {
		/* Not a member: the group is the communicator's now. A node
		 * with no member leaves it, so OpenSM narrows its tree; on a
		 * node with one, that member's node leaves at its free. */
		ctx->ops->mcast_detach(ctx->tr, s->ghandle);
		if (s->joined && !node_has(ctx, mask)) {
			ibmc__own_leave(ctx, s->g.mgid);
			ibmc__mgid_format(s->g.mgid, text);
			ibmc_log(IBMC_LOG_INFO,
				 "libibmcast: rank %d: left group %s (MLID 0x%04x) at the SA: communicator %08x took it and has no member on this node",
				 ctx->rank, text, s->g.mlid, h->seq);
		}
	}
	if (s) {
		s->empty = 1;
		s->ghandle = -1;
		s->joined = 0;
	}
	ring_add(&pk->heard, h->seq, slot);
	pk_send(pk, KEEPER, P_GACK, h->seq, 0, NULL, 0);
}

static void rank_invite(struct ibmc__pk *pk, const struct ibmc__hdr *h,
			const unsigned char *payload, size_t plen)
{
	struct ibmc_context *ctx = pk->hc->ctx;
	struct ibmc_tr_join j = { .create = 0 };
	char text[IBMC_GROUP_STRLEN];
	struct ibmc_tr_group g;
	int rc, joined = 0;

	if (pk->pend.gen == h->seq &&
	    (pk->pend.ghandle >= 0 || pk->filled_gen == h->seq)) {
		pk_send(pk, KEEPER, P_JOINED, h->seq, 0, NULL, 0);
		return;
	}
	if ((int32_t)(h->seq - pk->pend.gen) < 0)
		return;		/* a late copy of an older invitation */
	/* An older replacement the keeper gave up (its DROP lost). */
	drop_group(ctx, &pk->pend.g, &pk->pend.ghandle, &pk->pend.joined);
	rc = -EBADMSG;
	if (plen >= sizeof(text))
		goto answer;
	memcpy(text, payload, plen);
	text[plen] = 0;
	if (ibmc__group_parse(text, &g))
		goto answer;
	/* The keeper's creation joined its node already. */
	if (world_node_leader(ctx) && ctx->node[KEEPER] != ctx->node[ctx->rank]) {
		memcpy(j.mgid, g.mgid, sizeof(j.mgid));
		j.qkey = ctx->own_qkey;
		rc = ctx->ops->mcast_join(ctx->tr, &j, &g);
		if (rc)
			goto answer;
		joined = 1;
	}
	rc = ctx->ops->mcast_attach(ctx->tr, &g);
	if (rc < 0) {
		if (joined)
			ibmc__own_leave(ctx, g.mgid);
		goto answer;
	}
	pk->pend.g = g;
	pk->pend.ghandle = rc;
	pk->pend.joined = joined;
	pk->pend.gen = h->seq;
	rc = 0;
answer:
	if (rc)
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: joining the job's own pool's replacement group %s failed: %s",
			 ctx->rank, plen < sizeof(text) ? text : "(malformed)",
			 strerror(-rc));
	pk_send(pk, KEEPER, P_JOINED, h->seq, (uint32_t)-rc, NULL, 0);
}

static void rank_fill(struct ibmc__pk *pk, const struct ibmc__hdr *h)
{
	struct ibmc_context *ctx = pk->hc->ctx;
	struct ibmc__own_slot *s;

	pk_send(pk, KEEPER, P_FACK, h->seq, 0, NULL, 0);
	if (pk->pend.ghandle < 0 || pk->pend.gen != h->seq ||
	    h->b >= (uint32_t)ctx->own_npool)
		return;
	s = &ctx->own_pool[h->b];
	if (!s->empty)
		return;
	s->g = pk->pend.g;
	s->ghandle = pk->pend.ghandle;
	s->joined = pk->pend.joined;
	s->empty = 0;
	pk->pend.ghandle = -1;
	pk->pend.joined = 0;
	pk->filled_gen = h->seq;
}

/* ---- the keeper ------------------------------------------------------- */

static struct notice *notice_new(struct ibmc__pk *pk, int op, uint32_t seq,
				 uint32_t b, const void *payload, size_t plen,
				 const unsigned char *to)
{
	int size = pk->hc->size, r;
	struct notice *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->owed = calloc((size_t)size, 1);
	n->payload = plen ? malloc(plen) : NULL;
	if (!n->owed || (plen && !n->payload)) {
		free(n->owed);
		free(n->payload);
		free(n);
		return NULL;
	}
	if (plen)
		memcpy(n->payload, payload, plen);
	n->plen = plen;
	n->op = op;
	n->seq = seq;
	n->b = b;
	for (r = 0; r < size; r++)
		if (!to || bit(to, r)) {
			n->owed[r] = 1;
			n->nowed++;
		}
	n->until_us = ibmc__task_now() + pk->silence_us;
	n->next_us = ibmc__task_now() + pk->period_us;
	n->next = pk->notices;
	pk->notices = n;
	return n;
}

/* (The keeper's own copy is handled inside, and may acknowledge it.) */
static void notice_send(struct ibmc__pk *pk, struct notice *n)
{
	int r;

	for (r = 0; r < pk->hc->size; r++)
		if (n->owed[r])
			pk_send(pk, r, n->op, n->seq, n->b, n->payload,
				n->plen);
}

static struct notice *notice_find(struct ibmc__pk *pk, int op, uint32_t seq)
{
	struct notice *n;

	for (n = pk->notices; n; n = n->next)
		if (n->op == op && n->seq == seq)
			return n;
	return NULL;
}

/* Completion is left to progress: an acknowledgement may come while the
 * notice is being sent (the keeper's own). */
static void notice_ack(struct ibmc__pk *pk, int op, uint32_t seq, int r)
{
	struct notice *n = notice_find(pk, op, seq);

	if (n && n->owed[r]) {
		n->owed[r] = 0;
		n->nowed--;
	}
}

static void notice_free(struct notice *n)
{
	free(n->owed);
	free(n->payload);
	free(n);
}

/* "3, 5, 9 and 4 more" of the ranks with flag[r] == want. */
static void ranks_text(const unsigned char *flag, int size, int want,
		       char *buf, size_t len)
{
	size_t off = 0;
	int r, n = 0;

	buf[0] = 0;
	for (r = 0; r < size; r++) {
		if (!!flag[r] != want)
			continue;
		if (n < 4 && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%d",
						n ? ", " : "", r);
		n++;
	}
	if (n > 4 && off < len)
		snprintf(buf + off, len - off, " and %d more", n - 4);
}

static void repl_end(struct ibmc__pk *pk)
{
	free(pk->r.done);
	pk->r.done = NULL;
	pk->r.phase = R_IDLE;
}

static void repl_fail(struct ibmc__pk *pk, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void repl_fail(struct ibmc__pk *pk, const char *fmt, ...)
{
	struct ibmc_context *ctx = pk->hc->ctx;
	char why[200];
	int64_t pause;
	va_list ap;
	int r, s;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	s = pk->r.slot;
	if (++pk->fails[s] < REPL_ATTEMPTS) {
		pause = REPL_PAUSE_US << (pk->fails[s] - 1);
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: the job's own pool: replacing slot %d failed: %s; trying again in %lld ms (attempt %d of %d)",
			 ctx->rank, s, why, (long long)(pause / 1000),
			 pk->fails[s] + 1, REPL_ATTEMPTS);
		pk->k[s] = K_TAKEN;
		pk->retry_us[s] = ibmc__task_now() + pause;
	} else {
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: the job's own pool: replacing slot %d failed: %s; the pool stays a group smaller (%d attempts)",
			 ctx->rank, s, why, REPL_ATTEMPTS);
		pk->k[s] = K_LOST;
	}
	/* Once: a rank that misses it drops the group at the next
	 * invitation, or at finalize. */
	for (r = 0; r < ctx->size; r++)
		if (r != KEEPER)
			pk_send(pk, r, P_DROP, pk->r.gen, 0, NULL, 0);
	drop_group(ctx, &pk->pend.g, &pk->pend.ghandle, &pk->pend.joined);
	repl_end(pk);
}

/* Create the slot's new group through the SA, and start inviting. */
static void repl_start(struct ibmc__pk *pk, int slot)
{
	struct ibmc_context *ctx = pk->hc->ctx;
	struct ibmc_tr_join j = { .create = 1, .qkey = ctx->own_qkey };
	struct ibmc_tr_group g;
	uint32_t serial;
	int rc;

	pk->r.slot = slot;
	pk->r.gen = ++pk->gen;
	pk->k[slot] = K_FILLING;
	pk->r.done = calloc((size_t)ctx->size, 1);
	if (!pk->r.done) {
		repl_fail(pk, "out of memory");
		return;
	}
	/* Its MGID's serial: apart from the communicators' ids by the
	 * reserved one it starts from. */
	serial = ibmc__fnv1a32(IBMC__POOL_COMM_ID, &pk->r.gen,
			       sizeof(pk->r.gen));
	ibmc__mgid_derive_own(ctx->env.job, ctx->own_nonce, serial, 0xffff,
			      j.mgid);
	ibmc__mgid_format(j.mgid, pk->r.mgid);
	rc = ctx->ops->mcast_join(ctx->tr, &j, &g);
	if (rc) {
		repl_fail(pk, "creating group %s through the SA failed: %s",
			  pk->r.mgid, strerror(-rc));
		return;
	}
	pk->pend.g = g;
	pk->pend.joined = 1;
	pk->pend.gen = pk->r.gen;
	rc = ctx->ops->mcast_attach(ctx->tr, &g);
	if (rc < 0) {
		repl_fail(pk, "attaching to group %s failed: %s", pk->r.mgid,
			  strerror(-rc));
		return;
	}
	pk->pend.ghandle = rc;
	if (ibmc__group_format(&g, pk->r.addr)) {
		repl_fail(pk, "group %s cannot be written down", pk->r.mgid);
		return;
	}
	ibmc_log(IBMC_LOG_INFO,
		 "libibmcast: rank %d: the job's own pool: replacing slot %d: created through the SA group %s (MLID 0x%04x)",
		 ctx->rank, slot, pk->r.mgid, g.mlid);
	pk->r.done[KEEPER] = 1;
	pk->r.ndone = 1;
	pk->r.rounds = 0;
	pk->r.tries = 0;
	pk->r.phase = R_INVITE;
	pk->r.next_us = ibmc__task_now();
}

/* The next taken slot whose pause is over, one at a time (from progress
 * only: its SA create blocks). Returns when to look again for a slot still
 * pausing, INT64_MAX for none. */
static int64_t repl_next(struct ibmc__pk *pk, int64_t now)
{
	int64_t d = INT64_MAX;
	int s;

	if (pk->r.phase != R_IDLE)
		return d;
	for (s = 0; s < pk->hc->ctx->own_npool; s++) {
		if (pk->k[s] != K_TAKEN)
			continue;
		if (now >= pk->retry_us[s]) {
			repl_start(pk, s);
			return d;
		}
		if (pk->retry_us[s] < d)
			d = pk->retry_us[s];
	}
	return d;
}

/* Every rank acknowledged the test: the slot is filled everywhere once
 * every rank acknowledged the FILL too (then, only, may it be granted). */
static void repl_fill(struct ibmc__pk *pk)
{
	pk->r.phase = R_FILL;
	if (!notice_new(pk, P_FILL, pk->r.gen, (uint32_t)pk->r.slot, NULL, 0,
			NULL)) {
		repl_fail(pk, "out of memory");
		return;
	}
	notice_send(pk, pk->notices);
}

static void repl_round(struct ibmc__pk *pk)
{
	struct ibmc_comm *hc = pk->hc;
	struct ibmc__hdr h;
	char who[96];
	int r;

	if (pk->r.phase == R_INVITE && pk->r.ndone == hc->size) {
		/* Every rank attached: now the test by multicast. */
		memset(pk->r.done, 0, (size_t)hc->size);
		pk->r.done[KEEPER] = 1;
		pk->r.ndone = 1;
		pk->r.phase = R_PING;
	}
	if (pk->r.phase == R_INVITE) {
		if (++pk->r.rounds > pk->tries_max) {
			ranks_text(pk->r.done, hc->size, 0, who, sizeof(who));
			repl_fail(pk, "ranks %s never answered the invitation to group %s (%d tries)",
				  who, pk->r.mgid, pk->tries_max);
			return;
		}
		for (r = 0; r < hc->size; r++)
			if (!pk->r.done[r])
				pk_send(pk, r, P_INV, pk->r.gen,
					(uint32_t)pk->r.slot, pk->r.addr,
					strlen(pk->r.addr));
		return;
	}
	if (pk->r.phase != R_PING)
		return;
	if (pk->r.ndone == hc->size) {
		repl_fill(pk);
		return;
	}
	if (pk->r.tries >= pk->tries_max) {
		ranks_text(pk->r.done, hc->size, 0, who, sizeof(who));
		repl_fail(pk, "ranks %s never got the test message of group %s by multicast (%d tries)",
			  who, pk->r.mgid, pk->r.tries);
		return;
	}
	pk->r.tries++;
	ibmc__keeper_hdr(pk->hc, IBMC__C_POOL, P_PING, pk->r.gen,
			 (uint32_t)pk->r.tries, &h);
	/* The hidden communicator never multicasts otherwise: it lends its
	 * handle to the group under test. */
	hc->ghandle = pk->pend.ghandle;
	ibmc__mcast_pkt(hc, &h, NULL, 0);
	hc->ghandle = -1;
}

static void repl_answer(struct ibmc__pk *pk, const struct ibmc__hdr *h)
{
	int r = (int)h->src;

	if (h->seq != pk->r.gen || !pk->r.done || pk->r.done[r])
		return;
	if (pk->r.phase == R_INVITE && h->a == P_JOINED) {
		if (h->b) {
			repl_fail(pk, "rank %d could not join or attach to group %s: %s",
				  r, pk->r.mgid, strerror((int)h->b));
			return;
		}
	} else if (!(pk->r.phase == R_PING && h->a == P_PACK)) {
		return;
	}
	pk->r.done[r] = 1;
	pk->r.ndone++;
	if (pk->r.phase == R_PING && pk->r.ndone == pk->hc->size)
		repl_fill(pk);
}

static void keeper_take(struct ibmc__pk *pk, int src, uint32_t id,
			const unsigned char *mask, size_t plen)
{
	struct ibmc_context *ctx = pk->hc->ctx;
	struct notice *n;
	uint32_t slot;
	int s, r, nm = 0;

	if (plen < pk->mlen)
		return;
	if (ring_find(&pk->answered, id, &slot)) {
		/* Asked again: the answer was lost. */
		n = notice_find(pk, P_GRANT, id);
		if (!n || !n->owed[src])
			pk_send(pk, src, P_GRANT, id, slot, mask, pk->mlen);
		else
			n->next_us = ibmc__task_now();
		return;
	}
	for (s = 0; s < ctx->own_npool; s++)
		if (pk->k[s] == K_FREE)
			break;
	slot = s < ctx->own_npool ? (uint32_t)s : NONE;
	for (r = 0; r < ctx->size; r++)
		nm += bit(mask, r);
	/* Taken: every rank must know (the others leave the group);
	 * none: only the members, who go lazy. */
	n = notice_new(pk, P_GRANT, id, slot, mask, pk->mlen,
		       slot == NONE ? mask : NULL);
	if (!n)
		return;		/* unanswered: rank 0 asks again */
	ring_add(&pk->answered, id, slot);
	if (slot == NONE) {
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: the job's own pool: no free slot for communicator %08x (%d members)",
			 ctx->rank, id, nm);
	} else {
		pk->k[slot] = K_TAKEN;
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: the job's own pool: slot %u to communicator %08x (%d members); its other nodes leave the group",
			 ctx->rank, slot, id, nm);
	}
	/* The replacement starts at the next progress: its SA create is
	 * not the new communicator's to wait for (the keeper may be its
	 * rank 0). */
	notice_send(pk, n);
}

static void input(struct ibmc__pk *pk, const struct ibmc__hdr *h,
		  const unsigned char *payload, size_t plen, int is_mcast)
{
	int keeper = pk->hc->rank == KEEPER, src = (int)h->src;

	switch (h->a) {
	case P_TAKE:
		if (keeper)
			keeper_take(pk, src, h->seq, payload, plen);
		return;
	case P_GACK:
		if (keeper)
			notice_ack(pk, P_GRANT, h->seq, src);
		return;
	case P_FACK:
		if (keeper)
			notice_ack(pk, P_FILL, h->seq, src);
		return;
	case P_JOINED:
	case P_PACK:
		if (keeper)
			repl_answer(pk, h);
		return;
	default:
		break;
	}
	if (src != KEEPER)
		return;
	switch (h->a) {
	case P_GRANT:
		rank_grant(pk, h, payload, plen);
		break;
	case P_INV:
		rank_invite(pk, h, payload, plen);
		break;
	case P_PING:
		/* Only multicast proves the switches carry the group. */
		if (is_mcast && pk->pend.ghandle >= 0 &&
		    pk->pend.gen == h->seq)
			pk_send(pk, KEEPER, P_PACK, h->seq, 0, NULL, 0);
		break;
	case P_FILL:
		rank_fill(pk, h);
		break;
	case P_DROP:
		if (pk->pend.gen == h->seq)
			drop_group(pk->hc->ctx, &pk->pend.g,
				   &pk->pend.ghandle, &pk->pend.joined);
		break;
	default:
		break;
	}
}

void ibmc__pk_input(struct ibmc_comm *hc, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen, int is_mcast)
{
	struct ibmc__pk *pk = hc->ctx->pk;

	if (pk && pk->hc == hc)
		input(pk, h, payload, plen, is_mcast);
}

/* A notice every rank acknowledged, or that timed out. */
static void notice_done(struct ibmc__pk *pk, struct notice *n)
{
	struct ibmc_context *ctx = pk->hc->ctx;
	char who[96];

	if (n->nowed)
		ranks_text(n->owed, ctx->size, 1, who, sizeof(who));
	if (n->op == P_GRANT && n->nowed) {
		/* Ranks finalized already, or dead: they never use the
		 * group again either. */
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: the job's own pool: ranks %s did not acknowledge the taking of slot %d by communicator %08x within %lld ms",
			 ctx->rank, who, (int)n->b, n->seq,
			 (long long)(pk->silence_us / 1000));
	} else if (n->op == P_FILL && (int)n->b == pk->r.slot &&
		   pk->r.phase == R_FILL) {
		if (n->nowed) {
			ibmc_log(IBMC_LOG_WARN,
				 "libibmcast: rank %d: the job's own pool: ranks %s did not acknowledge group %s as slot %d's within %lld ms; the slot stays unused",
				 ctx->rank, who, pk->r.mgid, pk->r.slot,
				 (long long)(pk->silence_us / 1000));
			pk->k[pk->r.slot] = K_LOST;
		} else {
			pk->k[pk->r.slot] = K_FREE;
			pk->fails[pk->r.slot] = 0;
			ibmc_log(IBMC_LOG_INFO,
				 "libibmcast: rank %d: the job's own pool: group %s fills slot %d: every rank attached, got its test by multicast and acknowledged",
				 ctx->rank, pk->r.mgid, pk->r.slot);
		}
		repl_end(pk);
	}
}

int64_t ibmc__pk_progress(struct ibmc_context *ctx, int64_t now)
{
	struct ibmc__pk *pk = ctx->pk;
	struct notice **pp, *n;
	struct ask *a;
	int64_t d = INT64_MAX;

	if (!pk)
		return d;
	for (a = pk->asks; a; a = a->next) {
		if (now >= a->next_us) {
			pk_send(pk, KEEPER, P_TAKE, a->id, 0, a->mask,
				pk->mlen);
			a->next_us = now + pk->period_us;
		}
		if (a->next_us < d)
			d = a->next_us;
	}
	for (pp = &pk->notices; (n = *pp);) {
		if (!n->nowed || now >= n->until_us) {
			*pp = n->next;
			notice_done(pk, n);
			notice_free(n);
			continue;
		}
		if (now >= n->next_us) {
			notice_send(pk, n);
			n->next_us = now + pk->period_us;
		}
		if (n->next_us < d)
			d = n->next_us;
		pp = &n->next;
	}
	if (pk->r.phase == R_IDLE && pk->hc->rank == KEEPER) {
		int64_t again = repl_next(pk, now);

		if (again < d)
			d = again;
	}
	if (pk->r.phase == R_INVITE || pk->r.phase == R_PING) {
		if (now >= pk->r.next_us) {
			pk->r.next_us = now + pk->period_us;
			repl_round(pk);
		}
		if (pk->r.phase != R_IDLE && pk->r.next_us < d)
			d = pk->r.next_us;
	}
	return d;
}

/* ---- a communicator's members ------------------------------------------ */

struct heard_arg {
	struct ibmc__pk *pk;
	uint32_t id;
};

static int heard(void *arg)
{
	const struct heard_arg *a = arg;

	return ring_find(&a->pk->heard, a->id, NULL);
}

int ibmc__pk_take(struct ibmc_comm *c)
{
	struct ibmc_context *ctx = c->ctx;
	struct ibmc__pk *pk = ctx->pk;
	struct heard_arg arg = { .pk = pk, .id = c->id };
	struct ask *a = NULL, **pp;
	struct resv *v, **vp;
	char text[IBMC_MGID_STRLEN];
	uint32_t slot;
	int i, timeout;

	if (!pk) {
		snprintf(c->why_buf, sizeof(c->why_buf),
			 "the job's own pool has no keeper (its hidden communicator could not be made at ibmc_init)");
		return -ENOTCONN;
	}
	timeout = (int)(pk->silence_us / 1000);
	if (c->rank == 0 && !ring_find(&pk->heard, c->id, NULL)) {
		a = calloc(1, sizeof(*a));
		if (a)
			a->mask = calloc(pk->mlen, 1);
		if (!a || !a->mask) {
			free(a);
			snprintf(c->why_buf, sizeof(c->why_buf),
				 "out of memory asking the keeper of the job's own pool");
			return -ENOMEM;
		}
		for (i = 0; i < c->size; i++)
			a->mask[c->members[i] >> 3] |=
				(unsigned char)(1u << (c->members[i] & 7));
		a->id = c->id;
		a->next_us = ibmc__task_now() + pk->period_us;
		a->next = pk->asks;
		pk->asks = a;
		pk_send(pk, KEEPER, P_TAKE, a->id, 0, a->mask, pk->mlen);
	}
	ibmc__progress_until(ctx, heard, &arg, timeout);
	for (pp = &pk->asks; a && *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			free(a->mask);
			free(a);
			break;
		}
	if (!ring_find(&pk->heard, c->id, &slot)) {
		snprintf(c->why_buf, sizeof(c->why_buf),
			 "no word from the keeper of the job's own pool (world rank 0) within %d ms",
			 timeout);
		return -ETIMEDOUT;
	}
	if (slot == NONE)
		return -ENOSPC;
	for (vp = &pk->resv; (v = *vp); vp = &v->next)
		if (v->id == c->id)
			break;
	if (!v) {
		snprintf(c->why_buf, sizeof(c->why_buf),
			 "the keeper gave slot %u of the job's own pool, which this rank did not hold",
			 slot);
		return -ESTALE;
	}
	*vp = v->next;
	c->own = v->g;
	c->ghandle = v->ghandle;
	c->gmtu = v->g.mtu ? v->g.mtu : ctx->mtu;
	c->own_slot = v->slot;
	/* The group is the communicator's: its lowest member per node
	 * leaves it at free, whichever rank joined for the node (the SA's
	 * membership is the port's). */
	c->own_joined = ibmc__own_node_leader(c);
	free(v);
	if (c->rank == 0) {
		ibmc__mgid_format(c->own.mgid, text);
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: communicator %08x took group %s (MLID 0x%04x) of the job's own pool (slot %u)",
			 ctx->rank, c->id, text, c->own.mlid, slot);
	}
	return 0;
}

/* ---- setup and teardown ------------------------------------------------ */

int ibmc__pk_open(struct ibmc_context *ctx)
{
	struct ibmc__pk *pk = calloc(1, sizeof(*pk));
	int rc, ms;

	if (!pk)
		return -ENOMEM;
	pk->mlen = ((size_t)ctx->size + 7) / 8;
	if (IBMC__WIRE_POOL + pk->mlen > ctx->mtu) {
		free(pk);
		return -EMSGSIZE;
	}
	ms = ctx->env.timeout_ms ? ctx->env.timeout_ms : SILENCE_DEFAULT_MS;
	pk->silence_us = (int64_t)ms * 1000;
	pk->period_us = (int64_t)ctx->env.mtest_period_ms * 1000;
	pk->tries_max = ctx->env.mtest_tries;
	pk->pend.ghandle = -1;
	rc = ibmc__comm_create_mode(ctx, NULL, ctx->size, IBMC__MODE_P2P,
				    IBMC__POOL_COMM_ID, IBMC_GROUP_NEXT,
				    &pk->hc);
	if (rc) {
		free(pk);
		return rc;
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->pk = pk;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

void ibmc__pk_free(struct ibmc_context *ctx)
{
	struct ibmc__pk *pk = ctx->pk;
	struct notice *n;
	struct resv *v;
	struct ask *a;

	if (!pk)
		return;
	ctx->pk = NULL;
	if (pk->r.phase != R_IDLE)
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: the job's own pool: finalize abandons the replacement of slot %d",
			 ctx->rank, pk->r.slot);
	drop_group(ctx, &pk->pend.g, &pk->pend.ghandle, &pk->pend.joined);
	while ((v = pk->resv)) {
		pk->resv = v->next;
		drop_group(ctx, &v->g, &v->ghandle, &v->joined);
		free(v);
	}
	while ((n = pk->notices)) {
		pk->notices = n->next;
		notice_free(n);
	}
	while ((a = pk->asks)) {
		pk->asks = a->next;
		free(a->mask);
		free(a);
	}
	free(pk->r.done);
	ibmc__comm_destroy(pk->hc);
	free(pk);
}
