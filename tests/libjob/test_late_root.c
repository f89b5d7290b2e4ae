/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A root that enters a broadcast long after its members costs no repair.
 * Members that heard nothing for a while ask the root for the first
 * fragment (bcast_op.c, ask_shape: their parent may have left before it
 * forwarded anything); a member that only waited for a late root asks
 * too: the root gets those asks, kept from before it entered, when it
 * enters, before it sent anything, and must not answer them with the data
 * its multicast or its tree is about to bring anyway. The
 * members' packets show that they asked (more than with a root on time),
 * so "no repair" is not vacuous.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

#define RANKS 8
#define LEN 10000

struct result {
	const char *algo;
	int late_ms;
	atomic_int bad;
	atomic_ulong root_repairs, member_packets;
};

static int run(ibmc_context_t *ctx, int rank, void *arg)
{
	struct result *res = arg;
	unsigned char buf[LEN];
	ibmc_comm_stats_t st;
	ibmc_comm_t *c;
	int rc;

	if (ibmc_comm_create(ctx, NULL, 0, &c))
		return 1;
	ibmc_comm_set_algo(c, "bcast", res->algo);
	/* Warm-up: every member has the communicator and its timers. */
	if (ibmc_barrier(c))
		return 1;
	ibmc_comm_get_stats(c, &st);
	if (rank == 0) {
		usleep((useconds_t)res->late_ms * 1000);
		lbjob_fill(buf, LEN, 11);
	} else {
		memset(buf, 0, LEN);
	}
	rc = ibmc_bcast(c, buf, LEN, 0);
	if (rc || lbjob_check(buf, LEN, 11) >= 0) {
		fprintf(stderr, "# rank %d: %s\n", rank,
			rc ? "broadcast failed" : "wrong bytes");
		atomic_fetch_add(&res->bad, 1);
	}
	/* Counted once the broadcast is over everywhere. */
	if (ibmc_barrier(c))
		return 1;
	{
		ibmc_comm_stats_t now;

		ibmc_comm_get_stats(c, &now);
		if (rank == 0)
			atomic_fetch_add(&res->root_repairs,
					 now.repairs - st.repairs);
		else
			atomic_fetch_add(&res->member_packets,
					 now.packets_sent - st.packets_sent);
	}
	return ibmc_comm_free(c);
}

static void one(const char *algo, int late_ms, struct result *res)
{
	int fails;

	memset(res, 0, sizeof(*res));
	res->algo = algo;
	res->late_ms = late_ms;
	lbjob_env(2, 2048);
	fails = lbjob_run(RANKS, run, res);
	tap_ok(!fails && !res->bad,
	       "%s, %d ranks, the root %d ms late: every rank has the data",
	       algo, RANKS, late_ms);
}

int main(void)
{
	static const char *const algos[] = { "mcast", "binomial" };
	struct result on_time, late;
	size_t i;

	/* Members ask after one silence: 8 RTOs + 20 ms, at most a quarter
	 * of the timeout (bcast_op.c, silence_us). On a loaded host the
	 * RTOs the warm-up measured can make it longer than the root's
	 * lateness; capped at 2 s here, the asks come before a root 3 s
	 * late however slow the host. */
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "8000", 1);
	for (i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
		one(algos[i], 0, &on_time);
		one(algos[i], 3000, &late);
		tap_ok(late.member_packets > on_time.member_packets,
		       "  ... the waiting members asked the root (%lu packets against %lu with the root on time)",
		       (unsigned long)late.member_packets,
		       (unsigned long)on_time.member_packets);
		tap_ok(late.root_repairs == 0,
		       "  ... and the root, which got the asks on entering, sent no repair (%lu)",
		       (unsigned long)late.root_repairs);
	}
	tap_plan(tap__n);
	return tap_done();
}
