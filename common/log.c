/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging shared by the tools and the plugins: a level threshold taken from
 * IBMCAST_LOG_LEVEL and a sink the host (OpenSM, Slurm) may replace. */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"

/* -1 until first use so the environment is read lazily, after the host
 * had a chance to set it. */
static int level = -1;
static ibmc_log_sink_fn sink;
static void *sink_arg;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

static int level_from_env(void)
{
	const char *s = getenv("IBMCAST_LOG_LEVEL");
	size_t i;

	if (!s || !*s)
		return IBMC_LOG_WARN;
	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (!strcasecmp(s, level_names[i]))
			return (int)i;
	if (!strcasecmp(s, "warning"))
		return IBMC_LOG_WARN;
	if (s[0] >= '0' && s[0] <= '3' && !s[1])
		return s[0] - '0';
	return IBMC_LOG_WARN;
}

int ibmc__log_level(void)
{
	int l = __atomic_load_n(&level, __ATOMIC_RELAXED);

	if (l < 0) {
		l = level_from_env();
		__atomic_store_n(&level, l, __ATOMIC_RELAXED);
	}
	return l;
}

void ibmc__log_set_level(int l)
{
	if (l < IBMC_LOG_ERROR)
		l = IBMC_LOG_ERROR;
	if (l > IBMC_LOG_DEBUG)
		l = IBMC_LOG_DEBUG;
	__atomic_store_n(&level, l, __ATOMIC_RELAXED);
}

void ibmc__log_set_sink(ibmc_log_sink_fn fn, void *arg)
{
	pthread_mutex_lock(&lock);
	sink = fn;
	sink_arg = arg;
	pthread_mutex_unlock(&lock);
}

void ibmc_log(int l, const char *fmt, ...)
{
	char msg[1024];
	ibmc_log_sink_fn fn;
	void *arg;
	va_list ap;
	size_t n;

	if (l > ibmc__log_level())
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Sinks add their own line ending; drop one the caller gave. */
	n = strlen(msg);
	if (n && msg[n - 1] == '\n')
		msg[n - 1] = '\0';

	pthread_mutex_lock(&lock);
	fn = sink;
	arg = sink_arg;
	pthread_mutex_unlock(&lock);
	if (fn) {
		fn(l, msg, arg);
		return;
	}
	fprintf(stderr, "ibmcast: %s%s\n",
		l == IBMC_LOG_ERROR ? "error: " :
		l == IBMC_LOG_WARN  ? "warning: " : "", msg);
}
