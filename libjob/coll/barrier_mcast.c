/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The multicast-release barrier: arrivals climb a binomial tree rooted at
 * rank 0 (a rank reports once it and its whole subtree entered), and the
 * root releases everyone with one multicast on the communicator's group,
 * sent twice against loss. Without multicast the release goes down the
 * tree instead.
 *
 * Reliability without acks: a rank that reported keeps reporting, after
 * the measured arrival-to-release delay (SRTT + 4 RTTVAR of earlier
 * barriers) and then doubling, until it is released; a parent answers a
 * repeated report with the release by unicast if it has it, and a rank
 * released by unicast passes it on to its children at once (their
 * multicast copy was likely lost too). So a lost arrival or a lost release
 * costs about one delay estimate, not a timeout.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "libjob/coll/barrier.h"
#include "libjob/comm.h"
#include "libjob/model.h"
#include "libjob/rtt.h"
#include "libjob/send.h"
#include "libjob/tree.h"

#define SLOT_ARRIVE 0
#define SLOT_RELEASE 1
/* Longest wait between reports: they are small, and the measured delay
 * includes the wait for the last rank to arrive, so it can grow long. */
#define REPORT_MAX_US 20000

struct mrel {
	struct ibmc__tree tree;
	unsigned char *arrived;	/* per child */
	int narrived;
	int reported, released, resends;
	int mcast;		/* the release goes by multicast */
	int64_t report_at;	/* us: first report */
	int64_t next_report;	/* us */
	int64_t last_progress;	/* ms */
};

static void send_slot(struct ibmc__task *t, int to, int slot)
{
	struct ibmc__hdr h;

	memset(&h, 0, sizeof(h));
	h.kind = IBMC__K_MSG;
	h.coll = IBMC__C_BARRIER;
	h.comm_id = t->comm->id;
	h.version = t->comm->version;
	h.seq = t->seq;
	h.src = (uint32_t)t->comm->rank;
	h.a = slot;
	if (to < 0)
		ibmc__mcast_pkt(t->comm, &h, NULL, 0);
	else
		ibmc__send_pkt(t->comm, to, &h, NULL, 0);
}

static void release_children(struct ibmc__task *t, struct mrel *m)
{
	int i;

	for (i = 0; i < m->tree.nchildren; i++)
		send_slot(t, m->tree.children[i], SLOT_RELEASE);
}

static int64_t report_rto(const struct ibmc__task *t, const struct mrel *m)
{
	const struct ibmc_comm *c = t->comm;
	int64_t base = (int64_t)c->ctx->env.rto_ms * 1000;
	int levels = 1;

	while ((1 << levels) < c->size)
		levels++;
	int64_t rto = ibmc__rtt_rto(&c->rel_rtt, base * (levels + 1));

	(void)m;
	return rto < REPORT_MAX_US ? rto : REPORT_MAX_US;
}

static int start(struct ibmc__task *t)
{
	struct ibmc_comm *c = t->comm;
	struct mrel *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return -ENOMEM;
	t->priv = m;
	rc = ibmc__tree_build(&m->tree, IBMC__A_BINOMIAL, 1, c->size, 0,
			      c->rank);
	if (rc)
		return rc;
	if (m->tree.nchildren) {
		m->arrived = calloc((size_t)m->tree.nchildren, 1);
		if (!m->arrived)
			return -ENOMEM;
	}
	m->mcast = !c->mcast_err && c->ghandle >= 0;
	m->last_progress = ibmc__now_ms();
	m->next_report = INT64_MAX;
	return 0;
}

static void release(struct ibmc__task *t, struct mrel *m, int by_mcast)
{
	m->released = 1;
	m->last_progress = ibmc__now_ms();
	if (t->comm->rank == 0 && m->mcast) {
		send_slot(t, -1, SLOT_RELEASE);
		send_slot(t, -1, SLOT_RELEASE);
	} else if (!m->mcast || !by_mcast) {
		release_children(t, m);
	}
}

