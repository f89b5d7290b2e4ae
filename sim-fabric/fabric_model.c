/* SPDX-License-Identifier: BSD-3-Clause */
/* fabric_model.c - discover the fabric with libibnetdisc (SMPs through this
 * process's umad port) and keep it as plain arrays that outlive the
 * library's own structures. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include "sim-fabric/fabric_model.h"

/* IB MTU enum (1: 256 .. 5: 4096) in bytes; 2048 when unset. */
static uint32_t mtu_bytes(int enc)
{
	return enc >= 1 && enc <= 5 ? 128u << enc : 2048;
}

static int node_index(ibnd_node_t **all, int n, const ibnd_node_t *x)
{
	int i;

	for (i = 0; i < n; i++)
		if (all[i] == x)
			return i;
	return -1;
}

static void copy_node(struct fm_node *d, ibnd_node_t *n)
{
	size_t w;

	d->guid = n->guid;
	d->is_switch = n->type == IB_NODE_SWITCH;
	snprintf(d->desc, sizeof(d->desc), "%s", n->nodedesc);
	w = strcspn(d->desc, " \t");
	memcpy(d->name, d->desc, w);
	d->name[w] = '\0';
	d->nports = n->numports;
	d->npos = (n->numports + 1 + 15) / 16;
}

int fm_discover(struct fabric_model *fm)
{
	struct ibnd_config cfg = { 0 };
	ibnd_fabric_t *f;
	ibnd_node_t *n, **all = NULL;
	int nn = 0, i, p, ret = -ENOMEM;

	memset(fm, 0, sizeof(*fm));
	f = ibnd_discover_fabric(NULL, 0, NULL, &cfg);
	if (!f)
		return -EIO;
	for (n = f->nodes; n; n = n->next)
		nn++;
	all = calloc((size_t)nn + 1, sizeof(*all));
	fm->node = calloc((size_t)nn + 1, sizeof(*fm->node));
	if (!all || !fm->node)
		goto out;
	i = 0;
	for (n = f->nodes; n; n = n->next)
		all[i++] = n;
	fm->nnode = nn;
	for (i = 0; i < nn; i++) {
		struct fm_node *d = &fm->node[i];

		n = all[i];
		copy_node(d, n);
		d->ports = calloc((size_t)d->nports + 1, sizeof(*d->ports));
		if (!d->ports)
			goto out;
		d->hca_port = -1;
		for (p = 0; p <= d->nports; p++) {
			ibnd_port_t *pp = n->ports ? n->ports[p] : NULL;

			d->ports[p].peer = -1;
			d->ports[p].link = -1;
			if (!pp)
				continue;
			if (d->is_switch && p == 0) {
				d->lid = pp->base_lid ? pp->base_lid : n->smalid;
				d->sm_lid = (uint16_t)mad_get_field(pp->info, 0,
							IB_PORT_SMLID_F);
			}
			if (!pp->remoteport || p == 0)
				continue;
			d->ports[p].peer = node_index(all, nn,
						      pp->remoteport->node);
			d->ports[p].peer_port = pp->remoteport->portnum;
			if (d->ports[p].peer >= 0)
				d->ports[p].link = fm->nlink++;
			if (!d->is_switch && d->hca_port < 0) {
				d->hca_port = p;
				d->lid = pp->base_lid;
				d->port_guid = pp->guid;
				d->sm_lid = (uint16_t)mad_get_field(pp->info, 0,
							IB_PORT_SMLID_F);
				d->mtu = mtu_bytes((int)mad_get_field(pp->info,
						0, IB_PORT_NEIGHBOR_MTU_F));
				fm->subnet_prefix = mad_get_field64(pp->info, 0,
						IB_PORT_GID_PREFIX_F);
			}
		}
		if (d->lid > fm->max_lid)
			fm->max_lid = d->lid;
	}
	fm->link = calloc((size_t)fm->nlink + 1, sizeof(*fm->link));
	fm->lid_node = malloc(sizeof(int) * ((size_t)fm->max_lid + 1));
	if (!fm->link || !fm->lid_node)
		goto out;
	for (i = 0; i <= fm->max_lid; i++)
		fm->lid_node[i] = -1;
	for (i = 0; i < nn; i++) {
		struct fm_node *d = &fm->node[i];

		if (d->lid)
			fm->lid_node[d->lid] = i;
		for (p = 1; p <= d->nports; p++) {
			struct fm_port *pt = &d->ports[p];

			if (pt->link < 0)
				continue;
			fm->link[pt->link] = (struct fm_link){
				.from = i, .from_port = p,
				.to = pt->peer, .to_port = pt->peer_port };
		}
	}
	ret = 0;
out:
	free(all);
	ibnd_destroy_fabric(f);
	if (ret)
		fm_free(fm);
	return ret;
}

void fm_free(struct fabric_model *fm)
{
	int i;

	for (i = 0; fm->node && i < fm->nnode; i++)
		free(fm->node[i].ports);
	free(fm->node);
	free(fm->link);
	free(fm->lid_node);
	memset(fm, 0, sizeof(*fm));
}

int fm_find_hca(const struct fabric_model *fm, const char *name)
{
	int i, found = -1;

	for (i = 0; i < fm->nnode; i++) {
		if (fm->node[i].is_switch || strcmp(fm->node[i].name, name))
			continue;
		if (found >= 0)
			return -2;
		found = i;
	}
	return found;
}

void fm_link_name(const struct fabric_model *fm, int link, char *buf,
		  unsigned len)
{
	const struct fm_link *l = &fm->link[link];

	snprintf(buf, len, "%s/%d -> %s/%d", fm->node[l->from].name,
		 l->from_port, fm->node[l->to].name, l->to_port);
}
