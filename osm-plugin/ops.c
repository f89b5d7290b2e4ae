/* SPDX-License-Identifier: BSD-3-Clause */
/* Request handlers. OpenSM work (building, dropping groups) happens
 * outside the registry lock, which is only held to read or update the
 * job list, so the confirmer never waits behind osm->lock for us. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osm_includes.h"

#include "builder.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/mgid.h"
#include "confirmer.h"
#include "ops.h"
#include "state.h"

#define DEFAULT_WAIT_MS 30000
#define IBMC_DEFAULT_PKEY 0xffff

bool ibmc__op_privileged(struct ibmc_plugin *p, uid_t uid)
{
	return uid == 0 || (p->opt.slurm_uid != (uid_t)-1 &&
			    uid == p->opt.slurm_uid);
}

/* Privileged requests from anyone else are refused, and logged: an
 * administrator wants to know who tried to change reservations. */
static json_t *refuse(struct ibmc_plugin *p, const char *op, uint32_t job,
		      uid_t uid)
{
	ibmc_log(IBMC_LOG_WARN, "%s of job %u by uid %u refused: not root "
		 "nor the Slurm user", op, job, (unsigned)uid);
	return ibmc__reply_error(IBMC_ERR_UNAUTHORIZED,
				 "%s needs root or the Slurm user (%s); uid "
				 "%u is neither", op, p->opt.slurm_user,
				 (unsigned)uid);
}

json_t *ibmc__reply_with_job(json_t *reply, const struct ibmc_job *j)
{
	json_t *jj = ibmc__job_to_json(j, ibmc__now_ns());

	if (!reply || !jj || json_object_set_new(reply, "job", jj)) {
		json_decref(reply);
		return NULL;
	}
	return reply;
}

