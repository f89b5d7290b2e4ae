/* SPDX-License-Identifier: BSD-3-Clause */
/* Group construction inside OpenSM, following osm_prtn_add_mcgroup():
 * osm_mcmr_rcv_find_or_create_new_mgrp() then osm_mgrp_add_port() for
 * each member, under osm->lock. osm_mgrp_add_port() requests the MLID's
 * rerouting and wakes the SM, which programs the switches on its own
 * thread; the confirmer watches for the end of that. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osm_includes.h"
#include <opensm/osm_helper.h>

#include "builder.h"
#include "common/log.h"
#include "common/mgid.h"

struct name_ref {
	const char *name;
	size_t idx;
};

static int cmp_name_ref(const void *a, const void *b)
{
	return strcmp(((const struct name_ref *)a)->name,
		      ((const struct name_ref *)b)->name);
}

/* Slurm node names are the first word of the NodeDescription: the kernel
 * default is "<hostname> <hca>", ibsim's is whatever the topology says. */
static void desc_first_word(const osm_node_t *node, char *buf, size_t len)
{
	const char *d = (const char *)node->node_desc.description;
	size_t i = 0;

	while (i < IB_NODE_DESCRIPTION_SIZE && i + 1 < len && d[i] &&
	       d[i] != ' ' && d[i] != '\t')
		buf[i] = d[i], i++;
	buf[i] = '\0';
}

static int add_member(struct member_set *m, osm_port_t *port,
		      const osm_physp_t *physp)
{
	const ib_port_info_t *pi = &physp->port_info;
	uint8_t mtu = ib_port_info_get_neighbor_mtu(pi);
	uint8_t rate = ib_port_info_compute_rate(
		pi, pi->capability_mask & IB_PORT_CAP_HAS_EXT_SPEEDS);

	if (m->count == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		osm_port_t **np = realloc(m->ports, cap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		m->ports = np;
		m->cap = cap;
	}
	m->ports[m->count++] = port;
	if (mtu && (!m->mtu || mtu < m->mtu))
		m->mtu = mtu;
	if (rate && (!m->rate || ib_path_compare_rates(rate, m->rate) < 0))
		m->rate = rate;
	return 0;
}

int ibmc__builder_resolve(osm_subn_t *subn, char *const *names,
			  size_t count, struct member_set *m,
			  enum ibmc_err *err, char *detail, size_t dlen)
{
	struct name_ref *refs;
	unsigned char *found;
	cl_map_item_t *item;
	size_t missing = 0, off = 0;
	char word[IB_NODE_DESCRIPTION_SIZE + 1];
	int ret = 0;

	refs = calloc(count, sizeof(*refs));
	found = calloc(count, 1);
	if (!refs || !found) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < count; i++)
		refs[i] = (struct name_ref){ names[i], i };
	qsort(refs, count, sizeof(*refs), cmp_name_ref);

	for (item = cl_qmap_head(&subn->node_guid_tbl);
	     item != cl_qmap_end(&subn->node_guid_tbl);
	     item = cl_qmap_next(item)) {
		osm_node_t *node = (osm_node_t *)item;
		struct name_ref key, *hit;

		if (osm_node_get_type(node) != IB_NODE_TYPE_CA)
			continue;
		desc_first_word(node, word, sizeof(word));
		key.name = word;
		hit = bsearch(&key, refs, count, sizeof(*refs), cmp_name_ref);
		if (!hit)
			continue;
		for (uint8_t pn = 1; pn < osm_node_get_num_physp(node); pn++) {
			osm_physp_t *physp = osm_node_get_physp_ptr(node, pn);
			osm_port_t *port;

			if (!physp || !osm_physp_is_valid(physp) ||
			    !physp->p_remote_physp)
				continue;
			if (ib_port_info_get_port_state(&physp->port_info) !=
			    IB_LINK_ACTIVE)
				continue;
			port = osm_get_port_by_guid(
				subn, osm_physp_get_port_guid(physp));
			if (!port)
				continue;
			ret = add_member(m, port, physp);
			if (ret)
				goto out;
			found[hit->idx] = 1;
		}
	}

	for (size_t i = 0; i < count; i++) {
		if (found[i])
			continue;
		if (!missing++)
			off = (size_t)snprintf(detail, dlen,
					       "no active HCA port found for");
		if (missing <= 5 && off < dlen)
			off += (size_t)snprintf(detail + off, dlen - off,
						" %s", names[i]);
	}
	if (missing) {
		if (missing > 5 && off < dlen)
			snprintf(detail + off, dlen - off,
				 " and %zu more", missing - 5);
		*err = IBMC_ERR_UNKNOWN_NODE;
		ret = -ENOENT;
	}
out:
	if (ret == -ENOMEM) {
		*err = IBMC_ERR_INTERNAL;
		snprintf(detail, dlen, "out of memory resolving nodes");
	}
	free(refs);
	free(found);
	return ret;
}

