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
 * so "no repair" is not vacuous. The root's resends are counted in two
 * places (repairs for an answered ask, retransmits for any fragment sent
 * again, as its timers resend without an ask): both must stay at zero,
 * and a run that loses datagrams shows both counters do move when the
 * root does resend.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libjob/transport.h"
#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

#define RANKS 8
#define LEN 10000

struct result {
	const char *algo;
	int late_ms;
	int rounds;		/* broadcasts in a row */
	atomic_int bad;
	atomic_ulong root_repairs, root_retransmits, member_packets;
};

static int run(ibmc_context_t *ctx, int rank, void *arg)
{
	struct result *res = arg;
	unsigned char buf[LEN];
	ibmc_comm_stats_t st;
	ibmc_comm_t *c;
	int i, rc;

	if (ibmc_comm_create(ctx, NULL, 0, &c))
		return 1;
	ibmc_comm_set_algo(c, "bcast", res->algo);
	/* Warm-up: every member has the communicator and its timers. */
	if (ibmc_barrier(c))
		return 1;
	ibmc_comm_get_stats(c, &st);
	for (i = 0; i < res->rounds; i++) {
		if (rank == 0) {
			usleep((useconds_t)res->late_ms * 1000);
			lbjob_fill(buf, LEN, 11 + (uint32_t)i);
		} else {
			memset(buf, 0, LEN);
		}
		rc = ibmc_bcast(c, buf, LEN, 0);
		if (rc || lbjob_check(buf, LEN, 11 + (uint32_t)i) >= 0) {
			fprintf(stderr, "# rank %d: %s\n", rank,
				rc ? "broadcast failed" : "wrong bytes");
			atomic_fetch_add(&res->bad, 1);
		}
	}
	/* Counted once the broadcasts are over everywhere. */
	if (ibmc_barrier(c))
		return 1;
	{
		ibmc_comm_stats_t now;

		ibmc_comm_get_stats(c, &now);
		if (rank == 0) {
			atomic_fetch_add(&res->root_repairs,
					 now.repairs - st.repairs);
			atomic_fetch_add(&res->root_retransmits,
					 now.retransmits - st.retransmits);
		} else {
			atomic_fetch_add(&res->member_packets,
					 now.packets_sent - st.packets_sent);
		}
	}
	return ibmc_comm_free(c);
}

/* loss_ppm: datagrams the loopback hub drops, 0 for none. */
static void one(const char *algo, int late_ms, uint32_t loss_ppm, int rounds,
		struct result *res)
{
	struct ibmc_loopback_faults f = {
		.loss_ppm = loss_ppm, .seed = 2900 + (uint64_t)late_ms,
	};
	int fails;

	memset(res, 0, sizeof(*res));
	res->algo = algo;
	res->late_ms = late_ms;
	res->rounds = rounds;
	lbjob_env(2, 2048);
	if (loss_ppm)
		ibmc__loopback_set_faults(lbjob_hub(), &f);
	fails = lbjob_run(RANKS, run, res);
	tap_ok(!fails && !res->bad,
	       "%s, %d ranks, the root %d ms late, %.0f%% loss, %d broadcast(s): every rank has the data",
	       algo, RANKS, late_ms, loss_ppm / 1e4, rounds);
}

int main(void)
{
	static const char *const algos[] = { "mcast", "binomial" };
	struct result on_time, late, lossy;
	size_t i;

	/* Members ask after one silence: 8 RTOs + 20 ms, at most a quarter
	 * of the timeout (bcast_op.c, silence_us). On a loaded host the
	 * RTOs the warm-up measured can make it longer than the root's
	 * lateness; capped at 2 s here, the asks come before a root 3 s
	 * late however slow the host. */
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "8000", 1);
	for (i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
		one(algos[i], 0, 0, 1, &on_time);
		one(algos[i], 3000, 0, 1, &late);
		tap_ok(late.member_packets > on_time.member_packets,
		       "  ... the waiting members asked the root (%lu packets against %lu with the root on time)",
		       (unsigned long)late.member_packets,
		       (unsigned long)on_time.member_packets);
		tap_ok(late.root_repairs == 0 && late.root_retransmits == 0,
		       "  ... and the root, which got the asks on entering, sent nothing again (repairs %lu, retransmits %lu)",
		       (unsigned long)late.root_repairs,
		       (unsigned long)late.root_retransmits);
		/* The counters read above are the ones a resend moves: with
		 * a fifth of the datagrams lost, members ask the root for
		 * fragments (repairs) and its timers resend to children
		 * whose acks do not come (retransmits); over 20 broadcasts,
		 * as in one a root's children may happen to lose nothing
		 * they would ask for. */
		one(algos[i], 0, 200000, 20, &lossy);
		tap_ok(lossy.root_repairs > 0 && lossy.root_retransmits > 0,
		       "  ... where datagrams are lost, the root's repairs and retransmits count its resends (%lu, %lu)",
		       (unsigned long)lossy.root_repairs,
		       (unsigned long)lossy.root_retransmits);
	}
	tap_plan(tap__n);
	return tap_done();
}
