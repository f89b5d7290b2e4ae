/* SPDX-License-Identifier: BSD-3-Clause */
/* sa_join_umad.h - an MCMemberRecord join or leave sent to the SA through
 * libibumad (the verbs transport's mcast_join/mcast_leave). */
#ifndef IBMCAST_LIBJOB_SA_JOIN_UMAD_H
#define IBMCAST_LIBJOB_SA_JOIN_UMAD_H

#include "common/groups.h"
#include "libjob/sa_mcmr.h"

/* Send r from port (ca, port) to the port's SM and wait (bounded) for the
 * answer: 0 and, for a join, *g filled; -errno (-ETIMEDOUT: no answer,
 * -EREMOTEIO: the SA refused, and what umad_open_port returns). */
int ibmc__sa_join_umad(const char *ca, int port, struct ibmc__mcmr_req *r,
		       struct ibmc_tr_group *g);

#endif
