/* SPDX-License-Identifier: BSD-3-Clause */
/* prune and grow: a job reshapes its own groups. prune narrows one group
 * to a subset of the job's nodes (or widens it back); grow adds a group.
 * Both only change OpenSM's membership here and send the group back to
 * building: the confirmer decides when the new tree is in the switches,
 * with the same checks as for a reservation. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "confirmer.h"
#include "ops.h"
#include "state.h"

/* Registry lock held. The job's owner may reshape it, and so may root or
 * the Slurm user; a missing, restoring or failed job cannot be. NULL if
 * the request may go on. */
static json_t *check_job(struct ibmc_plugin *p, const char *op,
			 const struct ibmc_request *r, uid_t uid,
			 struct ibmc_job **out)
{
	struct ibmc_job *j = ibmc__registry_find(&p->reg, r->job);

	*out = j;
	if (!j)
		return ibmc__reply_error(IBMC_ERR_UNKNOWN_JOB,
					 "job %u holds no reservation", r->job);
	if (uid != j->uid && !ibmc__op_privileged(p, uid)) {
		ibmc_log(IBMC_LOG_WARN, "%s of job %u by uid %u refused: not "
			 "the job's owner (uid %u)", op, r->job, (unsigned)uid,
			 j->uid);
		return ibmc__reply_error(
			IBMC_ERR_UNAUTHORIZED,
			"%s of job %u needs its owner (uid %u), root or the "
			"Slurm user; uid %u is none of them", op, r->job,
			j->uid, (unsigned)uid);
	}
	if (j->needs_build)
		return ibmc__reply_error(IBMC_ERR_BUSY,
					 "job %u is still being restored after "
					 "an SM start; retry", r->job);
	if (j->state == IBMC_STATE_FAILED)
		return ibmc__reply_error(IBMC_ERR_BUSY,
					 "job %u has failed (%s); only release "
					 "applies", r->job, j->reason);
	return NULL;
}

/* Registry lock held: group g changed in OpenSM; it and the job wait for
 * the confirmer again. A new generation makes the confirmer drop what it
 * saw of the job before the change. */
static void rebuilding(struct ibmc_plugin *p, struct ibmc_job *j,
		       struct ibmc_group *g, const char *why)
{
	uint64_t now = ibmc__now_ns();

	g->state = IBMC_STATE_BUILDING;
	g->sm_done_ns = 0;
	g->ready_ns = 0;
	g->missing = 0;
	snprintf(g->pending, sizeof(g->pending), "%s", why);
	j->state = IBMC_STATE_BUILDING;
	j->building_since_ns = now;
	j->generation = ibmc__registry_next_generation(&p->reg);
	ibmc__confirmer_kick(p);
}

