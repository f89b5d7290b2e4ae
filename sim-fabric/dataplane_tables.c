/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_tables.c - the switches' LFTs and MFTs as the daemon last read
 * them over SMP, refreshed periodically, and the multicast spanning trees
 * computed from them (per MLID and sending HCA, rebuilt when a read changes
 * a mask). See dataplane.h for the staleness bound. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mad.h>

#include "common/clock.h"
#include "common/log.h"
#include "sim-fabric/dataplane.h"

struct rd_ctx {
	struct dataplane *dp;
	int sw;
	uint16_t block;
	uint8_t pos;
	bool mft;
};

static void free_trees(struct dataplane *dp, struct dp_mlid *m)
{
	int i;

	for (i = 0; i < dp->fm.nnode; i++) {
		free(m->tree[i]);
		m->tree[i] = NULL;
	}
}

static void mlid_free(struct dataplane *dp, struct dp_mlid *m)
{
	int i;

	if (!m)
		return;
	free_trees(dp, m);
	for (i = 0; i < dp->fm.nnode; i++)
		free(m->mask[i]);
	free(m->mask);
	free(m->tree);
	free(m);
}

struct dp_mlid *dp_mlid_get(struct dataplane *dp, uint16_t mlid, bool create)
{
	struct dp_mlid *m;
	int i;

	if (mlid < FM_MLID_BASE)
		return NULL;
	m = dp->mlid[mlid - FM_MLID_BASE];
	if (m || !create)
		return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->mlid = mlid;
	m->mask = calloc((size_t)dp->fm.nnode, sizeof(*m->mask));
	m->tree = calloc((size_t)dp->fm.nnode, sizeof(*m->tree));
	if (!m->mask || !m->tree)
		goto err;
	for (i = 0; i < dp->fm.nnode; i++) {
		if (!dp->fm.node[i].is_switch)
			continue;
		m->mask[i] = calloc((size_t)dp->fm.node[i].npos,
				    sizeof(uint16_t));
		if (!m->mask[i])
			goto err;
	}
	dp->mlid[mlid - FM_MLID_BASE] = m;
	/* Read it now rather than at the next period. */
	if (!dp->mft_inflight)
		dp->mft_next_ns = 0;
	return m;
err:
	mlid_free(dp, m);
	return NULL;
}

int dp_tables_init(struct dataplane *dp)
{
	int i;

	dp->lft = calloc((size_t)dp->fm.nnode, sizeof(*dp->lft));
	dp->mlid = calloc(FM_MLID_COUNT, sizeof(*dp->mlid));
	if (!dp->lft || !dp->mlid)
		return -ENOMEM;
	for (i = 0; i < dp->fm.nnode; i++) {
		if (!dp->fm.node[i].is_switch)
			continue;
		dp->lft[i] = malloc((size_t)dp->fm.max_lid + 64);
		if (!dp->lft[i])
			return -ENOMEM;
		/* 0xff: no route, until read */
		memset(dp->lft[i], 0xff, (size_t)dp->fm.max_lid + 64);
	}
	return 0;
}

void dp_tables_free(struct dataplane *dp)
{
	unsigned i;

	for (i = 0; dp->lft && i < (unsigned)dp->fm.nnode; i++)
		free(dp->lft[i]);
	free(dp->lft);
	for (i = 0; dp->mlid && i < FM_MLID_COUNT; i++)
		mlid_free(dp, dp->mlid[i]);
	free(dp->mlid);
	free(dp->mft_pass);
}

static void lft_done(void *arg, int status, const uint8_t *mad)
{
	struct rd_ctx *c = arg;
	struct dataplane *dp = c->dp;
	int i, lid;

	if (!status) {
		const uint8_t *d = mad + IB_SMP_DATA_OFFS;

		for (i = 0; i < 64; i++) {
			lid = c->block * 64 + i;
			if (lid <= dp->fm.max_lid)
				dp->lft[c->sw][lid] = d[i];
		}
	}
	if (!--dp->lft_inflight) {
		dp->lft_passes++;
		dp->lft_as_of_ns = ibmc__now_ns();
		dp->lft_ready = true;
	}
	free(c);
}

static void mft_done(void *arg, int status, const uint8_t *mad)
{
	struct rd_ctx *c = arg;
	struct dataplane *dp = c->dp;
	struct dp_mlid *m;
	uint16_t v;
	int i;

	if (!status) {
		const uint8_t *d = mad + IB_SMP_DATA_OFFS;

		for (i = 0; i < 32; i++) {
			m = dp->mlid[c->block * 32 + i];
			if (!m)
				continue;
			v = (uint16_t)(d[2 * i] << 8 | d[2 * i + 1]);
			if (m->mask[c->sw][c->pos] != v) {
				m->mask[c->sw][c->pos] = v;
				free_trees(dp, m);
			}
		}
	}
	if (!--dp->mft_inflight) {
		for (i = 0; i < dp->nmft_pass; i++)
			if (dp->mft_pass[i])
				dp->mft_pass[i]->read = true;
		dp->nmft_pass = 0;
		dp->mft_passes++;
		dp->mft_as_of_ns = dp->mft_pass_start_ns;
	}
	free(c);
}

