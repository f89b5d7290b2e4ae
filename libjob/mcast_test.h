/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcast_test.h - multicast testing as seed 000 and MVAPICH2 do it: the
 * communicator's rank 0 creates the group, invites every member to join
 * (its node's lowest rank through the SA) and attach, then multicasts a
 * small test message every IBMCAST_MCAST_TEST_PERIOD_MS until every member
 * acknowledged it by unicast, at most IBMCAST_MCAST_TEST_TRIES times, and
 * tells every member the outcome. A background task of the communicator
 * (task.h), progressed by whatever progresses the context.
 */
#ifndef IBMCAST_LIBJOB_MCAST_TEST_H
#define IBMCAST_LIBJOB_MCAST_TEST_H

#include "libjob/comm.h"
#include "libjob/task.h"

/* Start testing c's group (ctx->lock held); req (may be NULL) is told the
 * outcome: 0 usable, else -errno with c->mcast_why set. On completion
 * c's multicast state is set (mcast_test.c). 0, or -errno when the task
 * could not start. */
int ibmc__mtest_start(struct ibmc_comm *c, struct ibmc_request *req);

#endif