/* {"ok":true,<flag>:<value>,"group":{...},"job":{...}}, lock held. */
static json_t *group_reply(const struct ibmc_job *j, unsigned index,
			   const char *flag, bool value)
{
	json_t *reply = json_pack("{s:b, s:b, s:o}", "ok", 1, flag,
				  (int)value, "group",
				  ibmc__group_to_json(j, &j->groups[index]));

	return ibmc__reply_with_job(reply, j);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The first name of want that is not among the job's (all, sorted), or
 * NULL if every one is. */
static const char *outsider(const struct ibmc_hostlist *all,
			    const struct ibmc_hostlist *want)
{
	for (size_t i = 0; i < want->count; i++)
		if (!bsearch(&want->names[i], all->names, all->count,
			     sizeof(*all->names), cmp_str))
			return want->names[i];
	return NULL;
}

json_t *ibmc__op_prune(struct ibmc_plugin *p, const struct ibmc_request *r,
		       uid_t uid)
{
	struct ibmc_hostlist all = { 0 }, want = { 0 };
	enum ibmc_err err = IBMC_ERR_INTERNAL;
	char detail[512] = "", *job_nodes = NULL, *canon = NULL;
	const struct ibmc_hostlist *members;
	uint8_t mgid[16];
	unsigned index = (unsigned)r->group, ports = 0;
	struct ibmc_job *j;
	bool full, changed;
	json_t *reply;
	int ret;

	pthread_mutex_lock(&p->reg.lock);
	reply = check_job(p, "prune", r, uid, &j);
	if (!reply && index >= j->ngroups)
		reply = ibmc__reply_error(IBMC_ERR_BAD_REQUEST,
					  "group: job %u has groups 0..%u; no "
					  "group %u", r->job, j->ngroups - 1,
					  index);
	if (!reply) {
		job_nodes = strdup(j->nodes);
		memcpy(mgid, j->groups[index].mgid, sizeof(mgid));
	}
	pthread_mutex_unlock(&p->reg.lock);
	if (reply)
		return reply;
	if (!job_nodes)
		goto nomem;

	ret = ibmc__hostlist_expand(job_nodes, p->opt.max_nodes, &all);
	if (ret)
		goto nomem; /* it expanded when the job was reserved */
	if (r->nodes) {
		const char *stranger;

		ret = ibmc__hostlist_expand(r->nodes, p->opt.max_nodes, &want);
		if (ret == -E2BIG) {
			reply = ibmc__reply_error(IBMC_ERR_QUOTA,
						  "nodes: more than %u nodes "
						  "(max_nodes)",
						  p->opt.max_nodes);
			goto out;
		}
		if (ret == -EINVAL || (!ret && !want.count)) {
			reply = ibmc__reply_error(IBMC_ERR_BAD_REQUEST,
						  "nodes: \"%.100s\" is not a "
						  "valid hostlist expression",
						  r->nodes);
			goto out;
		}
		if (ret)
			goto nomem;
		qsort(all.names, all.count, sizeof(*all.names), cmp_str);
		stranger = outsider(&all, &want);
		if (stranger) {
			reply = ibmc__reply_error(IBMC_ERR_UNKNOWN_NODE,
						  "nodes: %.64s is not one of "
						  "job %u's nodes (%.200s)",
						  stranger, r->job, job_nodes);
			goto out;
		}
	}
	/* Expansion drops duplicates, so a subset as large as the job is the
	 * whole job: the group widens back. */
	full = !r->nodes || want.count == all.count;
	members = full ? &all : &want;
	if (!full) {
		canon = ibmc__nodes_canonical(want.names, want.count);
		if (!canon)
			goto nomem;
	}

	/* The same shape again is not a change: answer with the group as it
	 * is, still building or already confirmed. */
	pthread_mutex_lock(&p->reg.lock);
	j = ibmc__registry_find(&p->reg, r->job);
	if (j && index < j->ngroups &&
	    (full ? !j->groups[index].canon
		  : j->groups[index].canon &&
			    !strcmp(j->groups[index].canon, canon))) {
		reply = group_reply(j, index, "changed", false);
		pthread_mutex_unlock(&p->reg.lock);
		goto out;
	}
	pthread_mutex_unlock(&p->reg.lock);

	ret = ibmc__builder_reshape(p, mgid, members->names, members->count,
				    &ports, &changed, &err, detail,
				    sizeof(detail));
	if (ret) {
		ibmc_log(IBMC_LOG_WARN, "prune of job %u group %u refused: %s",
			 r->job, index, detail);
		reply = ibmc__reply_error(err, "job %u group %u: %s", r->job,
					  index, detail);
		goto out;
	}

	pthread_mutex_lock(&p->reg.lock);
	j = ibmc__registry_find(&p->reg, r->job);
	if (!j || index >= j->ngroups) {
		/* Only this thread releases jobs, so this cannot happen; say
		 * so rather than touch a freed job. */
		pthread_mutex_unlock(&p->reg.lock);
		reply = ibmc__reply_error(IBMC_ERR_INTERNAL,
					  "job %u went away during the prune",
					  r->job);
		goto out;
	}
	if (full)
		ibmc__group_clear_subset(&j->groups[index]);
	else if (ibmc__group_set_subset(&j->groups[index], want.names,
					want.count)) {
		/* OpenSM has the new shape but we cannot record it: the job
		 * is no longer what the registry says. */
		pthread_mutex_unlock(&p->reg.lock);
		goto nomem;
	}
	j->groups[index].members = ports;
	rebuilding(p, j, &j->groups[index],
		   full ? "widened back to the job's nodes"
			: "pruned to a subset of the job's nodes");
	p->reg.counters.prunes++;
	reply = group_reply(j, index, "changed", true);
	pthread_mutex_unlock(&p->reg.lock);
	ibmc_log(IBMC_LOG_INFO, "job %u group %u %s: %zu nodes, %u ports%s",
		 r->job, index, full ? "widened" : "pruned", members->count,
		 ports, changed ? "" : " (OpenSM already had them)");
	ibmc__state_save(p);
	goto out;
nomem:
	reply = ibmc__reply_error(IBMC_ERR_INTERNAL, "out of memory");
out:
	ibmc__hostlist_free(&all);
	ibmc__hostlist_free(&want);
	free(job_nodes);
	free(canon);
	return reply;
}

json_t *ibmc__op_grow(struct ibmc_plugin *p, const struct ibmc_request *r,
		      uid_t uid)
{
	struct ibmc_hostlist hl = { 0 };
	struct ibmc_group g = { 0 }, *ng;
	enum ibmc_err err = IBMC_ERR_INTERNAL;
	char detail[512] = "", *nodes = NULL;
	unsigned next = 0, ports = 0;
	uint32_t qkey = 0;
	uint16_t pkey = 0;
	struct ibmc_job *j;
	json_t *reply;
	int ret;

	pthread_mutex_lock(&p->reg.lock);
	reply = check_job(p, "grow", r, uid, &j);
	if (!reply) {
		next = j->ngroups;
		/* "group" names the index the client expects: a retry of a
		 * grow that did happen gets that group back instead of a
		 * second one. */
		if (r->group >= 0 && (unsigned)r->group < j->pool_groups)
			reply = ibmc__reply_error(
				IBMC_ERR_BAD_REQUEST,
				"group: %d is one of job %u's reserved groups "
				"(0..%u); grown groups start at %u",
				r->group, r->job, j->pool_groups - 1,
				j->pool_groups);
		else if (r->group >= 0 && (unsigned)r->group < next)
			reply = group_reply(j, (unsigned)r->group, "created",
					    false);
		else if (r->group >= 0 && (unsigned)r->group > next)
			reply = ibmc__reply_error(
				IBMC_ERR_BAD_REQUEST,
				"group: job %u's next group would be %u, not "
				"%d", r->job, next, r->group);
		else if (next >= p->opt.max_groups)
			reply = ibmc__reply_error(
				IBMC_ERR_QUOTA,
				"job %u already holds %u groups; at most %u "
				"per job (max_groups)", r->job, next,
				p->opt.max_groups);
	}
	if (!reply) {
		nodes = strdup(j->nodes);
		qkey = j->qkey;
		pkey = j->pkey;
	}
	pthread_mutex_unlock(&p->reg.lock);
	if (reply)
		return reply;
	if (!nodes || ibmc__hostlist_expand(nodes, p->opt.max_nodes, &hl))
		goto nomem; /* it expanded when the job was reserved */

	ret = ibmc__builder_create(p, r->job, hl.names, hl.count, next, 1,
				   qkey, pkey, &g, &ports, &err, detail,
				   sizeof(detail));
	if (ret) {
		ibmc_log(IBMC_LOG_WARN, "grow of job %u refused: %s", r->job,
			 detail);
		reply = ibmc__reply_error(err, "job %u: %s", r->job, detail);
		goto out;
	}
	g.grown = true;

	pthread_mutex_lock(&p->reg.lock);
	j = ibmc__registry_find(&p->reg, r->job);
	ng = j && j->ngroups == next
		     ? realloc(j->groups, (next + 1) * sizeof(*ng))
		     : NULL;
	if (!ng) {
		pthread_mutex_unlock(&p->reg.lock);
		ibmc__builder_destroy(p, &g, 1);
		goto nomem;
	}
	j->groups = ng;
	j->groups[next] = g;
	j->ngroups = next + 1;
	rebuilding(p, j, &j->groups[next], "grown");
	p->reg.counters.grows++;
	reply = group_reply(j, next, "created", true);
	pthread_mutex_unlock(&p->reg.lock);
	ibmc_log(IBMC_LOG_INFO, "job %u: grew group %u (MLID 0x%04x), %u "
		 "groups now", r->job, next, g.mlid, next + 1);
	ibmc__state_save(p);
	goto out;
nomem:
	reply = ibmc__reply_error(IBMC_ERR_INTERNAL, "out of memory");
out:
	ibmc__hostlist_free(&hl);
	free(nodes);
	return reply;
}
