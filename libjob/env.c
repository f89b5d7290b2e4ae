/* SPDX-License-Identifier: BSD-3-Clause */
/* IBMCAST_* parsing for ibmc_init(): the job's group pool and state
 * (strict; any doubt turns multicast off with a reason), the transport
 * choice and the broadcast tuning knobs. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/log.h"
#include "common/parse.h"
#include "libjob/coll/coll.h"
#include "libjob/env.h"
#include "libjob/wire.h"

static void mcast_off(struct ibmc__env *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void mcast_off(struct ibmc__env *e, int err, const char *fmt, ...)
{
	va_list ap;

	e->mcast_err = err;
	va_start(ap, fmt);
	vsnprintf(e->mcast_why, sizeof(e->mcast_why), fmt, ap);
	va_end(ap);
	e->ngroups = 0;
}

static void read_pool(struct ibmc__env *e)
{
	const char *state = getenv("IBMCAST_STATE");
	const char *reason = getenv("IBMCAST_REASON");
	const char *groups = getenv("IBMCAST_GROUPS");
	const char *ng = getenv("IBMCAST_NGROUPS");
	const char *at;
	long want = -1;
	int rc;

	if (!reason || !*reason)
		reason = "no reason given";
	if (!state || !*state)
		return mcast_off(e, -ENODATA,
				 "IBMCAST_STATE is not set (job without --ibmcast?)");
	if (!strcmp(state, "disabled"))
		return mcast_off(e, -ENODATA,
				 "job state is disabled: it did not ask for --ibmcast");
	if (!strcmp(state, "unavailable") || !strcmp(state, "timeout") ||
	    !strcmp(state, "failed"))
		return mcast_off(e, -ENETDOWN, "job state is %s: %s", state,
				 reason);
	if (strcmp(state, "ready"))
		return mcast_off(e, -EINVAL,
				 "IBMCAST_STATE is malformed: \"%.40s\"", state);
	if (ng && *ng) {
		if (ibmc__parse_long(ng, 10, 0, IBMC__MAX_GROUPS, &want))
			return mcast_off(e, -EINVAL,
					 "IBMCAST_NGROUPS is malformed: \"%.20s\"",
					 ng);
	}
	if (!groups || !*groups)
		return mcast_off(e, -ENOENT,
				 "job state is ready but IBMCAST_GROUPS is empty");
	rc = ibmc__groups_parse(groups, e->groups, IBMC__MAX_GROUPS,
				&e->ngroups, &at);
	if (rc == -E2BIG)
		return mcast_off(e, -EINVAL,
				 "IBMCAST_GROUPS has more than %d groups",
				 IBMC__MAX_GROUPS);
	if (rc && !*at)
		return mcast_off(e, -EINVAL,
				 "IBMCAST_GROUPS ends with a space");
	if (rc && *at == ' ')
		return mcast_off(e, -EINVAL,
				 "IBMCAST_GROUPS is malformed near \"%.30s\"",
				 at);
	if (rc) {
		size_t len = strcspn(at, " ");

		return mcast_off(e, -EINVAL,
				 "IBMCAST_GROUPS entry %d is malformed: \"%.*s\"",
				 e->ngroups + 1, (int)(len < 60 ? len : 60), at);
	}
	if (want >= 0 && want != e->ngroups)
		return mcast_off(e, -EINVAL,
				 "IBMCAST_NGROUPS is %ld but IBMCAST_GROUPS has %d",
				 want, e->ngroups);
}

static const char *const mode_names[] = {
	[IBMC__MODE_SM] = "sm",
	[IBMC__MODE_P2P] = "p2p",
	[IBMC__MODE_BASIC] = "basic",
	[IBMC__MODE_LAZY] = "lazy",
	[IBMC__MODE_POOL] = "pool",
};

int ibmc__comm_mode_parse(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(mode_names) / sizeof(mode_names[0]);
	     i++)
		if (!strcmp(name, mode_names[i]))
			return (int)i;
	return -EINVAL;
}

const char *ibmc__comm_mode_name(int mode)
{
	if (mode < 0 || mode >= (int)(sizeof(mode_names) /
				      sizeof(mode_names[0])))
		return "unknown";
	return mode_names[mode];
}

/* A positive integer knob in [lo, hi], or def when unset. */
static int knob(const char *name, long lo, long hi, long def, long *out)
{
	const char *s = getenv(name);

	*out = def;
	if (!s || !*s)
		return 0;
	if (ibmc__parse_long(s, 10, lo, hi, out)) {
		ibmc_log(IBMC_LOG_ERROR, "libibmcast: %s=\"%s\" is not in %ld..%ld",
			 name, s, lo, hi);
		return -EINVAL;
	}
	return 0;
}

