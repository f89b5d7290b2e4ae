/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pool_keep_check - mode pool's own pool and its keeper, step by step for
 * libjob_pool_keep.sh (IBMCAST_COMM_MODE=pool set by the caller). With
 * --first N: communicator A over ranks 0..N-1 (only they create it),
 * communicator B over ranks N..P-1 created after the caller saw A's group
 * replaced, then communicator C over ranks 0..N-1 again, which is meant
 * to find the pool empty. Every communicator broadcasts --count 1 KiB
 * messages from rotating roots, every byte verified. Rank 0 stops for
 * the caller at each step (creates DIR/<step>, waits for DIR/<step>.go):
 * "built" (the pool exists), "taken" (A broadcast and is still alive),
 * "created" (B and C exist, before their broadcasts), "freed" (all three
 * freed, before finalize). With --stop-rank R, rank R stops itself
 * (SIGSTOP, progress thread and all) as the ranks leave "built", and
 * the others wait for DIR/stopped.go, which the caller creates once it
 * sees rank R stopped: the keeper's replacement then finds it silent
 * until the caller sends it SIGCONT. Rank 0 prints one line per communicator:
 * "comm X members=M bad=B mcast=K ready=R why0=..." where K counts the
 * members whose every broadcast went by multicast and R those whose
 * communicator was ready for multicast at the end. Exit 1 on any wrong
 * byte or failed call.
 */
#include "config.h"

#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibmcast/ibmcast.h"
#include "tests/libjob/check_util.h"

#define LEN 1024

struct report {
	int32_t member, bad, all_mcast, ready;
	char why[160];
};

ibmc_bootstrap_t bs;
const char *prog = "pool_keep_check";

/* The communicator over world ranks [lo, hi), NULL on the others. */
static ibmc_comm_t *create(ibmc_context_t *ctx, int lo, int hi,
			   struct report *r)
{
	int n = hi - lo, i, rc, *ranks;
	ibmc_comm_t *c = NULL;

	memset(r, 0, sizeof(*r));
	if (bs.rank < lo || bs.rank >= hi)
		return NULL;
	ranks = malloc(sizeof(*ranks) * (size_t)n);
	if (!ranks)
		die("out of memory");
	for (i = 0; i < n; i++)
		ranks[i] = lo + i;
	rc = ibmc_comm_create(ctx, ranks, n, &c);
	if (rc)
		die("ibmc_comm_create over ranks %d..%d: %s", lo, hi - 1,
		    ibmc_strerror(rc));
	free(ranks);
	r->member = 1;
	r->all_mcast = 1;
	return c;
}

static void bcasts(ibmc_comm_t *c, int count, struct report *r)
{
	unsigned char buf[LEN], want[LEN];
	int n, me, i, j, rc;
	ibmc_comm_stats_t st;
	uint64_t before;
	const char *why = NULL;

	if (!c)
		return;
	n = ibmc_comm_size(c);
	me = ibmc_comm_rank(c);
	for (i = 0; i < count; i++) {
		int root = i % n;

		for (j = 0; j < LEN; j++)
			want[j] = (unsigned char)(i * 13 + root * 5 + j);
		if (me == root)
			memcpy(buf, want, LEN);
		else
			memset(buf, 0xee, LEN);
		ibmc_comm_get_stats(c, &st);
		before = st.mcast_bcasts;
		rc = ibmc_bcast(c, buf, LEN, root);
		if (rc) {
			fprintf(stderr, "%s: rank %d: broadcast %d: %s\n", prog,
				bs.rank, i, ibmc_strerror(rc));
			r->bad++;
			return;
		}
		if (memcmp(buf, want, LEN))
			r->bad++;
		ibmc_comm_get_stats(c, &st);
		if (st.mcast_bcasts == before)
			r->all_mcast = 0;
	}
	r->ready = ibmc_comm_mcast_state(c, &why) == 0;
	snprintf(r->why, sizeof(r->why), "%s", why ? why : "");
}

