/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_topo.c - follow the fabric while the daemon runs, as the SM
 * does with its sweeps: every topo_ms, read the PortInfo of every switch
 * port over SMP; a link whose switch end is not Active carries nothing
 * (cause "link_down") until it is Active again; an Active port the model
 * has no link for (a cable or a switch added) starts a new discovery,
 * folded into the model without renumbering what the tables and counters
 * are indexed by. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mad.h>

#include "common/clock.h"
#include "sim-fabric/dataplane.h"

/* Longest wait between two discoveries that found nothing new (a port
 * the model cannot hold would otherwise be rediscovered every pass). */
#define REDISCOVER_MAX_NS (60ull * 1000000000ull)

#define PORT_ACTIVE 4 /* PortInfo:PortState */

struct pi_ctx {
	struct dataplane *dp;
	int sw, port;
};

static int grow(void *pp, size_t size, size_t old, size_t n)
{
	void **p = pp;
	char *q = realloc(*p, size * (n + 1));

	if (!q)
		return -ENOMEM;
	if (n + 1 > old)
		memset(q + size * old, 0, size * (n + 1 - old));
	*p = q;
	return 0;
}

int dp_topo_init(struct dataplane *dp)
{
	dp->link_down = calloc((size_t)dp->fm.nlink + 1,
			       sizeof(*dp->link_down));
	dp->rediscover_wait_ns = (uint64_t)dp->topo_ms * 1000000ull;
	return dp->link_down ? 0 : -ENOMEM;
}

void dp_topo_free(struct dataplane *dp)
{
	free(dp->link_down);
	dp->link_down = NULL;
}

/* Both directions of the link out of (node, port). */
static void set_link(struct dataplane *dp, int node, int port, bool down)
{
	const struct fm_port *pt = &dp->fm.node[node].ports[port];
	int back;

	if (dp->link_down[pt->link] != down) {
		dp->link_down[pt->link] = down;
		dp->links_down += down ? 1 : -1;
		dp->link_changes++;
	}
	back = dp->fm.node[pt->peer].ports[pt->peer_port].link;
	if (back >= 0 && dp->link_down[back] != down) {
		dp->link_down[back] = down;
		dp->links_down += down ? 1 : -1;
		dp->link_changes++;
	}
}

static void pi_done(void *arg, int status, const uint8_t *mad)
{
	struct pi_ctx *c = arg;
	struct dataplane *dp = c->dp;
	const struct fm_port *pt;
	uint8_t pi[IB_SMP_DATA_SIZE];
	bool active;

	/* No answer: the switch itself may be gone; its neighbours' ports
	 * say so for the links that matter. */
	if (!status && c->sw < dp->fm.nnode &&
	    c->port <= dp->fm.node[c->sw].nports) {
		/* (mad_get_field wants a mutable buffer.) */
		memcpy(pi, mad + IB_SMP_DATA_OFFS, sizeof(pi));
		active = mad_get_field(pi, 0, IB_PORT_STATE_F) == PORT_ACTIVE;
		pt = &dp->fm.node[c->sw].ports[c->port];
		if (pt->link >= 0)
			set_link(dp, c->sw, c->port, !active);
		else if (active)
			dp->topo_grew = true;
	}
	dp->topo_inflight--;
	free(c);
}

/* A few reads at a time: a whole pass queued at once would hold the
 * MFT reads behind it and stretch the tables' staleness bound. */
#define TOPO_WINDOW 4

/* Submit the pass's next reads, from the cursor on. */
static void pi_submit(struct dataplane *dp)
{
	while (dp->topo_inflight < TOPO_WINDOW &&
	       dp->topo_sw < dp->fm.nnode) {
		const struct fm_node *n = &dp->fm.node[dp->topo_sw];
		struct dp_mad_req r = { 0 };
		struct pi_ctx *c;

		if (!n->is_switch || !n->lid || ++dp->topo_port > n->nports) {
			dp->topo_sw++;
			dp->topo_port = 0;
			continue;
		}
		c = malloc(sizeof(*c));
		if (!c)
			return;
		*c = (struct pi_ctx){ .dp = dp, .sw = dp->topo_sw,
				      .port = dp->topo_port };
		r.mgmt_class = IB_SMI_CLASS;
		r.method = IB_MAD_METHOD_GET;
		r.attr_id = IB_ATTR_PORT_INFO;
		r.attr_mod = (uint32_t)c->port;
		r.dlid = n->lid;
		r.done = pi_done;
		r.arg = c;
		if (dp_mad_submit(dp->mad, &r)) {
			free(c);
			dp->topo_port--; /* again at the next tick */
			return;
		}
		dp->topo_inflight++;
	}
}

