/* SPDX-License-Identifier: BSD-3-Clause */
/* slurmstepd. A job-wide pool (noted by the prolog) serves every step; a
 * step-only pool (--ibmcast on an srun in an allocation without one) is
 * reserved by the step's node 0 for the step's nodes and released when
 * the step ends, however its tasks end. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"
#include "spank/env.h"
#include "spank/log.h"
#include "spank/marker.h"
#include "spank/option.h"
#include "spank/pool.h"
#include "spank/renew.h"
#include "spank/stepd.h"

/* Slurm's special step ids (slurm.h): the batch script and the extern
 * step, which have no tasks of the user's program. */
#define STEP_BATCH 0xfffffffbU
#define STEP_EXTERN 0xfffffffcU

#define CTX "remote"

/* What exit must undo, remembered from init_post_opt (same process). */
static struct {
	bool reserved;  /* this node reserved a step-only pool */
	uint32_t id;
	char node[64];
	char fail[512]; /* required=1 and no ready pool: why */
} step;

static int getenv_s(spank_t sp, const char *name, char *buf, int len)
{
	return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS && buf[0]
		       ? 0 : -ENOENT;
}

/* This node's Slurm name: the nodeid-th name of the step's node list. */
static int node_name(spank_t sp, const char *nodes, uint32_t nodeid,
		     char *buf, size_t len)
{
	struct ibmc_hostlist hl;
	int rc;

	if (getenv_s(sp, "SLURMD_NODENAME", buf, (int)len) == 0)
		return 0;
	rc = ibmc__hostlist_expand(nodes, 1 << 20, &hl);
	if (rc)
		return rc;
	rc = nodeid < hl.count ? 0 : -ERANGE;
	if (!rc)
		snprintf(buf, len, "%s", hl.names[nodeid]);
	ibmc__hostlist_free(&hl);
	return rc;
}

struct step_info {
	uint32_t job, stepid, nodeid;
	uid_t uid;
	char nodes[4096]; /* the step's nodes */
	char node[64];
};

static int step_info(spank_t sp, struct step_info *si)
{
	const char *list = "SLURM_STEP_NODELIST";

	if (spank_get_item(sp, S_JOB_ID, &si->job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &si->stepid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &si->nodeid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &si->uid) != ESPANK_SUCCESS) {
		spank_err(CTX, "cannot get the job, step, node id or uid "
			  "from Slurm");
		return -EINVAL;
	}
	/* The batch script runs on the job's first node alone. */
	if (si->stepid == STEP_BATCH ||
	    getenv_s(sp, list, si->nodes, sizeof(si->nodes)))
		list = "SLURM_JOB_NODELIST";
	if (getenv_s(sp, list, si->nodes, sizeof(si->nodes)) &&
	    getenv_s(sp, (list = "SLURM_NODELIST"), si->nodes,
		     sizeof(si->nodes))) {
		spank_err(CTX, "job %u step %u: no node list in the step's "
			  "environment", si->job, si->stepid);
		return -EINVAL;
	}
	if (si->stepid == STEP_BATCH)
		si->nodeid = 0;
	if (node_name(sp, si->nodes, si->nodeid, si->node,
		      sizeof(si->node))) {
		spank_err(CTX, "job %u step %u: cannot tell this node's name "
			  "(node %u of %s)", si->job, si->stepid, si->nodeid,
			  si->nodes);
		return -EINVAL;
	}
	return 0;
}

/* Node 0 of the step makes sure the pool exists: the job's (idempotent,
 * and extends its lease) or the step's own (must be new). */
static void reserve(const struct spank_conf *c, const struct step_info *si,
		    bool jobwide, uint32_t id, const char *nodes,
		    unsigned groups, struct spank_pool *p)
{
	char why[256];
	bool created;
	int rc;

	rc = spank_pool_reserve(c, id, nodes, si->uid, groups, &created, why,
				sizeof(why));
	if (!rc && jobwide && !created)
		rc = spank_pool_renew(c, id, why, sizeof(why));
	if (rc) {
		p->state = SPANK_POOL_UNAVAILABLE;
		if (rc == -EPERM || rc == -EIO || rc == -ENOENT)
			snprintf(p->reason, sizeof(p->reason), "reserving "
				 "pool %u on %.60s: %.160s", id, nodes, why);
		else
			snprintf(p->reason, sizeof(p->reason), "control "
				 "server %.60s unreachable: %.160s", c->server,
				 why);
		return;
	}
	if (!jobwide && !created) {
		p->state = SPANK_POOL_UNAVAILABLE;
		snprintf(p->reason, sizeof(p->reason), "pool id %u is already "
			 "held (by another step of job %u, %u steps apart?)",
			 id, si->job, SPANK_STEP_POOL_SLOTS);
		return;
	}
	if (!jobwide) {
		step.reserved = true;
		step.id = id;
		snprintf(step.node, sizeof(step.node), "%s", si->node);
		rc = spank_marker_put_pool(c->statedir, si->node, id);
		if (rc)
			spank_err(CTX, "job %u step %u: cannot note pool %u in "
				  "%s: %s (the epilog will not see it)",
				  si->job, si->stepid, id, c->statedir,
				  strerror(-rc));
	}
	spank_verbose(CTX, "job %u step %u: %s pool %u on %s (%u groups)",
		      si->job, si->stepid, created ? "reserved" : "renewed",
		      id, nodes, groups);
}

