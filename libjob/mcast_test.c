/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multicast testing (see mcast_test.h). Rank 0 drives it from its timer,
 * one round per IBMCAST_MCAST_TEST_PERIOD_MS: first invitations (unicast)
 * to the members that have not joined yet, bounded by the tries; then one
 * test message by multicast per round until every member acknowledged
 * (unicast), bounded by the tries; then the outcome to every member. A
 * member acknowledges only a test message that came by multicast (a
 * unicast one proves nothing about the switches), repeats its last answer
 * every round so that lost ones cost a round and not the test, and gives
 * up when rank 0 is silent for the broadcast timeout. After completion,
 * rank 0's lingering task answers late answers with the outcome.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "libjob/mcast_switch.h"
#include "libjob/mcast_test.h"
#include "libjob/mode.h"
#include "libjob/send.h"

#define SILENCE_DEFAULT_MS 60000

struct mtest {
	int64_t next_us;	/* next round */
	int64_t period_us;
	int tries_max;
	int result;		/* the outcome once known */
	int known;
	/* Rank 0. */
	int rounds;		/* invitation rounds */
	int tries;		/* test messages sent */
	unsigned char *joined, *acked;
	int njoined, nacked;
	/* Members. */
	int invited, join_rc, pinged;
	int64_t silent_until;	/* give up when rank 0 says nothing */
	int64_t silence_us;
};

static void hdr(const struct ibmc__task *t, struct ibmc__hdr *h, int kind,
		uint32_t a)
{
	memset(h, 0, sizeof(*h));
	h->kind = (uint8_t)kind;
	h->coll = IBMC__C_MTEST;
	h->comm_id = t->comm->id;
	h->version = t->comm->version;
	h->seq = t->seq;
	h->src = (uint32_t)t->comm->rank;
	h->a = a;
}

static void send_kind(struct ibmc__task *t, int to, int kind, uint32_t a,
		      uint32_t b)
{
	struct ibmc__hdr h;

	hdr(t, &h, kind, a);
	h.b = b;
	ibmc__send_pkt(t->comm, to, &h, NULL, 0);
}

/* Rank 0 knows the outcome: tell every member (again when they ask). */
static void conclude(struct ibmc__task *t, struct mtest *m, int rc)
{
	int r;

	m->known = 1;
	m->result = rc;
	for (r = 1; r < t->comm->size; r++)
		send_kind(t, r, IBMC__K_MTDONE, (uint32_t)-rc, 0);
}

static void why(struct ibmc_comm *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void why(struct ibmc_comm *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why_buf, sizeof(c->why_buf), fmt, ap);
	va_end(ap);
}

/* "ranks 3, 5, 9 (and 4 more)" of the members with flag[r] == 0. */
static void missing(const struct ibmc_comm *c, const unsigned char *flag,
		    char *buf, size_t len)
{
	size_t off = 0;
	int r, n = 0, more = 0;

	buf[0] = 0;
	for (r = 1; r < c->size; r++) {
		if (flag[r])
			continue;
		if (n < 4 && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%d",
						n ? ", " : "", r);
		else
			more++;
		n++;
	}
	if (more && off < len)
		snprintf(buf + off, len - off, " and %d more", more);
}

static int t_start(struct ibmc__task *t)
{
	struct ibmc_comm *c = t->comm;
	struct ibmc_context *ctx = c->ctx;
	struct mtest *m = t->priv;
	int rc;

	m->period_us = (int64_t)ctx->env.mtest_period_ms * 1000;
	m->tries_max = ctx->env.mtest_tries;
	m->next_us = ibmc__task_now();
	m->silence_us = (int64_t)(ctx->env.timeout_ms ? ctx->env.timeout_ms :
				  SILENCE_DEFAULT_MS) * 1000;
	m->silent_until = m->next_us + m->silence_us;
	if (c->rank)
		return 0;
	m->joined = calloc((size_t)c->size, 1);
	m->acked = calloc((size_t)c->size, 1);
	if (!m->joined || !m->acked)
		return -ENOMEM;
	/* Seed 000 step 1: rank 0 creates the group (and joins it). */
	rc = ibmc__mode_join(c, 0, 0);
	if (rc)
		conclude(t, m, rc);
	return 0;
}

