/* SPDX-License-Identifier: BSD-3-Clause */
/* lbjob.h - a job of threads for libjob unit tests: one thread per rank,
 * each with its own context on the loopback transport, and an in-process
 * bootstrap (shared buffer + barrier) for ibmc_init. */
#ifndef IBMCAST_TESTS_LBJOB_H
#define IBMCAST_TESTS_LBJOB_H

#include <stddef.h>
#include <stdint.h>

#include "ibmcast/ibmcast.h"

/* Runs fn(ctx, rank, arg) on n threads after ibmc_init; returns the number
 * of ranks whose fn returned non-zero or whose init/finalize failed. The
 * hub is named by IBMCAST_LOOPBACK_HUB (set by lbjob_env). */
typedef int (*lbjob_fn)(ibmc_context_t *ctx, int rank, void *arg);
int lbjob_run(int n, lbjob_fn fn, void *arg);

/* A barrier among the ranks of the running job (from inside fn). */
void lbjob_barrier(void);

/* Environment for a loopback job with ngroups fake pool groups of the
 * given MTU (state ready); hub name made unique per call. */
void lbjob_env(int ngroups, int group_mtu);

/* Deterministic content for (seed, offset). */
void lbjob_fill(unsigned char *buf, size_t len, uint32_t seed);
/* Index of the first byte that differs from lbjob_fill, or -1. */
long lbjob_check(const unsigned char *buf, size_t len, uint32_t seed);

/* The current hub name (for ibmc__loopback_set_faults). */
const char *lbjob_hub(void);

double lbjob_now(void);

/* Fake nodes for the next job: rank r on node node[r] (sets
 * IBMCAST_LOOPBACK_NODES). */
void lbjob_nodes(const int *node, int n);

#endif
