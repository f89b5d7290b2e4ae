/* SPDX-License-Identifier: BSD-3-Clause */
/* OpenSM's internal headers in the order they must come: osm_config.h
 * first, because it defines the build options (ENABLE_OSM_PERF_MGR, the
 * vendor interface) that change the layout of osm_opensm_t. */
#ifndef IBMCAST_OSM_INCLUDES_H
#define IBMCAST_OSM_INCLUDES_H

#include <opensm/osm_config.h>
#include <complib/cl_passivelock.h>
#include <iba/ib_types.h>
#include <opensm/osm_event_plugin.h>
#include <opensm/osm_log.h>
#include <opensm/osm_mcast_tbl.h>
#include <opensm/osm_mcm_port.h>
#include <opensm/osm_multicast.h>
#include <opensm/osm_node.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_port.h>
#include <opensm/osm_sa.h>
#include <opensm/osm_sm.h>
#include <opensm/osm_subnet.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_version.h>

/* The plugin reaches into OpenSM's structures; refuse to build against an
 * event-plugin interface we have not been written for. */
#if OSM_EVENT_PLUGIN_INTERFACE_VER != 2
#error "ibmcast_osm knows OpenSM event plugin interface version 2 only"
#endif

#endif
