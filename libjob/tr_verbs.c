/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tr_verbs.c - the verbs transport: one UD queue pair on a real HCA port.
 * Unicast through an address handle per peer, multicast by attaching the QP
 * to an SM-prepared group (ibv_attach_mcast: local, never an SA join) and
 * sending through an AH on the group's MLID with the MGID in the GRH.
 *
 * Addresses have the sim transport's layout: LID (2, LE), QPN (4, LE),
 * port GID (16). Received datagrams land in a pre-posted ring of
 * 40-byte-GRH + MTU buffers; the buffer handed to the caller is reposted at
 * the next recv, as transport.h promises validity until then.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "common/clock.h"
#include "common/log.h"
#include "libjob/sa_join_umad.h"
#include "libjob/transport.h"
#include "libjob/ud_addr.h"
#include "libjob/ud_peers.h"

#define GRH_LEN 40	/* UD receives always start with room for a GRH */
#define NRECV 512	/* receive ring: absorbs a window of fragments */
#define NSEND 128	/* send slots (registered copies of the iovecs) */
#define SEND_WAIT_MS 2000	/* a full send queue that never drains */

struct verbs_group {
	struct ibv_ah *ah;
	union ibv_gid mgid;
	uint16_t mlid;
	uint32_t qkey;
	size_t mtu;
	bool used;
};

struct ibmc_tr {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *rcq, *scq;
	struct ibv_qp *qp;
	uint8_t port;
	uint16_t lid;
	union ibv_gid gid;
	uint32_t qkey;
	size_t mtu;		/* port's active MTU in bytes */
	uint32_t max_inline;
	char name[64];		/* device name, for messages */

	uint8_t *rbuf;		/* NRECV slots of GRH_LEN + mtu */
	struct ibv_mr *rmr;
	int held;		/* slot handed to the caller, or -1 */
	unsigned unacked;	/* CQ events not yet acknowledged */

	uint8_t *sbuf;		/* NSEND slots of mtu */
	struct ibv_mr *smr;
	unsigned shead;		/* next slot to use */
	unsigned inflight;	/* posted, not yet completed */
	int send_err;		/* a failed send completion, reported once */

	struct ibmc_ud_peers peers;
	struct verbs_group *groups;
	int ngroups;
};

static size_t mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? (size_t)128 << m : 0;
}

static size_t slot_len(const struct ibmc_tr *tr)
{
	return GRH_LEN + tr->mtu;
}

static int post_recv(struct ibmc_tr *tr, int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(tr->rbuf + (size_t)slot * slot_len(tr)),
		.length = (uint32_t)slot_len(tr),
		.lkey = tr->rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int rc = ibv_post_recv(tr->qp, &wr, &bad);

	return rc ? -rc : 0;
}

/* The device: cfg->device by name, else the first with an active port
 * (cfg->port, or any). Fills tr->ctx and tr->port. */
