/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model.h - modeled time on a transport that keeps a modeled clock (the
 * sim transport; ibmc_sim_clock_ns(3)): which packets and sends a rank's
 * clock is charged for, so that it follows the messages a collective
 * needs and not what real time delivered.
 *
 * A receive costs o_r, and moves the clock to its modeled arrival, only
 * when a collective consumes the first copy of a message it needs
 * (ibmc__model_take); duplicates, late copies, repeated acks and answers
 * to loss recovery cost nothing. After such a take the engine takes no
 * other packet before every collective has progressed once, so a rank
 * reacts to each needed message in turn however many were waiting in its
 * socket. Collectives whose ranks need messages from several peers at
 * once (ring and recursive-doubling allgather and allreduce, the n-way
 * barrier) defer their takes and charge them where the algorithm consumes
 * them, a round's messages in modeled-arrival order, so that their clock
 * does not depend on the real-time order the messages came in. Sends that loss recovery or real-time timers make (resends,
 * NACKs, pulls, probes, repeated acks and FINs) are quiet: no modeled
 * cost here nor in the data plane's queues.
 */
#ifndef IBMCAST_LIBJOB_MODEL_H
#define IBMCAST_LIBJOB_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "libjob/context.h"
#include "libjob/wire.h"

/* A packet of modeled arrival arrival_ns is being input. */
void ibmc__model_input(struct ibmc_context *ctx, uint64_t arrival_ns);
/* Input of it is over: a take from now on charges nothing. */
void ibmc__model_input_done(struct ibmc_context *ctx);
/* The collective consumed the packet being input as a message it needs;
 * charged at most once per packet. */
void ibmc__model_take(struct ibmc_context *ctx);
/* Charge a message the collective needs that arrived at arrival_ns, in
 * place of the packet being input (at most one charge per packet). */
void ibmc__model_take_at(struct ibmc_context *ctx, uint64_t arrival_ns);
/* The collective needs the packet being input but consumes it later, at
 * a point its algorithm fixes (a round complete, a receive done): marks
 * it taken (and the engine busy, as a take does) without charging it,
 * and returns its modeled arrival for ibmc__model_charge. */
uint64_t ibmc__model_defer(struct ibmc_context *ctx);
/* The collective consumes n deferred messages at once: each is charged
 * as a take, max(clock, arrival) + o_r, in modeled-arrival order (the
 * array is sorted in place), whatever order real time brought them in. */
void ibmc__model_charge(struct ibmc_context *ctx, uint64_t *arrival_ns,
			size_t n);
/* The packet being input, kept aside while an older one is input again
 * (a datagram kept for a receive not posted then, xfer.c). */
struct ibmc__model_pkt {
	uint64_t arrival_ns;
	int taken;
};
void ibmc__model_save(const struct ibmc_context *ctx,
		      struct ibmc__model_pkt *p);
void ibmc__model_restore(struct ibmc_context *ctx,
			 const struct ibmc__model_pkt *p);
/* The modeled arrival of the packet being input. */
uint64_t ibmc__model_arrival(const struct ibmc_context *ctx);
/* A taken packet awaits a progress pass: receive nothing more now. */
int ibmc__model_busy(const struct ibmc_context *ctx);
/* Every collective progressed. */
void ibmc__model_progressed(struct ibmc_context *ctx);

/* Sends between quiet_on and quiet_off are loss recovery: not charged.
 * Nests. */
void ibmc__model_quiet_on(struct ibmc_context *ctx);
void ibmc__model_quiet_off(struct ibmc_context *ctx);
/* Around one send of header h: quiet when h itself is recovery (a
 * retransmission, NACK, pull or probe) or a quiet section is open.
 * Returns what ibmc__model_send_end needs. */
int ibmc__model_send_begin(struct ibmc_context *ctx,
			   const struct ibmc__hdr *h);
void ibmc__model_send_end(struct ibmc_context *ctx, int quiet);

/* A retransmission of what first went at modeled time first_ns (0: not
 * known): quiet, and stamped with first_ns, so that it arrives in the
 * model as its original would have (loss recovery is not modeled). */
void ibmc__model_resend_on(struct ibmc_context *ctx, uint64_t first_ns);
void ibmc__model_resend_off(struct ibmc_context *ctx);
/* The modeled clock (0 on a transport without one). */
uint64_t ibmc__model_clock(const struct ibmc_context *ctx);

/* A blocking call returns: remember the modeled clock
 * (ibmc_sim_return_ns(3)). */
void ibmc__model_call_return(struct ibmc_context *ctx);

#endif
