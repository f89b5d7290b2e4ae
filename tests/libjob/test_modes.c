/* SPDX-License-Identifier: BSD-3-Clause */
/* Communicator modes without a fabric: IBMCAST_COMM_MODE and the testing
 * knobs parsed strictly; ibmc_comm_create_attr's mode; and on the loopback
 * transport, which cannot join groups through an SA, basic, lazy and pool
 * communicators that stay point-to-point with the reason and still
 * broadcast every byte. (On the simulated fabric: libjob_modes.sh.) */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/env.h"
#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

#define RANKS 4
#define LEN 5000

struct res {
	int state[RANKS];
	char why[RANKS][200];
	int bad[RANKS];
	int mcast[RANKS];
};

static const char *mode_arg;
static struct res res;

static int body(ibmc_context_t *ctx, int rank, void *arg)
{
	ibmc_comm_attr_t attr = { .mode = mode_arg };
	unsigned char buf[LEN];
	ibmc_comm_stats_t st;
	const char *why;
	ibmc_comm_t *c;
	int root, rc;

	(void)arg;
	rc = ibmc_comm_create_attr(ctx, NULL, 0, &attr, &c);
	if (rc)
		return 1;
	for (root = 0; root < RANKS; root++) {
		if (rank == root)
			lbjob_fill(buf, LEN, (uint32_t)root);
		else
			memset(buf, 0, LEN);
		if (ibmc_bcast(c, buf, LEN, root) ||
		    lbjob_check(buf, LEN, (uint32_t)root) >= 0)
			res.bad[rank]++;
	}
	res.state[rank] = ibmc_comm_mcast_state(c, &why);
	/* Valid while the communicator lives. */
	snprintf(res.why[rank], sizeof(res.why[rank]), "%s", why ? why : "");
	ibmc_comm_get_stats(c, &st);
	res.mcast[rank] = (int)st.mcast_bcasts;
	return ibmc_comm_free(c) ? 1 : 0;
}

static int bad_mode(ibmc_context_t *ctx, int rank, void *arg)
{
	ibmc_comm_attr_t attr = { .mode = "eager" };
	ibmc_comm_t *c = (void *)1;

	(void)rank;
	(void)arg;
	return ibmc_comm_create_attr(ctx, NULL, 0, &attr, &c) == -EINVAL &&
	       !c ? 0 : 1;
}

static void one(const char *mode, int want, const char *why_part)
{
	int r, ok = 1, bad = 0, mc = 0;

	mode_arg = mode;
	memset(&res, 0, sizeof(res));
	tap_is_int(lbjob_run(RANKS, body, NULL), 0, "%s: %d ranks ran",
		   mode ? mode : "IBMCAST_COMM_MODE", RANKS);
	for (r = 0; r < RANKS; r++) {
		ok &= res.state[r] == want &&
		      strstr(res.why[r], why_part) != NULL;
		bad += res.bad[r];
		mc += res.mcast[r];
	}
	tap_ok(ok, "%s: point-to-point on every rank, why: \"%s\"",
	       mode ? mode : "IBMCAST_COMM_MODE", res.why[0]);
	tap_ok(!bad && !mc, "%s: every byte right, none by multicast",
	       mode ? mode : "IBMCAST_COMM_MODE");
}

int main(void)
{
	static const char *const good[] = { "sm", "p2p", "basic", "lazy",
					    "pool" };
	struct ibmc__env e;
	size_t i;

	tap_plan(25);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		tap_is_int(ibmc__comm_mode_parse(good[i]), (int)i,
			   "mode %s parsed", good[i]);
	tap_is_int(ibmc__comm_mode_parse("Lazy"), -EINVAL,
		   "modes are case-sensitive");

	unsetenv("IBMCAST_COMM_MODE");
	tap_is_int(ibmc__env_read(&e), 0, "environment without a mode");
	tap_ok(e.comm_mode == IBMC__MODE_SM && e.mtest_period_ms == 10 &&
	       e.mtest_tries == 128, "defaults: sm, 10 ms, 128 tries");
	setenv("IBMCAST_COMM_MODE", "lazy", 1);
	setenv("IBMCAST_MCAST_TEST_TRIES", "7", 1);
	tap_ok(!ibmc__env_read(&e) && e.comm_mode == IBMC__MODE_LAZY &&
	       e.mtest_tries == 7, "IBMCAST_COMM_MODE=lazy, 7 tries");
	setenv("IBMCAST_COMM_MODE", "eager", 1);
	tap_is_int(ibmc__env_read(&e), -EINVAL, "an unknown mode is an error");
	setenv("IBMCAST_COMM_MODE", "basic", 1);
	setenv("IBMCAST_MCAST_TEST_TRIES", "0", 1);
	tap_is_int(ibmc__env_read(&e), -EINVAL, "0 tries is an error");
	unsetenv("IBMCAST_MCAST_TEST_TRIES");
	setenv("IBMCAST_MCAST_TEST_PERIOD_MS", "x", 1);
	tap_is_int(ibmc__env_read(&e), -EINVAL, "a malformed period is an error");
	unsetenv("IBMCAST_MCAST_TEST_PERIOD_MS");
	unsetenv("IBMCAST_COMM_MODE");

	/* A ready pool of the SM exists; the modes that make their own
	 * groups need an SA, which loopback does not have. */
	lbjob_env(2, 2048);
	tap_is_int(lbjob_run(RANKS, bad_mode, NULL), 0,
		   "ibmc_comm_create_attr refuses an unknown mode");
	one("basic", -ENOTSUP, "needs SA joins");
	one("lazy", -ENOTSUP, "needs SA joins");
	one("p2p", -ECANCELED, "p2p");
	lbjob_env(2, 2048);
	setenv("IBMCAST_COMM_MODE", "pool", 1);
	one(NULL, -ENOTSUP, "needs SA joins");
	unsetenv("IBMCAST_COMM_MODE");
	return tap_done();
}
