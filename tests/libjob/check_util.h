/* SPDX-License-Identifier: BSD-3-Clause */
/* check_util.h - what the check programs run under ibmcast-run share
 * (bcast_check, barrier_check, coll_check, bcast_skew): a fatal error
 * naming the program and rank, the monotonic clock, sizes in binary
 * units. Each program defines prog and bs. */
#ifndef IBMCAST_TESTS_CHECK_UTIL_H
#define IBMCAST_TESTS_CHECK_UTIL_H

#include <stddef.h>

#include "ibmcast/ibmcast.h"

extern const char *prog;	/* the program's name */
extern ibmc_bootstrap_t bs;	/* its bootstrap (bs.rank in messages) */

/* "PROG: rank R: MESSAGE" on stderr, exit 2. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
					      noreturn));

/* CLOCK_MONOTONIC in seconds. */
double now(void);

/* "4096", "4K", "1M" (binary units, at most 2^32-1): 0, or -1. */
int parse_size(const char *s, size_t *out);

#endif
