/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibmcast/sim.h - extensions of libibmcast for the simulated fabric only:
 * the rank's modeled clock (ibmc_sim_clock_ns(3)).
 */
#ifndef IBMCAST_SIM_H
#define IBMCAST_SIM_H

#include <stdint.h>

#include <ibmcast/ibmcast.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The context's modeled time in ns. 0, or -ENOTSUP off the sim
 * transport. */
int ibmc_sim_clock_ns(ibmc_context_t *ctx, uint64_t *ns);
/* Declare ns of work outside the library: the modeled clock moves on. */
int ibmc_sim_compute(ibmc_context_t *ctx, uint64_t ns);
/* The modeled clock when the context's last blocking collective call (or
 * ibmc_wait) returned: what the progress thread takes in afterwards is
 * not in it. 0, or -ENOTSUP off the sim transport. */
int ibmc_sim_return_ns(ibmc_context_t *ctx, uint64_t *ns);
/* Wait (at most timeout_ms of real time) until this rank owes nothing
 * to any collective it returned from, so that the next one starts from
 * idle queues: 0, -ETIMEDOUT, or -ENOTSUP off the sim transport. */
int ibmc_sim_settle(ibmc_context_t *ctx, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* IBMCAST_SIM_H */