static int submit_read(struct dataplane *dp, int sw, uint16_t block,
		       uint8_t pos, bool mft)
{
	struct dp_mad_req r = { 0 };
	struct rd_ctx *c = malloc(sizeof(*c));

	if (!c)
		return -ENOMEM;
	*c = (struct rd_ctx){ .dp = dp, .sw = sw, .block = block, .pos = pos,
			      .mft = mft };
	r.mgmt_class = IB_SMI_CLASS;
	r.method = IB_MAD_METHOD_GET;
	r.dlid = dp->fm.node[sw].lid;
	if (mft) {
		r.attr_id = IB_ATTR_MULTICASTFORWTBL;
		r.attr_mod = (uint32_t)pos << 28 | block;
		r.done = mft_done;
	} else {
		r.attr_id = IB_ATTR_LINEARFORWTBL;
		r.attr_mod = block;
		r.done = lft_done;
	}
	r.arg = c;
	if (dp_mad_submit(dp->mad, &r)) {
		free(c);
		return -ENOMEM;
	}
	if (mft)
		dp->mft_inflight++;
	else
		dp->lft_inflight++;
	return 0;
}

static void lft_pass(struct dataplane *dp)
{
	int s, b, nb = dp->fm.max_lid / 64 + 1;

	for (s = 0; s < dp->fm.nnode; s++)
		if (dp->fm.node[s].is_switch && dp->fm.node[s].lid)
			for (b = 0; b < nb; b++)
				submit_read(dp, s, (uint16_t)b, 0, false);
}

/* Drop MLIDs nobody uses any more; collect the blocks of the others. */
static void mft_pass(struct dataplane *dp, uint64_t now)
{
	static bool block[FM_MLID_COUNT / 32];
	unsigned i, b;
	int s, p, n = 0;
	struct dp_mlid *m;

	memset(block, 0, sizeof(block));
	for (i = 0; i < FM_MLID_COUNT; i++) {
		m = dp->mlid[i];
		if (!m)
			continue;
		if (!m->attached &&
		    now - m->last_send_ns > (uint64_t)dp->idle_ms * 1000000ull) {
			mlid_free(dp, m);
			dp->mlid[i] = NULL;
			continue;
		}
		block[i / 32] = true;
		n++;
	}
	if (!n)
		return;
	free(dp->mft_pass);
	dp->mft_pass = calloc((size_t)n, sizeof(*dp->mft_pass));
	dp->nmft_pass = 0;
	for (i = 0; dp->mft_pass && i < FM_MLID_COUNT; i++)
		if (dp->mlid[i])
			dp->mft_pass[dp->nmft_pass++] = dp->mlid[i];
	dp->mft_pass_start_ns = now;
	for (b = 0; b < FM_MLID_COUNT / 32; b++) {
		if (!block[b])
			continue;
		for (s = 0; s < dp->fm.nnode; s++) {
			if (!dp->fm.node[s].is_switch || !dp->fm.node[s].lid)
				continue;
			for (p = 0; p < dp->fm.node[s].npos; p++)
				submit_read(dp, s, (uint16_t)b, (uint8_t)p,
					    true);
		}
	}
}

int dp_tables_grow(struct dataplane *dp, int nnode, uint16_t max_lid)
{
	const struct fabric_model *fm = &dp->fm;
	size_t nn = (size_t)fm->nnode, len = (size_t)fm->max_lid + 64;
	uint8_t **lft;
	int i;
	unsigned k;

	lft = realloc(dp->lft, sizeof(*lft) * nn);
	if (!lft)
		return -ENOMEM;
	dp->lft = lft;
	for (i = nnode; i < fm->nnode; i++)
		lft[i] = NULL;
	for (i = 0; i < fm->nnode; i++) {
		size_t old = i < nnode ? (size_t)max_lid + 64 : 0;
		uint8_t *t;

		if (!fm->node[i].is_switch || (old && old >= len))
			continue;
		t = realloc(lft[i], len);
		if (!t)
			return -ENOMEM;
		memset(t + old, 0xff, len - old);
		lft[i] = t;
	}
	for (k = 0; k < FM_MLID_COUNT; k++) {
		struct dp_mlid *m = dp->mlid[k];
		uint16_t **mask;
		struct dp_tree **tree;

		if (!m)
			continue;
		/* Trees of the old model: gone before the arrays move. */
		for (i = 0; i < nnode; i++) {
			free(m->tree[i]);
			m->tree[i] = NULL;
		}
		mask = realloc(m->mask, sizeof(*mask) * nn);
		if (!mask)
			return -ENOMEM;
		m->mask = mask;
		tree = realloc(m->tree, sizeof(*tree) * nn);
		if (!tree)
			return -ENOMEM;
		m->tree = tree;
		for (i = nnode; i < fm->nnode; i++) {
			tree[i] = NULL;
			mask[i] = NULL;
			if (!fm->node[i].is_switch)
				continue;
			mask[i] = calloc((size_t)fm->node[i].npos,
					 sizeof(uint16_t));
			if (!mask[i])
				return -ENOMEM;
		}
	}
	return 0;
}