/* Every array indexed by node, link or LID follows the merged model. */
static int grow_arrays(struct dataplane *dp, int nnode, int nlink,
		       uint16_t max_lid)
{
	const struct fabric_model *fm = &dp->fm;
	size_t nn = (size_t)fm->nnode, nl = (size_t)fm->nlink;
	size_t on = (size_t)nnode, ol = (size_t)nlink;

	if (grow(&dp->lc, sizeof(*dp->lc), ol + 1, nl) ||
	    grow(&dp->faults.link_loss, sizeof(double), ol + 1, nl) ||
	    grow(&dp->model.link_busy, sizeof(*dp->model.link_busy), ol + 1, nl) ||
	    grow(&dp->link_down, sizeof(*dp->link_down), ol + 1, nl) ||
	    grow(&dp->model.hca_busy, sizeof(*dp->model.hca_busy), on + 1, nn) ||
	    grow(&dp->hca_eps, sizeof(*dp->hca_eps), on, nn) ||
	    grow(&dp->next_qpn, sizeof(*dp->next_qpn), on, nn))
		return -ENOMEM;
	for (size_t i = on; i < nn; i++)
		dp->next_qpn[i] = 0x100;
	return dp_tables_grow(dp, nnode, max_lid);
}

/* Nothing of ours may be in flight: umad2sim hands the SMP class to the
 * last port that registered it and takes it away when that port closes,
 * so libibnetdisc's port cannot coexist with ours. */
static void rediscover(struct dataplane *dp, uint64_t now)
{
	struct fabric_model nf;
	int nnode = dp->fm.nnode, nlink = dp->fm.nlink, ret;
	uint16_t max_lid = dp->fm.max_lid;
	unsigned long sent, errs;

	sent = dp_mad_count(dp->mad, &errs);
	dp->smps_before += sent;
	dp->smp_errors_before += errs;
	dp_mad_close(dp->mad);
	dp->mad = NULL;
	ret = fm_discover(&nf);
	if (dp_mad_open(&dp->mad, dp->smp_timeout_ms, 32)) {
		fprintf(stderr, "ibmcast-dataplane: cannot reopen the umad "
			"port after a discovery; stopping\n");
		dp->stop = 1;
		if (!ret)
			fm_free(&nf);
		return;
	}
	dp->rediscoveries++;
	dp->topo_grew = false;
	if (ret) {
		fprintf(stderr, "ibmcast-dataplane: rediscovery failed: %s\n",
			strerror(-ret));
		goto backoff;
	}
	ret = fm_merge(&dp->fm, &nf);
	fm_free(&nf);
	if (!ret)
		ret = grow_arrays(dp, nnode, nlink, max_lid);
	if (ret) {
		fprintf(stderr, "ibmcast-dataplane: cannot grow the model: "
			"%s; stopping\n", strerror(-ret));
		dp->stop = 1;
		return;
	}
	fprintf(stderr, "ibmcast-dataplane: rediscovered: %d nodes (+%d), "
		"%d link directions (+%d)\n", dp->fm.nnode,
		dp->fm.nnode - nnode, dp->fm.nlink, dp->fm.nlink - nlink);
	if (dp->fm.nlink > nlink || dp->fm.nnode > nnode) {
		/* New LIDs and switches: their tables now, not in a period. */
		dp->lft_next_ns = dp->mft_next_ns = 0;
		dp->topo_next_ns = 0;
		dp->rediscover_wait_ns = (uint64_t)dp->topo_ms * 1000000ull;
		return;
	}
backoff:
	dp->rediscover_wait_ns *= 2;
	if (dp->rediscover_wait_ns > REDISCOVER_MAX_NS)
		dp->rediscover_wait_ns = REDISCOVER_MAX_NS;
	dp->rediscover_after_ns = now + dp->rediscover_wait_ns;
}

bool dp_topo_quiesce(const struct dataplane *dp, uint64_t now)
{
	return dp->topo_grew && now >= dp->rediscover_after_ns;
}

void dp_topo_tick(struct dataplane *dp, uint64_t now)
{
	if (dp_topo_quiesce(dp, now)) {
		/* The pass that found the port stops here. */
		dp->topo_running = false;
		if (!dp->topo_inflight && !dp->lft_inflight &&
		    !dp->mft_inflight && !dp->sa_ops &&
		    !dp_mad_progress(dp->mad))
			rediscover(dp, now);
		return;
	}
	if (!dp->topo_running && now >= dp->topo_next_ns) {
		dp->topo_running = true;
		dp->topo_sw = 0;
		dp->topo_port = 0;
	}
	if (!dp->topo_running)
		return;
	pi_submit(dp);
	if (dp->topo_sw >= dp->fm.nnode && !dp->topo_inflight) {
		dp->topo_running = false;
		dp->topo_passes++;
		dp->topo_next_ns = now + (uint64_t)dp->topo_ms * 1000000ull;
	}
}
