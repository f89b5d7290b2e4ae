/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A member that creates its communicator after the root's first multicast
 * still gets it. The root creates the communicator and broadcasts at once;
 * the other members create theirs LATE_US later. The job's pool groups are
 * attached at ibmc_init, so the multicast reached every member's QP before
 * its communicator existed, was kept, and is taken at creation: nothing is
 * retransmitted. The retransmission timeout is made longer than the whole
 * test, so a member that missed the multicast shows as a retransmission
 * (when members attached at creation, every one of them missed it). The
 * control, with multicast broken on the loopback fabric, shows the check
 * sees a miss.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libjob/transport.h"
#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

#define RANKS 8
#define LEN 1000		/* one fragment */
#define LATE_US 200000
#define RTO_MS "2000"		/* beyond LATE_US: no retransmission in time */

struct result {
	atomic_int bad;
	atomic_ulong retransmits, repairs, mcast_bcasts;
};

static int run(ibmc_context_t *ctx, int rank, void *arg)
{
	struct result *res = arg;
	unsigned char buf[LEN];
	ibmc_comm_stats_t st;
	ibmc_comm_t *c;
	int rc;

	/* Every context is up (and attached to the pool's groups). */
	lbjob_barrier();
	if (rank)
		usleep(LATE_US);
	if (ibmc_comm_create(ctx, NULL, 0, &c))
		return 1;
	ibmc_comm_set_algo(c, "bcast", "mcast");
	if (rank == 0)
		lbjob_fill(buf, LEN, 7);
	else
		memset(buf, 0, LEN);
	rc = ibmc_bcast(c, buf, LEN, 0);
	if (rc || lbjob_check(buf, LEN, 7) >= 0) {
		fprintf(stderr, "# rank %d: %s\n", rank,
			rc ? strerror(-rc) : "wrong bytes");
		atomic_fetch_add(&res->bad, 1);
	}
	/* The root's counters once every member holds the data. */
	lbjob_barrier();
	ibmc_comm_get_stats(c, &st);
	atomic_fetch_add(&res->retransmits, st.retransmits);
	atomic_fetch_add(&res->repairs, st.repairs);
	atomic_fetch_add(&res->mcast_bcasts, st.mcast_bcasts);
	lbjob_barrier();
	return ibmc_comm_free(c);
}

static void one(int broken, struct result *res)
{
	struct ibmc_loopback_faults f = { .mcast_broken = (uint32_t)broken };
	int fails;

	memset(res, 0, sizeof(*res));
	lbjob_env(2, 2048);
	ibmc__loopback_set_faults(lbjob_hub(), &f);
	fails = lbjob_run(RANKS, run, res);
	tap_ok(!fails && !res->bad,
	       "%d ranks, members create the communicator %d ms after the root's broadcast%s: every rank has the data",
	       RANKS, LATE_US / 1000,
	       broken ? " (control: multicast broken)" : "");
}

int main(void)
{
	struct result res;

	setenv("IBMCAST_BCAST_RTO_MS", RTO_MS, 1);
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "60000", 1);
	one(0, &res);
	tap_ok(res.mcast_bcasts == RANKS && res.retransmits == 0 &&
	       res.repairs == 0,
	       "  ... by the root's one multicast: %lu retransmissions, %lu repairs (%lu of %d ranks ran it by multicast)",
	       (unsigned long)res.retransmits, (unsigned long)res.repairs,
	       (unsigned long)res.mcast_bcasts, RANKS);
	one(1, &res);
	tap_ok(res.retransmits + res.repairs > 0,
	       "  ... control: with the multicast lost the counters show it (%lu retransmissions, %lu repairs)",
	       (unsigned long)res.retransmits, (unsigned long)res.repairs);
	tap_plan(tap__n);
	return tap_done();
}