static int progress(struct ibmc__task *t, int64_t now)
{
	struct mrel *m = t->priv;
	int timeout = t->comm->ctx->env.timeout_ms;
	int64_t w;

	if (m->released)
		return 0;
	if (m->narrived == m->tree.nchildren && !m->reported) {
		if (t->comm->rank == 0) {
			release(t, m, 0);
			return 0;
		}
		send_slot(t, m->tree.parent, SLOT_ARRIVE);
		m->reported = 1;
		m->report_at = now;
		m->next_report = now + report_rto(t, m);
	} else if (m->reported && now >= m->next_report) {
		ibmc__model_quiet_on(t->comm->ctx);
		send_slot(t, m->tree.parent, SLOT_ARRIVE);
		ibmc__model_quiet_off(t->comm->ctx);
		t->comm->st.pulls++;
		if (m->resends < 16)
			m->resends++;
		w = report_rto(t, m) << (m->resends < 3 ? m->resends : 3);
		m->next_report = now + ibmc__retry_wait(w < REPORT_MAX_US ? w :
							REPORT_MAX_US,
							now - m->report_at);
	}
	if (timeout && ibmc__now_ms() - m->last_progress > timeout)
		return -ETIMEDOUT;
	return IBMC_INPROGRESS;
}

static int child_index(const struct mrel *m, int rank)
{
	int i;

	for (i = 0; i < m->tree.nchildren; i++)
		if (m->tree.children[i] == rank)
			return i;
	return -1;
}

static void input(struct ibmc__task *t, const struct ibmc__hdr *h,
		  const unsigned char *payload, size_t plen, int is_mcast)
{
	struct mrel *m = t->priv;
	int i;

	(void)payload;
	(void)plen;
	if (h->kind != IBMC__K_MSG)
		return;
	if (h->a == SLOT_ARRIVE && !is_mcast) {
		i = child_index(m, (int)h->src);
		if (i < 0)
			return;
		if (!m->arrived[i]) {
			ibmc__model_take(t->comm->ctx);
			m->arrived[i] = 1;
			m->narrived++;
			m->last_progress = ibmc__now_ms();
		} else if (m->released) {
			/* its release was lost: recovery, not modeled */
			ibmc__model_quiet_on(t->comm->ctx);
			send_slot(t, (int)h->src, SLOT_RELEASE);
			ibmc__model_quiet_off(t->comm->ctx);
		}
	} else if (h->a == SLOT_RELEASE && !m->released) {
		if (is_mcast ? (int)h->src != 0 : (int)h->src != m->tree.parent)
			return;
		if (m->reported && !m->resends) {
			int64_t now = ibmc__task_now();

			/* Karn: only a release to a first report. */
			if (now > m->report_at)
				ibmc__rtt_sample(&t->comm->rel_rtt,
						 now - m->report_at);
		}
		ibmc__model_take(t->comm->ctx);
		release(t, m, is_mcast);
	}
}

static int64_t deadline(const struct ibmc__task *t)
{
	const struct mrel *m = t->priv;

	return m->reported && !m->released ? m->next_report : INT64_MAX;
}

static void complete(struct ibmc__task *t, int rc)
{
	if (!rc)
		t->comm->st.barriers++;
	t->comm->last_algo[IBMC__C_BARRIER] = IBMC__BA_MCAST;
	t->comm->last_param[IBMC__C_BARRIER] = 0;
}

/* Completed: a child whose release was lost reports again. */
static void late(struct ibmc__task *t, const struct ibmc__hdr *h,
		 const unsigned char *payload, size_t plen, int is_mcast)
{
	struct mrel *m = t->priv;

	(void)payload;
	(void)plen;
	if (m->released && h->kind == IBMC__K_MSG && h->a == SLOT_ARRIVE &&
	    !is_mcast && child_index(m, (int)h->src) >= 0) {
		ibmc__model_quiet_on(t->comm->ctx);
		send_slot(t, (int)h->src, SLOT_RELEASE);
		ibmc__model_quiet_off(t->comm->ctx);
	}
}

/* Children that have not arrived; once reported, the parent (the
 * release comes from rank 0 through it: a dead rank 0 is found by its
 * children, which tell everyone, live.h). */
static int waits_for(const struct ibmc__task *t, int *ranks, int max)
{
	const struct mrel *m = t->priv;
	int i, n = 0;

	if (m->released)
		return 0;
	for (i = 0; i < m->tree.nchildren && n < max; i++)
		if (!m->arrived[i])
			ranks[n++] = m->tree.children[i];
	if (m->reported && n < max)
		ranks[n++] = m->tree.parent;
	return n;
}

static void fini(struct ibmc__task *t)
{
	struct mrel *m = t->priv;

	if (!m)
		return;
	ibmc__tree_free(&m->tree);
	free(m->arrived);
	free(m);
}

const struct ibmc__task_ops ibmc__barrier_mcast_ops = {
	.start = start,
	.input = input,
	.progress = progress,
	.deadline = deadline,
	.complete = complete,
	.late = late,
	.fini = fini,
	.waits_for = waits_for,
};
