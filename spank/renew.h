/* SPDX-License-Identifier: BSD-3-Clause */
/* Keeps a pool's lease alive while a step runs: one thread in slurmstepd
 * renews every third of the lease until the step's exit callback. */
#ifndef IBMCAST_SPANK_RENEW_H
#define IBMCAST_SPANK_RENEW_H

#include <stdint.h>

#include "spank/conf.h"

/* Start renewing pool id (conf is used until spank_renew_stop). 0 or
 * -errno; at most one renewer per process. */
int spank_renew_start(const struct spank_conf *conf, uint32_t id);
/* Stop and join; a no-op when none runs. */
void spank_renew_stop(void);

#endif
