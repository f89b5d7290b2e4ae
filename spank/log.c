/* SPDX-License-Identifier: BSD-3-Clause */
/* Context names for log lines, and common/'s log sink into Slurm's. */
#include "config.h"

#include <stddef.h>

#include "common/log.h"
#include "spank/log.h"

const char *spank_ctx_name(void)
{
	switch (spank_context()) {
	case S_CTX_LOCAL:
		return "srun";
	case S_CTX_REMOTE:
		return "remote";
	case S_CTX_ALLOCATOR:
		return "allocator";
	case S_CTX_SLURMD:
		return "slurmd";
	case S_CTX_JOB_SCRIPT:
		return "prolog/epilog";
	default:
		return "unknown context";
	}
}

static void sink(int level, const char *msg, void *arg)
{
	(void)arg;
	if (level <= IBMC_LOG_ERROR)
		slurm_error("ibmcast: %s: %s", spank_ctx_name(), msg);
	else if (level <= IBMC_LOG_INFO)
		slurm_verbose("ibmcast: %s: %s", spank_ctx_name(), msg);
	else
		slurm_debug("ibmcast: %s: %s", spank_ctx_name(), msg);
}

void spank_log_install(void)
{
	ibmc__log_set_sink(sink, NULL);
}
