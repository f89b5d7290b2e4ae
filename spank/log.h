/* SPDX-License-Identifier: BSD-3-Clause */
/* Every line the plugin writes goes through Slurm's logging and starts
 * with "ibmcast: <context>: " so an administrator can grep one plugin's
 * story out of slurmd, slurmstepd and srun logs. */
#ifndef IBMCAST_SPANK_LOG_H
#define IBMCAST_SPANK_LOG_H

#include <slurm/spank.h>

#define spank_err(ctx, fmt, ...) \
	slurm_error("ibmcast: %s: " fmt, ctx, ##__VA_ARGS__)
#define spank_info(ctx, fmt, ...) \
	slurm_info("ibmcast: %s: " fmt, ctx, ##__VA_ARGS__)
#define spank_verbose(ctx, fmt, ...) \
	slurm_verbose("ibmcast: %s: " fmt, ctx, ##__VA_ARGS__)
#define spank_debug(ctx, fmt, ...) \
	slurm_debug("ibmcast: %s: " fmt, ctx, ##__VA_ARGS__)

/* The name of the context the plugin runs in, for the prefix. */
const char *spank_ctx_name(void);

/* Route common/'s ibmc_log lines into Slurm's log. */
void spank_log_install(void);

#endif
