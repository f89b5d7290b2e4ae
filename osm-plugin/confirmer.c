/* SPDX-License-Identifier: BSD-3-Clause */
/* The readiness confirmer. A group is ready only when (1) OpenSM has
 * processed its MLID (sm->mlids_req[] cleared under the lock that covers
 * posting the MFT SMPs), (2) every QP0 MAD of that pass has completed
 * (stats.qp0_mads_outstanding back to 0, no subnet_initialization_error),
 * (3) OpenSM's own tables form a tree reaching every member, and (4) with
 * readback on, each switch on that tree returns the expected port mask
 * for the MLID when its MFT block is read over our own SMP agent.
 *
 * Ready groups are verified again (3 and 4, and that OpenSM is not about
 * to reroute them) after every heavy sweep and every verify_ms: a link
 * or switch going down, or a switch losing its tables, sends the job back
 * to building until OpenSM has rerouted it and the readback agrees. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "osm_includes.h"

#include "common/fnv.h"
#include "common/log.h"
#include "confirmer.h"
#include "rejoin.h"
#include "smp_client.h"

#define MAX_POSITIONS 16 /* 255 ports / 16 */

struct tree_switch {
	uint16_t lid;
	uint8_t npos;
	uint16_t masks[MAX_POSITIONS];
};

/* One group still building, as copied out of the registry. */
struct item {
	uint32_t job;
	uint64_t generation;
	uint16_t index;
	uint16_t mlid;
	uint8_t mgid[16];
	bool sm_done;   /* conditions 1-3 hold */
	bool confirmed; /* and 4 */
	uint64_t sm_at; /* when 1-3 were seen to hold */
	bool verify;    /* a ready group being re-checked */
	bool unprocessed; /* its MLID still waits for OpenSM's pass */
	uint64_t fp;       /* fingerprint of the tree in OpenSM's tables */
	unsigned expected; /* member ports at reservation */
	unsigned present;  /* member ports OpenSM still has */
	char why[96];   /* last reason it is not ready */
	struct tree_switch *tree;
	unsigned ntree;
};

struct ibmc_confirmer {
	pthread_t thread;
	struct ibmc_smp_client *smp;
	bool smp_failed;
	struct item *items;
	unsigned nitems, cap;
	struct ibmc_smp_query *q;
	struct ibmc_smp_result *res;
	size_t nq, qcap;
	bool kicked;
	unsigned seen_sweeps;
	uint64_t next_verify_ns;
	uint64_t next_nudge_ns;
};

void ibmc__confirmer_kick(struct ibmc_plugin *p)
{
	if (p->confirmer)
		p->confirmer->kicked = true;
	pthread_cond_signal(&p->reg.changed);
}

static void clear_items(struct ibmc_confirmer *c)
{
	for (unsigned i = 0; i < c->nitems; i++)
		free(c->items[i].tree);
	c->nitems = 0;
}

/* Registry lock held. Copies every building group into c->items. */
static int collect(struct ibmc_plugin *p, struct ibmc_confirmer *c,
		   bool verify)
{
	for (struct ibmc_job *j = p->reg.jobs; j; j = j->next) {
		enum ibmc_state want = verify ? IBMC_STATE_READY
					      : IBMC_STATE_BUILDING;

		if (j->state != want)
			continue;
		for (unsigned g = 0; g < j->ngroups; g++) {
			struct item *it;

			if (j->groups[g].state != want || !j->groups[g].mlid)
				continue;
			if (c->nitems == c->cap) {
				unsigned cap = c->cap ? 2 * c->cap : 64;
				struct item *n = realloc(c->items,
							 cap * sizeof(*n));

				if (!n)
					return -ENOMEM;
				c->items = n;
				c->cap = cap;
			}
			it = &c->items[c->nitems++];
			memset(it, 0, sizeof(*it));
			it->job = j->id;
			it->generation = j->generation;
			it->index = j->groups[g].index;
			it->mlid = j->groups[g].mlid;
			it->verify = verify;
			it->expected = j->groups[g].members;
			memcpy(it->mgid, j->groups[g].mgid, 16);
		}
	}
	return 0;
}