static int open_device(struct ibmc_tr *tr, const struct ibmc_tr_config *cfg)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	struct ibv_context *ctx;
	int n, i, p, rc = -ENODEV;
	bool named = cfg->device && *cfg->device, seen = false;

	list = ibv_get_device_list(&n);
	if (!list) {
		/* ENOSYS: no RDMA support in the kernel at all */
		ibmc_log(IBMC_LOG_ERROR, "verbs: no RDMA device found "
			 "(ibv_get_device_list: %s)", strerror(errno));
		return -ENODEV;
	}
	if (n == 0) {
		ibmc_log(IBMC_LOG_ERROR, "verbs: no RDMA device found "
			 "(ibv_get_device_list lists none)");
		ibv_free_device_list(list);
		return -ENODEV;
	}
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (named && strcmp(name, cfg->device))
			continue;
		seen = true;
		ctx = ibv_open_device(list[i]);
		if (!ctx) {
			ibmc_log(IBMC_LOG_WARN, "verbs: %s: ibv_open_device: "
				 "%s", name, strerror(errno));
			rc = errno ? -errno : -ENODEV;
			continue;
		}
		if (ibv_query_device(ctx, &da)) {
			ibv_close_device(ctx);
			continue;
		}
		for (p = cfg->port > 0 ? cfg->port : 1;
		     p <= (cfg->port > 0 ? cfg->port : da.phys_port_cnt);
		     p++) {
			if (ibv_query_port(ctx, (uint8_t)p, &pa))
				continue;
			if (pa.state != IBV_PORT_ACTIVE) {
				rc = -ENETDOWN;
				continue;
			}
			if (pa.link_layer != IBV_LINK_LAYER_INFINIBAND &&
			    pa.link_layer != IBV_LINK_LAYER_UNSPECIFIED) {
				/* RoCE has no LIDs and no SM-built trees */
				rc = -EPROTONOSUPPORT;
				continue;
			}
			tr->ctx = ctx;
			tr->port = (uint8_t)p;
			tr->lid = pa.lid;
			tr->mtu = mtu_bytes(pa.active_mtu);
			snprintf(tr->name, sizeof(tr->name), "%s", name);
			ibv_free_device_list(list);
			return 0;
		}
		ibv_close_device(ctx);
	}
	if (named && !seen) {
		ibmc_log(IBMC_LOG_ERROR, "verbs: no RDMA device named '%s' "
			 "(%d others present)", cfg->device, n);
		rc = -ENODEV;
	} else {
		ibmc_log(IBMC_LOG_ERROR, "verbs: no usable port%s%s%s: %s",
			 named ? " on " : "", named ? cfg->device : "",
			 cfg->port > 0 ? " (port given)" : "",
			 rc == -ENETDOWN ? "no InfiniBand port is active" :
			 rc == -EPROTONOSUPPORT ? "the active ports are not "
						  "InfiniBand (RoCE?)" :
						  strerror(-rc));
	}
	ibv_free_device_list(list);
	return rc;
}

static struct ibv_qp *create_qp(struct ibmc_tr *tr)
{
	struct ibv_qp_init_attr_ex ax = {
		.send_cq = tr->scq,
		.recv_cq = tr->rcq,
		.cap = { .max_send_wr = NSEND, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.qp_type = IBV_QPT_UD,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_CREATE_FLAGS,
		.pd = tr->pd,
		/* our own multicast never comes back to us, as on the sim */
		.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB,
	};
	struct ibv_qp_init_attr a = {
		.send_cq = tr->scq,
		.recv_cq = tr->rcq,
		.cap = { .max_send_wr = NSEND, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp *qp;

	qp = ibv_create_qp_ex(tr->ctx, &ax);
	if (qp) {
		tr->max_inline = ax.cap.max_inline_data;
		return qp;
	}
	/* Not every provider blocks self-loopback; recv() filters it. */
	qp = ibv_create_qp(tr->pd, &a);
	if (!qp) {
		a.cap.max_inline_data = 0;
		qp = ibv_create_qp(tr->pd, &a);
	}
	if (qp)
		tr->max_inline = a.cap.max_inline_data;
	return qp;
}

/* INIT (port, P_Key index 0 = the default partition, the job's Q_Key),
 * RTR, RTS: a UD QP needs nothing from its peers. */
static int qp_to_rts(struct ibmc_tr *tr)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = tr->port,
		.qkey = tr->qkey,
	};
	int rc;

