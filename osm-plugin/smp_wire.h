/* SPDX-License-Identifier: BSD-3-Clause */
/* Messages between the OSM plugin and its SMP reader (ibmcast-smpd), a
 * separate process with its own umad agent. It is a process, not a thread,
 * because an SMI agent registered inside OpenSM's process would share
 * OpenSM's management-class routing under ibsim's umad2sim (one receiver
 * per class per process) and steal the SM's own responses. */
#ifndef IBMCAST_OSM_SMP_WIRE_H
#define IBMCAST_OSM_SMP_WIRE_H

#include <stdint.h>

/* Carried over a SOCK_SEQPACKET socketpair: one request message, one reply
 * message, in host byte order (both ends are on the same host). */
#define IBMC_SMP_MAGIC 0x1bca5350U
#define IBMC_SMP_MAX_QUERIES 512

/* Read one MulticastForwardingTable block: attribute modifier
 * (position << 28) | block, 32 MLIDs x 16 ports per block. */
struct ibmc_smp_query {
	uint16_t lid;      /* switch LID (LID-routed SMP) */
	uint16_t block;    /* (mlid - 0xC000) / 32 */
	uint8_t position;  /* port group: ports 16*position .. +15 */
	uint8_t pad[3];
};

struct ibmc_smp_result {
	uint16_t lid;
	uint16_t block;
	uint8_t position;
	int8_t status;     /* 0 ok; -1 no answer after retries; -2 bad MAD status */
	uint16_t pad;
	uint16_t masks[32]; /* host order; masks[i] is MLID 0xC000+32*block+i */
};

struct ibmc_smp_hdr {
	uint32_t magic;
	uint32_t seq;      /* echoed in the reply */
	uint32_t count;    /* queries or results that follow */
	uint32_t timeout_ms; /* request: per-SMP timeout; reply: 0 */
};

/* The largest messages, as both ends lay them out; a message carries only
 * hdr.count entries. */
struct ibmc_smp_request_msg {
	struct ibmc_smp_hdr hdr;
	struct ibmc_smp_query q[IBMC_SMP_MAX_QUERIES];
};

struct ibmc_smp_reply_msg {
	struct ibmc_smp_hdr hdr;
	struct ibmc_smp_result r[IBMC_SMP_MAX_QUERIES];
};

#endif