static osm_switch_t *switch_of(osm_physp_t *physp)
{
	osm_physp_t *rem = physp ? physp->p_remote_physp : NULL;

	return rem ? rem->p_node->sw : NULL;
}

/* Under osm->lock: does OpenSM's own MFT view carry the MLID from the
 * first member to all the others? A BFS over switches whose linking ports
 * both carry the MLID. */
static bool tree_reaches_members(osm_subn_t *subn, osm_mgrp_t *mgrp,
				 uint16_t mlid, char *why, size_t wlen)
{
	size_t nsw = cl_qmap_count(&subn->sw_guid_tbl), head = 0, tail = 0;
	osm_switch_t **queue;
	cl_map_item_t *it;
	bool ok = true;

	queue = calloc(nsw ? nsw : 1, sizeof(*queue));
	if (!queue) {
		snprintf(why, wlen, "out of memory");
		return false;
	}
	/* Reuse the switches' 'priv' pointer? No: OpenSM owns it. Mark
	 * visits by position in the queue instead (nsw is small). */
	for (it = cl_qmap_head(&mgrp->mcm_port_tbl);
	     it != cl_qmap_end(&mgrp->mcm_port_tbl); it = cl_qmap_next(it)) {
		osm_mcm_port_t *mp = (osm_mcm_port_t *)it;
		osm_physp_t *physp = mp->port->p_physp;
		osm_switch_t *sw = switch_of(physp);
		uint8_t rport;

		if (!sw) {
			snprintf(why, wlen, "member 0x%016" PRIx64
				 " has no switch neighbour",
				 cl_ntoh64(mp->port->guid));
			ok = false;
			goto out;
		}
		rport = osm_physp_get_port_num(physp->p_remote_physp);
		if (!osm_mcast_tbl_is_port(&sw->mcast_tbl, mlid, rport)) {
			snprintf(why, wlen,
				 "OpenSM has not yet routed MLID 0x%04x to "
				 "member 0x%016" PRIx64, mlid,
				 cl_ntoh64(mp->port->guid));
			ok = false;
			goto out;
		}
		if (!tail)
			queue[tail++] = sw;
	}
	/* BFS from the first member's switch. */
	while (head < tail) {
		osm_switch_t *sw = queue[head++];

		for (uint8_t pn = 1; pn < sw->num_ports; pn++) {
			osm_physp_t *pp, *rem;
			osm_switch_t *nsw2;
			size_t k;

			if (!osm_mcast_tbl_is_port(&sw->mcast_tbl, mlid, pn))
				continue;
			pp = osm_node_get_physp_ptr(sw->p_node, pn);
			if (!pp || !(rem = pp->p_remote_physp))
				continue;
			nsw2 = rem->p_node->sw;
			if (!nsw2 ||
			    !osm_mcast_tbl_is_port(&nsw2->mcast_tbl, mlid,
						   osm_physp_get_port_num(rem)))
				continue;
			for (k = 0; k < tail; k++)
				if (queue[k] == nsw2)
					break;
			if (k == tail && tail < nsw)
				queue[tail++] = nsw2;
		}
	}
	for (it = cl_qmap_head(&mgrp->mcm_port_tbl);
	     it != cl_qmap_end(&mgrp->mcm_port_tbl); it = cl_qmap_next(it)) {
		osm_switch_t *sw =
			switch_of(((osm_mcm_port_t *)it)->port->p_physp);
		size_t k;

		for (k = 0; k < tail; k++)
			if (queue[k] == sw)
				break;
		if (k == tail) {
			snprintf(why, wlen,
				 "OpenSM's tree for MLID 0x%04x does not "
				 "connect all members", mlid);
			ok = false;
			goto out;
		}
	}
out:
	free(queue);
	return ok;
}

