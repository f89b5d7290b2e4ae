/* SPDX-License-Identifier: BSD-3-Clause */
/* The OpenSM event plugin entry points. create() parses the options and
 * starts the control server and the readiness confirmer; report() only
 * notes events in atomics, because OpenSM may call it re-entrantly while
 * holding osm->lock (e.g. trap 66 from osm_mgrp_add_port). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osm_includes.h"

#include "common/log.h"
#include "confirmer.h"
#include "plugin.h"
#include "server.h"
#include "state.h"

static void log_to_osm(int level, const char *msg, void *arg)
{
	osm_log_t *log = arg;
	osm_log_level_t l;

	switch (level) {
	case IBMC_LOG_ERROR:
		l = OSM_LOG_ERROR;
		break;
	case IBMC_LOG_WARN:
	case IBMC_LOG_INFO:
		l = OSM_LOG_INFO;
		break;
	default:
		l = OSM_LOG_DEBUG;
		break;
	}
	osm_log_v2(log, l, 0, "ibmcast: %s\n", msg);
}

void ibmc__plugin_notify_server(struct ibmc_plugin *p)
{
	pthread_mutex_lock(&p->server_lock);
	ibmc__server_wake(p->server);
	pthread_mutex_unlock(&p->server_lock);
}

static void *create(osm_opensm_t *osm)
{
	struct ibmc_plugin *p = calloc(1, sizeof(*p));
	char err[256] = "";
	int ret;

	if (!p)
		return NULL;
	p->osm = osm;
	pthread_mutex_init(&p->server_lock, NULL);
	ibmc__log_set_sink(log_to_osm, &osm->log);
	ret = ibmc__options_parse(osm->subn.opt.event_plugin_options, &p->opt,
				  err, sizeof(err));
	if (ret) {
		ibmc_log(IBMC_LOG_ERROR,
			 "event_plugin_options: %s; plugin not loaded", err);
		goto err_free;
	}
	ibmc__log_set_level(p->opt.log_level);
	ret = ibmc__registry_init(&p->reg);
	if (ret)
		goto err_opts;
	/* Before the server opens: a client must never see a registry that
	 * lacks a reservation the last SM accepted. */
	ret = ibmc__state_load(p);
	if (ret < 0 && ret != -EBADMSG)
		ibmc_log(IBMC_LOG_ERROR, "state file %s: %s",
			 p->opt.state_path, strerror(-ret));
	ret = ibmc__confirmer_start(p, &p->confirmer);
	if (ret) {
		ibmc_log(IBMC_LOG_ERROR, "cannot start confirmer: %s",
			 strerror(-ret));
		goto err_reg;
	}
	ret = ibmc__server_start(p, &p->server);
	if (ret) {
		ibmc_log(IBMC_LOG_ERROR,
			 "cannot start control server: %s; plugin not loaded",
			 strerror(-ret));
		goto err_confirmer;
	}
	ibmc_log(IBMC_LOG_INFO,
		 "ibmcast %s loaded: unix=%s tcp=%s readback=%s",
		 IBMCAST_VERSION, p->opt.unix_path ? p->opt.unix_path : "off",
		 p->opt.tcp ? p->opt.tcp : "off",
		 p->opt.readback ? "on" : "off");
	return p;

err_confirmer:
	atomic_store(&p->stopping, true);
	ibmc__confirmer_stop(p, p->confirmer);
err_reg:
	ibmc__registry_destroy(&p->reg);
err_opts:
	ibmc__options_free(&p->opt);
err_free:
	ibmc__log_set_sink(NULL, NULL);
	pthread_mutex_destroy(&p->server_lock);
	free(p);
	return NULL;
}

static void delete(void *data)
{
	struct ibmc_plugin *p = data;
	struct ibmc_server *s;

	if (!p)
		return;
	atomic_store(&p->stopping, true);
	/* No wake-up from another thread may reach the server once it is
	 * being freed (a confirmation that ended just now wakes it). */
	pthread_mutex_lock(&p->server_lock);
	s = p->server;
	p->server = NULL;
	pthread_mutex_unlock(&p->server_lock);
	ibmc__server_stop(s);
	ibmc__confirmer_stop(p, p->confirmer);
	/* The groups themselves live in OpenSM's memory and go with it. */
	ibmc__registry_destroy(&p->reg);
	ibmc__options_free(&p->opt);
	ibmc__log_set_sink(NULL, NULL);
	pthread_mutex_destroy(&p->server_lock);
	free(p);
}

static void report(void *data, osm_epi_event_id_t id, void *event)
{
	struct ibmc_plugin *p = data;

	(void)event;
	switch (id) {
	case OSM_EVENT_ID_SUBNET_UP:
		atomic_store(&p->subnet_up, true);
		atomic_fetch_add(&p->sweeps_done, 1);
		break;
	case OSM_EVENT_ID_HEAVY_SWEEP_START:
		atomic_fetch_add(&p->sweeps_started, 1);
		break;
	case OSM_EVENT_ID_HEAVY_SWEEP_DONE:
		atomic_fetch_add(&p->sweeps_done, 1);
		break;
	default:
		break;
	}
}

/* The only exported symbol (see libibmcast_osm.map). OpenSM refuses a
 * plugin whose osm_version differs from its own. */
osm_event_plugin_t osm_event_plugin = {
	.osm_version = OSM_VERSION,
	.create = create,
	.delete = delete,
	.report = report,
};
