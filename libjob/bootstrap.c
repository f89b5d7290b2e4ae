/* SPDX-License-Identifier: BSD-3-Clause */
/* The default bootstrap: ibmcast-run's socket when it started us, else
 * Slurm's PMI2 when srun did. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ibmcast/ibmcast.h"
#include "libjob/bootstrap.h"

static int env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

int ibmc_bootstrap_default(ibmc_bootstrap_t *bs)
{
	if (!bs)
		return -EINVAL;
	memset(bs, 0, sizeof(*bs));
	if (env_set("IBMCAST_BOOTSTRAP"))
		return ibmc_bootstrap_sock(bs);
	if (env_set("PMI_FD") || env_set("SLURM_STEP_ID"))
		return ibmc_bootstrap_pmi2(bs);
	return -ENOENT;
}

void ibmc_bootstrap_fini(ibmc_bootstrap_t *bs)
{
	if (!bs)
		return;
	if (bs->allgather == ibmc__bootstrap_sock_allgather)
		ibmc_bootstrap_sock_fini(bs);
	else if (bs->allgather == ibmc__bootstrap_pmi2_allgather)
		ibmc_bootstrap_pmi2_fini(bs);
}