/* FNV-1a over the tree's switches and port masks, in OpenSM's switch
 * order (stable while the switch table is): a changed value means OpenSM
 * has rerouted the group. */
static uint64_t tree_fingerprint(const struct tree_switch *t, unsigned n)
{
	return ibmc__fnv1a64(IBMC__FNV64_INIT, t, sizeof(*t) * n);
}

/* Under osm->lock: conditions 1 and 3 for one item, and the expected
 * masks of every switch on its tree. */
static void check_sm_view(osm_opensm_t *osm, struct item *it)
{
	osm_subn_t *subn = &osm->subn;
	ib_gid_t mgid;
	osm_mgrp_t *mgrp;
	cl_map_item_t *m;
	unsigned n = 0;

	memcpy(mgid.raw, it->mgid, 16);
	mgrp = osm_get_mgrp_by_mgid(subn, &mgid);
	if (!mgrp || cl_ntoh16(mgrp->mlid) != it->mlid) {
		snprintf(it->why, sizeof(it->why),
			 "group is gone from OpenSM");
		return;
	}
	it->present = (unsigned)cl_qmap_count(&mgrp->mcm_port_tbl);
	if (osm->sm.mlids_req[it->mlid - IB_LID_MCAST_START_HO]) {
		it->unprocessed = true;
		snprintf(it->why, sizeof(it->why),
			 "OpenSM has not processed MLID 0x%04x yet", it->mlid);
		return;
	}
	/* OpenSM builds no tree for fewer than two member ports
	 * (mcast_mgr_build_spanning_tree: "nothing to do"): no switch holds
	 * the MLID, and the one member's HCA loops its own packets back. */
	if (cl_qmap_count(&mgrp->mcm_port_tbl) < 2) {
		it->ntree = 0;
		it->sm_done = true;
		return;
	}
	if (!tree_reaches_members(subn, mgrp, it->mlid, it->why,
				  sizeof(it->why)))
		return;

	it->tree = calloc(cl_qmap_count(&subn->sw_guid_tbl) + 1,
			  sizeof(*it->tree));
	if (!it->tree) {
		snprintf(it->why, sizeof(it->why), "out of memory");
		return;
	}
	for (m = cl_qmap_head(&subn->sw_guid_tbl);
	     m != cl_qmap_end(&subn->sw_guid_tbl); m = cl_qmap_next(m)) {
		osm_switch_t *sw = (osm_switch_t *)m;
		struct tree_switch *ts;

		if (!osm_mcast_tbl_is_any_port(&sw->mcast_tbl, it->mlid))
			continue;
		ts = &it->tree[n++];
		ts->lid = cl_ntoh16(osm_node_get_base_lid(sw->p_node, 0));
		ts->npos = (uint8_t)((sw->num_ports + 15) / 16);
		if (ts->npos > MAX_POSITIONS)
			ts->npos = MAX_POSITIONS;
		for (unsigned pn = 0; pn < sw->num_ports &&
				      pn < 16 * MAX_POSITIONS; pn++)
			if (osm_mcast_tbl_is_port(&sw->mcast_tbl, it->mlid,
						  (uint8_t)pn))
				ts->masks[pn / 16] |=
					(uint16_t)(1u << (pn % 16));
	}
	it->ntree = n;
	it->fp = tree_fingerprint(it->tree, n);
	it->sm_done = true;
}

/* Condition 2: every QP0 MAD OpenSM sent has completed. Read under
 * stats.mutex as OpenSM does; never wait on stats.cond (that is the SM's
 * own thread's business). */
static bool qp0_idle(osm_opensm_t *osm)
{
	uint32_t outstanding;

	pthread_mutex_lock(&osm->stats.mutex);
	outstanding = osm->stats.qp0_mads_outstanding;
	pthread_mutex_unlock(&osm->stats.mutex);
	return outstanding == 0 && !osm->subn.subnet_initialization_error;
}

