/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibmc__tr_find(): transports by name. The sim and verbs transports live
 * in their own files, built only when present and configured; weak
 * references let the library (and its unit tests, which link only the
 * loopback transport) build without them.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "libjob/transport.h"

extern const struct ibmc_tr_ops ibmc__tr_sim_ops __attribute__((weak));
#ifdef IBMC_HAVE_VERBS
extern const struct ibmc_tr_ops ibmc__tr_verbs_ops __attribute__((weak));
#endif

const struct ibmc_tr_ops *ibmc__tr_find(const char *name)
{
	const struct ibmc_tr_ops *all[] = {
		&ibmc__tr_loopback_ops,
		&ibmc__tr_sim_ops,
#ifdef IBMC_HAVE_VERBS
		&ibmc__tr_verbs_ops,
#endif
	};
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i] && !strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}
