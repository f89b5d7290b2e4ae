/* SPDX-License-Identifier: BSD-3-Clause */
/* Prolog and epilog. They never fail the job: a failing prolog drains the
 * node in Slurm, far worse than a job without multicast; the steps decide
 * (required=1) whether a missing pool is fatal. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"
#include "common/parse.h"
#include "spank/jobscript.h"
#include "spank/log.h"
#include "spank/marker.h"
#include "spank/option.h"
#include "spank/pool.h"

int spank_first_node(const char *nodes, char *buf, size_t len)
{
	struct ibmc_hostlist hl;
	int rc;

	rc = ibmc__hostlist_expand(nodes, 1 << 20, &hl);
	if (rc)
		return rc;
	rc = hl.count ? 0 : -EINVAL;
	if (!rc)
		snprintf(buf, len, "%s", hl.names[0]);
	ibmc__hostlist_free(&hl);
	return rc;
}

/* SLURM_JOB_ID and SLURMD_NODENAME, which every prolog and epilog has. */
static int job_and_node(const char *what, uint32_t *job, const char **node)
{
	const char *j = getenv("SLURM_JOB_ID");
	unsigned long v;

	*node = getenv("SLURMD_NODENAME");
	if (!j || !*node || !**node) {
		spank_err(what, "SLURM_JOB_ID or SLURMD_NODENAME missing "
			  "from the environment");
		return -EINVAL;
	}
	if (ibmc__parse_ulong(j, 10, 1, 0xffffffffUL, &v)) {
		spank_err(what, "SLURM_JOB_ID='%s' is not a job id", j);
		return -EINVAL;
	}
	*job = (uint32_t)v;
	return 0;
}

int spank_job_prolog(spank_t sp, const struct spank_conf *c)
{
	struct spank_jobwide jw = { 0 };
	const char *node, *nodes, *u;
	char first[64], why[256];
	bool created;
	uint32_t job;
	int rc;

	if (spank_option_job_groups(sp, c, &jw.groups)) {
		spank_err("prolog", "the job's --ibmcast value is invalid; "
			  "no multicast pool");
		return 0;
	}
	if (!jw.groups)
		return 0;
	if (job_and_node("prolog", &job, &node))
		return 0;
	nodes = getenv("SLURM_NODELIST");
	if (!nodes || snprintf(jw.nodes, sizeof(jw.nodes), "%s", nodes) >=
			      (int)sizeof(jw.nodes) ||
	    spank_first_node(nodes, first, sizeof(first))) {
		spank_err("prolog", "job %u: no usable SLURM_NODELIST ('%s')",
			  job, nodes ? nodes : "");
		return 0;
	}
	rc = spank_marker_put_job(c->statedir, node, job, &jw);
	if (rc)
		spank_err("prolog", "job %u: cannot note the job-wide pool in "
			  "%s/%s: %s", job, c->statedir, node, strerror(-rc));
	/* One node reserves; the steps on every node wait for it. */
	if (strcmp(node, first))
		return 0;
	if (spank_pool_id(job, 0, true, &job)) {
		spank_err("prolog", "job %u: id above %u, no multicast pool",
			  job, SPANK_MAX_SLURM_JOB);
		return 0;
	}
	u = getenv("SLURM_JOB_UID");
	rc = spank_pool_reserve(c, job, jw.nodes, u ? (uid_t)atol(u) : 0,
				jw.groups, &created, why, sizeof(why));
	if (rc)
		spank_err("prolog", "job %u: reserving %u groups on %s: %s",
			  job, jw.groups, jw.nodes, why);
	else
		spank_info("prolog", "job %u: reserved %u groups on %s%s", job,
			   jw.groups, jw.nodes, created ? "" : " (existed)");
	return 0;
}

struct epilog_ctx {
	const struct spank_conf *c;
	const char *node;
	uint32_t job;
};

static void release_pool(uint32_t id, void *arg)
{
	struct epilog_ctx *e = arg;
	char why[256];
	bool released;

	if (spank_pool_release(e->c, id, &released, why, sizeof(why))) {
		spank_err("epilog", "job %u: releasing step pool %u: %s",
			  e->job, id, why);
		return;
	}
	if (released)
		spank_info("epilog", "job %u: released step pool %u its step "
			   "left behind", e->job, id);
	spank_marker_drop_pool(e->c->statedir, e->node, id);
}

int spank_job_epilog(spank_t sp, const struct spank_conf *c)
{
	struct epilog_ctx e = { .c = c };
	struct spank_jobwide jw;
	const char *nodes;
	char first[64], why[256];
	unsigned groups = 0;
	bool released, mine = false;

	if (job_and_node("epilog", &e.job, &e.node))
		return 0;
	if (!spank_marker_get_job(c->statedir, e.node, e.job, &jw)) {
		mine = !spank_first_node(jw.nodes, first, sizeof(first)) &&
		       !strcmp(first, e.node);
	} else if (!spank_option_job_groups(sp, c, &groups) && groups) {
		/* No note (the prolog could not write it): fall back to
		 * what the epilog itself is told. */
		nodes = getenv("SLURM_NODELIST");
		mine = nodes && !spank_first_node(nodes, first,
						  sizeof(first)) &&
		       !strcmp(first, e.node);
	}
	if (mine && e.job <= SPANK_MAX_SLURM_JOB) {
		if (spank_pool_release(c, e.job, &released, why, sizeof(why)))
			spank_err("epilog", "job %u: releasing the job's "
				  "pool: %s (its lease or 'ibmcastctl gc' "
				  "will)", e.job, why);
		else
			spank_info("epilog", "job %u: %s the job's pool",
				   e.job, released ? "released" :
				   "nothing to release for");
	}
	spank_marker_each_pool(c->statedir, e.node, e.job, release_pool, &e);
	spank_marker_drop_job(c->statedir, e.node, e.job);
	return 0;
}