static void root_input(struct ibmc__task *t, struct mtest *m,
		       const struct ibmc__hdr *h, int is_mcast)
{
	struct ibmc_comm *c = t->comm;
	int r = (int)h->src;

	(void)is_mcast;
	if (m->known)
		return;
	if (h->kind == IBMC__K_MTJOINED && h->a != IBMC__MT_WAITING) {
		if (h->a) {
			why(c, "rank %d could not join or attach to the group: %s",
			    r, strerror((int)h->a));
			conclude(t, m, -(int)h->a);
			return;
		}
		if (!m->joined[r]) {
			m->joined[r] = 1;
			if (++m->njoined == c->size - 1)
				c->st.mtest_join_us = (uint64_t)
					(ibmc__task_now() - c->mtest_start_us);
		}
	} else if (h->kind == IBMC__K_MTACK && m->joined[r] && !m->acked[r]) {
		m->acked[r] = 1;
		if (++m->nacked == c->size - 1)
			conclude(t, m, 0);
	}
}

static void member_input(struct ibmc__task *t, struct mtest *m,
			 const struct ibmc__hdr *h, int is_mcast)
{
	struct ibmc_comm *c = t->comm;

	if (h->src != 0 || m->known)
		return;
	m->silent_until = ibmc__task_now() + m->silence_us;
	switch (h->kind) {
	case IBMC__K_MTINV:
		if (!m->invited) {
			m->invited = 1;
			m->join_rc = ibmc__mode_join(c, (uint16_t)h->a, h->b);
		}
		send_kind(t, 0, IBMC__K_MTJOINED, (uint32_t)-m->join_rc, 0);
		break;
	case IBMC__K_MTPING:
		if (!is_mcast || !m->invited || m->join_rc)
			break;
		m->pinged = 1;
		c->st.mtest_tries++;
		send_kind(t, 0, IBMC__K_MTACK, h->a, 0);
		break;
	case IBMC__K_MTDONE:
		m->known = 1;
		m->result = -(int)h->a;
		if (m->result && !m->join_rc)
			why(c, "multicast testing failed at rank 0: %s",
			    strerror((int)h->a));
		break;
	default:
		break;
	}
}

static void t_input(struct ibmc__task *t, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen, int is_mcast)
{
	(void)payload;
	(void)plen;
	if (t->comm->rank == 0)
		root_input(t, t->priv, h, is_mcast);
	else
		member_input(t, t->priv, h, is_mcast);
}

static void root_round(struct ibmc__task *t, struct mtest *m)
{
	struct ibmc_comm *c = t->comm;
	struct ibmc__hdr h;
	char who[96];
	int r;

	if (m->njoined < c->size - 1) {
		if (++m->rounds > m->tries_max) {
			missing(c, m->joined, who, sizeof(who));
			why(c, "ranks %s never answered the invitation to join (%d tries)",
			    who, m->tries_max);
			conclude(t, m, -ETIMEDOUT);
			return;
		}
		for (r = 1; r < c->size; r++)
			if (!m->joined[r])
				send_kind(t, r, IBMC__K_MTINV, c->own.mlid,
					  c->own.mtu);
		return;
	}
	if (m->nacked == c->size - 1) {
		conclude(t, m, 0);	/* a communicator of one */
		return;
	}
	if (m->tries >= m->tries_max) {
		missing(c, m->acked, who, sizeof(who));
		why(c, "multicast testing gave up after %d tries: ranks %s never got the test message (the switches do not carry the group?)",
		    m->tries, who);
		conclude(t, m, -EHOSTUNREACH);
		return;
	}
	m->tries++;
	c->st.mtest_tries++;
	hdr(t, &h, IBMC__K_MTPING, (uint32_t)m->tries);
	ibmc__mcast_pkt(c, &h, NULL, 0);
}

