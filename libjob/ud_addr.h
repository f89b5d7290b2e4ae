/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ud_addr.h - the endpoint address of a UD queue pair, as the sim and verbs
 * transports put it in struct ibmc_tr_addr for the bootstrap exchange:
 * LID (2 bytes), QPN (4), port GID (16), little endian, rest zero. One
 * layout for both, so a mixed trace reads the same.
 */
#ifndef IBMCAST_LIBJOB_UD_ADDR_H
#define IBMCAST_LIBJOB_UD_ADDR_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "libjob/transport.h"

struct ibmc_ud_addr {
	uint16_t lid;
	uint32_t qpn;
	uint8_t gid[16];
};

static inline void ibmc__ud_addr_pack(const struct ibmc_ud_addr *ud,
				      struct ibmc_tr_addr *addr)
{
	memset(addr, 0, sizeof(*addr));
	addr->bytes[0] = (uint8_t)ud->lid;
	addr->bytes[1] = (uint8_t)(ud->lid >> 8);
	addr->bytes[2] = (uint8_t)ud->qpn;
	addr->bytes[3] = (uint8_t)(ud->qpn >> 8);
	addr->bytes[4] = (uint8_t)(ud->qpn >> 16);
	addr->bytes[5] = (uint8_t)(ud->qpn >> 24);
	memcpy(addr->bytes + 6, ud->gid, 16);
}

/* 0, or -EINVAL for what no UD peer can be: LID 0, a multicast LID, or a
 * QPN outside 1..2^24-1. */
static inline int ibmc__ud_addr_unpack(const struct ibmc_tr_addr *addr,
				       struct ibmc_ud_addr *ud)
{
	ud->lid = (uint16_t)(addr->bytes[0] | addr->bytes[1] << 8);
	ud->qpn = (uint32_t)addr->bytes[2] | (uint32_t)addr->bytes[3] << 8 |
		  (uint32_t)addr->bytes[4] << 16 |
		  (uint32_t)addr->bytes[5] << 24;
	memcpy(ud->gid, addr->bytes + 6, 16);
	if (!ud->lid || ud->lid >= 0xc000 || !ud->qpn || ud->qpn > 0xffffff)
		return -EINVAL;
	return 0;
}

#endif /* IBMCAST_LIBJOB_UD_ADDR_H */
