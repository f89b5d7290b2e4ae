/* SPDX-License-Identifier: BSD-3-Clause */
/* The control server: one thread polling the Unix and TCP listeners and
 * every client, so no client can block another or OpenSM. */
#ifndef IBMCAST_OSM_SERVER_H
#define IBMCAST_OSM_SERVER_H

#include "plugin.h"

/* Binds the sockets (failing here fails plugin creation with a clear
 * message) and starts the thread. */
int ibmc__server_start(struct ibmc_plugin *p, struct ibmc_server **out);
/* p->stopping must be set first; accepts NULL. */
void ibmc__server_stop(struct ibmc_server *s);
void ibmc__server_wake(struct ibmc_server *s);

#endif
