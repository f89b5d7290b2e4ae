/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin's side of the SMP reader: spawns ibmcast-smpd, sends it MFT
 * block queries and waits, bounded, for the answers. One thread only. */
#ifndef IBMCAST_OSM_SMP_CLIENT_H
#define IBMCAST_OSM_SMP_CLIENT_H

#include <stddef.h>

#include "osm-plugin/smp_wire.h"

struct ibmc_smp_client;

/* Spawn smpd_path with its end of a SOCK_SEQPACKET socketpair as fd 3; the
 * child inherits the environment (so under ibsim it attaches as OpenSM
 * did). Returns 0 or -errno. */
int ibmc__smp_client_start(const char *smpd_path,
			   struct ibmc_smp_client **out);

/* Read the MFT blocks q[0..n-1] into res[0..n-1] (res[i] answers q[i]; a
 * block that did not answer has res[i].status < 0). The whole call takes
 * at most about timeout_ms. If the reader died or timed out it is killed
 * and reaped, and the next call respawns it once. Returns 0 when every
 * batch got a reply (individual blocks may still have failed), -ETIMEDOUT,
 * -EPIPE if the reader is gone and could not be restarted, -EINVAL, or
 * another -errno. */
int ibmc__smp_read_mft(struct ibmc_smp_client *c,
		       struct ibmc_smp_result *res,
		       const struct ibmc_smp_query *q, size_t n,
		       int timeout_ms);

/* Close the socket, let the reader exit, kill it if it does not within a
 * short grace period, and reap it. Accepts NULL. */
void ibmc__smp_client_stop(struct ibmc_smp_client *c);

#endif
