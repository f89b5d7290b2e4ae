/* SPDX-License-Identifier: BSD-3-Clause */
/* A minimal TAP producer for unit tests run by automake's tap-driver:
 * plan, ok, and typed comparisons that print what differed. */
#ifndef IBMCAST_TESTS_TAP_H
#define IBMCAST_TESTS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap__n;
static int tap__failed;

static inline void tap_plan(int n) { printf("1..%d\n", n); fflush(stdout); }

static inline void tap_skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	exit(0);
}

static inline void tap_diag(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static inline int tap_ok(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap__n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap__failed++;
	return cond;
}

#define tap_is_int(got, want, ...)                                           \
	do {                                                                 \
		long long g_ = (long long)(got), w_ = (long long)(want);     \
		if (!tap_ok(g_ == w_, __VA_ARGS__))                          \
			tap_diag("  got %lld, want %lld (%s:%d)", g_, w_,    \
				 __FILE__, __LINE__);                        \
	} while (0)

#define tap_is_str(got, want, ...)                                           \
	do {                                                                 \
		const char *g_ = (got), *w_ = (want);                        \
		int eq_ = (g_ && w_) ? !strcmp(g_, w_) : g_ == w_;           \
		if (!tap_ok(eq_, __VA_ARGS__))                               \
			tap_diag("  got \"%s\", want \"%s\" (%s:%d)",        \
				 g_ ? g_ : "(null)", w_ ? w_ : "(null)",     \
				 __FILE__, __LINE__);                        \
	} while (0)

/* Exit status for the test: tap-driver reads the TAP lines, but a crash
 * or a plan mismatch still shows as a failure. */
static inline int tap_done(void)
{
	if (!tap__n)
		printf("1..0\n");
	return tap__failed ? 1 : 0;
}

#endif
