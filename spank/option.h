/* SPDX-License-Identifier: BSD-3-Clause */
/* The user's switch: --ibmcast[=GROUPS] on srun, sbatch and salloc. */
#ifndef IBMCAST_SPANK_OPTION_H
#define IBMCAST_SPANK_OPTION_H

#include <slurm/spank.h>

#include "spank/conf.h"

/* Register the option (where Slurm parses options) against conf, which
 * must outlive the plugin. ESPANK_SUCCESS or Slurm's error. */
int spank_option_setup(spank_t sp, const struct spank_conf *conf);

/* Groups asked for by a --ibmcast seen on this command line or passed on
 * to this step (0: not given). */
unsigned spank_option_groups(void);

/* In the prolog and epilog: the groups the allocating command asked for
 * (0: none), read from the job's SPANK environment. Returns 0, or -EINVAL
 * when the value there is malformed. */
int spank_option_job_groups(spank_t sp, const struct spank_conf *conf,
			    unsigned *groups);

#endif
