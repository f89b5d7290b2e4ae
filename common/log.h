/* SPDX-License-Identifier: BSD-3-Clause */
/* Logging shared by the tools and the plugins: a level filter read from
 * IBMCAST_LOG_LEVEL and a replaceable sink, so the OpenSM plugin can route
 * lines into osm_log_v2 and the SPANK plugin into slurm_error/slurm_info. */
#ifndef IBMCAST_COMMON_LOG_H
#define IBMCAST_COMMON_LOG_H

enum ibmc_log_level {
	IBMC_LOG_ERROR = 0,
	IBMC_LOG_WARN = 1,
	IBMC_LOG_INFO = 2,
	IBMC_LOG_DEBUG = 3,
};

typedef void (*ibmc_log_sink_fn)(int level, const char *msg, void *arg);

/* Format and emit one line (no trailing newline needed) if level passes. */
void ibmc_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Replace the sink (default: stderr with a "ibmcast: " prefix).
 * NULL restores the default. */
void ibmc__log_set_sink(ibmc_log_sink_fn sink, void *arg);

/* Current threshold; initialised from IBMCAST_LOG_LEVEL (error, warn, info,
 * debug or 0-3), default warn. */
int ibmc__log_level(void);
void ibmc__log_set_level(int level);

#endif
