/* SPDX-License-Identifier: BSD-3-Clause */
/* tr_sim.c - the sim transport: one endpoint (UD QP) of the simulated
 * fabric's data plane daemon, through dp_client. Addresses are LID + QPN
 * + port GID; multicast is a local attach to a group the SM prepared.
 * Also the sim extensions of ibmcast/sim.h: the endpoint's modeled clock. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ibmcast/sim.h"
#include "libjob/context.h"
#include "libjob/task.h"
#include "libjob/transport.h"
#include "libjob/ud_addr.h"
#include "libjob/ud_peers.h"
#include "sim-fabric/dp_client.h"

struct sim_group {
	struct ibmc_tr_group g;
	bool used;
};

struct ibmc_tr {
	struct ibmc_dp *dp;
	uint32_t qkey;
	struct ibmc_ud_peers peers;
	struct sim_group *groups;
	int ngroups;
};

static int sim_open(const struct ibmc_tr_config *cfg, struct ibmc_tr **out)
{
	struct ibmc_tr *tr;
	int ret;

	if (!cfg || !cfg->node || !*cfg->node)
		return -EINVAL;
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	tr->qkey = cfg->qkey;
	ret = ibmc__dp_open(cfg->sim_socket, cfg->node, cfg->qkey, &tr->dp);
	if (ret) {
		free(tr);
		return ret;
	}
	*out = tr;
	return 0;
}

static void sim_close(struct ibmc_tr *tr)
{
	if (!tr)
		return;
	ibmc__dp_close(tr->dp);
	ibmc__ud_peers_free(&tr->peers);
	free(tr->groups);
	free(tr);
}

static int sim_local_addr(struct ibmc_tr *tr, struct ibmc_tr_addr *addr)
{
	const struct ibmc_dp_hello_ok *me = ibmc__dp_self(tr->dp);
	struct ibmc_ud_addr ud = { .lid = me->lid, .qpn = me->qpn };

	memcpy(ud.gid, me->port_gid, sizeof(ud.gid));
	ibmc__ud_addr_pack(&ud, addr);
	return 0;
}

static size_t sim_mtu(struct ibmc_tr *tr)
{
	return ibmc__dp_self(tr->dp)->mtu;
}

static int sim_peer_add(struct ibmc_tr *tr, const struct ibmc_tr_addr *addr)
{
	struct ibmc_ud_addr ud;
	int i;

	if (ibmc__ud_addr_unpack(addr, &ud))
		return -EINVAL;
	i = ibmc__ud_peers_find(&tr->peers, ud.lid, ud.qpn);
	if (i >= 0)
		return i;
	return ibmc__ud_peers_add(&tr->peers, ud.lid, ud.qpn, NULL);
}

static int sim_send(struct ibmc_tr *tr, int peer, const struct iovec *iov,
		    int iovcnt)
{
	const struct ibmc_ud_peer *p = ibmc__ud_peers_get(&tr->peers, peer);

	if (!p)
		return -EINVAL;
	return ibmc__dp_send_uc(tr->dp, p->lid, p->qpn, tr->qkey, iov, iovcnt);
}

static int sim_mcast_supported(struct ibmc_tr *tr)
{
	(void)tr;
	return 0;
}

static int sim_mcast_attach(struct ibmc_tr *tr, const struct ibmc_tr_group *g)
{
	struct sim_group *ng;
	int i, ret;

	ret = ibmc__dp_attach(tr->dp, g->mgid, g->mlid);
	if (ret)
		return ret;
	for (i = 0; i < tr->ngroups; i++)
		if (!tr->groups[i].used)
			break;
	if (i == tr->ngroups) {
		ng = realloc(tr->groups, sizeof(*ng) * (size_t)(i + 1));
		if (!ng) {
			ibmc__dp_detach(tr->dp, g->mgid, g->mlid);
			return -ENOMEM;
		}
		tr->groups = ng;
		tr->ngroups++;
	}
	tr->groups[i].g = *g;
	tr->groups[i].used = true;
	return i;
}

static int sim_mcast_detach(struct ibmc_tr *tr, int group)
{
	struct sim_group *s;

	if (group < 0 || group >= tr->ngroups || !tr->groups[group].used)
		return -EINVAL;
	s = &tr->groups[group];
	s->used = false;
	return ibmc__dp_detach(tr->dp, s->g.mgid, s->g.mlid);
}

/* Through the data plane's SA proxy: real OpenSM answers (and programs
 * the switches in its own time). */
static int sim_mcast_join(struct ibmc_tr *tr, const struct ibmc_tr_join *j,
			  struct ibmc_tr_group *g)
{
	struct ibmc_dp_join dj = { .join_state = 1 };
	struct ibmc_dp_join_ok ok;
	int ret;

	memcpy(dj.mgid, j->mgid, sizeof(dj.mgid));
	if (j->create) {
		/* A Q_Key makes the proxy send the create components. */
		dj.qkey = j->qkey ? j->qkey : tr->qkey;
		dj.pkey = j->pkey;
		if (!dj.qkey)
			return -EINVAL;
	}
	ret = ibmc__dp_join(tr->dp, &dj, &ok);
	if (ret)
		return ret;
	memset(g, 0, sizeof(*g));
	memcpy(g->mgid, ok.mgid, sizeof(g->mgid));
	g->mlid = ok.mlid;
	g->pkey = ok.pkey;
	g->qkey = ok.qkey;
	g->mtu = ok.mtu;
	return 0;
}