/* Rank 0 prints the communicator's line; returns its wrong bytes. */
static int report(const char *name, const struct report *mine)
{
	struct report *all = calloc((size_t)bs.size, sizeof(*all));
	int r, m = 0, bad = 0, mc = 0, ready = 0;
	const char *why0 = NULL;

	if (!all || bs.allgather(bs.arg, mine, all, sizeof(*mine)))
		die("gathering the reports failed");
	for (r = 0; r < bs.size; r++) {
		if (!all[r].member)
			continue;
		if (!why0)
			why0 = all[r].why;
		m++;
		bad += all[r].bad;
		mc += all[r].all_mcast;
		ready += all[r].ready;
	}
	if (bs.rank == 0) {
		printf("comm %s members=%d bad=%d mcast=%d ready=%d why0=\"%s\"\n",
		       name, m, bad, mc, ready, why0 ? why0 : "");
		fflush(stdout);
	}
	free(all);
	return bad;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "first", required_argument, NULL, 'f' },
		{ "count", required_argument, NULL, 'k' },
		{ "hold", required_argument, NULL, 'H' },
		{ "stop-rank", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct report ra, rb, rc_;
	ibmc_comm_t *a, *b, *c;
	ibmc_context_t *ctx;
	const char *dir = NULL;
	int first = 0, count = 20, stop = -1, o, bad = 0, rc;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'f': first = int_arg("--first", optarg, 1, 1 << 20); break;
		case 'k': count = int_arg("--count", optarg, 1, 100000); break;
		case 'H': dir = optarg; break;
		case 's': stop = int_arg("--stop-rank", optarg, 0, 1 << 20);
			break;
		default:
			fprintf(stderr, "Usage: %s --first N --hold DIR [--count K] [--stop-rank R]\n",
				prog);
			return 2;
		}
	}
	if (!first || !dir || optind < argc)
		die("usage: --first N --hold DIR [--count K]");
	ctx = check_init();
	if (first >= bs.size)
		die("--first %d: needs more than %d ranks", first, bs.size);
	check_hold(dir, "built", "built.go");
	if (bs.rank == stop) {
		fprintf(stderr, "%s: rank %d: stopping (SIGSTOP) until SIGCONT\n",
			prog, bs.rank);
		raise(SIGSTOP);
		fprintf(stderr, "%s: rank %d: continued\n", prog, bs.rank);
	} else if (stop >= 0) {
		/* Nothing of A (its take, the keeper's invitations) may
		 * reach rank R before it is stopped: the caller saw it
		 * stopped when it creates DIR/stopped.go. */
		check_wait_file(dir, "stopped.go");
	}
	a = create(ctx, 0, first, &ra);
	bcasts(a, count, &ra);
	if (a)	/* before the report, which waits for every rank */
		fprintf(stderr, "%s: rank %d: A's broadcasts done, %d wrong\n",
			prog, bs.rank, ra.bad);
	bad += report("A", &ra);
	check_hold(dir, "taken", "taken.go");
	/* B strictly after A's replacement was seen (the caller waited),
	 * C strictly after B: the keeper hears them in this order. */
	b = create(ctx, first, bs.size, &rb);
	check_sync_all();
	c = create(ctx, 0, first, &rc_);
	check_hold(dir, "created", "created.go");
	bcasts(b, count, &rb);
	bcasts(c, count, &rc_);
	bad += report("B", &rb);
	bad += report("C", &rc_);
	if ((a && ibmc_comm_free(a)) || (b && ibmc_comm_free(b)) ||
	    (c && ibmc_comm_free(c)))
		die("ibmc_comm_free failed");
	check_hold(dir, "freed", "freed.go");
	rc = ibmc_finalize(ctx);
	if (rc)
		die("ibmc_finalize: %s", ibmc_strerror(rc));
	ibmc_bootstrap_fini(&bs);
	return bad ? 1 : 0;
}
