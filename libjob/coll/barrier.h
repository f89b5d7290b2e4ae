/* SPDX-License-Identifier: BSD-3-Clause */
/* barrier.h - the barrier's algorithms (coll/barrier_*.c), for
 * coll/barrier.c. */
#ifndef IBMCAST_LIBJOB_COLL_BARRIER_H
#define IBMCAST_LIBJOB_COLL_BARRIER_H

#include "libjob/task.h"

enum {
	IBMC__BA_NWAY = 1,
	IBMC__BA_MCAST = 2,
};

#define IBMC__NWAY_MAX 8	/* largest n of the n-way dissemination */

/* Task operations; args.param is n for nway. */
extern const struct ibmc__task_ops ibmc__barrier_nway_ops;
extern const struct ibmc__task_ops ibmc__barrier_mcast_ops;

/* Rounds of the n-way dissemination on p ranks: ceil(log_{n+1} p). */
int ibmc__nway_rounds(int p, int n);

#endif