static json_t *op_reserve(struct ibmc_plugin *p, const struct ibmc_request *r,
			  uid_t uid)
{
	struct ibmc_hostlist hl = { 0 };
	struct ibmc_job *j = NULL, *old;
	enum ibmc_err err = IBMC_ERR_INTERNAL;
	char detail[512] = "";
	json_t *reply = NULL;
	unsigned ngroups, lease;
	char *canon = NULL;
	int ret;

	if (!ibmc__op_privileged(p, uid))
		return refuse(p, "reserve", r->job, uid);
	if (!atomic_load(&p->subnet_up))
		return ibmc__reply_error(IBMC_ERR_BUSY,
					 "the subnet is not up yet; retry");
	ngroups = r->groups ? r->groups : p->opt.default_groups;
	if (ngroups > p->opt.max_groups)
		return ibmc__reply_error(IBMC_ERR_QUOTA,
					 "%u groups requested; at most %u per "
					 "job (max_groups)",
					 ngroups, p->opt.max_groups);
	lease = r->lease_s ? r->lease_s : p->opt.default_lease_s;
	if (lease > p->opt.max_lease_s)
		return ibmc__reply_error(IBMC_ERR_QUOTA,
					 "lease %u s exceeds max_lease_s %u",
					 lease, p->opt.max_lease_s);
	ret = ibmc__hostlist_expand(r->nodes, p->opt.max_nodes, &hl);
	if (ret == -E2BIG)
		return ibmc__reply_error(IBMC_ERR_QUOTA,
					 "nodes: more than %u nodes (max_nodes)",
					 p->opt.max_nodes);
	if (ret == -EINVAL || (!ret && !hl.count)) {
		ibmc__hostlist_free(&hl);
		return ibmc__reply_error(IBMC_ERR_BAD_REQUEST,
					 "nodes: \"%.100s\" is not a valid "
					 "hostlist expression", r->nodes);
	}
	if (ret)
		return ibmc__reply_error(IBMC_ERR_INTERNAL,
					 "nodes: %s", strerror(-ret));
	canon = ibmc__nodes_canonical(hl.names, hl.count);
	if (!canon)
		goto nomem;

	pthread_mutex_lock(&p->reg.lock);
	old = ibmc__registry_find(&p->reg, r->job);
	if (old) {
		if (!strcmp(old->canon, canon))
			reply = ibmc__reply_with_job(
				json_pack("{s:b, s:b}", "ok", 1, "created", 0),
				old);
		else
			reply = ibmc__reply_error(
				IBMC_ERR_BAD_REQUEST,
				"job %u is already reserved for other nodes "
				"(%s)", r->job, old->nodes);
		pthread_mutex_unlock(&p->reg.lock);
		goto out;
	}
	if (p->reg.njobs >= p->opt.max_jobs) {
		pthread_mutex_unlock(&p->reg.lock);
		reply = ibmc__reply_error(IBMC_ERR_QUOTA,
					  "%u jobs already hold reservations "
					  "(max_jobs)", p->opt.max_jobs);
		goto out;
	}
	pthread_mutex_unlock(&p->reg.lock);

	j = calloc(1, sizeof(*j));
	if (!j)
		goto nomem;
	j->groups = calloc(ngroups, sizeof(*j->groups));
	j->nodes = ibmc__hostlist_compress(hl.names, hl.count);
	if (!j->groups || !j->nodes)
		goto nomem;
	j->id = r->job;
	j->uid = r->uid >= 0 ? (uint32_t)r->uid : (uint32_t)uid;
	j->canon = canon;
	canon = NULL;
	j->node_count = (unsigned)hl.count;
	j->qkey = ibmc__qkey_for_job(r->job);
	j->pkey = IBMC_DEFAULT_PKEY;
	j->ngroups = ngroups;
	j->lease_s = lease;
	j->state = IBMC_STATE_BUILDING;
	j->reserved_ns = ibmc__now_ns();
	j->building_since_ns = j->reserved_ns;

	j->pool_groups = ngroups;
	ret = ibmc__builder_create(p, j->id, hl.names, hl.count, 0, ngroups,
				   j->qkey, j->pkey, j->groups, &j->port_count,
				   &err, detail, sizeof(detail));
	if (ret) {
		reply = ibmc__reply_error(err, "job %u: %s", r->job, detail);
		ibmc_log(IBMC_LOG_WARN, "reserve job %u refused: %s", r->job,
			 detail);
		goto out;
	}
	j->built_ns = ibmc__now_ns();
	j->lease_end_ns = j->reserved_ns + (uint64_t)lease * 1000000000ULL;

	pthread_mutex_lock(&p->reg.lock);
	j->generation = ibmc__registry_next_generation(&p->reg);
	ibmc__registry_insert(&p->reg, j);
	p->reg.counters.reserves++;
	reply = ibmc__reply_with_job(
		json_pack("{s:b, s:b}", "ok", 1, "created", 1), j);
	ibmc__confirmer_kick(p);
	pthread_mutex_unlock(&p->reg.lock);
	ibmc_log(IBMC_LOG_INFO,
		 "job %u (uid %u): reserved %u groups on %u nodes (%u ports), "
		 "first MLID 0x%04x",
		 j->id, j->uid, ngroups, j->node_count, j->port_count,
		 j->groups[0].mlid);
	j = NULL;
	ibmc__state_save(p);
	goto out;
nomem:
	reply = ibmc__reply_error(IBMC_ERR_INTERNAL, "out of memory");
out:
	ibmc__job_free(j);
	free(canon);
	ibmc__hostlist_free(&hl);
	return reply;
}

static json_t *op_release(struct ibmc_plugin *p, const struct ibmc_request *r,
			  uid_t uid)
{
	struct ibmc_job *j;
	json_t *reply;

	if (!ibmc__op_privileged(p, uid))
		return refuse(p, "release", r->job, uid);
	pthread_mutex_lock(&p->reg.lock);
	j = ibmc__registry_remove(&p->reg, r->job);
	if (j)
		p->reg.counters.releases++;
	pthread_mutex_unlock(&p->reg.lock);
	reply = json_pack("{s:b, s:b, s:I}", "ok", 1, "released", j != NULL,
			  "job", (json_int_t)r->job);
	if (j) {
		ibmc__builder_destroy(p, j->groups, j->ngroups);
		ibmc_log(IBMC_LOG_INFO, "job %u: released %u groups", j->id,
			 j->ngroups);
		ibmc__job_free(j);
		ibmc__state_save(p);
		/* Parked waits on this job must hear it is gone. */
		ibmc__plugin_notify_server(p);
	}
	return reply;
}

