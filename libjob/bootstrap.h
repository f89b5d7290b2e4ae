/* SPDX-License-Identifier: BSD-3-Clause */
/* The bootstraps' allgather functions, so that ibmc_bootstrap_fini() can
 * tell which bootstrap filled an ibmc_bootstrap_t. */
#ifndef IBMCAST_LIBJOB_BOOTSTRAP_H
#define IBMCAST_LIBJOB_BOOTSTRAP_H

#include <stddef.h>

int ibmc__bootstrap_sock_allgather(void *arg, const void *in, void *out,
				   size_t len);
int ibmc__bootstrap_pmi2_allgather(void *arg, const void *in, void *out,
				   size_t len);

#endif /* IBMCAST_LIBJOB_BOOTSTRAP_H */
