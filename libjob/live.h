/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * live.h - is the member a collective waits for alive? Liveness instead of
 * deadlines (ibmcast(7), "Late and dead members").
 *
 * A collective waits for a live member as long as MPI would. What a wait
 * needs to know is whether the member it waits for is still there: every
 * datagram from a rank says it is; a rank this context has not heard from
 * for a while, and that a collective in flight waits for, is asked
 * (IBMC__LIVE_ASK), and whichever thread progresses its context (the
 * progress thread, while its caller computes outside the library)
 * answers, with how far it is on that communicator. A member that answers
 * is waited for, quietly: about one probe a second. One that answers
 * nothing for IBMCAST_DEAD_MS is dead: the collective fails with -ESRCH,
 * naming it, and every member of the communicator is told, so that each
 * survivor fails its collective too instead of waiting for a rank that
 * itself waits; any later collective on a communicator holding the dead
 * rank fails at once. A stopped process (SIGSTOP, a debugger) answers
 * nothing either: it is dead once the bound says so. A death needs a
 * witness: a rank that heard nobody for half the bound asks another rank
 * before it takes anyone for dead, so that a stalled fabric, in which
 * every rank sees every other silent at once, is waited out.
 */
#ifndef IBMCAST_LIBJOB_LIVE_H
#define IBMCAST_LIBJOB_LIVE_H

#include <stdint.h>

#include "libjob/wire.h"

struct ibmc_context;
struct ibmc_comm;
struct ibmc__task;

/* Most communicator ranks one task reports waiting for at once. */
#define IBMC__LIVE_WAITS_MAX 16

/* The context's table, one entry per context rank. 0 or -ENOMEM. */
int ibmc__live_init(struct ibmc_context *ctx);
void ibmc__live_fini(struct ibmc_context *ctx);

/* A datagram from context rank r arrived: r is alive. */
void ibmc__live_heard(struct ibmc_context *ctx, int r);

/* A liveness datagram (coll IBMC__C_LIVE): answer a probe, note an
 * answer, or learn of a death. */
void ibmc__live_input(struct ibmc_context *ctx, const struct ibmc__hdr *h);

/*
 * Task t (in flight) looks at the members it waits for (its ops'
 * waits_for), at most every few hundred ms once it has waited for a
 * while: probes those that fell silent, and fails the task (t->error,
 * -ESRCH) when one is dead. Returns when it wants to look next (us).
 */
int64_t ibmc__live_check(struct ibmc__task *t, int64_t now);

/* Communicator rank of a member of c known dead (this rank itself when
 * others took it for dead), or -1. Cheap: recomputed only after a
 * death became known. */
int ibmc__live_dead_member(struct ibmc_comm *c);

/*
 * 1 when member r of c answered lately that it is alive but has not
 * entered collective seq yet: resending to it or pulling
 * from it only fills its queue of early datagrams; what it needs reaches
 * it when it enters (its kept datagrams, or the peers' timers once a
 * later answer says it entered). 0 else.
 */
int ibmc__live_absent(const struct ibmc_comm *c, int r, uint32_t seq);

#endif
