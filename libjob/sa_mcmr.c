/* SPDX-License-Identifier: BSD-3-Clause */
/* SA MCMemberRecord MADs (see sa_mcmr.h): fixed big-endian offsets of the
 * common MAD header, the SA header and the record (IBA 13.4.2, 15.2.1.1,
 * 15.2.5.17). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "libjob/sa_mcmr.h"

/* Common MAD header. */
#define O_BASE_VERSION 0
#define O_CLASS 1
#define O_CLASS_VERSION 2
#define O_METHOD 3
#define O_STATUS 4
#define O_TID 8
#define O_ATTR_ID 16
/* SA header, after the RMPP header (24..35) and SM_Key (36..43). */
#define O_COMP_MASK 48
/* MCMemberRecord, from IBMC__SA_DATA_OFFS. */
#define R_MGID 0
#define R_PORT_GID 16
#define R_QKEY 32
#define R_MLID 36
#define R_MTU 38		/* selector (2 bits) + MTU (6 bits) */
#define R_PKEY 40
#define R_JOIN 48		/* scope (4 bits) + join state (4 bits) */
#define R_PROXY 49		/* proxy join: top bit */

#define MTU_SEL_EXACTLY 2

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* IB MTU enum (1 = 256 .. 5 = 4096) of bytes, 0 if none. */
static int mtu_enum(uint32_t bytes)
{
	int e;

	for (e = 1; e <= 5; e++)
		if (bytes == 128u << e)
			return e;
	return 0;
}

int ibmc__mcmr_encode(const struct ibmc__mcmr_req *r,
		      uint8_t mad[IBMC__MAD_LEN])
{
	uint8_t *rec = mad + IBMC__SA_DATA_OFFS;
	uint64_t mask = IBMC__MCMR_MGID | IBMC__MCMR_PORT_GID |
			IBMC__MCMR_JOIN_STATE;
	int mtu = 0;

	if (r->mgid[0] != 0xff)
		return -EINVAL;
	if (r->create && r->mtu && !(mtu = mtu_enum(r->mtu)))
		return -EINVAL;
	memset(mad, 0, IBMC__MAD_LEN);
	mad[O_BASE_VERSION] = 1;
	mad[O_CLASS] = IBMC__SA_CLASS;
	mad[O_CLASS_VERSION] = IBMC__SA_CLASS_VERSION;
	mad[O_METHOD] = r->leave ? IBMC__SA_METHOD_DELETE :
				   IBMC__SA_METHOD_SET;
	put64(mad + O_TID, r->tid);
	put16(mad + O_ATTR_ID, IBMC__SA_ATTR_MCMR);
	memcpy(rec + R_MGID, r->mgid, 16);
	memcpy(rec + R_PORT_GID, r->port_gid, 16);
	rec[R_JOIN] = (uint8_t)((r->join_state ? r->join_state : 1) & 0xf);
	if (!r->leave && r->create) {
		/* What OpenSM requires to create a group that does not
		 * exist yet (Q_Key, P_Key, TClass, SL, FlowLabel), and the
		 * MTU when the caller names one. */
		mask |= IBMC__MCMR_QKEY | IBMC__MCMR_PKEY | IBMC__MCMR_TCLASS |
			IBMC__MCMR_SL | IBMC__MCMR_FLOW;
		put32(rec + R_QKEY, r->qkey);
		put16(rec + R_PKEY, r->pkey ? r->pkey : 0xffff);
		if (mtu) {
			mask |= IBMC__MCMR_MTU_SEL | IBMC__MCMR_MTU;
			rec[R_MTU] = (uint8_t)(MTU_SEL_EXACTLY << 6 | mtu);
		}
	}
	put64(mad + O_COMP_MASK, mask);
	return 0;
}

int ibmc__mcmr_decode(const struct ibmc__mcmr_req *r, const uint8_t *mad,
		      size_t len, struct ibmc_tr_group *g, uint16_t *status)
{
	const uint8_t *rec = mad + IBMC__SA_DATA_OFFS;
	uint8_t want = r->leave ? IBMC__SA_METHOD_DELETE_RESP :
				  IBMC__SA_METHOD_GET_RESP;
	uint16_t st;
	int mtu;

	if (len < 24)
		return -EBADMSG;
	if (mad[O_CLASS] != IBMC__SA_CLASS || mad[O_METHOD] != want ||
	    get64(mad + O_TID) != r->tid ||
	    get16(mad + O_ATTR_ID) != IBMC__SA_ATTR_MCMR)
		return -EAGAIN;
	st = get16(mad + O_STATUS);
	if (status)
		*status = st;
	if (st)
		return -EREMOTEIO;
	if (r->leave)
		return 0;
	if (len < IBMC__SA_DATA_OFFS + R_PROXY + 1)
		return -EBADMSG;
	if (memcmp(rec + R_MGID, r->mgid, 16))
		return -EBADMSG;	/* an answer about another group */
	memset(g, 0, sizeof(*g));
	memcpy(g->mgid, rec + R_MGID, 16);
	g->qkey = get32(rec + R_QKEY);
	g->mlid = get16(rec + R_MLID);
	g->pkey = get16(rec + R_PKEY);
	mtu = rec[R_MTU] & 0x3f;
	g->mtu = mtu >= 1 && mtu <= 5 ? 128u << mtu : 0;
	return 0;
}
