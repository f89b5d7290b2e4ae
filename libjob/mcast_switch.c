/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The switch of a communicator to multicast (see mcast_switch.h). Rank 0
 * repeats its offer every IBMCAST_MCAST_TEST_PERIOD_MS to the members that
 * have not answered, until the collective timeout (IBMCAST_BCAST_TIMEOUT_MS:
 * a member that long silent would fail a collective too); a member
 * repeats its answer as long as it has no decision, and rank 0 answers
 * each repetition with the decision, so that every loss costs a period
 * and nothing else.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/mgid.h"
#include "libjob/comm.h"
#include "libjob/mcast_switch.h"
#include "libjob/send.h"

/* Calls a member may start after its answer before it needs the decision:
 * the decision is a round trip away, and the calls in between go on
 * point-to-point instead of waiting. */
#define FENCE 2
#define SILENCE_DEFAULT_MS 60000

struct ibmc__switch {
	int offered;		/* rank 0: offering; member: was offered */
	int known;		/* the decision is known */
	int err;		/* the decision: 0 switch at `at`, else never */
	uint32_t at;
	int applied;
	int64_t start_us, next_us, period_us;
	int64_t give_up_us;	/* rank 0: no answer from some member */
	/* Member. */
	uint32_t my_seq, fence;
	int attach_err;
	/* Rank 0. */
	unsigned char *answered;
	int nanswered;
	uint32_t max_seq;
	char addr[IBMC_GROUP_STRLEN];	/* "": the members have the group */
};

