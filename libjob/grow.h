/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grow.h - one more group for a communicator of mode sm created while
 * the job's pool had none free: its rank 0 asks the control server
 * (IBMCAST_SERVER) to grow the job by a group and waits, in a thread of
 * its own and bounded by IBMCAST_RESHAPE_WAIT_MS, until the SM confirms the
 * group ready; meanwhile the communicator runs point-to-point, and then
 * switches to the group at the same collective on every member
 * (mcast_switch.h). Creation never waits for any of it.
 */
#ifndef IBMCAST_LIBJOB_GROW_H
#define IBMCAST_LIBJOB_GROW_H

struct ibmc_comm;

/* Whether the context can grow at all (a server, a job, a bound). */
int ibmc__grow_possible(const struct ibmc_comm *c);

/* Rank 0 (ctx->lock held): start asking. 0 or -errno (then c stays
 * point-to-point, c->why_buf saying why). */
int ibmc__grow_start(struct ibmc_comm *c);

/* Rank 0, from progress (ctx->lock held): once the answer is in, attach
 * to the ready group and offer it to the members, or record why not. */
void ibmc__grow_poll(struct ibmc_comm *c);

/* Stop asking, without waiting: the context reaps the request
 * (prune.h's ibmc__widen_queue). */
void ibmc__grow_free(struct ibmc_comm *c);

#endif