static int add_query(struct ibmc_confirmer *c, uint16_t lid, uint16_t block,
		     uint8_t pos)
{
	if (c->nq == c->qcap) {
		size_t cap = c->qcap ? 2 * c->qcap : 256;
		struct ibmc_smp_query *nq = realloc(c->q, cap * sizeof(*nq));
		struct ibmc_smp_result *nr;

		if (!nq)
			return -ENOMEM;
		c->q = nq;
		nr = realloc(c->res, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		c->res = nr;
		c->qcap = cap;
	}
	c->q[c->nq++] = (struct ibmc_smp_query){ .lid = lid, .block = block,
						 .position = pos };
	return 0;
}

/* Queries and results share the key (LID, block, position) and its
 * order, so one comparison serves sorting the first and searching the
 * second. */
static unsigned long key(uint16_t lid, uint16_t block, uint8_t pos)
{
	return (unsigned long)lid << 24 | (unsigned long)block << 8 | pos;
}

static int cmp_query(const void *a, const void *b)
{
	const struct ibmc_smp_query *x = a, *y = b;
	unsigned long kx = key(x->lid, x->block, x->position);
	unsigned long ky = key(y->lid, y->block, y->position);

	return kx < ky ? -1 : kx > ky;
}

/* Many groups share switches and 32-MLID blocks: read each block once. */
static void sort_unique_queries(struct ibmc_confirmer *c)
{
	size_t out = 0;

	if (!c->nq)
		return; /* c->q may still be NULL: qsort wants an array */
	qsort(c->q, c->nq, sizeof(*c->q), cmp_query);
	for (size_t i = 0; i < c->nq; i++)
		if (!out || cmp_query(&c->q[out - 1], &c->q[i]))
			c->q[out++] = c->q[i];
	c->nq = out;
}

static const struct ibmc_smp_result *find_result(struct ibmc_confirmer *c,
						 uint16_t lid, uint16_t block,
						 uint8_t pos)
{
	unsigned long want = key(lid, block, pos);
	size_t lo = 0, hi = c->nq;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ibmc_smp_result *r = &c->res[mid];
		unsigned long k = key(r->lid, r->block, r->position);

		if (k == want)
			return r;
		if (k < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Condition 4: read the MFT blocks back and compare. */
static void readback(struct ibmc_plugin *p, struct ibmc_confirmer *c)
{
	int ret;

	c->nq = 0;
	for (unsigned i = 0; i < c->nitems; i++) {
		struct item *it = &c->items[i];
		uint16_t block = (uint16_t)((it->mlid - 0xC000) / 32);

		if (!it->sm_done)
			continue;
		for (unsigned s = 0; s < it->ntree; s++)
			for (uint8_t pos = 0; pos < it->tree[s].npos; pos++)
				if (add_query(c, it->tree[s].lid, block, pos))
					return;
	}
	sort_unique_queries(c);
	/* A group without a tree (one member) has nothing to read back. */
	for (unsigned i = 0; i < c->nitems; i++)
		if (c->items[i].sm_done && !c->items[i].ntree)
			c->items[i].confirmed = true;
	if (!c->nq)
		return;
	if (!c->smp && !c->smp_failed) {
		ret = ibmc__smp_client_start(p->opt.smpd_path, &c->smp);
		if (ret) {
			c->smp_failed = true;
			ibmc_log(IBMC_LOG_ERROR,
				 "cannot start SMP reader %s: %s; groups "
				 "cannot be confirmed (set readback=0 to "
				 "trust OpenSM alone)",
				 p->opt.smpd_path, strerror(-ret));
		}
	}
	if (!c->smp) {
		for (unsigned i = 0; i < c->nitems; i++)
			snprintf(c->items[i].why, sizeof(c->items[i].why),
				 "SMP reader %s unavailable",
				 p->opt.smpd_path);
		return;
	}
	ret = ibmc__smp_read_mft(c->smp, c->res, c->q, c->nq, 2000);
	if (ret) {
		ibmc_log(IBMC_LOG_WARN, "MFT readback of %zu blocks failed: %s",
			 c->nq, strerror(-ret));
		return;
	}
	pthread_mutex_lock(&p->reg.lock);
	p->reg.counters.smp_reads += c->nq;
	pthread_mutex_unlock(&p->reg.lock);

	for (unsigned i = 0; i < c->nitems; i++) {
		struct item *it = &c->items[i];
		uint16_t block = (uint16_t)((it->mlid - 0xC000) / 32);
		unsigned slot = (it->mlid - 0xC000) % 32;
		bool match = it->sm_done;

		for (unsigned s = 0; match && s < it->ntree; s++) {
			const struct tree_switch *ts = &it->tree[s];

			for (uint8_t pos = 0; match && pos < ts->npos; pos++) {
				const struct ibmc_smp_result *r =
					find_result(c, ts->lid, block, pos);

				if (!r || r->status) {
					snprintf(it->why, sizeof(it->why),
						 "switch LID %u did not answer "
						 "the MFT read", ts->lid);
					match = false;
				} else if (r->masks[slot] != ts->masks[pos]) {
					snprintf(it->why, sizeof(it->why),
						 "switch LID %u MFT for 0x%04x "
						 "is 0x%04x, want 0x%04x",
						 ts->lid, it->mlid,
						 r->masks[slot],
						 ts->masks[pos]);
					match = false;
				}
			}
		}
		it->confirmed = match;
		if (it->sm_done && !match) {
			pthread_mutex_lock(&p->reg.lock);
			p->reg.counters.readback_mismatches++;
			pthread_mutex_unlock(&p->reg.lock);
		}
	}
}

/* Registry lock held: record confirmed groups, finish jobs, time out
 * jobs that never complete. Returns true when any job changed state. */
static bool apply(struct ibmc_plugin *p, struct ibmc_confirmer *c)
{
	uint64_t now = ibmc__now_ns();
	bool changed = false;

	for (unsigned i = 0; i < c->nitems; i++) {
		struct item *it = &c->items[i];
		struct ibmc_job *j = ibmc__registry_find(&p->reg, it->job);
		struct ibmc_group *g;

		if (!j || j->generation != it->generation)
			continue;
		g = &j->groups[it->index];
		if (it->present < it->expected && g->missing !=
		    it->expected - it->present) {
			g->missing = it->expected - it->present;
			ibmc_log(IBMC_LOG_WARN,
				 "job %u group %u: %u of %u member ports have "
				 "left the fabric", j->id, g->index, g->missing,
				 it->expected);
			changed = true;
		} else if (it->present >= it->expected && g->missing) {
			g->missing = 0;
			changed = true;
		}
		if (it->verify) {
			p->reg.counters.verifications++;
			/* Switches agreeing is not enough: a tree OpenSM has
			 * moved (around a dead link, say) is a new tree, and
			 * the job waits for it like for the first one. */
			if (it->confirmed && it->fp != g->tree_fp) {
				it->confirmed = false;
				snprintf(it->why, sizeof(it->why),
					 "OpenSM rerouted the group");
			}
			if (it->confirmed || j->state != IBMC_STATE_READY ||
			    g->state != IBMC_STATE_READY)
				continue;
			g->state = IBMC_STATE_BUILDING;
			g->ready_ns = 0;
			g->sm_done_ns = 0;
			j->state = IBMC_STATE_BUILDING;
			j->building_since_ns = now;
			p->reg.counters.rebuilds++;
			ibmc_log(IBMC_LOG_WARN,
				 "job %u group %u (MLID 0x%04x) no longer "
				 "confirmed: %s; building again", j->id,
				 g->index, g->mlid, it->why);
			changed = true;
			continue;
		}
		if (j->state != IBMC_STATE_BUILDING)
			continue;
		snprintf(g->pending, sizeof(g->pending), "%s", it->why);
		if (it->sm_done && !g->sm_done_ns)
			g->sm_done_ns = it->sm_at;
		if (it->confirmed) {
			g->tree_fp = it->fp;
			g->state = IBMC_STATE_READY;
			g->ready_ns = now;
			g->switches = it->ntree;
			/* A wait on this one group is answered now, not when
			 * the rest of the job is. */
			changed = true;
		} else if (now - j->building_since_ns >
			   (uint64_t)p->opt.build_timeout_s * 1000000000ULL) {
			j->state = IBMC_STATE_FAILED;
			snprintf(j->reason, sizeof(j->reason),
				 "group %u not confirmed after %u s: %s",
				 it->index, p->opt.build_timeout_s, it->why);
			p->reg.counters.failed++;
			ibmc_log(IBMC_LOG_ERROR, "job %u failed: %s", j->id,
				 j->reason);
			changed = true;
		}
	}
	for (struct ibmc_job *j = p->reg.jobs; j; j = j->next) {
		unsigned ready = 0, sm_done = 0;
		uint64_t last_sm = 0;

		if (j->state != IBMC_STATE_BUILDING)
			continue;
		for (unsigned g = 0; g < j->ngroups; g++) {
			ready += j->groups[g].state == IBMC_STATE_READY;
			sm_done += j->groups[g].sm_done_ns != 0;
			if (j->groups[g].sm_done_ns > last_sm)
				last_sm = j->groups[g].sm_done_ns;
		}
		if (sm_done == j->ngroups && !j->sm_done_ns)
			j->sm_done_ns = last_sm;
		if (ready == j->ngroups) {
			j->state = IBMC_STATE_READY;
			j->ready_ns = now;
			p->reg.counters.ready++;
			ibmc_log(IBMC_LOG_INFO,
				 "job %u: %u groups ready in %llu us", j->id,
				 j->ngroups,
				 (unsigned long long)(now -
						      j->building_since_ns) /
					 1000);
			changed = true;
		}
	}
	return changed;
}

static void pass(struct ibmc_plugin *p, struct ibmc_confirmer *c)
{
	osm_opensm_t *osm = p->osm;
	uint64_t now;
	bool idle;

	CL_PLOCK_ACQUIRE(&osm->lock);
	for (unsigned i = 0; i < c->nitems; i++)
		check_sm_view(osm, &c->items[i]);
	CL_PLOCK_RELEASE(&osm->lock);

	/* Read after the SM view: MFT SMPs posted by the pass that cleared
	 * mlids_req were counted before that pass released the lock. */
	idle = qp0_idle(osm);
	now = ibmc__now_ns();
	for (unsigned i = 0; i < c->nitems; i++) {
		struct item *it = &c->items[i];

		it->sm_at = now;
		/* A ready group is re-checked against what the switches hold
		 * now; unrelated QP0 traffic must not flip it to building. */
		if (it->sm_done && !idle && !it->verify) {
			it->sm_done = false;
			snprintf(it->why, sizeof(it->why),
				 "OpenSM still has QP0 MADs outstanding");
		}
		it->confirmed = it->sm_done && !p->opt.readback;
	}
	if (p->opt.readback)
		readback(p, c);

	/* OpenSM drops an idle-time request that arrives while it is not in
	 * MASTER state (do_process_mgrp_queue returns early), leaving the
	 * MLID unprocessed until some later pass. A request still pending
	 * after a second is signalled again; the signal only sets a bit for
	 * the SM's thread, which handles it when it is free. */
	for (unsigned i = 0; i < c->nitems; i++) {
		if (!c->items[i].unprocessed)
			continue;
		if (!c->next_nudge_ns) {
			c->next_nudge_ns = now + 1000000000ULL;
		} else if (now >= c->next_nudge_ns) {
			ibmc_log(IBMC_LOG_INFO, "MLID 0x%04x still not processed "
				 "by OpenSM; signalling it again",
				 c->items[i].mlid);
			osm_sm_signal(&osm->sm,
				      OSM_SIGNAL_IDLE_TIME_PROCESS_REQUEST);
			c->next_nudge_ns = now + 1000000000ULL;
		}
		return;
	}
	c->next_nudge_ns = 0;
}

static void *confirmer_main(void *arg)
{
	struct ibmc_plugin *p = arg;
	struct ibmc_confirmer *c = p->confirmer;

	/* Spawn the SMP reader now rather than on the first job, which would
	 * otherwise pay for the process start in its reserve-to-ready time.
	 * A failure here is retried lazily by readback(). */
	if (p->opt.readback && ibmc__smp_client_start(p->opt.smpd_path,
						      &c->smp))
		c->smp = NULL;

	while (!atomic_load(&p->stopping)) {
		struct timespec ts;
		uint64_t now = ibmc__now_ns();
		unsigned sweeps = atomic_load(&p->sweeps_started) +
				  atomic_load(&p->sweeps_done);
		bool changed;
		int ret;

		/* When ready groups are due for verification, ports that have
		 * come back are first re-added, so this round checks the
		 * groups with them. */
		if (sweeps != c->seen_sweeps || now >= c->next_verify_ns)
			ibmc__rejoin_returning(p);

		pthread_mutex_lock(&p->reg.lock);
		clear_items(c);
		ret = collect(p, c, false);
		/* Ready groups are re-checked when OpenSM starts or ends a
		 * heavy sweep (a fabric change) and every verify_ms. */
		if (!ret && (sweeps != c->seen_sweeps ||
			     now >= c->next_verify_ns)) {
			ret = collect(p, c, true);
			c->seen_sweeps = sweeps;
			c->next_verify_ns =
				now + (uint64_t)p->opt.verify_ms * 1000000ULL;
		}
		if (!c->nitems || ret) {
			/* Nothing to confirm: sleep until kicked, waking
			 * often enough to notice a sweep. */
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 250 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (!c->kicked && !atomic_load(&p->stopping))
				pthread_cond_timedwait(&p->reg.changed,
						       &p->reg.lock, &ts);
			c->kicked = false;
			pthread_mutex_unlock(&p->reg.lock);
			continue;
		}
		c->kicked = false;
		pthread_mutex_unlock(&p->reg.lock);

		pass(p, c);

		pthread_mutex_lock(&p->reg.lock);
		changed = apply(p, c);
		if (!c->kicked && !atomic_load(&p->stopping)) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += (long)p->opt.poll_us * 1000;
			while (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (!changed)
				pthread_cond_timedwait(&p->reg.changed,
						       &p->reg.lock, &ts);
		}
		pthread_mutex_unlock(&p->reg.lock);
		if (changed)
			ibmc__plugin_notify_server(p);
	}
	return NULL;
}

int ibmc__confirmer_start(struct ibmc_plugin *p, struct ibmc_confirmer **out)
{
	struct ibmc_confirmer *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	p->confirmer = c;
	ret = pthread_create(&c->thread, NULL, confirmer_main, p);
	if (ret) {
		p->confirmer = NULL;
		free(c);
		return -ret;
	}
	*out = c;
	return 0;
}

void ibmc__confirmer_stop(struct ibmc_plugin *p, struct ibmc_confirmer *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&p->reg.lock);
	pthread_cond_broadcast(&p->reg.changed);
	pthread_mutex_unlock(&p->reg.lock);
	pthread_join(c->thread, NULL);
	/* ibmc__confirmer_kick reads p->confirmer under the registry lock
	 * (OpenSM's thread may still kick through rejoin). */
	pthread_mutex_lock(&p->reg.lock);
	p->confirmer = NULL;
	pthread_mutex_unlock(&p->reg.lock);
	ibmc__smp_client_stop(c->smp);
	clear_items(c);
	free(c->items);
	free(c->q);
	free(c->res);
	free(c);
}
