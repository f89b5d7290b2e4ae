/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock, read one way everywhere. */
#include "config.h"

#include <time.h>

#include "common/clock.h"

uint64_t ibmc__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int64_t ibmc__now_ms(void)
{
	return (int64_t)(ibmc__now_ns() / 1000000ULL);
}

struct timespec ibmc__deadline_ts(clockid_t clock, int ms)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	if (ms <= 0)
		return ts;
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}
