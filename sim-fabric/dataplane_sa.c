/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_sa.c - the SA proxy: an endpoint's JOIN/LEAVE becomes a real
 * MCMemberRecord SubnAdmSet/SubnAdmDelete to OpenSM's SA, sent from the
 * daemon's own umad port with the endpoint's port GID (ibsim serves only
 * ten umad clients, so endpoints cannot each have one). OpenSM accepts such
 * a proxy join when the requester shares a partition with the port
 * (osm_sa_mcmember_record.c: proxy = requester != port, then
 * osm_physp_share_pkey), and a later delete from the same requester. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mad.h>

#include "common/log.h"
#include "sim-fabric/dataplane.h"

/* MCMemberRecord component mask bits (IBA 15.2.5.17). */
#define MCR_MGID	(1ull << 0)
#define MCR_PORT_GID	(1ull << 1)
#define MCR_QKEY	(1ull << 2)
#define MCR_TCLASS	(1ull << 6)
#define MCR_PKEY	(1ull << 7)
#define MCR_SL		(1ull << 12)
#define MCR_FLOW	(1ull << 13)
#define MCR_JOIN_STATE	(1ull << 16)

struct dp_sa_op {
	struct dataplane *dp;
	struct dp_ep *ep;	/* NULL once the endpoint is gone */
	bool leave;
	struct dp_sa_op *next;
};

static void unlink_op(struct dataplane *dp, struct dp_sa_op *op)
{
	struct dp_sa_op **pp;

	for (pp = &dp->sa_ops; *pp; pp = &(*pp)->next)
		if (*pp == op) {
			*pp = op->next;
			return;
		}
}

static void sa_done(void *arg, int status, const uint8_t *mad)
{
	struct dp_sa_op *op = arg;
	struct dataplane *dp = op->dp;
	struct ibmc_dp_join_ok ok = { 0 };
	uint8_t *rec;
	int mtu;

	unlink_op(dp, op);
	if (!op->ep)
		goto out;
	if (status) {
		dp_ep_error(dp, op->ep, status, status == -ETIMEDOUT ?
			    "SA did not answer" : "SA refused the request");
		goto out;
	}
	if (op->leave) {
		dp_ep_reply(dp, op->ep, IBMC_DP_OK, NULL, 0);
		goto out;
	}
	rec = (uint8_t *)mad + IB_SA_DATA_OFFS;
	ok.mlid = (uint16_t)mad_get_field(rec, 0, IB_SA_MCM_MLID_F);
	ok.pkey = (uint16_t)mad_get_field(rec, 0, IB_SA_MCM_PKEY_F);
	ok.qkey = mad_get_field(rec, 0, IB_SA_MCM_QKEY_F);
	mtu = (int)mad_get_field(rec, 0, IB_SA_MCM_MTU_F);
	ok.mtu = mtu >= 1 && mtu <= 5 ? 128u << mtu : 0;
	mad_get_array(rec, 0, IB_SA_MCM_MGID_F, ok.mgid);
	dp_ep_reply(dp, op->ep, IBMC_DP_JOIN_OK, &ok, sizeof(ok));
out:
	free(op);
}

void dp_sa_join(struct dataplane *dp, struct dp_ep *ep,
		const struct ibmc_dp_join *j, bool leave)
{
	const struct fm_node *n = &dp->fm.node[ep->hca];
	struct dp_mad_req r = { 0 };
	struct dp_sa_op *op;
	uint8_t gid[16];
	uint64_t v;
	int i;

	if (!j->join_state || j->join_state & ~7u)
		return dp_ep_error(dp, ep, -EINVAL, "JOIN: bad join_state");
	op = calloc(1, sizeof(*op));
	if (!op)
		return dp_ep_error(dp, ep, -ENOMEM, "out of memory");
	v = dp->fm.subnet_prefix;
	for (i = 0; i < 8; i++)
		gid[i] = (uint8_t)(v >> (56 - 8 * i));
	v = n->port_guid;
	for (i = 0; i < 8; i++)
		gid[8 + i] = (uint8_t)(v >> (56 - 8 * i));
	r.mgmt_class = IB_SA_CLASS;
	r.method = leave ? IB_MAD_METHOD_DELETE : IB_MAD_METHOD_SET;
	r.attr_id = IB_SA_ATTR_MCRECORD;
	r.dlid = n->sm_lid;
	r.comp_mask = MCR_MGID | MCR_PORT_GID | MCR_JOIN_STATE;
	mad_set_array(r.data, 0, IB_SA_MCM_MGID_F, (void *)j->mgid);
	mad_set_array(r.data, 0, IB_SA_MCM_PORTGID_F, gid);
	mad_set_field(r.data, 0, IB_SA_MCM_JOIN_STATE_F, j->join_state);
	mad_set_field(r.data, 0, IB_SA_MCM_PROXY_JOIN_F, 1);
	if (!leave && j->qkey) {
		/* Enough to create the group if it does not exist. */
		r.comp_mask |= MCR_QKEY | MCR_TCLASS | MCR_PKEY | MCR_SL |
			       MCR_FLOW;
		mad_set_field(r.data, 0, IB_SA_MCM_QKEY_F, j->qkey);
		mad_set_field(r.data, 0, IB_SA_MCM_PKEY_F,
			      j->pkey ? j->pkey : 0xffff);
	}
	r.done = sa_done;
	r.arg = op;
	op->dp = dp;
	op->ep = ep;
	op->leave = leave;
	if (dp_mad_submit(dp->mad, &r)) {
		free(op);
		return dp_ep_error(dp, ep, -ENOMEM, "out of memory");
	}
	op->next = dp->sa_ops;
	dp->sa_ops = op;
	dp_mad_progress(dp->mad);
}

void dp_sa_forget(struct dataplane *dp, struct dp_ep *ep)
{
	struct dp_sa_op *op;

	for (op = dp->sa_ops; op; op = op->next)
		if (op->ep == ep)
			op->ep = NULL;
}

void dp_sa_free_all(struct dataplane *dp)
{
	struct dp_sa_op *op;

	while ((op = dp->sa_ops)) {
		dp->sa_ops = op->next;
		free(op);
	}
}
