/* SPDX-License-Identifier: BSD-3-Clause */
/* fabric_merge.c - fold a fresh discovery into the model the data plane
 * already indexes its tables and counters by, so that a switch or a link
 * that appears while it runs is added without renumbering what exists. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim-fabric/fabric_model.h"

/* realloc to n elements of size, zeroing those past old. */
static int grow(void *pp, size_t size, size_t old, size_t n)
{
	void **p = pp;
	char *q;

	if (n <= old && *p)
		return 0;
	q = realloc(*p, size * (n ? n : 1));
	if (!q)
		return -ENOMEM;
	memset(q + size * old, 0, size * ((n ? n : 1) - old));
	*p = q;
	return 0;
}

static int find_guid(const struct fabric_model *fm, uint64_t guid)
{
	for (int i = 0; i < fm->nnode; i++)
		if (fm->node[i].guid == guid)
			return i;
	return -1;
}

/* Node index in fm of each node of nf, appending the new ones (without
 * their ports' peers, filled in by the caller). */
static int map_nodes(struct fabric_model *fm, const struct fabric_model *nf,
		     int *map)
{
	int add = 0, n = fm->nnode;

	for (int i = 0; i < nf->nnode; i++) {
		map[i] = find_guid(fm, nf->node[i].guid);
		add += map[i] < 0;
	}
	if (!add)
		return 0;
	if (grow(&fm->node, sizeof(*fm->node), (size_t)n, (size_t)(n + add)))
		return -ENOMEM;
	for (int i = 0; i < nf->nnode; i++) {
		struct fm_node *d;

		if (map[i] >= 0)
			continue;
		d = &fm->node[n];
		*d = nf->node[i];
		d->ports = calloc((size_t)d->nports + 1, sizeof(*d->ports));
		if (!d->ports)
			return -ENOMEM;
		for (int p = 0; p <= d->nports; p++)
			d->ports[p] = (struct fm_port){ .peer = -1,
							.link = -1 };
		map[i] = n++;
		fm->nnode = n;
	}
	return 0;
}

int fm_merge(struct fabric_model *fm, const struct fabric_model *nf)
{
	int *map = calloc((size_t)nf->nnode + 1, sizeof(*map)), *lid_node;
	int ret = -ENOMEM;

	if (!map || map_nodes(fm, nf, map))
		goto out;
	for (int i = 0; i < nf->nnode; i++) {
		const struct fm_node *s = &nf->node[i];
		struct fm_node *d = &fm->node[map[i]];

		/* What OpenSM may have (re)assigned since. */
		if (s->lid)
			d->lid = s->lid;
		if (d->hca_port < 0 && s->hca_port >= 0) {
			d->hca_port = s->hca_port;
			d->mtu = s->mtu;
			d->port_guid = s->port_guid;
		}
		for (int p = 1; p <= s->nports && p <= d->nports; p++) {
			const struct fm_port *sp = &s->ports[p];
			struct fm_port *dp = &d->ports[p];
			int peer;

			if (sp->peer < 0)
				continue;
			peer = map[sp->peer];
			if (dp->link >= 0 && dp->peer == peer &&
			    dp->peer_port == sp->peer_port)
				continue;
			if (dp->link < 0) {
				if (grow(&fm->link, sizeof(*fm->link),
					 (size_t)fm->nlink,
					 (size_t)fm->nlink + 2))
					goto out;
				dp->link = fm->nlink++;
			}
			dp->peer = peer;
			dp->peer_port = sp->peer_port;
			fm->link[dp->link] = (struct fm_link){
				.from = map[i], .from_port = p,
				.to = peer, .to_port = sp->peer_port };
		}
	}
	for (int i = 0; i < fm->nnode; i++)
		if (fm->node[i].lid > fm->max_lid)
			fm->max_lid = fm->node[i].lid;
	lid_node = malloc(sizeof(int) * ((size_t)fm->max_lid + 1));
	if (!lid_node)
		goto out;
	for (int l = 0; l <= fm->max_lid; l++)
		lid_node[l] = -1;
	for (int i = 0; i < fm->nnode; i++)
		if (fm->node[i].lid)
			lid_node[fm->node[i].lid] = i;
	/* A LID nf assigns wins over a stale one of a node nf lacks. */
	for (int i = 0; i < nf->nnode; i++)
		if (nf->node[i].lid)
			lid_node[nf->node[i].lid] = map[i];
	free(fm->lid_node);
	fm->lid_node = lid_node;
	ret = 0;
out:
	free(map);
	return ret;
}
