/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane_wire.h - what an endpoint (libjob's sim transport, test tools)
 * and the simulated data plane daemon (ibmcast-dataplane) say to each other.
 *
 * One endpoint = one UD queue pair on one node's HCA. It connects a
 * SOCK_SEQPACKET Unix socket to $IBMCAST_SIM_DATAPLANE (the launcher writes it
 * into DIR/env); every message is one datagram: struct ibmc_dp_hdr, then the
 * type's fixed body, then (SEND_*, RECV) the payload. Integers are in host
 * byte order (both ends run on this machine); MGIDs are 16 bytes, network
 * order, as on the wire.
 *
 * HELLO must come first. ATTACH, DETACH, JOIN and LEAVE are answered (in
 * order, on the same socket) by one OK or ERROR; sends are fire-and-forget as
 * on a UD QP: a packet the switches' tables do not carry somewhere is
 * silently lost (and counted). A RECV whose endpoint cannot take it (socket
 * buffer full) is dropped like a UD packet finding no receive WQE.
 *
 * Modeled time (version 2): every SEND carries t_ns, the modeled time at
 * which the sender's CPU handed the packet to its HCA; every RECV carries
 * t_ns, its modeled arrival at this QP as the data plane's model computed
 * it, and the model's current overheads so the endpoint can keep its clock
 * (see ibmcast-dataplane(8), "MODELED TIME"). Version 3: a send may be
 * flagged unmodeled (IBMC_DP_SEND_UNMODELED).
 */
#ifndef IBMCAST_DATAPLANE_WIRE_H
#define IBMCAST_DATAPLANE_WIRE_H

#include <stdint.h>

#define IBMC_DP_VERSION 3
#define IBMC_DP_NODE_MAX 64		/* node name, NUL included */
#define IBMC_DP_MAX_PAYLOAD 4096	/* largest IB MTU */
#define IBMC_DP_MSG_MAX 4352		/* header + body + payload, rounded */

enum ibmc_dp_type {
	IBMC_DP_HELLO = 1,	/* ep -> dp: struct ibmc_dp_hello */
	IBMC_DP_HELLO_OK,	/* dp -> ep: struct ibmc_dp_hello_ok */
	IBMC_DP_ERROR,		/* dp -> ep: struct ibmc_dp_error */
	IBMC_DP_OK,		/* dp -> ep: no body (ATTACH/DETACH/LEAVE done) */
	IBMC_DP_ATTACH,		/* ep -> dp: struct ibmc_dp_mcast (ibv_attach_mcast) */
	IBMC_DP_DETACH,		/* ep -> dp: struct ibmc_dp_mcast */
	IBMC_DP_SEND_UC,	/* ep -> dp: struct ibmc_dp_send_uc + payload */
	IBMC_DP_SEND_MC,	/* ep -> dp: struct ibmc_dp_send_mc + payload */
	IBMC_DP_RECV,		/* dp -> ep: struct ibmc_dp_recv + payload */
	IBMC_DP_JOIN,		/* ep -> dp: struct ibmc_dp_join (SA proxy) */
	IBMC_DP_JOIN_OK,	/* dp -> ep: struct ibmc_dp_join_ok */
	IBMC_DP_LEAVE,		/* ep -> dp: struct ibmc_dp_join; answered by OK */
};

struct ibmc_dp_hdr {
	uint16_t type;		/* enum ibmc_dp_type */
	uint16_t version;	/* IBMC_DP_VERSION */
	uint32_t len;		/* payload bytes after the body (SEND_*, RECV) */
};

struct ibmc_dp_hello {
	char node[IBMC_DP_NODE_MAX];	/* NodeDescription's first word */
	uint32_t qkey;			/* the QP's Q_Key (0: accept any) */
};

struct ibmc_dp_hello_ok {
	uint16_t lid;		/* the node's HCA port LID, as the SM set it */
	uint16_t sm_lid;
	uint32_t qpn;		/* this endpoint's QP number, unique per node */
	uint32_t mtu;		/* port MTU in bytes (max payload per packet) */
	uint8_t port_gid[16];	/* subnet prefix + port GUID */
	uint32_t o_s_ns;	/* the model's send overhead */
	uint32_t o_r_ns;	/* the model's receive overhead */
};

struct ibmc_dp_error {
	int32_t err;		/* -errno */
	char msg[120];		/* NUL-terminated, for the log */
};

struct ibmc_dp_mcast {
	uint8_t mgid[16];
	uint16_t mlid;
	uint16_t pad;
};

/* A send the model does not charge (IBMC_DP_SEND_UNMODELED): a
 * retransmission or another packet that real-time timers made; it is
 * carried and counted as usual but takes no modeled time on the HCA or on
 * any link, so that loss recovery never moves modeled time. */
#define IBMC_DP_SEND_UNMODELED 0x1

struct ibmc_dp_send_uc {
	uint16_t dlid;
	uint16_t pad;
	uint32_t dqpn;
	uint32_t qkey;
	uint32_t flags;		/* IBMC_DP_SEND_* */
	uint64_t t_ns;		/* modeled send time */
};

struct ibmc_dp_send_mc {
	uint8_t mgid[16];	/* carried in the GRH; receivers match on it */
	uint16_t mlid;		/* the switches forward on this */
	uint16_t flags;		/* IBMC_DP_SEND_* */
	uint32_t qkey;
	uint64_t t_ns;		/* modeled send time */
};

struct ibmc_dp_recv {
	uint16_t slid;
	uint16_t dlid;		/* unicast LID, or the MLID */
	uint32_t sqpn;
	uint32_t qkey;
	uint8_t is_mcast;
	uint8_t pad[3];
	uint8_t mgid[16];	/* when is_mcast */
	uint64_t t_ns;		/* modeled arrival at this QP */
	uint32_t o_s_ns;	/* the model's overheads, as of this packet */
	uint32_t o_r_ns;
};

struct ibmc_dp_join {
	uint8_t mgid[16];
	uint8_t join_state;	/* 1 full member, 2 non-member, 4 send-only */
	uint8_t pad[3];
	uint32_t qkey;		/* create: the group's Q_Key */
	uint16_t pkey;		/* create: partition (0: default 0xffff) */
	uint16_t pad2;
};

struct ibmc_dp_join_ok {
	uint16_t mlid;
	uint16_t pkey;
	uint32_t qkey;
	uint32_t mtu;		/* bytes */
	uint8_t mgid[16];	/* as the SA returned it */
};

#endif /* IBMCAST_DATAPLANE_WIRE_H */
