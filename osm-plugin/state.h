/* SPDX-License-Identifier: BSD-3-Clause */
/* Reservations that outlive OpenSM: the registry is saved to the state file
 * (atomically) on every change and read back when the plugin starts, and a
 * standby SM mirrors its master's reservations so it can take them over. */
#ifndef IBMCAST_OSM_STATE_H
#define IBMCAST_OSM_STATE_H

#include <stdbool.h>

#include "plugin.h"

/* Write every reservation to opt.state_path (temp file, fsync, rename).
 * Server thread only. 0 or -errno; a failure is logged and shown in
 * status, never fatal. */
int ibmc__state_save(struct ibmc_plugin *p);

/* At plugin start: load opt.state_path into the registry as jobs that
 * still need their groups built. A missing file is an empty registry; a
 * torn or corrupt one is reported, moved aside (".corrupt-<time>") and
 * ignored. Returns the number of jobs restored, or -errno. */
int ibmc__state_load(struct ibmc_plugin *p);

/* Server thread: build the groups of restored or mirrored jobs once this
 * SM is master and the subnet is up. Returns true if it did anything. */
bool ibmc__state_restore_pending(struct ibmc_plugin *p);

/* Server thread, standby SM only: copy the reservations of the master at
 * opt.peer (its status), at most every few seconds. */
void ibmc__state_mirror_peer(struct ibmc_plugin *p, uint64_t now_ns);

#endif