static json_t *op_renew(struct ibmc_plugin *p, const struct ibmc_request *r,
			uid_t uid)
{
	struct ibmc_job *j;
	unsigned lease;
	json_t *reply;

	if (!ibmc__op_privileged(p, uid))
		return refuse(p, "renew", r->job, uid);
	pthread_mutex_lock(&p->reg.lock);
	j = ibmc__registry_find(&p->reg, r->job);
	if (!j) {
		pthread_mutex_unlock(&p->reg.lock);
		return ibmc__reply_error(IBMC_ERR_UNKNOWN_JOB,
					 "job %u holds no reservation", r->job);
	}
	lease = r->lease_s ? r->lease_s : j->lease_s;
	if (lease > p->opt.max_lease_s) {
		pthread_mutex_unlock(&p->reg.lock);
		return ibmc__reply_error(IBMC_ERR_QUOTA,
					 "lease %u s exceeds max_lease_s %u",
					 lease, p->opt.max_lease_s);
	}
	j->lease_s = lease;
	j->lease_end_ns = ibmc__now_ns() + (uint64_t)lease * 1000000000ULL;
	reply = json_pack("{s:b, s:I, s:i}", "ok", 1, "job",
			  (json_int_t)j->id, "lease_s", (int)lease);
	pthread_mutex_unlock(&p->reg.lock);
	ibmc__state_save(p);
	return reply;
}

static const char *sm_state_name(uint8_t s)
{
	switch (s) {
	case IB_SMINFO_STATE_NOTACTIVE:
		return "not-active";
	case IB_SMINFO_STATE_DISCOVERING:
		return "discovering";
	case IB_SMINFO_STATE_STANDBY:
		return "standby";
	case IB_SMINFO_STATE_MASTER:
		return "master";
	}
	return "unknown";
}

static json_t *op_status(struct ibmc_plugin *p, const struct ibmc_request *r)
{
	const struct ibmc_counters *c = &p->reg.counters;
	unsigned total = 0, used = 0, ours = 0;
	uint64_t now = ibmc__now_ns();
	json_t *reply, *jobs;

	ibmc__builder_mlid_usage(p, &total, &used);
	jobs = json_array();
	pthread_mutex_lock(&p->reg.lock);
	for (struct ibmc_job *j = p->reg.jobs; j && jobs; j = j->next) {
		ours += j->ngroups;
		if (r->job && j->id != r->job)
			continue;
		if (json_array_append_new(jobs, ibmc__job_to_json(j, now))) {
			json_decref(jobs);
			jobs = NULL;
		}
	}
	if (r->job && jobs && !json_array_size(jobs)) {
		pthread_mutex_unlock(&p->reg.lock);
		json_decref(jobs);
		return ibmc__reply_error(IBMC_ERR_UNKNOWN_JOB,
					 "job %u holds no reservation", r->job);
	}
	reply = json_pack(
		"{s:b, s:{s:s, s:s, s:b, s:b, s:i, s:s*, s:s*, s:s*},"
		" s:{s:i, s:i, s:i},"
		" s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
		" s:I, s:I}, s:o*}",
		"ok", 1,
		"server", "version", IBMCAST_VERSION, "sm_state",
		sm_state_name(p->osm->subn.sm_state), "subnet_up",
		(int)atomic_load(&p->subnet_up), "readback",
		(int)p->opt.readback, "sweeps",
		(int)atomic_load(&p->sweeps_done), "state_file",
		p->opt.state_path && *p->opt.state_path ? p->opt.state_path
							 : NULL,
		"state_error", p->state_error[0] ? p->state_error : NULL,
		"state_load_error",
		p->state_load_error[0] ? p->state_load_error : NULL,
		"mlids", "total", (int)total, "used", (int)used, "ibmcast",
		(int)ours,
		"counters", "requests", (json_int_t)c->requests, "errors",
		(json_int_t)c->errors, "reserves", (json_int_t)c->reserves,
		"releases", (json_int_t)c->releases, "ready",
		(json_int_t)c->ready, "failed", (json_int_t)c->failed,
		"smp_reads", (json_int_t)c->smp_reads, "readback_mismatches",
		(json_int_t)c->readback_mismatches, "verifications",
		(json_int_t)c->verifications, "rebuilds",
		(json_int_t)c->rebuilds, "prunes", (json_int_t)c->prunes,
		"grows", (json_int_t)c->grows, "rejoins", (json_int_t)c->rejoins,
		"jobs", jobs);
	pthread_mutex_unlock(&p->reg.lock);
	return reply;
}

static json_t *wait_reply(const struct ibmc_job *j, uint32_t id, int group,
			  bool timed_out, uint64_t waited_ns)
{
	json_t *reply = json_pack("{s:b, s:b, s:I}", "ok", 1, "timed_out",
				  (int)timed_out, "waited_us",
				  (json_int_t)(waited_ns / 1000));

	/* A group's wait also names the group, so a client need not search
	 * the job's list for it. */
	if (j && reply && group >= 0 && (unsigned)group < j->ngroups &&
	    json_object_set_new(reply, "group",
				ibmc__group_to_json(j, &j->groups[group]))) {
		json_decref(reply);
		return NULL;
	}
	if (j)
		return ibmc__reply_with_job(reply, j);
	/* Released while we waited. */
	if (reply &&
	    json_object_set_new(reply, "job",
				json_pack("{s:I, s:s}", "job", (json_int_t)id,
					  "state", "released"))) {
		json_decref(reply);
		return NULL;
	}
	return reply;
}

