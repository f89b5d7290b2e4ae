/* SPDX-License-Identifier: BSD-3-Clause */
/* Export one pool's outcome to the tasks. Every variable is written (or
 * removed) each time, so a step never inherits a stale one from the
 * environment srun passed along. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "spank/env.h"

static int set(spank_t sp, const char *name, const char *value)
{
	if (!value)
		return spank_unsetenv(sp, name) == ESPANK_SUCCESS ? 0 : -EIO;
	return spank_setenv(sp, name, value, 1) == ESPANK_SUCCESS ? 0 : -EIO;
}

int spank_env_export(spank_t sp, const struct spank_conf *c, uint32_t id,
		     const char *node, const struct spank_pool *p)
{
	bool ready = p->state == SPANK_POOL_READY;
	char job[16], n[16];
	int rc = 0;

	snprintf(job, sizeof(job), "%u", id);
	snprintf(n, sizeof(n), "%u", ready ? p->ngroups : 0);
	rc |= set(sp, "IBMCAST_SERVER", c->task_server);
	rc |= set(sp, "IBMCAST_JOB", job);
	rc |= set(sp, "IBMCAST_NODE", node);
	rc |= set(sp, "IBMCAST_STATE", spank_pool_state_name(p->state));
	rc |= set(sp, "IBMCAST_REASON", ready ? NULL : p->reason);
	rc |= set(sp, "IBMCAST_NGROUPS", n);
	rc |= set(sp, "IBMCAST_GROUPS", ready ? p->groups : NULL);
	if (c->munge_socket)
		rc |= set(sp, "IBMCAST_MUNGE_SOCKET", c->munge_socket);
	return rc ? -EIO : 0;
}