static int sim_mcast_leave(struct ibmc_tr *tr, const uint8_t mgid[16])
{
	struct ibmc_dp_join dj = { .join_state = 1 };

	memcpy(dj.mgid, mgid, sizeof(dj.mgid));
	return ibmc__dp_leave(tr->dp, &dj);
}

static int sim_mcast_send(struct ibmc_tr *tr, int group,
			  const struct iovec *iov, int iovcnt)
{
	const struct ibmc_tr_group *g;
	size_t len = 0;
	int i;

	if (group < 0 || group >= tr->ngroups || !tr->groups[group].used)
		return -EINVAL;
	g = &tr->groups[group].g;
	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (g->mtu && len > g->mtu)
		return -EMSGSIZE;
	return ibmc__dp_send_mc(tr->dp, g->mgid, g->mlid,
				g->qkey ? g->qkey : tr->qkey, iov, iovcnt);
}

static int sim_recv(struct ibmc_tr *tr, struct ibmc_tr_pkt *pkt,
		    int timeout_ms)
{
	struct ibmc_dp_recv h;
	const void *data;
	size_t len;
	int ret;

	ret = ibmc__dp_recv(tr->dp, &h, &data, &len, timeout_ms);
	if (ret)
		return ret;
	pkt->data = data;
	pkt->len = len;
	pkt->is_mcast = h.is_mcast;
	pkt->model_ns = h.t_ns;
	return 0;
}

static void sim_model_take(struct ibmc_tr *tr, uint64_t arrival_ns)
{
	ibmc__dp_take(tr->dp, arrival_ns);
}

static void sim_model_quiet(struct ibmc_tr *tr, int on, uint64_t at_ns)
{
	ibmc__dp_set_unmodeled(tr->dp, on, at_ns);
}

static uint64_t sim_model_clock(struct ibmc_tr *tr)
{
	return ibmc__dp_clock(tr->dp);
}

/* The data plane's socket; datagrams stashed in-process while a control
 * reply was awaited are not seen here (rare: the wait is then bounded by
 * its timeout). */
static int sim_wait(struct ibmc_tr *tr, int timeout_ms)
{
	struct pollfd p = { .fd = ibmc__dp_fd(tr->dp), .events = POLLIN };

	return poll(&p, 1, timeout_ms) > 0 ? 0 : -ETIMEDOUT;
}

const struct ibmc_tr_ops ibmc__tr_sim_ops = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.local_addr = sim_local_addr,
	.mtu = sim_mtu,
	.peer_add = sim_peer_add,
	.send = sim_send,
	.mcast_supported = sim_mcast_supported,
	.mcast_attach = sim_mcast_attach,
	.mcast_detach = sim_mcast_detach,
	.mcast_join = sim_mcast_join,
	.mcast_leave = sim_mcast_leave,
	.mcast_send = sim_mcast_send,
	.recv = sim_recv,
	.wait = sim_wait,
	.model_take = sim_model_take,
	.model_quiet = sim_model_quiet,
	.model_clock = sim_model_clock,
};

/* ---- sim extensions (ibmcast/sim.h, ibmc_sim_clock_ns(3)) --------------- */

/* Under the context's lock: the progress thread receives, and so moves
 * the clock, under it too. */
static int sim_clock(ibmc_context_t *ctx, uint64_t add, uint64_t *ns)
{
	if (!ctx)
		return -EINVAL;
	if (ctx->ops != &ibmc__tr_sim_ops || !ctx->tr)
		return -ENOTSUP;
	pthread_mutex_lock(&ctx->lock);
	ibmc__dp_advance(ctx->tr->dp, add);
	if (ns)
		*ns = ibmc__dp_clock(ctx->tr->dp);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int ibmc_sim_clock_ns(ibmc_context_t *ctx, uint64_t *ns)
{
	return ns ? sim_clock(ctx, 0, ns) : -EINVAL;
}

int ibmc_sim_compute(ibmc_context_t *ctx, uint64_t ns)
{
	return sim_clock(ctx, ns, NULL);
}

int ibmc_sim_settle(ibmc_context_t *ctx, int timeout_ms)
{
	int rc;

	if (!ctx || timeout_ms < 0)
		return -EINVAL;
	if (ctx->ops != &ibmc__tr_sim_ops || !ctx->tr)
		return -ENOTSUP;
	pthread_mutex_lock(&ctx->lock);
	rc = ibmc__drain(ctx, timeout_ms, 0);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int ibmc_sim_return_ns(ibmc_context_t *ctx, uint64_t *ns)
{
	if (!ctx || !ns)
		return -EINVAL;
	if (ctx->ops != &ibmc__tr_sim_ops || !ctx->tr)
		return -ENOTSUP;
	pthread_mutex_lock(&ctx->lock);
	*ns = ctx->call_return_ns;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}
