/* SPDX-License-Identifier: BSD-3-Clause */
/* SM-confirmed readiness: a thread that decides, from OpenSM's own state
 * and from MFT blocks read back from the switches, when each group's
 * routes are really in place. No OpenSM event marks the end of a
 * multicast pass, so it polls. */
#ifndef IBMCAST_OSM_CONFIRMER_H
#define IBMCAST_OSM_CONFIRMER_H

#include "plugin.h"

int ibmc__confirmer_start(struct ibmc_plugin *p, struct ibmc_confirmer **out);
/* Stops and joins the thread; accepts NULL. p->stopping must be set. */
void ibmc__confirmer_stop(struct ibmc_plugin *p, struct ibmc_confirmer *c);
/* New work: wake the thread now. Call with the registry lock held. */
void ibmc__confirmer_kick(struct ibmc_plugin *p);

#endif
