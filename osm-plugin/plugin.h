/* SPDX-License-Identifier: BSD-3-Clause */
/* One ibmcast plugin instance inside OpenSM: options, the job registry
 * and the two threads that serve and confirm. */
#ifndef IBMCAST_OSM_PLUGIN_H
#define IBMCAST_OSM_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "options.h"
#include "registry.h"

struct osm_opensm;
struct ibmc_server;
struct ibmc_confirmer;

struct ibmc_plugin {
	struct osm_opensm *osm;
	struct ibmc_options opt;
	struct ibmc_registry reg;
	struct ibmc_server *server;
	/* Guards server against its free at unload: the confirmer thread
	 * (and OpenSM's, through rejoin) still wake it while delete() stops
	 * the server. */
	pthread_mutex_t server_lock;
	struct ibmc_confirmer *confirmer;

	/* Set from report(), which may run re-entrantly under osm->lock:
	 * plain atomics only, no locks, no waiting. */
	atomic_bool subnet_up;
	atomic_uint sweeps_done;
	atomic_uint sweeps_started; /* the confirmer re-verifies on change */
	atomic_bool stopping;

	/* Persistence, touched by the server thread only (status reads the
	 * text under the registry lock). */
	char state_error[200];      /* last save failed; cleared by a save */
	char state_load_error[240]; /* the file found at start was bad */
	bool restore_pending;
	uint64_t next_mirror_ns;
	uint64_t next_restore_ns;
};

/* Wake the server thread so it re-checks pending waits (thread-safe). */
void ibmc__plugin_notify_server(struct ibmc_plugin *p);

#endif