static int seq_ge(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

static int silence_ms(const struct ibmc_comm *c)
{
	return c->ctx->env.timeout_ms ? c->ctx->env.timeout_ms :
					SILENCE_DEFAULT_MS;
}

int ibmc__switch_expect(struct ibmc_comm *c)
{
	struct ibmc__switch *sw = calloc(1, sizeof(*sw));

	if (!sw)
		return -ENOMEM;
	sw->start_us = ibmc__task_now();
	sw->period_us = (int64_t)c->ctx->env.mtest_period_ms * 1000;
	c->sw = sw;
	return 0;
}

static void send_kind(struct ibmc_comm *c, int to, int kind, uint32_t a,
		      uint32_t b, const void *payload, size_t plen)
{
	struct ibmc__hdr h;

	memset(&h, 0, sizeof(h));
	h.kind = (uint8_t)kind;
	h.coll = IBMC__C_SWITCH;
	h.comm_id = c->id;
	h.version = c->version;
	h.src = (uint32_t)c->rank;
	h.a = a;
	h.b = b;
	ibmc__send_pkt(c, to, &h, payload, plen);
}

static void send_offers(struct ibmc_comm *c, struct ibmc__switch *sw)
{
	int r;

	for (r = 1; r < c->size; r++)
		if (!sw->answered[r])
			send_kind(c, r, IBMC__K_SWOFFER, 0, 0, sw->addr,
				  strlen(sw->addr));
}

/* Rank 0: the decision, to every member (again to those who ask). */
static void decide(struct ibmc_comm *c, struct ibmc__switch *sw, int err)
{
	int r;

	sw->known = 1;
	sw->err = err;
	if (!err) {
		/* Past rank 0's next call too: rank 0 may be inside a call
		 * that chose its algorithm and has not taken its sequence
		 * number yet (waiting for room, task.c). */
		sw->at = sw->max_seq;
		if (!seq_ge(sw->at, c->next_seq + 1))
			sw->at = c->next_seq + 1;
	} else if (c->mcast_err) {
		c->mcast_why = c->why_buf;
	}
	for (r = 1; r < c->size; r++)
		send_kind(c, r, IBMC__K_SWAT, sw->at, (uint32_t)err, NULL, 0);
}

void ibmc__switch_abandon(struct ibmc_comm *c, int err)
{
	struct ibmc__switch *sw = c->sw;
	int r;

	if (!sw || sw->known || c->rank != 0)
		return;
	/* Members wait for no offer (they never reached a fence): this
	 * only tells them why they stay point-to-point, once. */
	sw->known = 1;
	sw->err = err;
	for (r = 1; r < c->size; r++)
		send_kind(c, r, IBMC__K_SWAT, 0, (uint32_t)err, NULL, 0);
}

void ibmc__switch_offer(struct ibmc_comm *c, const struct ibmc_tr_group *g)
{
	struct ibmc__switch *sw = c->sw;

	if (!sw || sw->offered || c->rank != 0)
		return;
	sw->answered = calloc((size_t)c->size, 1);
	if (!sw->answered) {
		snprintf(c->why_buf, sizeof(c->why_buf),
			 "out of memory offering the group to the members");
		c->mcast_err = -ENOMEM;
		c->mcast_why = c->why_buf;
		return;
	}
	if (g && ibmc__group_format(g, sw->addr))
		sw->addr[0] = 0;
	sw->offered = 1;
	sw->max_seq = c->next_seq;
	sw->next_us = ibmc__task_now();
	sw->give_up_us = sw->next_us + (int64_t)silence_ms(c) * 1000;
	if (c->size == 1)
		decide(c, sw, 0);
}

/* A member: attach to the offered group (unless it has it) and answer. */
static void member_offer(struct ibmc_comm *c, struct ibmc__switch *sw,
			 const unsigned char *payload, size_t plen)
{
	struct ibmc_context *ctx = c->ctx;
	char text[IBMC_GROUP_STRLEN];
	struct ibmc_tr_group g;
	int rc;

	if (!sw->offered) {
		sw->offered = 1;
		sw->my_seq = c->next_seq;
		sw->fence = c->next_seq + FENCE;
		sw->next_us = ibmc__task_now() + sw->period_us;
		if (plen && c->ghandle < 0) {
			if (plen >= sizeof(text)) {
				sw->attach_err = EBADMSG;
				goto answer;
			}
			memcpy(text, payload, plen);
			text[plen] = 0;
			if (ibmc__group_parse(text, &g)) {
				sw->attach_err = EBADMSG;
				goto answer;
			}
			rc = ctx->ops->mcast_attach(ctx->tr, &g);
			if (rc < 0) {
				sw->attach_err = -rc;
				goto answer;
			}
			c->ghandle = rc;
			c->gmtu = g.mtu ? g.mtu : ctx->mtu;
		} else if (c->ghandle < 0) {
			sw->attach_err = ENOTCONN;
		}
	}
answer:
	send_kind(c, 0, IBMC__K_SWSEQ, sw->my_seq, (uint32_t)sw->attach_err,
		  NULL, 0);
}

void ibmc__switch_input(struct ibmc_comm *c, const struct ibmc__hdr *h,
			const unsigned char *payload, size_t plen)
{
	struct ibmc__switch *sw = c->sw;
	int r = (int)h->src;

	if (!sw) {
		/* This member found a free group of the pool where rank 0
		 * found none (members that created communicators in other
		 * orders): say so at once, so that nobody waits for it. */
		if (c->rank && h->kind == IBMC__K_SWOFFER && r == 0)
			send_kind(c, 0, IBMC__K_SWSEQ, c->next_seq, EEXIST,
				  NULL, 0);
		return;
	}
	if (c->rank == 0) {
		if (h->kind != IBMC__K_SWSEQ || !sw->offered)
			return;
		if (sw->known) {
			send_kind(c, r, IBMC__K_SWAT, sw->at, (uint32_t)sw->err,
				  NULL, 0);
			return;
		}
		if (sw->answered[r])
			return;
		if (h->b) {
			snprintf(c->why_buf, sizeof(c->why_buf),
				 "rank %d could not attach to the group offered: %s",
				 r, strerror((int)h->b));
			decide(c, sw, (int)h->b);
			return;
		}
		sw->answered[r] = 1;
		if (seq_ge(h->a + FENCE, sw->max_seq))
			sw->max_seq = h->a + FENCE;
		if (++sw->nanswered == c->size - 1)
			decide(c, sw, 0);
		return;
	}
	if (r != 0)
		return;
	if (h->kind == IBMC__K_SWOFFER && !sw->known) {
		member_offer(c, sw, payload, plen);
	} else if (h->kind == IBMC__K_SWAT && !sw->known) {
		sw->known = 1;
		sw->at = h->a;
		sw->err = (int)h->b;
		if (sw->err && c->mcast_err) {
			snprintf(c->why_buf, sizeof(c->why_buf),
				 "rank 0 gave the switch to multicast up: %s",
				 strerror(sw->err));
			c->mcast_err = -sw->err;
			c->mcast_why = c->why_buf;
		}
	}
}

int64_t ibmc__switch_progress(struct ibmc_comm *c, int64_t now)
{
	struct ibmc__switch *sw = c->sw;

	if (!sw || !sw->offered || sw->known)
		return INT64_MAX;
	if (now < sw->next_us)
		return sw->next_us;
	sw->next_us = now + sw->period_us;
	if (c->rank) {
		send_kind(c, 0, IBMC__K_SWSEQ, sw->my_seq,
			  (uint32_t)sw->attach_err, NULL, 0);
		return sw->next_us;
	}
	if (now >= sw->give_up_us) {
		snprintf(c->why_buf, sizeof(c->why_buf),
			 "members did not answer rank 0's offer of the group within %d ms",
			 silence_ms(c));
		decide(c, sw, ETIMEDOUT);
		return INT64_MAX;
	}
	send_offers(c, sw);
	return sw->next_us;
}

static int decision_known(void *arg)
{
	const struct ibmc__switch *sw = arg;

	return sw->known;
}

int ibmc__switch_gate(struct ibmc_comm *c)
{
	struct ibmc__switch *sw = c->sw;
	int timeout;

	if (!sw || sw->applied)
		return 0;
	if (c->rank && sw->offered && !sw->known &&
	    seq_ge(c->next_seq, sw->fence)) {
		timeout = silence_ms(c);
		ibmc__progress_until(c->ctx, decision_known, sw, timeout);
		if (!sw->known) {
			ibmc_log(IBMC_LOG_WARN,
				 "libibmcast: rank %d: communicator %08x: no word from rank 0 on the switch to multicast for %d ms",
				 c->rank, c->id, timeout);
			return -ETIMEDOUT;
		}
	}
	if (!sw->known || sw->err || !seq_ge(c->next_seq, sw->at))
		return 0;
	sw->applied = 1;
	c->mcast_err = 0;
	c->mcast_why = NULL;
	c->st.switch_us = (uint64_t)(ibmc__task_now() - sw->start_us);
	ibmc_log(IBMC_LOG_INFO,
		 "libibmcast: rank %d: communicator %08x multicasts from collective #%u on (%lld us after creation)",
		 c->rank, c->id, sw->at, (long long)c->st.switch_us);
	return 0;
}

void ibmc__switch_free(struct ibmc_comm *c)
{
	if (c->sw) {
		free(c->sw->answered);
		free(c->sw);
		c->sw = NULL;
	}
}
