/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sa_mcmr.h - the SA MCMemberRecord MAD (IBA 15.2.5.17) that creates, joins
 * and leaves a multicast group: encoding of SubnAdmSet/SubnAdmDelete and
 * decoding of their answers, apart from any I/O so that they are unit-tested
 * byte for byte (tests/libjob/test_sa_mcmr.c). Used by the verbs transport's
 * SA join (sa_join_umad.c); the simulated fabric's data plane does the same
 * through its own SA proxy.
 */
#ifndef IBMCAST_LIBJOB_SA_MCMR_H
#define IBMCAST_LIBJOB_SA_MCMR_H

#include <stddef.h>
#include <stdint.h>

#include "common/groups.h"

#define IBMC__MAD_LEN 256		/* every SA MAD */
#define IBMC__SA_CLASS 0x03
#define IBMC__SA_CLASS_VERSION 2
#define IBMC__SA_METHOD_SET 0x02
#define IBMC__SA_METHOD_GET_RESP 0x81
#define IBMC__SA_METHOD_DELETE 0x15
#define IBMC__SA_METHOD_DELETE_RESP 0x95
#define IBMC__SA_ATTR_MCMR 0x0038
#define IBMC__SA_DATA_OFFS 56		/* the record after the SA header */

/* Component mask bits of an MCMemberRecord. */
#define IBMC__MCMR_MGID (1ull << 0)
#define IBMC__MCMR_PORT_GID (1ull << 1)
#define IBMC__MCMR_QKEY (1ull << 2)
#define IBMC__MCMR_MTU_SEL (1ull << 4)
#define IBMC__MCMR_MTU (1ull << 5)
#define IBMC__MCMR_TCLASS (1ull << 6)
#define IBMC__MCMR_PKEY (1ull << 7)
#define IBMC__MCMR_SL (1ull << 12)
#define IBMC__MCMR_FLOW (1ull << 13)
#define IBMC__MCMR_JOIN_STATE (1ull << 16)

/* What to ask the SA. */
struct ibmc__mcmr_req {
	int leave;		/* SubnAdmDelete instead of SubnAdmSet */
	int create;		/* Set with the components that create it */
	uint8_t mgid[16];
	uint8_t port_gid[16];	/* the joining port */
	uint32_t qkey;		/* create: the group's Q_Key */
	uint16_t pkey;		/* create: 0 means the default 0xffff */
	uint32_t mtu;		/* create: bytes; 0 leaves it to the SA */
	uint8_t join_state;	/* 1 full member (0 means 1) */
	uint64_t tid;		/* transaction id */
};

/* The MAD for r into mad[IBMC__MAD_LEN]. 0, or -EINVAL for an MGID that
 * is not multicast or an MTU that is not an IB MTU. */
int ibmc__mcmr_encode(const struct ibmc__mcmr_req *r,
		      uint8_t mad[IBMC__MAD_LEN]);

/*
 * The SA's answer to r: 0 and (for a join) *g filled from the returned
 * record; -EAGAIN when mad is not that answer (another transaction, class
 * or method: keep waiting); -EBADMSG for a truncated answer; -EREMOTEIO
 * with *status (may be NULL) the MAD status when the SA refused.
 */
int ibmc__mcmr_decode(const struct ibmc__mcmr_req *r, const uint8_t *mad,
		      size_t len, struct ibmc_tr_group *g, uint16_t *status);

#endif