static unsigned free_mlids(osm_subn_t *subn)
{
	unsigned n = 0, max = subn->max_mcast_lid_ho - IB_LID_MCAST_START_HO;

	for (unsigned i = 0; i <= max; i++)
		if (!subn->mboxes[i])
			n++;
	return n;
}

/* Under osm->lock: drop every member, which frees the group and its MLID
 * when the last full member leaves and asks the SM to clear the MFTs. */
static void drop_group(osm_opensm_t *osm, const uint8_t mgid_raw[16])
{
	ib_gid_t mgid;
	osm_mgrp_t *mgrp;

	memcpy(mgid.raw, mgid_raw, 16);
	/* Look the group up again after every removal: the last one frees
	 * it. */
	while ((mgrp = osm_get_mgrp_by_mgid(&osm->subn, &mgid)) &&
	       cl_qmap_count(&mgrp->mcm_port_tbl)) {
		osm_mcm_port_t *mp =
			(osm_mcm_port_t *)cl_qmap_head(&mgrp->mcm_port_tbl);

		osm_mgrp_delete_port(&osm->subn, &osm->log, mgrp, mp->port);
	}
	/* A group left with no ports at all (never joined) is ours to free. */
	if (mgrp && !cl_qmap_count(&mgrp->mcm_port_tbl) &&
	    !mgrp->well_known) {
		uint16_t mlid = cl_ntoh16(mgrp->mlid);

		mgrp->full_members = 0;
		osm_mgrp_cleanup(&osm->subn, mgrp);
		osm_sm_reroute_mlid(&osm->sm, cl_hton16(mlid));
	}
}

/* Under osm->lock: groups can only be changed by the master SM, with
 * multicast on; then the member ports of the named nodes. */
static int members_on_master(osm_opensm_t *osm, char *const *names,
			     size_t count, struct member_set *m,
			     enum ibmc_err *err, char *detail, size_t dlen)
{
	if (osm->subn.sm_state != IB_SMINFO_STATE_MASTER) {
		*err = IBMC_ERR_BUSY;
		snprintf(detail, dlen,
			 "this OpenSM is not the master SM (state %u)",
			 osm->subn.sm_state);
		return -EAGAIN;
	}
	if (osm->subn.opt.disable_multicast) {
		*err = IBMC_ERR_INTERNAL;
		snprintf(detail, dlen,
			 "multicast is disabled in OpenSM (disable_multicast)");
		return -ENOTSUP;
	}
	return ibmc__builder_resolve(&osm->subn, names, count, m, err, detail,
				     dlen);
}

