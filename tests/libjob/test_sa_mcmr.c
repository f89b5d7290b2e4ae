/* SPDX-License-Identifier: BSD-3-Clause */
/* The SA MCMemberRecord MADs of sa_mcmr.c, read back field by field with
 * libibmad's independent field tables (mad_get_field), and answers built
 * with them decoded: create, join, leave, refusals, foreign answers. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <infiniband/mad.h>

#include "libjob/sa_mcmr.h"
#include "tests/tap.h"

static const uint8_t mgid[16] = { 0xff, 0x12, 0x1b, 0xcb, 0xff, 0xff, 0, 0,
				  0x01, 0x91, 0x12, 0x34, 0xde, 0xad, 0xbe,
				  0xef };
static const uint8_t port_gid[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00,
				      0x02, 0xc9, 0x03, 0, 0x10, 0x20, 0x31 };

/* The SA's answer to r as OpenSM would send it. */
static void answer(const struct ibmc__mcmr_req *r, uint8_t *mad, int method,
		   uint16_t status, uint16_t mlid)
{
	uint8_t *rec = mad + IB_SA_DATA_OFFS;

	memset(mad, 0, IBMC__MAD_LEN);
	mad_set_field(mad, 0, IB_MAD_CLASSVER_F, 2);
	mad_set_field(mad, 0, IB_MAD_MGMTCLASS_F, IB_SA_CLASS);
	/* libibmad: the method's low 7 bits, and the response bit. */
	mad_set_field(mad, 0, IB_MAD_METHOD_F, (uint32_t)method & 0x7f);
	mad_set_field(mad, 0, IB_MAD_RESPONSE_F, (uint32_t)method >> 7);
	mad_set_field(mad, 0, IB_MAD_STATUS_F, status);
	mad_set_field64(mad, 0, IB_MAD_TRID_F, r->tid);
	mad_set_field(mad, 0, IB_MAD_ATTRID_F, IB_SA_ATTR_MCRECORD);
	mad_set_array(rec, 0, IB_SA_MCM_MGID_F, (void *)r->mgid);
	mad_set_array(rec, 0, IB_SA_MCM_PORTGID_F, (void *)r->port_gid);
	mad_set_field(rec, 0, IB_SA_MCM_QKEY_F, 0x1bca0191);
	mad_set_field(rec, 0, IB_SA_MCM_MLID_F, mlid);
	mad_set_field(rec, 0, IB_SA_MCM_MTU_F, 4);	/* 2048 */
	mad_set_field(rec, 0, IB_SA_MCM_PKEY_F, 0xffff);
	mad_set_field(rec, 0, IB_SA_MCM_JOIN_STATE_F, 1);
}