void dp_tables_tick(struct dataplane *dp, uint64_t now)
{
	if (dp_topo_quiesce(dp, now)) {
		dp_mad_progress(dp->mad);
		return;
	}
	if (!dp->lft_inflight && now >= dp->lft_next_ns) {
		lft_pass(dp);
		dp->lft_next_ns = now + (uint64_t)dp->lft_ms * 1000000ull;
	}
	if (!dp->mft_inflight && now >= dp->mft_next_ns) {
		mft_pass(dp, now);
		dp->mft_next_ns = now + (uint64_t)dp->mft_ms * 1000000ull;
	}
	dp_mad_progress(dp->mad);
}

uint64_t dp_tables_next_ns(struct dataplane *dp)
{
	uint64_t t = dp->lft_next_ns < dp->mft_next_ns ? dp->lft_next_ns :
							 dp->mft_next_ns;

	if (dp->topo_next_ns < t)
		t = dp->topo_next_ns;
	/* umad2sim's fd cannot be polled with the sockets: look again soon. */
	if (dp->lft_inflight || dp->mft_inflight || dp->topo_running ||
	    dp_topo_quiesce(dp, ibmc__now_ns()) || dp->sa_ops) {
		uint64_t soon = ibmc__now_ns() + 1000000ull;

		if (soon < t)
			t = soon;
	}
	return t;
}

static bool bit(const struct dp_mlid *m, int sw, int port)
{
	return m->mask[sw][port / 16] & (1u << (port % 16));
}

/* Breadth first from the sender's switch along the MFT ports, never back
 * out of the port a packet came in. A switch reached a second time (a loop
 * in the tables) is not forwarded from again. */
const struct dp_tree *dp_mlid_tree(struct dataplane *dp, struct dp_mlid *m,
				   int src)
{
	const struct fabric_model *fm = &dp->fm;
	struct dp_tree *t;
	int *in, *swq, head = 0, tail = 0, up, s, p, cap;
	bool *seen;
	const struct fm_port *pt;

	if (m->tree[src])
		return m->tree[src];
	up = fm->node[src].hca_port;
	if (up < 0)
		return NULL;
	cap = fm->nlink + 1;
	t = calloc(1, sizeof(*t) + sizeof(t->e[0]) * (size_t)cap);
	in = calloc((size_t)fm->nnode, sizeof(int));
	swq = calloc((size_t)fm->nnode, sizeof(int));
	seen = calloc((size_t)fm->nnode, sizeof(bool));
	if (!t || !in || !swq || !seen) {
		free(t);
		t = NULL;
		goto out;
	}
	pt = &fm->node[src].ports[up];
	t->e[t->nedge++] = (struct dp_tree_edge){ .link = pt->link,
		.parent = -1, .hca = -1 };
	if (pt->peer < 0 || !fm->node[pt->peer].is_switch)
		goto done;
	/* queue holds edge indexes whose far end is a switch */
	swq[tail++] = 0;
	seen[pt->peer] = true;
	while (head < tail) {
		int e = swq[head++];
		const struct fm_link *l = &fm->link[t->e[e].link];

		s = l->to;
		for (p = 1; p <= fm->node[s].nports; p++) {
			const struct fm_port *o = &fm->node[s].ports[p];

			if (p == l->to_port || !bit(m, s, p) || o->peer < 0)
				continue;
			if (t->nedge >= cap)
				break;
			if (fm->node[o->peer].is_switch) {
				if (seen[o->peer])
					continue;
				seen[o->peer] = true;
				t->e[t->nedge] = (struct dp_tree_edge){
					.link = o->link, .parent = e,
					.hca = -1 };
				swq[tail++] = t->nedge++;
			} else if (o->peer != src) {
				t->e[t->nedge++] = (struct dp_tree_edge){
					.link = o->link, .parent = e,
					.hca = o->peer };
			}
		}
	}
done:
	m->tree[src] = t;
out:
	free(in);
	free(swq);
	free(seen);
	return t;
}