static osm_mgrp_t *make_group(osm_opensm_t *osm, const uint8_t mgid[16],
			      uint32_t qkey, uint16_t pkey, uint8_t mtu,
			      uint8_t rate, ib_member_rec_t *rec)
{
	ib_net64_t comp_mask = IB_MCR_COMPMASK_MTU | IB_MCR_COMPMASK_MTU_SEL |
			       IB_MCR_COMPMASK_RATE |
			       IB_MCR_COMPMASK_RATE_SEL;

	memset(rec, 0, sizeof(*rec));
	memcpy(rec->mgid.raw, mgid, 16);
	rec->qkey = cl_hton32(qkey);
	rec->pkey = cl_hton16(pkey);
	rec->mtu = (uint8_t)(mtu | (IB_PATH_SELECTOR_EXACTLY << 6));
	rec->rate = (uint8_t)(rate | (IB_PATH_SELECTOR_EXACTLY << 6));
	rec->pkt_life = osm->subn.opt.subnet_timeout;
	rec->sl_flow_hop = ib_member_set_sl_flow_hop(0, 0, 0);
	rec->scope_state = ib_member_set_scope_state(
		IB_MC_SCOPE_LINK_LOCAL, IB_MC_REC_STATE_FULL_MEMBER);
	return osm_mcmr_rcv_find_or_create_new_mgrp(&osm->sa, comp_mask, rec);
}

bool ibmc__builder_join(osm_opensm_t *osm, osm_mgrp_t *mgrp, osm_port_t *port,
			ib_member_rec_t *rec)
{
	rec->port_gid.unicast.prefix = osm->subn.opt.subnet_prefix;
	rec->port_gid.unicast.interface_id = port->guid;
	rec->scope_state = ib_member_set_scope_state(
		IB_MC_SCOPE_LINK_LOCAL, IB_MC_REC_STATE_FULL_MEMBER);
	return osm_mgrp_add_port(&osm->subn, &osm->log, mgrp, port, rec,
				 FALSE) != NULL;
}

int ibmc__builder_create(struct ibmc_plugin *p, uint32_t job,
			 char *const *names, size_t count,
			 unsigned first_index, unsigned ngroups,
			 uint32_t qkey, uint16_t pkey,
			 struct ibmc_group *groups, unsigned *ports,
			 enum ibmc_err *err, char *detail, size_t dlen)
{
	osm_opensm_t *osm = p->osm;
	struct member_set m = { 0 };
	unsigned made = 0;
	int ret = 0;

	CL_PLOCK_EXCL_ACQUIRE(&osm->lock);

	ret = members_on_master(osm, names, count, &m, err, detail, dlen);
	if (ret)
		goto out;
	if (free_mlids(&osm->subn) < ngroups) {
		*err = IBMC_ERR_NO_MLID;
		snprintf(detail, dlen,
			 "%u groups requested but only %u of %u MLIDs are free",
			 ngroups, free_mlids(&osm->subn),
			 osm->subn.max_mcast_lid_ho - IB_LID_MCAST_START_HO +
				 1);
		ret = -ENOSPC;
		goto out;
	}

	for (made = 0; made < ngroups; made++) {
		struct ibmc_group *g = &groups[made];
		ib_member_rec_t rec;
		osm_mgrp_t *mgrp;

		memset(g, 0, sizeof(*g));
		g->index = (uint16_t)(first_index + made);
		ibmc__mgid_derive(job, g->index, pkey, g->mgid);
		mgrp = make_group(osm, g->mgid, qkey, pkey, m.mtu, m.rate,
				  &rec);
		if (!mgrp) {
			*err = IBMC_ERR_NO_MLID;
			snprintf(detail, dlen,
				 "OpenSM could not create group %u "
				 "(no MLID or parameters not realizable)",
				 g->index);
			ret = -ENOSPC;
			goto undo;
		}
		for (size_t i = 0; i < m.count; i++) {
			osm_port_t *port = m.ports[i];

			if (!ibmc__builder_join(osm, mgrp, port, &rec)) {
				*err = IBMC_ERR_INTERNAL;
				snprintf(detail, dlen,
					 "OpenSM could not add port 0x%016" PRIx64
					 " to group %u",
					 cl_ntoh64(port->guid), g->index);
				ret = -ENOMEM;
				goto undo;
			}
		}
		g->mlid = cl_ntoh16(mgrp->mlid);
		g->mtu = (uint8_t)(mgrp->mcmember_rec.mtu & 0x3f);
		g->rate = (uint8_t)(mgrp->mcmember_rec.rate & 0x3f);
		g->members = (unsigned)cl_qmap_count(&mgrp->mcm_port_tbl);
		g->state = IBMC_STATE_BUILDING;
	}
	*ports = (unsigned)m.count;
	goto out;
undo:
	/* Groups 0..made-1 are complete; group made may exist with some or
	 * no members. Dropping an MGID that does not exist is a no-op. */
	for (unsigned i = 0; i <= made; i++)
		drop_group(osm, groups[i].mgid);
out:
	CL_PLOCK_RELEASE(&osm->lock);
	free(m.ports);
	return ret;
}

