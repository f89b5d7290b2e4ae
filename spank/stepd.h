/* SPDX-License-Identifier: BSD-3-Clause */
/* The remote context (slurmstepd, root, once per step per node): find or
 * reserve the step's pool, wait for it, tell the tasks; release a
 * step-only pool when the step ends. */
#ifndef IBMCAST_SPANK_STEPD_H
#define IBMCAST_SPANK_STEPD_H

#include <slurm/spank.h>

#include "spank/conf.h"

int spank_stepd_post_opt(spank_t sp, const struct spank_conf *conf);
int spank_stepd_exit(spank_t sp, const struct spank_conf *conf);
/* In each task (as the user): fail it when required=1 found no pool. */
int spank_stepd_task_init(spank_t sp, const struct spank_conf *conf);

#endif
