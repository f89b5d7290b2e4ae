/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_fwd.c - carry one packet the way the switches would: unicast hop
 * by hop along the LFTs, multicast along the MFT spanning tree; count it on
 * every link it crosses; apply the injected faults; hand it to the
 * receiving QPs (Q_Key checked), stamped with its modeled arrival: cut
 * through, each hop's head waits for its link direction to be free (FIFO),
 * multicast copies leave a switch on all their ports at once. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "sim-fabric/dataplane.h"

#define HOP_LIMIT 64

const char *const dp_drop_names[DP_DROP_MAX] = {
	[DP_DROP_LOSS] = "loss",
	[DP_DROP_LINK_LOSS] = "link_loss",
	[DP_DROP_PATTERN] = "pattern",
	[DP_DROP_NO_ROUTE] = "no_route",
	[DP_DROP_MFT_UNREAD] = "mft_unread",
	[DP_DROP_LOOP] = "loop",
	[DP_DROP_NO_QP] = "no_qp",
	[DP_DROP_QKEY] = "qkey",
	[DP_DROP_RQ_OVERFLOW] = "rq_overflow",
	[DP_DROP_LINK_DOWN] = "link_down",
	[DP_DROP_LIFETIME] = "lifetime",
};

/* splitmix64: small, seedable, good enough for fault injection. */
uint64_t dp_rand(struct dp_faults *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

bool dp_chance(struct dp_faults *f, double p)
{
	if (p <= 0)
		return false;
	if (p >= 1)
		return true;
	return (double)(dp_rand(f) >> 11) * 0x1.0p-53 < p;
}

static bool in_scope(const struct dp_faults *f, bool mc)
{
	return f->scope == DP_SCOPE_ALL || (f->scope == DP_SCOPE_MC) == mc;
}

static void drop(struct dataplane *dp, int link, enum dp_drop why)
{
	dp->drops[why]++;
	if (link >= 0)
		dp->lc[link].drops[why]++;
}

/* A packet crosses link: counted there; false if the link loses it. */
static bool cross(struct dataplane *dp, int link, size_t len, bool faults,
		  bool recovery)
{
	/* A switch still forwarding to a dead port: the packet goes nowhere,
	 * as on hardware, until the SM has routed around it. */
	if (dp->link_down && dp->link_down[link]) {
		drop(dp, link, DP_DROP_LINK_DOWN);
		return false;
	}
	dp->lc[link].pkts++;
	dp->lc[link].bytes += len;
	if (recovery) {
		dp->lc[link].recovery_pkts++;
		dp->lc[link].recovery_bytes += len;
	}
	if (faults && dp->faults.link_loss && dp->faults.link_loss[link] > 0 &&
	    dp_chance(&dp->faults, dp->faults.link_loss[link])) {
		drop(dp, link, DP_DROP_LINK_LOSS);
		return false;
	}
	return true;
}

/* The deterministic pattern: decided once per send. */
static bool pattern_drops(struct dataplane *dp)
{
	struct dp_faults *f = &dp->faults;
	uint64_t n = ++f->npattern;

	if (f->drop_every && n % f->drop_every == 0)
		return true;
	return f->drop_from && n >= f->drop_from && n <= f->drop_to;
}

static struct dp_qmsg *make_msg(const struct ibmc_dp_recv *r, const void *pl,
				size_t len)
{
	struct dp_qmsg *m = malloc(sizeof(*m) + sizeof(struct ibmc_dp_hdr) +
				   sizeof(*r) + len);
	struct ibmc_dp_hdr h = { .type = IBMC_DP_RECV,
				 .version = IBMC_DP_VERSION,
				 .len = (uint32_t)len };

	if (!m)
		return NULL;
	m->next = NULL;
	m->len = sizeof(h) + sizeof(*r) + len;
	memcpy(m->data, &h, sizeof(h));
	memcpy(m->data + sizeof(h), r, sizeof(*r));
	memcpy(m->data + sizeof(h) + sizeof(*r), pl, len);
	return m;
}

/* One copy reaches a QP: loss at the last hop, duplication, reordering
 * and delay as injected. */
static void to_qp(struct dataplane *dp, struct dp_ep *ep, int last_link,
		  const struct ibmc_dp_recv *r, const void *pl, size_t len,
		  bool faults)
{
	struct dp_faults *f = &dp->faults;
	struct dp_qmsg *m;
	int copies = 1, i;

	if (faults && dp_chance(f, f->loss)) {
		drop(dp, last_link, DP_DROP_LOSS);
		return;
	}
	if (faults && dp_chance(f, f->dup))
		copies = 2;
	for (i = 0; i < copies; i++) {
		m = make_msg(r, pl, len);
		if (!m)
			return;
		dp->delivered++;
		if (faults && f->delay_ms > 0) {
			m->ep = ep;
			m->due_ns = ibmc__now_ns() +
				    (uint64_t)f->delay_ms * 1000000ull;
			if (dp->delay_tail)
				dp->delay_tail->next = m;
			else
				dp->delay_head = m;
			dp->delay_tail = m;
			continue;
		}
		if (faults && !ep->held && dp_chance(f, f->reorder)) {
			ep->held = m;
			ep->held_ns = ibmc__now_ns();
			continue;
		}
		dp_ep_deliver_msg(dp, ep, m);
	}
}

static bool qkey_ok(const struct dp_ep *ep, uint32_t qkey)
{
	return !ep->qkey || ep->qkey == qkey;
}

static uint32_t send_qkey(const struct dp_ep *src, uint32_t qkey)
{
	/* 0, or the high bit as in a UD work request: the QP's own Q_Key. */
	return qkey && !(qkey & 0x80000000u) ? qkey : src->qkey;
}

void dp_forward_uc(struct dataplane *dp, struct dp_ep *src,
		   const struct ibmc_dp_send_uc *s, const void *pl,
		   size_t len)
{
	const struct fabric_model *fm = &dp->fm;
	const struct fm_node *n = &fm->node[src->hca];
	bool faults = in_scope(&dp->faults, false);
	const struct dp_model *md = &dp->model;
	struct ibmc_dp_recv r = { 0 };
	int link, node, hops, port;
	uint64_t t, start = 0, ser = dp_model_ser(md, len, false);
	struct dp_ep *ep;
	bool charge;

	dp->sends++;
	if (len <= DP_SMALL_BYTES)
		dp->uc_small++;
	link = n->hca_port > 0 ? n->ports[n->hca_port].link : -1;
	if (faults && pattern_drops(dp)) {
		drop(dp, link, DP_DROP_PATTERN);
		return;
	}
	r.slid = n->lid;
	r.dlid = s->dlid;
	r.sqpn = src->qpn;
	r.qkey = send_qkey(src, s->qkey);
	r.o_s_ns = md->o_s_ns;
	r.o_r_ns = md->o_r_ns;
	node = src->hca;
	charge = !(s->flags & IBMC_DP_SEND_UNMODELED);
	t = dp_model_inject(dp, src->hca, s->t_ns, len, false, charge);
	if (s->dlid == n->lid) {
		/* The HCA loops it back itself, no link crossed. */
		link = -1;
		r.t_ns = t + ser;
		goto arrived;
	}
	if (link < 0 || s->dlid > fm->max_lid) {
		drop(dp, -1, DP_DROP_NO_ROUTE);
		return;
	}
	for (hops = 0;; hops++) {
		if (!cross(dp, link, len, faults, !charge))
			return;
		start = dp_model_link(dp, link, t, len, false, charge);
		t = start + md->link_ns + md->switch_ns;
		node = fm->link[link].to;
		if (!fm->node[node].is_switch)
			break;
		if (hops >= HOP_LIMIT) {
			drop(dp, link, DP_DROP_LOOP);
			return;
		}
		port = dp->lft[node][s->dlid];
		if (port == 0 || port > fm->node[node].nports ||
		    fm->node[node].ports[port].link < 0) {
			drop(dp, link, DP_DROP_NO_ROUTE);
			return;
		}
		link = fm->node[node].ports[port].link;
	}
	if (fm->node[node].lid != s->dlid) {
		drop(dp, link, DP_DROP_NO_ROUTE);
		return;
	}
	r.t_ns = start + ser + md->link_ns;
arrived:
	for (ep = dp->hca_eps[node]; ep; ep = ep->hnext)
		if (ep->qpn == s->dqpn && !ep->dead)
			break;
	if (!ep) {
		drop(dp, link, DP_DROP_NO_QP);
		return;
	}
	if (!qkey_ok(ep, r.qkey)) {
		drop(dp, link, DP_DROP_QKEY);
		return;
	}
	to_qp(dp, ep, link, &r, pl, len, faults);
}

/* Every QP of an HCA attached to the group gets a copy. */
static void to_hca_group(struct dataplane *dp, int hca, struct dp_ep *src,
			 int link, const struct ibmc_dp_recv *r,
			 const void *pl, size_t len, bool faults)
{
	struct dp_ep *ep;
	int i;

	for (ep = dp->hca_eps[hca]; ep; ep = ep->hnext) {
		if (ep == src || ep->dead)
			continue;
		for (i = 0; i < ep->natt; i++)
			if (!memcmp(ep->att[i].mgid, r->mgid, 16))
				break;
		if (i == ep->natt)
			continue;
		if (!qkey_ok(ep, r->qkey)) {
			drop(dp, link, DP_DROP_QKEY);
			continue;
		}
		to_qp(dp, ep, link, r, pl, len, faults);
	}
}

void dp_forward_mc(struct dataplane *dp, struct dp_ep *src,
		   const struct ibmc_dp_send_mc *s, const void *pl,
		   size_t len)
{
	const struct fabric_model *fm = &dp->fm;
	const struct fm_node *n = &fm->node[src->hca];
	bool faults = in_scope(&dp->faults, true);
	const struct dp_model *md = &dp->model;
	struct ibmc_dp_recv r = { 0 };
	const struct dp_tree *t;
	struct dp_mlid *m;
	bool alive[1024], *ok = alive, *big = NULL;
	uint64_t starts[1024], *st = starts, *bigst = NULL, inj, ready;
	uint64_t ser = dp_model_ser(md, len, true);
	bool charge = !(s->flags & IBMC_DP_SEND_UNMODELED);
	int i, up;

	dp->sends++;
	dp->mc_sends++;
	up = n->hca_port > 0 ? n->ports[n->hca_port].link : -1;
	if (faults && pattern_drops(dp)) {
		drop(dp, up, DP_DROP_PATTERN);
		return;
	}
	r.slid = n->lid;
	r.dlid = s->mlid;
	r.sqpn = src->qpn;
	r.qkey = send_qkey(src, s->qkey);
	r.is_mcast = 1;
	memcpy(r.mgid, s->mgid, 16);
	r.o_s_ns = md->o_s_ns;
	r.o_r_ns = md->o_r_ns;
	inj = dp_model_inject(dp, src->hca, s->t_ns, len, true, charge);
	r.t_ns = inj + ser;
	/* The HCA loops a multicast packet back to its other attached QPs
	 * (not to the sending QP), whatever the switches do. */
	to_hca_group(dp, src->hca, src, -1, &r, pl, len, faults);

	m = dp_mlid_get(dp, s->mlid, true);
	if (!m) {
		drop(dp, up, DP_DROP_NO_ROUTE);
		return;
	}
	m->last_send_ns = ibmc__now_ns();
	if (!m->read) {
		drop(dp, up, DP_DROP_MFT_UNREAD);
		return;
	}
	t = dp_mlid_tree(dp, m, src->hca);
	if (!t || !t->nedge)
		return;
	if (t->nedge > (int)(sizeof(alive) / sizeof(alive[0]))) {
		big = malloc(sizeof(bool) * (size_t)t->nedge);
		bigst = malloc(sizeof(uint64_t) * (size_t)t->nedge);
		if (!big || !bigst) {
			free(big);
			free(bigst);
			return;
		}
		ok = big;
		st = bigst;
	}
	for (i = 0; i < t->nedge; i++) {
		const struct dp_tree_edge *e = &t->e[i];

		ok[i] = (e->parent < 0 || ok[e->parent]) &&
			cross(dp, e->link, len, faults, !charge);
		if (!ok[i])
			continue;
		/* Replication: every port of a switch starts once the head
		 * is through it, each behind its own queue only. */
		ready = e->parent < 0 ? inj : st[e->parent] + md->link_ns +
						 md->switch_ns;
		st[i] = dp_model_link(dp, e->link, ready, len, true, charge);
		if (e->hca >= 0) {
			r.t_ns = st[i] + ser + md->link_ns;
			to_hca_group(dp, e->hca, src, e->link, &r, pl, len,
				     faults);
		}
	}
	/* The uplink alone and no switch forwarding further: the first
	 * switch's MFT does not carry it anywhere. */
	if (t->nedge == 1 && ok[0])
		drop(dp, up, DP_DROP_NO_ROUTE);
	free(big);
	free(bigst);
}

void dp_delay_tick(struct dataplane *dp, uint64_t now)
{
	struct dp_qmsg *m;
	struct dp_ep *ep;

	while ((m = dp->delay_head) && m->due_ns <= now) {
		dp->delay_head = m->next;
		if (!dp->delay_head)
			dp->delay_tail = NULL;
		m->next = NULL;
		ep = m->ep;
		dp_ep_deliver_msg(dp, ep, m);
	}
	/* A held (reordered) packet waits at most 5 ms for a successor. */
	for (ep = dp->eps; ep; ep = ep->next)
		if (ep->held && now - ep->held_ns > 5000000ull) {
			m = ep->held;
			ep->held = NULL;
			dp_ep_deliver_msg(dp, ep, m);
		}
}

uint64_t dp_delay_next_ns(struct dataplane *dp)
{
	uint64_t t = dp->delay_head ? dp->delay_head->due_ns : UINT64_MAX;
	struct dp_ep *ep;

	for (ep = dp->eps; ep; ep = ep->next)
		if (ep->held && ep->held_ns + 5000000ull < t)
			t = ep->held_ns + 5000000ull;
	return t;
}
