/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rtt.h - a smoothed delay estimate and the retransmission timeout it
 * gives (TCP's estimator, RFC 6298), shared by every reliable protocol of
 * libjob: the broadcast engine's ack, FIN and NACK delays, and the round
 * messages of msg.h.
 */
#ifndef IBMCAST_LIBJOB_RTT_H
#define IBMCAST_LIBJOB_RTT_H

#include <stdint.h>

#define IBMC__RTO_MIN_US 2000		/* below: scheduling noise */
#define IBMC__RTO_MAX_US 1000000
#define IBMC__RTO_GRAIN_US 500		/* least variance allowance */

/* Microseconds; srtt 0: no sample yet. */
struct ibmc__rtt {
	int64_t srtt, rttvar;
};

/* One delay sample s (us). */
void ibmc__rtt_sample(struct ibmc__rtt *r, int64_t s);

/* SRTT + max(4 RTTVAR, SRTT), clamped, or fallback (us) before any
 * sample. */
int64_t ibmc__rtt_rto(const struct ibmc__rtt *r, int64_t fallback);

/* v clamped to [IBMC__RTO_MIN_US, IBMC__RTO_MAX_US]. */
int64_t ibmc__rto_clamp(int64_t v);

/*
 * The wait before repeating a request (a pull, a barrier report, a
 * resend) that has gone unanswered for waited us: wait (its own timer)
 * while the wait is short, stretched to an eighth of waited as it grows,
 * at most IBMC__RTO_MAX_US: a member waiting minutes for a late rank asks
 * about once a second, not fifty times, and a loss found late costs at
 * most an eighth more than the wait already was.
 */
int64_t ibmc__retry_wait(int64_t wait, int64_t waited);

#endif
