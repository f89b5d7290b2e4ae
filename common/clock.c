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