	rc = ibv_modify_qp(tr->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_QKEY);
	if (rc)
		return -rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	rc = ibv_modify_qp(tr->qp, &a, IBV_QP_STATE);
	if (rc)
		return -rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	rc = ibv_modify_qp(tr->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return rc ? -rc : 0;
}

static void verbs_close(struct ibmc_tr *tr);

static int verbs_open(const struct ibmc_tr_config *cfg, struct ibmc_tr **out)
{
	struct ibmc_tr *tr;
	const char *step;
	int rc, i;

	if (!cfg || !out)
		return -EINVAL;
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	tr->held = -1;
	/* the job's Q_Key; without a job, one that is not privileged */
	tr->qkey = cfg->qkey ? cfg->qkey : 0x1bca0000u;
	rc = open_device(tr, cfg);
	if (rc) {
		free(tr);
		return rc;
	}
	if (!tr->mtu) {
		step = "port MTU";
		rc = -EPROTO;
		goto err;
	}
	rc = -ENOMEM;
	step = "ibv_query_gid";
	if (ibv_query_gid(tr->ctx, tr->port, 0, &tr->gid))
		goto err_errno;
	step = "ibv_alloc_pd";
	tr->pd = ibv_alloc_pd(tr->ctx);
	if (!tr->pd)
		goto err_errno;
	step = "ibv_create_comp_channel";
	tr->ch = ibv_create_comp_channel(tr->ctx);
	if (!tr->ch)
		goto err_errno;
	/* Non-blocking, so that a poll that found the CQ empty can take the
	 * pending event without waiting, and the fd is readable only while
	 * a completion may be queued: verbs_wait relies on that. */
	step = "fcntl(O_NONBLOCK) on the completion channel";
	rc = fcntl(tr->ch->fd, F_GETFL);
	if (rc < 0 || fcntl(tr->ch->fd, F_SETFL, rc | O_NONBLOCK) < 0)
		goto err_errno;
	step = "ibv_create_cq";
	tr->rcq = ibv_create_cq(tr->ctx, NRECV, NULL, tr->ch, 0);
	tr->scq = ibv_create_cq(tr->ctx, NSEND, NULL, NULL, 0);
	if (!tr->rcq || !tr->scq)
		goto err_errno;
	step = "receive and send buffers";
	tr->rbuf = calloc(NRECV, slot_len(tr));
	tr->sbuf = calloc(NSEND, tr->mtu);
	if (!tr->rbuf || !tr->sbuf)
		goto err;
	step = "ibv_reg_mr";
	tr->rmr = ibv_reg_mr(tr->pd, tr->rbuf, NRECV * slot_len(tr),
			     IBV_ACCESS_LOCAL_WRITE);
	tr->smr = ibv_reg_mr(tr->pd, tr->sbuf, NSEND * tr->mtu, 0);
	if (!tr->rmr || !tr->smr)
		goto err_errno;
	step = "ibv_create_qp (UD)";
	tr->qp = create_qp(tr);
	if (!tr->qp)
		goto err_errno;
	step = "ibv_modify_qp (INIT, RTR, RTS)";
	rc = qp_to_rts(tr);
	if (rc)
		goto err;
	step = "ibv_post_recv";
	for (i = 0; i < NRECV; i++) {
		rc = post_recv(tr, i);
		if (rc)
			goto err;
	}
	step = "ibv_req_notify_cq";
	rc = ibv_req_notify_cq(tr->rcq, 0);
	if (rc) {
		rc = -rc;
		goto err;
	}
	ibmc_log(IBMC_LOG_INFO, "verbs: %s port %u, LID 0x%x, QPN 0x%x, MTU "
		 "%zu, Q_Key 0x%x", tr->name, tr->port, tr->lid,
		 tr->qp->qp_num, tr->mtu, tr->qkey);
	*out = tr;
	return 0;

err_errno:
	rc = errno ? -errno : -ENOMEM;
err:
	ibmc_log(IBMC_LOG_ERROR, "verbs: %s port %u: %s failed: %s", tr->name,
		 tr->port, step, strerror(-rc));
	verbs_close(tr);
	return rc;
}

static void verbs_close(struct ibmc_tr *tr)
{
	int i;

	if (!tr)
		return;
	for (i = 0; i < tr->ngroups; i++) {
		struct verbs_group *g = &tr->groups[i];

		if (!g->used)
			continue;
		if (tr->qp)
			ibv_detach_mcast(tr->qp, &g->mgid, g->mlid);
		if (g->ah)
			ibv_destroy_ah(g->ah);
	}
	for (i = 0; i < tr->peers.n; i++)
		if (tr->peers.v[i].ah)
			ibv_destroy_ah(tr->peers.v[i].ah);
	if (tr->qp)
		ibv_destroy_qp(tr->qp);
	if (tr->rcq && tr->unacked)
		ibv_ack_cq_events(tr->rcq, tr->unacked);
	if (tr->rcq)
		ibv_destroy_cq(tr->rcq);
	if (tr->scq)
		ibv_destroy_cq(tr->scq);
	if (tr->ch)
		ibv_destroy_comp_channel(tr->ch);
	if (tr->rmr)
		ibv_dereg_mr(tr->rmr);
	if (tr->smr)
		ibv_dereg_mr(tr->smr);
	if (tr->pd)
		ibv_dealloc_pd(tr->pd);
	if (tr->ctx)
		ibv_close_device(tr->ctx);
	free(tr->rbuf);
	free(tr->sbuf);
	ibmc__ud_peers_free(&tr->peers);
	free(tr->groups);
	free(tr);
}

static int verbs_local_addr(struct ibmc_tr *tr, struct ibmc_tr_addr *addr)
{
	struct ibmc_ud_addr ud = { .lid = tr->lid, .qpn = tr->qp->qp_num };

	memcpy(ud.gid, tr->gid.raw, sizeof(ud.gid));
	ibmc__ud_addr_pack(&ud, addr);
	return 0;
}

static size_t verbs_mtu(struct ibmc_tr *tr)
{
	return tr->mtu;
}

static int verbs_peer_add(struct ibmc_tr *tr, const struct ibmc_tr_addr *addr)
{
	struct ibv_ah_attr aa = { .sl = 0, .port_num = tr->port };
	struct ibmc_ud_addr ud;
	struct ibv_ah *ah;
	int i;

	if (ibmc__ud_addr_unpack(addr, &ud))
		return -EINVAL;
	i = ibmc__ud_peers_find(&tr->peers, ud.lid, ud.qpn);
	if (i >= 0)
		return i;
	aa.dlid = ud.lid;
	/* Another subnet (its GID prefix differs): route by GRH. */
	if (memcmp(ud.gid, tr->gid.raw, 8)) {
		aa.is_global = 1;
		memcpy(aa.grh.dgid.raw, ud.gid, 16);
		aa.grh.sgid_index = 0;
		aa.grh.hop_limit = 64;
	}
	ah = ibv_create_ah(tr->pd, &aa);
	if (!ah) {
		int rc = errno ? -errno : -ENOMEM;

		ibmc_log(IBMC_LOG_ERROR, "verbs: ibv_create_ah for LID 0x%x: "
			 "%s", ud.lid, strerror(-rc));
		return rc;
	}
	i = ibmc__ud_peers_add(&tr->peers, ud.lid, ud.qpn, ah);
	if (i < 0)
		ibv_destroy_ah(ah);
	return i;
}

/* Reclaims completed sends; returns -EIO once if one failed. */
static int reap_sends(struct ibmc_tr *tr)
{
	struct ibv_wc wc[16];
	int n, i;

	while ((n = ibv_poll_cq(tr->scq, 16, wc)) > 0) {
		for (i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS && !tr->send_err) {
				ibmc_log(IBMC_LOG_ERROR, "verbs: send "
					 "completion: %s",
					 ibv_wc_status_str(wc[i].status));
				tr->send_err = -EIO;
			}
		tr->inflight -= (unsigned)n;
	}
	if (n < 0)
		return -EIO;
	return 0;
}

static int post_send(struct ibmc_tr *tr, struct ibv_ah *ah, uint32_t qpn,
		     uint32_t qkey, size_t maxlen, const struct iovec *iov,
		     int iovcnt)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	int64_t until = -1;
	uint8_t *slot;
	size_t len = 0;
	int i, rc;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > maxlen)
		return -EMSGSIZE;
	rc = reap_sends(tr);
	if (rc)
		return rc;
	/* A UD send queue drains at link speed; wait a little if full. */
	while (tr->inflight >= NSEND) {
		if (until < 0)
			until = ibmc__now_ms() + SEND_WAIT_MS;
		else if (ibmc__now_ms() > until)
			return -EAGAIN;
		rc = reap_sends(tr);
		if (rc)
			return rc;
	}
	if (tr->send_err) {
		rc = tr->send_err;
		tr->send_err = 0;
		return rc;
	}
	slot = tr->sbuf + (size_t)tr->shead * tr->mtu;
	tr->shead = (tr->shead + 1) % NSEND;
	for (i = 0, len = 0; i < iovcnt; i++) {
		memcpy(slot + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	sge.addr = (uintptr_t)slot;
	sge.length = (uint32_t)len;
	sge.lkey = tr->smr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (len <= tr->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	rc = ibv_post_send(tr->qp, &wr, &bad);
	if (rc)
		return -rc;
	tr->inflight++;
	return 0;
}

static int verbs_send(struct ibmc_tr *tr, int peer, const struct iovec *iov,
		      int iovcnt)
{
	const struct ibmc_ud_peer *p = ibmc__ud_peers_get(&tr->peers, peer);

	if (!p)
		return -EINVAL;
	return post_send(tr, p->ah, p->qpn, tr->qkey, tr->mtu, iov, iovcnt);
}

static int verbs_mcast_supported(struct ibmc_tr *tr)
{
	(void)tr;
	return 0;
}

/* An SA join of this port through libibumad (sa_join_umad.c). */
static int verbs_mcast_join(struct ibmc_tr *tr, const struct ibmc_tr_join *j,
			    struct ibmc_tr_group *g)
{
	struct ibmc__mcmr_req r = { .create = j->create, .qkey = j->qkey,
				    .pkey = j->pkey, .mtu = j->mtu,
				    .join_state = 1 };

	if (j->create && !r.qkey)
		r.qkey = tr->qkey;
	memcpy(r.mgid, j->mgid, 16);
	memcpy(r.port_gid, tr->gid.raw, 16);
	return ibmc__sa_join_umad(tr->name, tr->port, &r, g);
}

static int verbs_mcast_leave(struct ibmc_tr *tr, const uint8_t mgid[16])
{
	struct ibmc__mcmr_req r = { .leave = 1, .join_state = 1 };

	memcpy(r.mgid, mgid, 16);
	memcpy(r.port_gid, tr->gid.raw, 16);
	return ibmc__sa_join_umad(tr->name, tr->port, &r, NULL);
}

static int verbs_mcast_attach(struct ibmc_tr *tr,
			      const struct ibmc_tr_group *g)
{
	struct ibv_ah_attr aa = { .sl = 0, .port_num = tr->port };
	struct verbs_group ng = { 0 };
	struct verbs_group *grow;
	int i, rc;

	if (!g->mlid || g->mlid < 0xc000 || g->mgid[0] != 0xff)
		return -EINVAL;
	memcpy(ng.mgid.raw, g->mgid, 16);
	ng.mlid = g->mlid;
	ng.qkey = g->qkey ? g->qkey : tr->qkey;
	ng.mtu = g->mtu && g->mtu < tr->mtu ? g->mtu : tr->mtu;
	if (ng.qkey != tr->qkey)
		/* the QP receives only its own Q_Key */
		ibmc_log(IBMC_LOG_WARN, "verbs: group MLID 0x%x has Q_Key "
			 "0x%x, the QP 0x%x: its datagrams will be dropped",
			 g->mlid, ng.qkey, tr->qkey);
	rc = ibv_attach_mcast(tr->qp, &ng.mgid, ng.mlid);
	if (rc) {
		ibmc_log(IBMC_LOG_ERROR, "verbs: ibv_attach_mcast MLID 0x%x: "
			 "%s", g->mlid, strerror(rc));
		return -rc;
	}
	/* Multicast goes to the MLID, with the MGID in the GRH, which is
	 * how receivers' HCAs match it to their attached QPs. */
	aa.dlid = ng.mlid;
	aa.is_global = 1;
	aa.grh.dgid = ng.mgid;
	aa.grh.sgid_index = 0;
	aa.grh.hop_limit = 1;
	ng.ah = ibv_create_ah(tr->pd, &aa);
	if (!ng.ah) {
		rc = errno ? -errno : -ENOMEM;
		ibmc_log(IBMC_LOG_ERROR, "verbs: ibv_create_ah for MLID 0x%x: "
			 "%s", g->mlid, strerror(-rc));
		ibv_detach_mcast(tr->qp, &ng.mgid, ng.mlid);
		return rc;
	}
	ng.used = true;
	for (i = 0; i < tr->ngroups; i++)
		if (!tr->groups[i].used)
			break;
	if (i == tr->ngroups) {
		grow = realloc(tr->groups, sizeof(*grow) * (size_t)(i + 1));
		if (!grow) {
			ibv_destroy_ah(ng.ah);
			ibv_detach_mcast(tr->qp, &ng.mgid, ng.mlid);
			return -ENOMEM;
		}
		tr->groups = grow;
		tr->ngroups++;
	}
	tr->groups[i] = ng;
	return i;
}

static int verbs_mcast_detach(struct ibmc_tr *tr, int group)
{
	struct verbs_group *g;
	int64_t until;
	int rc;

	if (group < 0 || group >= tr->ngroups || !tr->groups[group].used)
		return -EINVAL;
	g = &tr->groups[group];
	g->used = false;
	rc = ibv_detach_mcast(tr->qp, &g->mgid, g->mlid);
	/* sends posted through the AH may still be in flight: a UD send
	 * completes at link speed, so this wait is short and bounded */
	until = ibmc__now_ms() + SEND_WAIT_MS;
	while (tr->inflight && reap_sends(tr) == 0 && ibmc__now_ms() < until)
		;
	ibv_destroy_ah(g->ah);
	g->ah = NULL;
	return rc ? -rc : 0;
}

static int verbs_mcast_send(struct ibmc_tr *tr, int group,
			    const struct iovec *iov, int iovcnt)
{
	struct verbs_group *g;

	if (group < 0 || group >= tr->ngroups || !tr->groups[group].used)
		return -EINVAL;
	g = &tr->groups[group];
	/* QPN 0xffffff: the multicast QPN, every attached QP receives */
	return post_send(tr, g->ah, 0xffffff, g->qkey, g->mtu, iov, iovcnt);
}

/* One receive completion, if any: 1 and *wc, 0 none, -errno. */
static int poll_recv(struct ibmc_tr *tr, struct ibv_wc *wc)
{
	int n = ibv_poll_cq(tr->rcq, 1, wc);

	return n < 0 ? -EIO : n;
}

/* Takes the completion events queued on the channel, if any, and arms
 * the CQ again: 1 if there were some, 0 if none, -errno. */
static int take_events(struct ibmc_tr *tr)
{
	struct ibv_cq *cq;
	void *cq_ctx;
	int taken = 0, rc;

	/* The fd is non-blocking: EAGAIN ends the loop. */
	while (!ibv_get_cq_event(tr->ch, &cq, &cq_ctx)) {
		taken = 1;
		/* acknowledging takes a lock: batch it */
		if (++tr->unacked >= 64) {
			ibv_ack_cq_events(tr->rcq, tr->unacked);
			tr->unacked = 0;
		}
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		return -EIO;
	if (!taken)
		return 0;
	rc = ibv_req_notify_cq(tr->rcq, 0);
	return rc ? -rc : 1;
}

/* Waits for the next receive completion event up to timeout_ms. */
static int wait_event(struct ibmc_tr *tr, int timeout_ms)
{
	struct pollfd pfd = { .fd = tr->ch->fd, .events = POLLIN };
	int rc;

	rc = poll(&pfd, 1, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	if (rc == 0)
		return -ETIMEDOUT;
	rc = take_events(tr);
	return rc < 0 ? rc : 0;
}

/* The progress thread's wait, outside the library lock while another
 * thread may be in verbs_recv: it only watches the channel's fd and
 * takes nothing. The fd stays readable while an event is pending; a
 * poll of verbs_recv that finds the CQ empty takes that event (and arms
 * again), so a readable fd is not a lasting spurious wake-up. */
static int verbs_wait(struct ibmc_tr *tr, int timeout_ms)
{
	struct pollfd pfd = { .fd = tr->ch->fd, .events = POLLIN };
	int rc = poll(&pfd, 1, timeout_ms);

	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	return rc ? 0 : -ETIMEDOUT;
}

static int verbs_recv(struct ibmc_tr *tr, struct ibmc_tr_pkt *pkt,
		      int timeout_ms)
{
	int64_t deadline = timeout_ms > 0 ? ibmc__now_ms() + timeout_ms : -1;
	struct ibv_wc wc;
	uint8_t *slot;
	int rc, left;

	if (tr->held >= 0) {
		rc = post_recv(tr, tr->held);
		tr->held = -1;
		if (rc)
			return rc;
	}
	for (;;) {
		rc = poll_recv(tr, &wc);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			if (timeout_ms == 0) {
				/* Take the event a completion already polled
				 * left behind, then look once more for one
				 * that raced the arming. */
				rc = take_events(tr);
				if (rc < 0)
					return rc;
				if (rc == 0)
					return -ETIMEDOUT;
				rc = poll_recv(tr, &wc);
				if (rc < 0)
					return rc;
				if (rc == 0)
					return -ETIMEDOUT;
				goto got;
			}
			left = -1;
			if (deadline >= 0) {
				int64_t d = deadline - ibmc__now_ms();

				if (d <= 0)
					return -ETIMEDOUT;
				left = (int)d;
			}
			/* Armed at open and after every event; a completion
			 * that raced the arming is found by the next poll. */
			rc = poll_recv(tr, &wc);
			if (rc < 0)
				return rc;
			if (rc == 0) {
				rc = wait_event(tr, left);
				if (rc)
					return rc;
				continue;
			}
		}
got:
		if (wc.status != IBV_WC_SUCCESS) {
			if (wc.status == IBV_WC_WR_FLUSH_ERR) {
				ibmc_log(IBMC_LOG_ERROR, "verbs: receive "
					 "queue flushed: the QP is dead");
				return -EIO;
			}
			ibmc_log(IBMC_LOG_DEBUG, "verbs: receive completion: "
				 "%s", ibv_wc_status_str(wc.status));
			rc = post_recv(tr, (int)wc.wr_id);
			if (rc)
				return rc;
			continue;
		}
		slot = tr->rbuf + (size_t)wc.wr_id * slot_len(tr);
		/* Our own multicast, where the provider did not block the
		 * loopback: the sim never delivers it either. */
		if ((wc.src_qp == tr->qp->qp_num && wc.slid == tr->lid) ||
		    wc.byte_len < GRH_LEN) {
			rc = post_recv(tr, (int)wc.wr_id);
			if (rc)
				return rc;
			continue;
		}
		tr->held = (int)wc.wr_id;
		pkt->data = slot + GRH_LEN;
		pkt->len = wc.byte_len - GRH_LEN;
		/* the GRH's DGID (bytes 24..39) is multicast: ff... */
		pkt->is_mcast = (wc.wc_flags & IBV_WC_GRH) && slot[24] == 0xff;
		return 0;
	}
}

const struct ibmc_tr_ops ibmc__tr_verbs_ops = {
	.name = "verbs",
	.open = verbs_open,
	.close = verbs_close,
	.local_addr = verbs_local_addr,
	.mtu = verbs_mtu,
	.peer_add = verbs_peer_add,
	.send = verbs_send,
	.mcast_supported = verbs_mcast_supported,
	.mcast_attach = verbs_mcast_attach,
	.mcast_detach = verbs_mcast_detach,
	.mcast_join = verbs_mcast_join,
	.mcast_leave = verbs_mcast_leave,
	.mcast_send = verbs_mcast_send,
	.recv = verbs_recv,
	.wait = verbs_wait,
};
