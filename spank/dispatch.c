/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmcast_spank.so: Slurm's entry points, each dispatching on the context
 * it is called in; the work lives in one file per context. */
#include "config.h"

#include <slurm/spank.h>

#include "spank/conf.h"
#include "spank/jobscript.h"
#include "spank/log.h"
#include "spank/option.h"
#include "spank/stepd.h"

SPANK_PLUGIN(ibmcast, 1)

static struct spank_conf conf;
static int loaded; /* 1 parsed, -1 refused */

/* Parse plugstack.conf's arguments once per process, in every context,
 * so a mistake shows wherever the plugin is loaded. */
static int load(int ac, char **av)
{
	char err[512];

	if (loaded)
		return loaded > 0 ? 0 : -1;
	spank_log_install();
	if (spank_conf_parse(ac, av, &conf, err, sizeof(err))) {
		spank_err(spank_ctx_name(), "plugstack.conf: %s", err);
		loaded = -1;
		return -1;
	}
	loaded = 1;
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (load(ac, av))
		return -1;
	if (spank_option_setup(sp, &conf) != ESPANK_SUCCESS) {
		spank_err(spank_ctx_name(), "cannot register --ibmcast");
		return -1;
	}
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	if (load(ac, av))
		return -1;
	switch (spank_context()) {
	case S_CTX_REMOTE:
		return spank_stepd_post_opt(sp, &conf);
	default:
		return 0;
	}
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (loaded <= 0 || spank_context() != S_CTX_REMOTE)
		return 0;
	return spank_stepd_task_init(sp, &conf);
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	if (load(ac, av))
		return 0; /* said why; a failing prolog would drain the node */
	return spank_job_prolog(sp, &conf);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	if (load(ac, av))
		return 0;
	return spank_job_epilog(sp, &conf);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	int rc = 0;

	if (loaded <= 0)
		return 0;
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE)
		rc = spank_stepd_exit(sp, &conf);
	spank_conf_free(&conf);
	loaded = 0;
	return rc;
}
