/* SPDX-License-Identifier: BSD-3-Clause */
/* The job prolog and epilog (root, a fresh process per node per call):
 * note and reserve a job-wide pool at job start, release it at job end. */
#ifndef IBMCAST_SPANK_JOBSCRIPT_H
#define IBMCAST_SPANK_JOBSCRIPT_H

#include <slurm/spank.h>

#include "spank/conf.h"

int spank_job_prolog(spank_t sp, const struct spank_conf *conf);
int spank_job_epilog(spank_t sp, const struct spank_conf *conf);

/* The first name of a hostlist expression into buf; 0 or -EINVAL. */
int spank_first_node(const char *nodes, char *buf, size_t len);

#endif
