/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env.h - the IBMCAST_* variables a context is created from (see
 * docs/environment.md and ibmcast(7)).
 *
 * Parsing is strict, but a malformed or missing multicast description never
 * fails: the context then runs point-to-point and mcast_why says why.
 */
#ifndef IBMCAST_LIBJOB_ENV_H
#define IBMCAST_LIBJOB_ENV_H

#include <stdint.h>

#include "libjob/transport.h"
#include "libjob/wire.h"

#define IBMC__MAX_GROUPS 64

/* IBMCAST_COMM_MODE (ibmcast(7)): how a communicator gets its group. */
enum ibmc__comm_mode {
	IBMC__MODE_SM = 0,	/* a ready group of the SM-prepared pool */
	IBMC__MODE_P2P,		/* no multicast */
	IBMC__MODE_BASIC,	/* seed 000: create, join, blocking test */
	IBMC__MODE_LAZY,	/* seed 000: create, join, test in the
				 * background, point-to-point until then */
	IBMC__MODE_POOL,	/* seed 000: the job's own pool, built and
				 * tested at ibmc_init; empty: lazy */
};

/* "sm", "p2p", "basic", "lazy", "pool" -> enum ibmc__comm_mode, or
 * -EINVAL; and back. */
int ibmc__comm_mode_parse(const char *name);
const char *ibmc__comm_mode_name(int mode);

struct ibmc__env {
	char node[128];
	const char *transport;		/* IBMCAST_TRANSPORT or NULL */
	const char *sim_socket;		/* IBMCAST_SIM_DATAPLANE */
	const char *hub;		/* IBMCAST_LOOPBACK_HUB */
	uint32_t job;
	const char *server;		/* IBMCAST_SERVER: grow's endpoint */
	const char *munge_socket;	/* IBMCAST_MUNGE_SOCKET */
	int reshape_wait_ms;		/* IBMCAST_RESHAPE_WAIT_MS, 0: neither
					 * grow nor prune */
	int prune;			/* IBMCAST_PRUNE */
	int ngroups;
	struct ibmc_tr_group groups[IBMC__MAX_GROUPS];
	int mcast_err;			/* 0: the pool may be used */
	char mcast_why[200];		/* why not, when mcast_err != 0 */
	int comm_p2p;			/* IBMCAST_COMM_MODE=p2p */
	int comm_mode;			/* IBMCAST_COMM_MODE */
	int mtest_period_ms;		/* IBMCAST_MCAST_TEST_PERIOD_MS */
	int mtest_tries;		/* IBMCAST_MCAST_TEST_TRIES */
	int pool_groups;		/* IBMCAST_MODE_POOL_GROUPS */
	/* IBMCAST_<COLL>_ALGO per enum ibmc__coll: id (0: auto), and N of
	 * "name:N" (else 0). */
	int algo[IBMC__C_COUNT];
	int algo_param[IBMC__C_COUNT];
	/* Tuning (ibmcast(7)). */
	int rto_ms;			/* IBMCAST_BCAST_RTO_MS */
	int timeout_ms;			/* IBMCAST_BCAST_TIMEOUT_MS: a
					 * deadline without progress, 0 (the
					 * default): none */
	int dead_ms;			/* IBMCAST_DEAD_MS: a member that
					 * answers no liveness probe this long
					 * is dead (live.h), 0: never */
	int window;			/* IBMCAST_BCAST_WINDOW, fragments */
	int lambda;			/* IBMCAST_POSTAL_LAMBDA */
	long mcast_min;			/* IBMCAST_MCAST_MIN_BYTES */
	int bcast_sync;			/* IBMCAST_BCAST_SYNC: return only
					 * when every member holds the data */
	int progress_thread;		/* IBMCAST_PROGRESS_THREAD */
	int barrier_measure_create;	/* IBMCAST_BARRIER_MEASURE=create */
};

/* Reads the environment into *e. Never fails for multicast reasons; returns
 * -EINVAL only for a malformed tuning or algorithm variable, which is a
 * caller's mistake and named in the log. */
int ibmc__env_read(struct ibmc__env *e);

/* The broadcast's algorithm names (coll/coll.c): "auto", "mcast",
 * "binomial", "postal" -> IBMC__A_*; -EINVAL else. */
int ibmc__algo_parse(const char *name);
const char *ibmc__algo_name(int algo);

#endif
