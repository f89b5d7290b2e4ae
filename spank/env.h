/* SPDX-License-Identifier: BSD-3-Clause */
/* The IBMCAST_* variables of docs/environment.md, set in the tasks'
 * environment (remote context only). */
#ifndef IBMCAST_SPANK_ENV_H
#define IBMCAST_SPANK_ENV_H

#include <stdint.h>
#include <slurm/spank.h>

#include "spank/conf.h"
#include "spank/pool.h"

/* 0, or -EIO when Slurm refused a variable. */
int spank_env_export(spank_t sp, const struct spank_conf *conf, uint32_t id,
		     const char *node, const struct spank_pool *p);

#endif
