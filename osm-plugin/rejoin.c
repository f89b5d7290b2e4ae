/* SPDX-License-Identifier: BSD-3-Clause */
/* Re-adding member ports that come back to the fabric (a node rebooted, a
 * cable replugged). OpenSM's drop manager removes a vanished port from
 * every multicast group; on a real fabric the host's SA client would join
 * again, but a job's groups are the plugin's, so the plugin does. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osm_includes.h"

#include "builder.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "confirmer.h"
#include "rejoin.h"

/* A job with ports missing, copied out of the registry so that osm->lock
 * can be taken without it. */
struct absent {
	uint32_t job;
	uint64_t generation;
	char *canon;
	unsigned ngroups;
	uint8_t (*mgid)[16];
	char **gcanon;        /* per group: its pruned subset, or NULL */
	unsigned *added;      /* per group, filled under osm->lock */
	struct absent *next;
};

static void free_absent(struct absent *a)
{
	while (a) {
		struct absent *next = a->next;

		free(a->canon);
		for (unsigned g = 0; a->gcanon && g < a->ngroups; g++)
			free(a->gcanon[g]);
		free(a->gcanon);
		free(a->mgid);
		free(a->added);
		free(a);
		a = next;
	}
}

/* Registry lock held. NULL when nothing is missing (or out of memory:
 * the next verification tries again). */
static struct absent *collect_absent(struct ibmc_registry *r)
{
	struct absent *list = NULL;

	for (struct ibmc_job *j = r->jobs; j; j = j->next) {
		struct absent *a;
		unsigned missing = 0;

		if ((j->state != IBMC_STATE_READY &&
		     j->state != IBMC_STATE_BUILDING) || j->needs_build)
			continue;
		for (unsigned g = 0; g < j->ngroups; g++)
			missing += j->groups[g].missing;
		if (!missing)
			continue;
		a = calloc(1, sizeof(*a));
		if (!a)
			break;
		a->job = j->id;
		a->generation = j->generation;
		a->ngroups = j->ngroups;
		a->canon = strdup(j->canon);
		a->mgid = calloc(j->ngroups, sizeof(*a->mgid));
		a->added = calloc(j->ngroups, sizeof(*a->added));
		a->gcanon = calloc(j->ngroups, sizeof(*a->gcanon));
		if (!a->canon || !a->mgid || !a->added || !a->gcanon) {
			free_absent(a);
			break;
		}
		for (unsigned g = 0; g < j->ngroups; g++) {
			memcpy(a->mgid[g], j->groups[g].mgid, 16);
			if (j->groups[g].canon &&
			    !(a->gcanon[g] = strdup(j->groups[g].canon))) {
				free_absent(a);
				return list;
			}
		}
		a->next = list;
		list = a;
	}
	return list;
}

/* Under osm->lock: add to group g every active port of its nodes (the
 * job's, or the subset a prune left it) that it lacks. The port joins
 * with the group's own record, as a member's SA join would. */
static void readd_group(osm_opensm_t *osm, struct absent *a, unsigned g)
{
	struct member_set m = { 0 };
	enum ibmc_err err;
	struct ibmc_hostlist names = { 0 };
	char detail[160];
	ib_gid_t mgid;
	osm_mgrp_t *mgrp;
	int ret;

	memcpy(mgid.raw, a->mgid[g], 16);
	mgrp = osm_get_mgrp_by_mgid(&osm->subn, &mgid);
	if (!mgrp)
		return; /* gone: the verification reports that */
	/* The canonical list "a,b,c" is a hostlist expression without
	 * ranges; no limit beyond what the job was admitted with. */
	if (ibmc__hostlist_expand(a->gcanon[g] ? a->gcanon[g] : a->canon,
				  SIZE_MAX, &names))
		goto out;
	/* -ENOENT: some node has no active port yet; re-add those that do. */
	ret = ibmc__builder_resolve(&osm->subn, names.names, names.count, &m,
				    &err, detail, sizeof(detail));
	if (ret && ret != -ENOENT)
		goto out;
	for (size_t i = 0; i < m.count; i++) {
		osm_port_t *port = m.ports[i];
		ib_member_rec_t rec;

		if (osm_mgrp_get_mcm_port(mgrp, port->guid))
			continue;
		rec = mgrp->mcmember_rec;
		if (!ibmc__builder_join(osm, mgrp, port, &rec)) {
			ibmc_log(IBMC_LOG_ERROR,
				 "job %u group %u: OpenSM could not "
				 "re-add port 0x%016" PRIx64, a->job, g,
				 cl_ntoh64(port->guid));
			continue;
		}
		a->added[g]++;
	}
out:
	free(m.ports);
	ibmc__hostlist_free(&names);
}

static void readd(osm_opensm_t *osm, struct absent *a)
{
	for (unsigned g = 0; g < a->ngroups; g++)
		readd_group(osm, a, g);
}

/* Registry lock held: the groups that got ports back are built again. */
static unsigned mark_building(struct ibmc_plugin *p, struct absent *a,
			      uint64_t now)
{
	struct ibmc_job *j = ibmc__registry_find(&p->reg, a->job);
	unsigned ports = 0, groups = 0;

	if (!j || j->generation != a->generation ||
	    (j->state != IBMC_STATE_READY && j->state != IBMC_STATE_BUILDING))
		return 0;
	for (unsigned g = 0; g < a->ngroups && g < j->ngroups; g++) {
		struct ibmc_group *grp = &j->groups[g];

		if (!a->added[g])
			continue;
		ports += a->added[g];
		groups++;
		grp->state = IBMC_STATE_BUILDING;
		grp->ready_ns = 0;
		grp->sm_done_ns = 0;
		snprintf(grp->pending, sizeof(grp->pending),
			 "%u member port(s) re-added", a->added[g]);
	}
	if (!groups)
		return 0;
	if (j->state == IBMC_STATE_READY) {
		j->state = IBMC_STATE_BUILDING;
		j->building_since_ns = now;
	}
	p->reg.counters.rejoins += ports;
	ibmc_log(IBMC_LOG_INFO,
		 "job %u: member ports are back on the fabric; %u port "
		 "additions to %u groups, building again", j->id, ports,
		 groups);
	return ports;
}

unsigned ibmc__rejoin_returning(struct ibmc_plugin *p)
{
	osm_opensm_t *osm = p->osm;
	struct absent *list;
	uint64_t now;
	unsigned added = 0;

	pthread_mutex_lock(&p->reg.lock);
	list = collect_absent(&p->reg);
	pthread_mutex_unlock(&p->reg.lock);
	if (!list)
		return 0;

	CL_PLOCK_EXCL_ACQUIRE(&osm->lock);
	/* A standby's groups are its master's business. */
	if (osm->subn.sm_state == IB_SMINFO_STATE_MASTER)
		for (struct absent *a = list; a; a = a->next)
			readd(osm, a);
	CL_PLOCK_RELEASE(&osm->lock);

	now = ibmc__now_ns();
	pthread_mutex_lock(&p->reg.lock);
	for (struct absent *a = list; a; a = a->next)
		added += mark_building(p, a, now);
	if (added)
		ibmc__confirmer_kick(p);
	pthread_mutex_unlock(&p->reg.lock);
	if (added)
		ibmc__plugin_notify_server(p);
	free_absent(list);
	return added;
}