static void member_round(struct ibmc__task *t, struct mtest *m, int64_t now)
{
	if (now >= m->silent_until) {
		m->known = 1;
		m->result = -ETIMEDOUT;
		why(t->comm, "multicast testing did not finish: no word from rank 0 for %lld ms",
		    (long long)(m->silence_us / 1000));
		return;
	}
	if (!m->invited)
		send_kind(t, 0, IBMC__K_MTJOINED, IBMC__MT_WAITING, 0);
	else if (m->pinged)
		send_kind(t, 0, IBMC__K_MTACK, 0, 0);
}

static int t_progress(struct ibmc__task *t, int64_t now)
{
	struct mtest *m = t->priv;

	if (!m->known && now >= m->next_us) {
		m->next_us = now + m->period_us;
		if (t->comm->rank == 0)
			root_round(t, m);
		else
			member_round(t, m, now);
	}
	return m->known ? m->result : IBMC_INPROGRESS;
}

static int64_t t_deadline(const struct ibmc__task *t)
{
	const struct mtest *m = t->priv;

	return m->known ? INT64_MAX : m->next_us;
}

/* The outcome becomes the communicator's multicast state. */
static void t_complete(struct ibmc__task *t, int rc)
{
	struct ibmc_comm *c = t->comm;

	c->mtest = NULL;
	if (rc == -ECANCELED)
		return;
	if (rc) {
		c->mcast_err = rc;
		c->mcast_why = c->why_buf;
		ibmc_log(IBMC_LOG_INFO,
			 "libibmcast: rank %d: communicator %08x stays point-to-point: %s",
			 c->rank, c->id, c->why_buf);
		return;
	}
	c->st.mtest_us = (uint64_t)(ibmc__task_now() - c->mtest_start_us);
	if (c->mode == IBMC__MODE_LAZY) {
		/* Broadcasts may multicast at once (their root's choice
		 * travels with the data); the other collectives, whose
		 * algorithm every member picks itself, once rank 0 has
		 * agreed the switch with every member. */
		c->lazy_ready = 1;
		if (c->rank == 0)
			ibmc__switch_offer(c, NULL);
		return;
	}
	c->mcast_err = 0;
	c->mcast_why = NULL;
}

/* Rank 0, after the outcome: a member that missed it asks again. */
static void t_late(struct ibmc__task *t, const struct ibmc__hdr *h,
		   const unsigned char *payload, size_t plen, int is_mcast)
{
	struct mtest *m = t->priv;

	(void)payload;
	(void)plen;
	(void)is_mcast;
	if (t->comm->rank == 0 && (h->kind == IBMC__K_MTJOINED ||
				   h->kind == IBMC__K_MTACK))
		send_kind(t, (int)h->src, IBMC__K_MTDONE,
			  (uint32_t)-m->result, 0);
}

static void t_fini(struct ibmc__task *t)
{
	struct mtest *m = t->priv;

	if (m) {
		free(m->joined);
		free(m->acked);
		free(m);
	}
}

static const struct ibmc__task_ops mtest_ops = {
	.start = t_start,
	.input = t_input,
	.progress = t_progress,
	.deadline = t_deadline,
	.complete = t_complete,
	.late = t_late,
	.fini = t_fini,
};

int ibmc__mtest_start(struct ibmc_comm *c, struct ibmc_request *req)
{
	struct ibmc__args args = { 0 };
	struct mtest *m = calloc(1, sizeof(*m));
	struct ibmc__task *t;
	int rc;

	if (!m)
		return -ENOMEM;
	rc = ibmc__task_start(c, IBMC__C_MTEST, 0, &mtest_ops, &args, m, req);
	if (rc)
		return rc;
	for (t = c->tasks; t && t->priv != m; t = t->next)
		;
	if (t) {
		t->background = 1;
		c->mtest = t;
	}
	return 0;
}