static bool in_set(const struct member_set *m, const osm_port_t *port)
{
	for (size_t i = 0; i < m->count; i++)
		if (m->ports[i] == port)
			return true;
	return false;
}

int ibmc__builder_reshape(struct ibmc_plugin *p, const uint8_t mgid_raw[16],
			  char *const *names, size_t count, unsigned *members,
			  bool *changed, enum ibmc_err *err, char *detail,
			  size_t dlen)
{
	osm_opensm_t *osm = p->osm;
	struct member_set m = { 0 };
	osm_mgrp_t *mgrp;
	ib_gid_t mgid;
	cl_map_item_t *it, *next;
	int ret;

	*changed = false;
	memcpy(mgid.raw, mgid_raw, 16);
	CL_PLOCK_EXCL_ACQUIRE(&osm->lock);
	ret = members_on_master(osm, names, count, &m, err, detail, dlen);
	if (ret)
		goto out;
	mgrp = osm_get_mgrp_by_mgid(&osm->subn, &mgid);
	if (!mgrp) {
		*err = IBMC_ERR_INTERNAL;
		snprintf(detail, dlen, "the group is gone from OpenSM");
		ret = -ENOENT;
		goto out;
	}
	/* Joins first: the group must never lose its last full member,
	 * which would make OpenSM delete it. The group's own record (its
	 * Q_Key, MTU, rate) is the template, as an SA join would find. */
	for (size_t i = 0; i < m.count; i++) {
		osm_port_t *port = m.ports[i];
		ib_member_rec_t rec = mgrp->mcmember_rec;

		if (osm_mgrp_get_mcm_port(mgrp, port->guid))
			continue;
		if (!ibmc__builder_join(osm, mgrp, port, &rec)) {
			*err = IBMC_ERR_INTERNAL;
			snprintf(detail, dlen,
				 "OpenSM could not add port 0x%016" PRIx64,
				 cl_ntoh64(port->guid));
			ret = -ENOMEM;
			goto out;
		}
		*changed = true;
	}
	for (it = cl_qmap_head(&mgrp->mcm_port_tbl);
	     it != cl_qmap_end(&mgrp->mcm_port_tbl); it = next) {
		osm_mcm_port_t *mp = (osm_mcm_port_t *)it;

		next = cl_qmap_next(it);
		if (in_set(&m, mp->port))
			continue;
		osm_mgrp_delete_port(&osm->subn, &osm->log, mgrp, mp->port);
		*changed = true;
	}
	*members = (unsigned)cl_qmap_count(&mgrp->mcm_port_tbl);
out:
	CL_PLOCK_RELEASE(&osm->lock);
	free(m.ports);
	return ret;
}

void ibmc__builder_destroy(struct ibmc_plugin *p,
			   const struct ibmc_group *groups, unsigned ngroups)
{
	osm_opensm_t *osm = p->osm;

	CL_PLOCK_EXCL_ACQUIRE(&osm->lock);
	for (unsigned i = 0; i < ngroups; i++)
		drop_group(osm, groups[i].mgid);
	CL_PLOCK_RELEASE(&osm->lock);
}

void ibmc__builder_mlid_usage(struct ibmc_plugin *p, unsigned *total,
			      unsigned *used)
{
	osm_subn_t *subn = &p->osm->subn;

	CL_PLOCK_ACQUIRE(&p->osm->lock);
	*total = subn->max_mcast_lid_ho - IB_LID_MCAST_START_HO + 1;
	*used = *total - free_mlids(subn);
	CL_PLOCK_RELEASE(&p->osm->lock);
}
