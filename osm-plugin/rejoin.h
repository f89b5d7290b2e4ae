/* SPDX-License-Identifier: BSD-3-Clause */
/* Member ports that come back: OpenSM drops a port that leaves the fabric
 * from every group, and nothing rejoins it for the job (there is no SA
 * client doing so), so the plugin re-adds it when OpenSM sees it again. */
#ifndef IBMCAST_OSM_REJOIN_H
#define IBMCAST_OSM_REJOIN_H

#include "plugin.h"

/* For every building or ready job with member ports missing: resolve its
 * nodes again and add each active HCA port back to the groups it has left;
 * those groups (and the job) go back to building, to be confirmed as on
 * the first build. Confirmer thread; takes the registry lock and
 * osm->lock, never both at once. Returns the number of ports re-added. */
unsigned ibmc__rejoin_returning(struct ibmc_plugin *p);

#endif
