/* SPDX-License-Identifier: BSD-3-Clause */
/* Deterministic multicast GIDs and per-job Q_Keys: pure functions of the
 * job, group index and P_Key, so a restarted SM rebuilds the same groups. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/mgid.h"

void ibmc__mgid_derive(uint32_t job, uint16_t index, uint16_t pkey,
		       uint8_t mgid[16])
{
	memset(mgid, 0, 16);
	mgid[0] = 0xff;
	mgid[1] = 0x12; /* transient flag, link-local scope */
	mgid[2] = IBMC_MGID_SIGNATURE >> 8;
	mgid[3] = IBMC_MGID_SIGNATURE & 0xff;
	mgid[4] = pkey >> 8;
	mgid[5] = pkey & 0xff;
	mgid[8] = job >> 24;
	mgid[9] = (job >> 16) & 0xff;
	mgid[10] = (job >> 8) & 0xff;
	mgid[11] = job & 0xff;
	mgid[14] = index >> 8;
	mgid[15] = index & 0xff;
}

static void put32be(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void ibmc__mgid_derive_own(uint32_t job, uint16_t nonce, uint32_t serial,
			   uint16_t pkey, uint8_t mgid[16])
{
	mgid[0] = 0xff;
	mgid[1] = 0x12;
	mgid[2] = IBMC_MGID_OWN_SIGNATURE >> 8;
	mgid[3] = IBMC_MGID_OWN_SIGNATURE & 0xff;
	mgid[4] = pkey >> 8;
	mgid[5] = pkey & 0xff;
	put32be(mgid + 6, job);
	mgid[10] = nonce >> 8;
	mgid[11] = nonce & 0xff;
	put32be(mgid + 12, serial);
}

int ibmc__mgid_decode(const uint8_t mgid[16], uint32_t *job,
		      uint16_t *index)
{
	if (mgid[0] != 0xff || mgid[1] != 0x12 ||
	    mgid[2] != (IBMC_MGID_SIGNATURE >> 8) ||
	    mgid[3] != (IBMC_MGID_SIGNATURE & 0xff) ||
	    mgid[6] || mgid[7] || mgid[12] || mgid[13])
		return -EINVAL;
	if (job)
		*job = (uint32_t)mgid[8] << 24 | (uint32_t)mgid[9] << 16 |
		       (uint32_t)mgid[10] << 8 | mgid[11];
	if (index)
		*index = (uint16_t)(mgid[14] << 8 | mgid[15]);
	return 0;
}

void ibmc__mgid_format(const uint8_t mgid[16], char buf[IBMC_MGID_STRLEN])
{
	size_t off = 0;
	int i;

	for (i = 0; i < 16; i += 2)
		off += (size_t)snprintf(buf + off, IBMC_MGID_STRLEN - off,
					"%s%02x%02x", i ? ":" : "",
					mgid[i], mgid[i + 1]);
}

int ibmc__mgid_parse(const char *s, uint8_t mgid[16])
{
	struct in6_addr a;

	if (!s || inet_pton(AF_INET6, s, &a) != 1)
		return -EINVAL;
	memcpy(mgid, a.s6_addr, 16);
	return 0;
}

uint32_t ibmc__qkey_for_job(uint32_t job)
{
	/* 0x1bca has bit 15 clear, so bit 31 (controlled Q_Key) never is. */
	return (uint32_t)IBMC_MGID_SIGNATURE << 16 | (job & 0xffff);
}
