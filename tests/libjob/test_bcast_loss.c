/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibmc_bcast under injected faults on the loopback hub: 1%, 5% and 20%
 * loss of every datagram (data, acks, repairs, FINs alike) with
 * duplication and reordering, for multicast and both point-to-point trees,
 * on power-of-two and other rank counts. Every broadcast must complete
 * with byte-exact data within the give-up timeout (no hang), and the
 * protocol's counters must show that it really recovered.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/transport.h"
#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

struct plan {
	const char *algo;
	int rounds;
	atomic_int ok, bad;
	atomic_llong retransmits, timeouts, duplicates, repairs;
};

static const size_t sizes[] = { 1, 5000, 300000 };

static int run(ibmc_context_t *ctx, int rank, void *arg)
{
	struct plan *p = arg;
	int n = ibmc_context_size(ctx), i, rc;
	ibmc_comm_stats_t st;
	ibmc_comm_t *c;

	rc = ibmc_comm_create(ctx, NULL, 0, &c);
	if (rc)
		return rc;
	ibmc_comm_set_bcast_algo(c, p->algo);
	for (i = 0; i < p->rounds; i++) {
		size_t len = sizes[i % 3];
		int root = (i * 5 + 1) % n;
		unsigned char *buf = malloc(len);
		long at;

		if (rank == root)
			lbjob_fill(buf, len, (uint32_t)i + 77);
		else
			memset(buf, 0, len);
		rc = ibmc_bcast(c, buf, len, root);
		if (rc) {
			fprintf(stderr, "# %s rank %d round %d: %s\n", p->algo,
				rank, i, strerror(-rc));
			atomic_fetch_add(&p->bad, 1);
		} else if ((at = lbjob_check(buf, len, (uint32_t)i + 77)) >= 0) {
			fprintf(stderr, "# %s rank %d round %d: byte %ld differs\n",
				p->algo, rank, i, at);
			atomic_fetch_add(&p->bad, 1);
		} else {
			atomic_fetch_add(&p->ok, 1);
		}
		free(buf);
	}
	ibmc_comm_get_stats(c, &st);
	atomic_fetch_add(&p->retransmits, (long long)st.retransmits);
	atomic_fetch_add(&p->timeouts, (long long)st.timeouts);
	atomic_fetch_add(&p->duplicates, (long long)st.duplicates);
	atomic_fetch_add(&p->repairs, (long long)st.repairs);
	return ibmc_comm_free(c);
}

static void one(int n, const char *algo, uint32_t loss_ppm, int rounds)
{
	struct ibmc_loopback_faults f = {
		.loss_ppm = loss_ppm, .dup_ppm = 20000, .reorder_ppm = 50000,
		.seed = 12345 + loss_ppm + (uint64_t)n,
	};
	struct plan p = { .algo = algo, .rounds = rounds };
	double t0;
	int bad;

	lbjob_env(2, 2048);
	ibmc__loopback_set_faults(lbjob_hub(), &f);
	t0 = lbjob_now();
	bad = lbjob_run(n, run, &p);
	tap_ok(!bad && !p.bad && p.ok == n * rounds,
	       "%d ranks, %s, %.0f%% loss + dup + reorder: %d/%d ok in %.2fs",
	       n, algo, loss_ppm / 1e4, (int)p.ok, n * rounds,
	       lbjob_now() - t0);
	tap_diag("  retransmits %lld, repairs %lld, timeouts %lld, duplicates %lld",
		 (long long)p.retransmits, (long long)p.repairs,
		 (long long)p.timeouts, (long long)p.duplicates);
	tap_ok(p.retransmits > 0 && p.duplicates > 0,
	       "  ... recovery really happened (retransmits and duplicates seen)");
}

int main(void)
{
	static const uint32_t loss[] = { 10000, 50000, 200000 };
	unsigned i;

	/* A lost packet must cost a timer, not the test: generous give-up,
	 * which a hang would still hit (and fail). */
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "20000", 1);
	unsetenv("IBMCAST_BCAST_ALGO");
	for (i = 0; i < 3; i++) {
		one(8, "mcast", loss[i], 9);
		one(13, "mcast", loss[i], 6);
		one(6, "binomial", loss[i], 6);
		one(11, "postal", loss[i], 6);
	}
	one(32, "mcast", 50000, 3);
	tap_plan(tap__n);
	return tap_done();
}
