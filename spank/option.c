/* SPDX-License-Identifier: BSD-3-Clause */
/* --ibmcast[=GROUPS]: validated against max_groups wherever Slurm hands
 * it to us (command line, environment, or the step launch message). */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "spank/log.h"
#include "spank/option.h"

static const struct spank_conf *oconf;
static unsigned groups_given;

static int groups_of(const char *arg, unsigned *groups)
{
	/* Slurm passes a missing optional value on as "" or "(null)". */
	if (!arg || !arg[0] || !strcmp(arg, "(null)")) {
		*groups = oconf->groups;
		return 0;
	}
	return spank_conf_groups(oconf, arg, groups);
}

static int opt_cb(int val, const char *optarg, int remote)
{
	unsigned g;

	(void)val;
	(void)remote;
	if (groups_of(optarg, &g)) {
		spank_err(spank_ctx_name(), "--ibmcast=%s: expected a number "
			  "of groups in 1..%u", optarg, oconf->max_groups);
		return -1;
	}
	groups_given = g;
	return 0;
}

static struct spank_option opt_ibmcast = {
	.name = "ibmcast",
	.arginfo = "GROUPS",
	.usage = "Prepare SM-confirmed InfiniBand multicast groups for the "
		 "job (GROUPS of them, default set by the site).",
	.has_arg = 2,
	.val = 0,
	.cb = opt_cb,
};

int spank_option_setup(spank_t sp, const struct spank_conf *conf)
{
	oconf = conf;
	if (spank_context() == S_CTX_JOB_SCRIPT ||
	    spank_context() == S_CTX_SLURMD)
		return ESPANK_SUCCESS;
	return spank_option_register(sp, &opt_ibmcast);
}

unsigned spank_option_groups(void)
{
	return groups_given;
}

int spank_option_job_groups(spank_t sp, const struct spank_conf *conf,
			    unsigned *groups)
{
	char *arg = NULL;

	/* No init callback runs before the prolog and epilog. */
	oconf = conf;
	*groups = 0;
	if (spank_option_getopt(sp, &opt_ibmcast, &arg) != ESPANK_SUCCESS)
		return 0;
	return groups_of(arg, groups) ? -EINVAL : 0;
}