json_t *ibmc__op_wait_check(struct ibmc_plugin *p, const struct ibmc_wait *w,
			    uint64_t now_ns)
{
	struct ibmc_job *j;
	json_t *reply = NULL;
	bool building;

	pthread_mutex_lock(&p->reg.lock);
	j = ibmc__registry_find(&p->reg, w->job);
	/* One group waits for itself only: a prune of another group, or a
	 * grown one, must not hold it up. A failed job ends every wait. */
	if (j && w->group >= 0)
		building = j->state != IBMC_STATE_FAILED &&
			   (unsigned)w->group < j->ngroups &&
			   j->groups[w->group].state == IBMC_STATE_BUILDING;
	else
		building = j && j->state == IBMC_STATE_BUILDING;
	if (!building || now_ns >= w->deadline_ns)
		reply = wait_reply(j, w->job, w->group, building,
				   now_ns - w->start_ns);
	pthread_mutex_unlock(&p->reg.lock);
	return reply;
}

static json_t *op_wait(struct ibmc_plugin *p, const struct ibmc_request *r,
		       struct ibmc_wait *park, bool *parked)
{
	uint64_t now = ibmc__now_ns();
	int64_t ms = r->timeout_ms >= 0 ? r->timeout_ms : DEFAULT_WAIT_MS;
	struct ibmc_job *j;
	unsigned ngroups;
	json_t *reply;

	pthread_mutex_lock(&p->reg.lock);
	j = ibmc__registry_find(&p->reg, r->job);
	ngroups = j ? j->ngroups : 0;
	pthread_mutex_unlock(&p->reg.lock);
	if (!j)
		return ibmc__reply_error(IBMC_ERR_UNKNOWN_JOB,
					 "job %u holds no reservation", r->job);
	if (r->group >= 0 && (unsigned)r->group >= ngroups)
		return ibmc__reply_error(IBMC_ERR_BAD_REQUEST,
					 "group: job %u has groups 0..%u; no "
					 "group %d", r->job, ngroups - 1,
					 r->group);
	park->job = r->job;
	park->group = r->group;
	park->start_ns = now;
	park->deadline_ns = now + (uint64_t)ms * 1000000ULL;
	reply = ibmc__op_wait_check(p, park, now);
	*parked = !reply;
	return reply;
}

json_t *ibmc__op_dispatch(struct ibmc_plugin *p, const struct ibmc_request *r,
			  uid_t uid, struct ibmc_wait *park, bool *parked)
{
	*parked = false;
	switch (r->op) {
	case IBMC_OP_RESERVE:
		return op_reserve(p, r, uid);
	case IBMC_OP_WAIT:
		return op_wait(p, r, park, parked);
	case IBMC_OP_RELEASE:
		return op_release(p, r, uid);
	case IBMC_OP_RENEW:
		return op_renew(p, r, uid);
	case IBMC_OP_STATUS:
		return op_status(p, r);
	case IBMC_OP_PRUNE:
		return ibmc__op_prune(p, r, uid);
	case IBMC_OP_GROW:
		return ibmc__op_grow(p, r, uid);
	}
	return ibmc__reply_error(IBMC_ERR_BAD_REQUEST, "unknown op");
}

unsigned ibmc__op_expire_leases(struct ibmc_plugin *p, uint64_t now_ns)
{
	unsigned n = 0;

	for (;;) {
		struct ibmc_job *j, *victim = NULL;

		pthread_mutex_lock(&p->reg.lock);
		for (j = p->reg.jobs; j; j = j->next)
			if (j->lease_end_ns && j->lease_end_ns <= now_ns)
				break;
		if (j) {
			victim = ibmc__registry_remove(&p->reg, j->id);
			p->reg.counters.releases++;
		}
		pthread_mutex_unlock(&p->reg.lock);
		if (!victim)
			break;
		ibmc_log(IBMC_LOG_WARN,
			 "job %u: lease of %u s expired; releasing %u groups",
			 victim->id, victim->lease_s, victim->ngroups);
		ibmc__builder_destroy(p, victim->groups, victim->ngroups);
		ibmc__job_free(victim);
		n++;
	}
	if (n) {
		ibmc__state_save(p);
		ibmc__plugin_notify_server(p);
	}
	return n;
}
