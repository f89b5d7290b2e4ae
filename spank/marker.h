/* SPDX-License-Identifier: BSD-3-Clause */
/* Node-local notes that carry what the prolog and the steps learned to the
 * later callbacks, each of which runs in a fresh process:
 *   STATEDIR/NODE/job.JOB    written by every node's prolog for a job-wide
 *                            pool: "groups=G nodes=HOSTLIST"
 *   STATEDIR/NODE/pool.ID    written by the node that reserved a
 *                            step-only pool, removed when it released it;
 *                            the job's epilog releases any left over.
 * NODE is Slurm's node name, so several slurmd on one host stay apart. */
#ifndef IBMCAST_SPANK_MARKER_H
#define IBMCAST_SPANK_MARKER_H

#include <stddef.h>
#include <stdint.h>

struct spank_jobwide {
	unsigned groups;
	char nodes[4096];
};

/* 0 or -errno. */
int spank_marker_put_job(const char *statedir, const char *node,
			 uint32_t job, const struct spank_jobwide *jw);
/* 0, -ENOENT when the job has no job-wide pool, other -errno. */
int spank_marker_get_job(const char *statedir, const char *node,
			 uint32_t job, struct spank_jobwide *jw);
void spank_marker_drop_job(const char *statedir, const char *node,
			   uint32_t job);

int spank_marker_put_pool(const char *statedir, const char *node,
			  uint32_t id);
void spank_marker_drop_pool(const char *statedir, const char *node,
			    uint32_t id);
/* Call fn for every step-only pool of job noted on node. */
void spank_marker_each_pool(const char *statedir, const char *node,
			    uint32_t job, void (*fn)(uint32_t id, void *arg),
			    void *arg);

#endif