int ibmc__env_read(struct ibmc__env *e)
{
	const char *s;
	long v;
	int rc = 0, i;

	memset(e, 0, sizeof(*e));
	s = getenv("IBMCAST_NODE");
	if (s && *s) {
		snprintf(e->node, sizeof(e->node), "%s", s);
	} else {
		char host[128] = "";
		char *dot;

		gethostname(host, sizeof(host) - 1);
		dot = strchr(host, '.');
		if (dot)
			*dot = 0;
		snprintf(e->node, sizeof(e->node), "%s", host);
	}
	s = getenv("IBMCAST_TRANSPORT");
	e->transport = s && *s ? s : NULL;
	s = getenv("IBMCAST_SIM_DATAPLANE");
	e->sim_socket = s && *s ? s : NULL;
	s = getenv("IBMCAST_LOOPBACK_HUB");
	e->hub = s && *s ? s : "default";
	s = getenv("IBMCAST_JOB");
	if (s && *s) {
		unsigned long j;

		if (!ibmc__parse_ulong(s, 10, 0, 0xffffffffUL, &j))
			e->job = (uint32_t)j;
	}
	s = getenv("IBMCAST_SERVER");
	e->server = s && *s ? s : NULL;
	s = getenv("IBMCAST_MUNGE_SOCKET");
	e->munge_socket = s && *s ? s : NULL;
	read_pool(e);
	s = getenv("IBMCAST_COMM_MODE");
	if (s && *s) {
		e->comm_mode = ibmc__comm_mode_parse(s);
		if (e->comm_mode < 0) {
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: IBMCAST_COMM_MODE=\"%s\" is not sm, pool, lazy, basic or p2p",
				 s);
			e->comm_mode = IBMC__MODE_SM;
			rc = -EINVAL;
		}
		e->comm_p2p = e->comm_mode == IBMC__MODE_P2P;
	}
	/* IBMCAST_<COLL>_ALGO, by the collectives' own tables. */
	for (i = 0; i < IBMC__C_COUNT; i++) {
		const struct ibmc__coll_desc *d = ibmc__coll_get(i);

		s = getenv(d->env);
		if (!s || !*s)
			continue;
		e->algo[i] = ibmc__algo_lookup(i, s, &e->algo_param[i]);
		if (e->algo[i] < 0) {
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: %s=\"%s\" is not an algorithm of %s (see ibmcast(7))",
				 d->env, s, d->name);
			e->algo[i] = 0;
			rc = -EINVAL;
		}
	}
	rc = knob("IBMCAST_BCAST_RTO_MS", 1, 10000, 4, &v) ?: rc;
	e->rto_ms = (int)v;
	rc = knob("IBMCAST_BCAST_TIMEOUT_MS", 0, INT_MAX, 0, &v) ?: rc;
	e->timeout_ms = (int)v;
	rc = knob("IBMCAST_BCAST_WINDOW", 1, 4096, 64, &v) ?: rc;
	e->window = (int)v;
	rc = knob("IBMCAST_POSTAL_LAMBDA", 1, 64, 2, &v) ?: rc;
	e->lambda = (int)v;
	rc = knob("IBMCAST_MCAST_MIN_BYTES", 0, LONG_MAX, -1, &v) ?: rc;
	e->mcast_min = v;
	rc = knob("IBMCAST_BCAST_SYNC", 0, 1, 0, &v) ?: rc;
	e->bcast_sync = (int)v;
	rc = knob("IBMCAST_PROGRESS_THREAD", 0, 1, 1, &v) ?: rc;
	e->progress_thread = (int)v;
	/* Without a progress thread a rank computing outside the library
	 * answers no liveness probe: silence then says nothing, so only an
	 * explicit bound declares a member dead (live.h). */
	rc = knob("IBMCAST_DEAD_MS", 0, 3600000,
		  e->progress_thread ? 10000 : 0, &v) ?: rc;
	e->dead_ms = (int)v;
	rc = knob("IBMCAST_MCAST_TEST_PERIOD_MS", 1, 10000, 10, &v) ?: rc;
	e->mtest_period_ms = (int)v;
	rc = knob("IBMCAST_MCAST_TEST_TRIES", 1, 100000, 128, &v) ?: rc;
	e->mtest_tries = (int)v;
	rc = knob("IBMCAST_MODE_POOL_GROUPS", 0, IBMC__MAX_GROUPS, 4, &v) ?: rc;
	e->pool_groups = (int)v;
	rc = knob("IBMCAST_RESHAPE_WAIT_MS", 0, 3600000, 60000, &v) ?: rc;
	e->reshape_wait_ms = (int)v;
	rc = knob("IBMCAST_PRUNE", 0, 1, 1, &v) ?: rc;
	e->prune = (int)v;
	s = getenv("IBMCAST_BARRIER_MEASURE");
	if (s && *s) {
		if (!strcmp(s, "create")) {
			e->barrier_measure_create = 1;
		} else if (strcmp(s, "first")) {
			ibmc_log(IBMC_LOG_ERROR,
				 "libibmcast: IBMCAST_BARRIER_MEASURE=\"%s\" is not first or create",
				 s);
			rc = -EINVAL;
		}
	}
	return rc;
}
