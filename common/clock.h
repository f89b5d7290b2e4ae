/* SPDX-License-Identifier: BSD-3-Clause */
/* One monotonic clock for every deadline and timestamp, so times taken in
 * different places (and reported as *_mono_ns) compare directly. */
#ifndef IBMCAST_COMMON_CLOCK_H
#define IBMCAST_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds and in milliseconds. */
uint64_t ibmc__now_ns(void);
int64_t ibmc__now_ms(void);

/* The absolute time ms milliseconds from now on clock (for
 * pthread_cond_timedwait: CLOCK_MONOTONIC where the condition variable was
 * set up so, else CLOCK_REALTIME). */
struct timespec ibmc__deadline_ts(clockid_t clock, int ms);

#endif