int spank_stepd_post_opt(spank_t sp, const struct spank_conf *c)
{
	struct spank_pool p = { .state = SPANK_POOL_UNAVAILABLE };
	struct spank_jobwide jw;
	struct step_info si;
	const char *nodes;
	unsigned groups;
	bool jobwide, ready;
	enum spank_pool_state state;
	char reason[sizeof(p.reason)];
	uint32_t id;
	int rc;

	if (spank_get_item(sp, S_JOB_STEPID, &si.stepid) == ESPANK_SUCCESS &&
	    si.stepid == STEP_EXTERN)
		return 0;
	if (step_info(sp, &si)) {
		if (!spank_option_groups())
			return 0;
		if (c->required)
			snprintf(step.fail, sizeof(step.fail), "cannot tell "
				 "this step's job, nodes or name (required=1)");
		return 0;
	}
	jobwide = !spank_marker_get_job(c->statedir, si.node, si.job, &jw);
	if (!jobwide && (!spank_option_groups() || si.stepid == STEP_BATCH))
		return 0;
	nodes = jobwide ? jw.nodes : si.nodes;
	groups = jobwide ? jw.groups : spank_option_groups();
	if (spank_pool_id(si.job, si.stepid, jobwide, &id)) {
		snprintf(p.reason, sizeof(p.reason), "job id %u is above %u",
			 si.job, SPANK_MAX_SLURM_JOB);
		goto tell;
	}
	if (si.nodeid == 0) {
		reserve(c, &si, jobwide, id, nodes, groups, &p);
		if (p.reason[0])
			goto tell;
		rc = spank_renew_start(c, id);
		if (rc)
			spank_err(CTX, "job %u step %u: cannot start the lease "
				  "renewer: %s", si.job, si.stepid,
				  strerror(-rc));
	}
	spank_pool_wait(c, id, nodes, (int)c->timeout_s * 1000, &p);
tell:
	if (p.state == SPANK_POOL_READY)
		spank_verbose(CTX, "job %u step %u on %s: pool %u ready (%u "
			      "groups)", si.job, si.stepid, si.node, id,
			      p.ngroups);
	else
		spank_err(CTX, "job %u step %u on %s: multicast %s: %s%s",
			  si.job, si.stepid, si.node,
			  spank_pool_state_name(p.state), p.reason,
			  c->required ? " (required=1: failing the step)" :
			  " (the job runs without multicast)");
	rc = spank_env_export(sp, c, id, si.node, &p);
	ready = p.state == SPANK_POOL_READY;
	state = p.state;
	snprintf(reason, sizeof(reason), "%s", p.reason);
	spank_pool_clear(&p);
	if (rc)
		spank_err(CTX, "job %u step %u: cannot set IBMCAST_* in the "
			  "tasks' environment", si.job, si.stepid);
	/* Fail the tasks, not this callback: a failing init_post_opt shows
	 * the user only "Plugin initialization failed", and on a batch step
	 * it drains the node. A task failing in task_init tells its own
	 * stderr why and ends the step or job with an error. */
	if (c->required && (rc || !ready))
		snprintf(step.fail, sizeof(step.fail), "job %u step %u on %s: "
			 "multicast %s: %s (required=1)", si.job, si.stepid,
			 si.node, spank_pool_state_name(state), reason);
	return 0;
}

int spank_stepd_task_init(spank_t sp, const struct spank_conf *c)
{
	(void)sp;
	(void)c;
	if (!step.fail[0])
		return 0;
	fprintf(stderr, "ibmcast: %s\n", step.fail);
	return -1;
}

int spank_stepd_exit(spank_t sp, const struct spank_conf *c)
{
	char why[256];
	bool released;

	(void)sp;
	spank_renew_stop();
	if (!step.reserved)
		return 0;
	step.reserved = false;
	if (spank_pool_release(c, step.id, &released, why, sizeof(why))) {
		spank_err(CTX, "releasing step pool %u: %s (the job's epilog "
			  "will try again)", step.id, why);
		return 0;
	}
	spank_verbose(CTX, "step pool %u %s", step.id, released ?
		      "released" : "was already gone");
	spank_marker_drop_pool(c->statedir, step.node, step.id);
	return 0;
}
