/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dp_client.h - an endpoint of the simulated data plane (one UD QP): connect
 * and HELLO, attach/detach, proxy joins, sends and receives. Used by libjob's
 * sim transport and by the data plane's tests. Not thread-safe: one user at
 * a time per endpoint.
 */
#ifndef IBMCAST_DP_CLIENT_H
#define IBMCAST_DP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "sim-fabric/dataplane_wire.h"

struct ibmc_dp;

/* Connect to the daemon's socket (NULL: $IBMCAST_SIM_DATAPLANE) as a QP on
 * node's HCA with Q_Key qkey (0: accept any). 0 or -errno; the daemon's
 * refusal (unknown node: -ENOENT) is returned as is. */
int ibmc__dp_open(const char *path, const char *node, uint32_t qkey,
		  struct ibmc_dp **out);
void ibmc__dp_close(struct ibmc_dp *dp);
const struct ibmc_dp_hello_ok *ibmc__dp_self(const struct ibmc_dp *dp);
int ibmc__dp_fd(const struct ibmc_dp *dp);

/* Like ibv_attach_mcast/ibv_detach_mcast: local, no SA. 0 or -errno. */
int ibmc__dp_attach(struct ibmc_dp *dp, const uint8_t mgid[16],
		    uint16_t mlid);
int ibmc__dp_detach(struct ibmc_dp *dp, const uint8_t mgid[16],
		    uint16_t mlid);

/* SA proxy: a real MCMemberRecord join/leave for this port. */
int ibmc__dp_join(struct ibmc_dp *dp, const struct ibmc_dp_join *j,
		  struct ibmc_dp_join_ok *ok);
int ibmc__dp_leave(struct ibmc_dp *dp, const struct ibmc_dp_join *j);

/* Fire and forget, as on a UD QP. qkey 0: the QP's own. 0 or -errno
 * (-EMSGSIZE over the MTU, -EPIPE when the daemon is gone). */
int ibmc__dp_send_uc(struct ibmc_dp *dp, uint16_t dlid, uint32_t dqpn,
		     uint32_t qkey, const struct iovec *iov, int iovcnt);
int ibmc__dp_send_mc(struct ibmc_dp *dp, const uint8_t mgid[16],
		     uint16_t mlid, uint32_t qkey, const struct iovec *iov,
		     int iovcnt);

/* Wait up to timeout_ms (-1 forever, 0 poll) for one packet: 0 with *hdr,
 * *data (valid until the next call on dp) and *len filled; -ETIMEDOUT;
 * -EPIPE when the daemon is gone. */
int ibmc__dp_recv(struct ibmc_dp *dp, struct ibmc_dp_recv *hdr,
		  const void **data, size_t *len, int timeout_ms);

/* The endpoint's modeled clock, ns (ibmcast-dataplane(8), MODELED TIME):
 * starts at the open's monotonic time; a send adds the model's o_s and
 * stamps the packet (an unmodeled one only stamps it); a receive moves
 * nothing until the user takes the packet, hdr->t_ns, with ibmc__dp_take:
 * max(clock, arrival) + o_r. So only the packets a protocol needs cost
 * modeled time, not duplicates, late copies or retransmissions.
 * ibmc__dp_advance adds declared time (computation). */
uint64_t ibmc__dp_clock(const struct ibmc_dp *dp);
void ibmc__dp_advance(struct ibmc_dp *dp, uint64_t ns);
void ibmc__dp_take(struct ibmc_dp *dp, uint64_t arrival_ns);
/* While on, sends are flagged IBMC_DP_SEND_UNMODELED: they cost no
 * modeled time here nor in the data plane's queues (loss recovery and
 * timer-driven packets, whose number depends on real time), and carry
 * the stamp at_ns when it is not 0 (a retransmission: its original's). */
void ibmc__dp_set_unmodeled(struct ibmc_dp *dp, bool on, uint64_t at_ns);

/* Errors the daemon sent for sends (malformed, over the MTU), since open. */
unsigned long ibmc__dp_errors(const struct ibmc_dp *dp);

#endif
