/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcast_switch.h - a communicator that started point-to-point (its group
 * grown by the SM, or tested lazily) switches to multicast at the same
 * collective on every member, without ever blocking its creation: rank 0
 * offers the group, each member attaches and answers with its next
 * sequence number, rank 0 names the first sequence number at or after
 * every answer plus a fence, and every member multicasts from its first
 * call at that number. A member that reaches its fence before rank 0's
 * answer waits for it there (bounded), so no member has made a call that
 * rank 0's choice would contradict.
 */
#ifndef IBMCAST_LIBJOB_MCAST_SWITCH_H
#define IBMCAST_LIBJOB_MCAST_SWITCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/groups.h"
#include "libjob/wire.h"

struct ibmc_comm;

/* Every member, at creation (ctx->lock held): c will be offered a group
 * later. 0 or -ENOMEM. */
int ibmc__switch_expect(struct ibmc_comm *c);

/* Rank 0, once its group is usable and rank 0 attached to it (c->ghandle):
 * g (NULL: the members know the group already, as in mode lazy) goes to
 * every member. */
void ibmc__switch_offer(struct ibmc_comm *c, const struct ibmc_tr_group *g);

/* Rank 0, when it has no group to offer after all (err > 0): members
 * are told, once, why they stay point-to-point. */
void ibmc__switch_abandon(struct ibmc_comm *c, int err);

/* A datagram of the switch (coll IBMC__C_SWITCH). */
void ibmc__switch_input(struct ibmc_comm *c, const struct ibmc__hdr *h,
		       const unsigned char *payload, size_t plen);

/* Resends and gives up; the next timer (INT64_MAX: none). */
int64_t ibmc__switch_progress(struct ibmc_comm *c, int64_t now);

/* At the entry of every collective call (ctx->lock held): waits at the
 * fence for rank 0's answer, and switches c to multicast from the agreed
 * sequence number on. 0, or -ETIMEDOUT when rank 0 never answered. */
int ibmc__switch_gate(struct ibmc_comm *c);

void ibmc__switch_free(struct ibmc_comm *c);

#endif
