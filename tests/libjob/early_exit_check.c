/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A member that returned early from a broadcast and then leaves must not
 * hang or corrupt the others. After a warm-up broadcast and a barrier (the
 * data plane reads a new group's tables within its staleness bound; before
 * that multicast reaches nobody and every member depends on its parent's
 * repairs) and a fence through the bootstrap, every rank broadcasts LEN
 * bytes from rank 0 and checks them; then the victim leaves at once,
 * either through ibmc_finalize (which finishes what it owes), by
 * vanishing with _exit(0), as a crash does on the wire (no drain, no
 * goodbye), or killed (SIGKILL, sent to itself: no moment of delay
 * between its return and its death). The others then call a barrier,
 * which cannot complete without the victim: it must fail within
 * IBMCAST_BCAST_TIMEOUT_MS (or once liveness finds the victim dead),
 * never hang.
 * With "before" the victim vanishes after the fence, before the
 * broadcast: its subtree gets no forward at all, not even the shape, and
 * must still get the data (from the root); the root, which never hears
 * the victim's ack, fails within the timeout.
 * Prints one line per rank: "rank R data ok barrier RC after MS ms
 * repairs N retransmits N" (or "data BAD"): how long the barrier took to
 * fail, and what this rank's communicator sent again (the root's repairs
 * are what a victim's subtree lost under loss).
 *
 * Usage: early_exit_check VICTIM finalize|vanish|kill|before LEN [ALGO]
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ibmcast/ibmcast.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned char byte_at(size_t i)
{
	return (unsigned char)(i * 131 + (i >> 8) + 7);
}

int main(int argc, char **argv)
{
	ibmc_bootstrap_t bs;
	ibmc_context_t *ctx;
	ibmc_comm_t *c;
	unsigned char *buf, *all;
	size_t len, i;
	int victim, rank, rc, bad = 0;

	if (argc < 4 || (strcmp(argv[2], "finalize") &&
			 strcmp(argv[2], "vanish") && strcmp(argv[2], "kill") &&
			 strcmp(argv[2], "before"))) {
		fprintf(stderr, "usage: early_exit_check VICTIM finalize|vanish|kill|before LEN [ALGO]\n");
		return 64;
	}
	victim = atoi(argv[1]);
	len = strtoul(argv[3], NULL, 10);
	if (ibmc_bootstrap_default(&bs) || ibmc_init(&bs, &ctx) ||
	    ibmc_comm_create(ctx, NULL, 0, &c)) {
		fprintf(stderr, "early_exit_check: setup failed\n");
		return 1;
	}
	if (argc > 4 && ibmc_comm_set_algo(c, "bcast", argv[4])) {
		fprintf(stderr, "early_exit_check: bad algorithm %s\n", argv[4]);
		return 64;
	}
	rank = ibmc_comm_rank(c);
	buf = malloc(len ? len : 1);
	if (!buf)
		return 1;
	buf[0] = 0;
	if ((rc = ibmc_bcast(c, buf, 1, 0)) != 0) {
		fprintf(stderr, "early_exit_check: rank %d: warm-up broadcast: %s\n",
			rank, strerror(-rc));
		return 1;
	}
	if ((rc = ibmc_barrier(c)) != 0) {
		fprintf(stderr, "early_exit_check: rank %d: warm-up barrier: %s\n",
			rank, strerror(-rc));
		return 1;
	}
	/* Every rank is out of the barrier before the victim can leave: a
	 * rank that lost one of the victim's barrier messages pulls it
	 * again, which a vanished victim never answers; that is the
	 * barrier's exposure, not the broadcast's under test. The bootstrap
	 * is reliable (PMI or TCP), so this fence cannot lose anything. */
	all = malloc((size_t)bs.size);
	if (!all || bs.allgather(bs.arg, buf, all, 1)) {
		fprintf(stderr, "early_exit_check: rank %d: fence failed\n", rank);
		return 1;
	}
	free(all);
	if (rank == victim && !strcmp(argv[2], "before")) {
		printf("rank %d left before the broadcast\n", rank);
		fflush(stdout);
		_exit(0);
	}
	for (i = 0; i < len; i++)
		buf[i] = rank == 0 ? byte_at(i) : 0;
	rc = ibmc_bcast(c, buf, len, 0);
	for (i = 0; !rc && i < len; i++)
		if (buf[i] != byte_at(i))
			bad = 1;
	if (rc || bad) {
		ibmc_comm_stats_t st;

		memset(&st, 0, sizeof(st));
		ibmc_comm_get_stats(c, &st);
		/* What this rank saw, for the diagnosis of a failure. */
		printf("rank %d data BAD (%s; bcasts %llu, barriers %llu, stale dropped %llu, duplicates %llu, repairs %llu, timeouts %llu, sent %llu)\n",
		       rank, rc ? strerror(-rc) : "bytes differ",
		       (unsigned long long)st.bcasts,
		       (unsigned long long)st.barriers,
		       (unsigned long long)st.stale_dropped,
		       (unsigned long long)st.duplicates,
		       (unsigned long long)st.repairs,
		       (unsigned long long)st.timeouts,
		       (unsigned long long)st.packets_sent);
		fflush(stdout);
	}
	if (rank == victim) {
		printf("rank %d data %s left by %s\n", rank, bad || rc ? "BAD" : "ok",
		       argv[2]);
		fflush(stdout);
		if (!strcmp(argv[2], "vanish"))
			_exit(0);
		if (!strcmp(argv[2], "kill"))
			raise(SIGKILL);
		ibmc_comm_free(c);
		ibmc_finalize(ctx);
		ibmc_bootstrap_fini(&bs);
		free(buf);
		return 0;
	}
	if (!rc && !bad) {
		ibmc_comm_stats_t st;
		int64_t t0 = now_ms();

		rc = ibmc_barrier(c);
		t0 = now_ms() - t0;
		memset(&st, 0, sizeof(st));
		ibmc_comm_get_stats(c, &st);
		printf("rank %d data ok barrier %s after %lld ms repairs %llu retransmits %llu\n",
		       rank, rc ? strerror(-rc) : "ok", (long long)t0,
		       (unsigned long long)st.repairs,
		       (unsigned long long)st.retransmits);
		fflush(stdout);
	}
	ibmc_comm_free(c);
	ibmc_finalize(ctx);
	ibmc_bootstrap_fini(&bs);
	free(buf);
	return bad;
}