int main(void)
{
	struct ibmc__mcmr_req r = { .create = 1, .qkey = 0x1bca0191,
				    .mtu = 2048, .join_state = 1,
				    .tid = 0x0123456789abcdefULL };
	uint8_t mad[IBMC__MAD_LEN], got[16], ans[IBMC__MAD_LEN];
	uint8_t *rec = mad + IB_SA_DATA_OFFS;
	struct ibmc_tr_group g;
	uint64_t mask;
	uint16_t st;

	tap_plan(33);
	memcpy(r.mgid, mgid, 16);
	memcpy(r.port_gid, port_gid, 16);

	/* Create: SubnAdmSet with the components that create. */
	tap_is_int(ibmc__mcmr_encode(&r, mad), 0, "create encodes");
	tap_is_int(mad_get_field(mad, 0, IB_MAD_METHOD_F) |
		   mad_get_field(mad, 0, IB_MAD_RESPONSE_F) << 7,
		   IB_MAD_METHOD_SET, "create is a SubnAdmSet");
	tap_is_int(mad_get_field(mad, 0, IB_MAD_MGMTCLASS_F), IB_SA_CLASS,
		   "SA class");
	tap_is_int(mad_get_field(mad, 0, IB_MAD_CLASSVER_F), 2,
		   "SA class version 2");
	tap_is_int(mad_get_field(mad, 0, IB_MAD_BASEVER_F), 1, "base version");
	tap_is_int(mad_get_field(mad, 0, IB_MAD_ATTRID_F), IB_SA_ATTR_MCRECORD,
		   "attribute MCMemberRecord");
	tap_ok(mad_get_field64(mad, 0, IB_MAD_TRID_F) == r.tid,
	       "transaction id");
	mask = mad_get_field64(mad, 0, IB_SA_COMPMASK_F);
	tap_ok(mask == (IBMC__MCMR_MGID | IBMC__MCMR_PORT_GID |
			IBMC__MCMR_QKEY | IBMC__MCMR_MTU_SEL | IBMC__MCMR_MTU |
			IBMC__MCMR_TCLASS | IBMC__MCMR_PKEY | IBMC__MCMR_SL |
			IBMC__MCMR_FLOW | IBMC__MCMR_JOIN_STATE),
	       "create's component mask (0x%llx)", (unsigned long long)mask);
	mad_get_array(rec, 0, IB_SA_MCM_MGID_F, got);
	tap_ok(!memcmp(got, mgid, 16), "MGID in the record");
	mad_get_array(rec, 0, IB_SA_MCM_PORTGID_F, got);
	tap_ok(!memcmp(got, port_gid, 16), "port GID in the record");
	tap_is_int(mad_get_field(rec, 0, IB_SA_MCM_QKEY_F), 0x1bca0191,
		   "Q_Key");
	tap_is_int(mad_get_field(rec, 0, IB_SA_MCM_PKEY_F), 0xffff,
		   "default P_Key");
	tap_is_int(mad_get_field(rec, 0, IB_SA_MCM_MTU_F), 4, "MTU 2048 = 4");
	tap_is_int(mad_get_field(rec, 0, IB_SA_MCM_JOIN_STATE_F), 1,
		   "full member");
	tap_is_int(mad_get_field(rec, 0, IB_SA_MCM_MLID_F), 0,
		   "no MLID asked for");

	/* Plain join: only MGID, port and join state. */
	r.create = 0;
	tap_is_int(ibmc__mcmr_encode(&r, mad), 0, "join encodes");
	tap_ok(mad_get_field64(mad, 0, IB_SA_COMPMASK_F) ==
	       (IBMC__MCMR_MGID | IBMC__MCMR_PORT_GID | IBMC__MCMR_JOIN_STATE),
	       "join's component mask");
	tap_is_int(mad_get_field(rec, 0, IB_SA_MCM_QKEY_F), 0,
		   "join carries no Q_Key");

	/* Leave: SubnAdmDelete. */
	r.leave = 1;
	tap_is_int(ibmc__mcmr_encode(&r, mad), 0, "leave encodes");
	tap_is_int(mad_get_field(mad, 0, IB_MAD_METHOD_F),
		   IB_MAD_METHOD_DELETE, "leave is a SubnAdmDelete");
	r.leave = 0;

	/* Bad requests. */
	r.mgid[0] = 0xfe;
	tap_is_int(ibmc__mcmr_encode(&r, mad), -EINVAL, "unicast GID refused");
	r.mgid[0] = 0xff;
	r.create = 1;
	r.mtu = 3000;
	tap_is_int(ibmc__mcmr_encode(&r, mad), -EINVAL, "MTU 3000 refused");
	r.mtu = 0;

	/* Answers. */
	answer(&r, ans, IB_MAD_METHOD_GET_RESPONSE, 0, 0xc00a);
	tap_is_int(ibmc__mcmr_decode(&r, ans, sizeof(ans), &g, &st), 0,
		   "join answer decodes");
	tap_is_int(g.mlid, 0xc00a, "MLID from the SA");
	tap_is_int(g.mtu, 2048, "MTU from the SA");
	tap_is_int(g.qkey, 0x1bca0191, "Q_Key from the SA");
	tap_ok(!memcmp(g.mgid, mgid, 16), "MGID from the SA");
	answer(&r, ans, IB_MAD_METHOD_GET_RESPONSE, 0x0200, 0);
	tap_is_int(ibmc__mcmr_decode(&r, ans, sizeof(ans), &g, &st),
		   -EREMOTEIO, "a refusal is -EREMOTEIO");
	tap_is_int(st, 0x0200, "... with the MAD status");
	answer(&r, ans, IB_MAD_METHOD_GET_RESPONSE, 0, 0xc00a);
	mad_set_field64(ans, 0, IB_MAD_TRID_F, r.tid + 1);
	tap_is_int(ibmc__mcmr_decode(&r, ans, sizeof(ans), &g, &st), -EAGAIN,
		   "another transaction's answer is not ours");
	answer(&r, ans, IB_MAD_METHOD_GET_RESPONSE, 0, 0xc00a);
	tap_is_int(ibmc__mcmr_decode(&r, ans, 40, &g, &st), -EBADMSG,
		   "a truncated answer is refused");
	r.leave = 1;
	answer(&r, ans, IB_MAD_METHOD_DELETE_RESPONSE, 0, 0xc00a);
	tap_is_int(ibmc__mcmr_decode(&r, ans, sizeof(ans), NULL, &st), 0,
		   "leave answer decodes");
	answer(&r, ans, IB_MAD_METHOD_GET_RESPONSE, 0, 0xc00a);
	tap_is_int(ibmc__mcmr_decode(&r, ans, sizeof(ans), NULL, &st), -EAGAIN,
		   "a join answer does not answer a leave");
	return tap_done();
}
