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

#ifdef __cplusplus
}
#endif

#endif /* IBMCAST_SIM_H */
