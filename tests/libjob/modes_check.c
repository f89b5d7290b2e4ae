/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * modes_check - one communicator of a given mode (ibmc_comm_create_attr:
 * sm, pool, lazy, basic, p2p) over the first --size ranks, then 1 KiB
 * broadcasts from rotating roots, every byte verified. With --until-mcast
 * M, broadcasting goes on (at most --max) until rank 0 has seen M of them
 * go by multicast, so a lazy communicator shows point-to-point first and
 * multicast after its testing. With --hold DIR the program stops twice for
 * the caller (who looks at the SA meanwhile): once with the communicator
 * in use (rank 0 creates DIR/in_use, waits for DIR/go), once after it was
 * freed (DIR/freed, waits for DIR/go2); then finalizes. Rank 0 prints
 * every rank's multicast state, reason, counters and the algorithms of
 * its first and last broadcast, and a summary; --timing adds the
 * effective latency (seed 000: from a barrier, creation plus the
 * broadcasts, max over ranks; on the simulated fabric also in modeled
 * time, from clocks aligned at the barrier, with --compute-ms declared
 * as computation: what the fabric model charges, which leaves out the
 * real-time work of SA joins and SM passes). --comms N first creates N - 1 other
 * communicators over every rank and keeps them (so that the measured one
 * finds the job's pool exhausted); --allreduce follows every broadcast
 * with a checked allreduce, so that a switch to multicast in the middle
 * is seen by more than broadcasts; --pause DIR stops every rank once
 * the communicator exists, before its first broadcast (rank 0 creates
 * DIR/created, waits for DIR/start); --steady times only the broadcasts,
 * on a communicator created and warmed up (its group long tested) before
 * the timing barrier: the steady state the other modes are compared
 * with. Exit 1 on any wrong byte or error.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibmcast/ibmcast.h"
#include "ibmcast/sim.h"
#include "tests/libjob/check_util.h"

#define WHY_LEN 160
#define WARM_UP 20

struct opts {
	const char *mode;	/* NULL: IBMCAST_COMM_MODE */
	int size;		/* 0: every rank */
	int count;		/* broadcasts (or at least, --until-mcast) */
	int max;		/* --until-mcast: at most this many */
	int until_mcast;
	size_t len;
	int compute_ms;		/* between creation and the first one */
	const char *hold;
	int timing;
	int comms;		/* communicators in all, the measured last */
	const char *pause;
	int steady;
	int allreduce;
};

struct report {
	int32_t member;
	int32_t state;		/* ibmc_comm_mcast_state */
	int32_t bad;		/* wrong bytes or failed calls */
	int32_t first_mcast, last_mcast;	/* of this rank's broadcasts */
	uint64_t bcasts, mcast_bcasts, tries, mtest_us, eff_us, switch_us;
	uint64_t allreduces, join_us;
	double model_s;		/* modeled creation + broadcasts, 0: none */
	char first_ar[24], last_ar[24];	/* the allreduces' algorithms */
	char why[WHY_LEN];
};

ibmc_bootstrap_t bs;
const char *prog = "modes_check";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [--mode NAME] [--size N] [--count K] [--len BYTES]\n"
		"          [--until-mcast M --max K] [--compute-ms MS]\n"
		"          [--hold DIR] [--timing] [--comms N] [--allreduce]\n"
		"          [--pause DIR] [--steady]\n",
		prog);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'k' },
		{ "max", required_argument, NULL, 'M' },
		{ "until-mcast", required_argument, NULL, 'u' },
		{ "len", required_argument, NULL, 'l' },
		{ "compute-ms", required_argument, NULL, 'c' },
		{ "hold", required_argument, NULL, 'H' },
		{ "timing", no_argument, NULL, 't' },
		{ "comms", required_argument, NULL, 'n' },
		{ "allreduce", no_argument, NULL, 'a' },
		{ "pause", required_argument, NULL, 'p' },
		{ "steady", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->count = 20;
	o->len = 1024;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm': o->mode = optarg; break;
		case 's': o->size = int_arg("--size", optarg, 1, 1 << 20); break;
		case 'k': o->count = int_arg("--count", optarg, 0, 1000000); break;
		case 'M': o->max = int_arg("--max", optarg, 1, 1000000); break;
		case 'u':
			o->until_mcast = int_arg("--until-mcast", optarg, 1,
						 1000000);
			break;
		case 'l':
			if (parse_size(optarg, &o->len) || !o->len)
				die("--len: bad size '%s'", optarg);
			break;
		case 'c':
			o->compute_ms = int_arg("--compute-ms", optarg, 0,
						3600000);
			break;
		case 'H': o->hold = optarg; break;
		case 't': o->timing = 1; break;
		case 'n': o->comms = int_arg("--comms", optarg, 1, 64); break;
		case 'a': o->allreduce = 1; break;
		case 'p': o->pause = optarg; break;
		case 'S': o->steady = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (o->until_mcast && !o->max)
		die("--until-mcast needs --max");
}

static void fill(unsigned char *b, size_t len, int i, int root)
{
	size_t j;

	for (j = 0; j < len; j++)
		b[j] = (unsigned char)(i * 31 + root * 7 + (int)j);
}

/* One allreduce whose result every member can check. */
static void allreduce_checked(ibmc_comm_t *comm, int i, struct report *r)
{
	int n = ibmc_comm_size(comm), me = ibmc_comm_rank(comm);
	int64_t in[4], out[4];
	int j, rc;

	for (j = 0; j < 4; j++)
		in[j] = (int64_t)(me + 1) * (i + j + 1);
	rc = ibmc_allreduce(comm, in, out, 4, IBMC_INT64, IBMC_SUM);
	if (rc) {
		fprintf(stderr, "%s: rank %d: allreduce %d: %s\n", prog,
			bs.rank, i, ibmc_strerror(rc));
		r->bad++;
		return;
	}
	for (j = 0; j < 4; j++)
		if (out[j] != (int64_t)n * (n + 1) / 2 * (i + j + 1)) {
			fprintf(stderr, "%s: rank %d: allreduce %d: wrong sum\n",
				prog, bs.rank, i);
			r->bad++;
			return;
		}
	snprintf(r->last_ar, sizeof(r->last_ar), "%s",
		 ibmc_comm_last_algo(comm, "allreduce"));
	if (!i)
		snprintf(r->first_ar, sizeof(r->first_ar), "%s", r->last_ar);
}

/* Broadcasts before the timing starts (--steady). */
static void warm_up(ibmc_comm_t *comm, size_t len)
{
	unsigned char *buf = calloc(1, len);
	int i, rc;

	if (!buf)
		die("out of memory");
	for (i = 0; i < WARM_UP; i++) {
		rc = ibmc_bcast(comm, buf, len, i % ibmc_comm_size(comm));
		if (rc)
			die("warm-up broadcast %d: %s", i, ibmc_strerror(rc));
	}
	free(buf);
}

static int run(ibmc_comm_t *comm, const struct opts *o, struct report *r)
{
	unsigned char *buf = malloc(o->len), *want = malloc(o->len);
	int n = ibmc_comm_size(comm), me = ibmc_comm_rank(comm);
	uint64_t mc_before;
	ibmc_comm_stats_t st;
	uint32_t stop;
	int i, rc, mc;

	if (!buf || !want)
		die("out of memory");
	for (i = 0; o->until_mcast ? i < o->max : i < o->count; i++) {
		int root = i % n;

		fill(want, o->len, i, root);
		if (me == root)
			memcpy(buf, want, o->len);
		else
			memset(buf, 0xee, o->len);
		ibmc_comm_get_stats(comm, &st);
		mc_before = st.mcast_bcasts;
		rc = ibmc_bcast(comm, buf, o->len, root);
		if (rc) {
			fprintf(stderr, "%s: rank %d: broadcast %d: %s\n",
				prog, bs.rank, i, ibmc_strerror(rc));
			r->bad++;
			break;
		}
		if (memcmp(buf, want, o->len)) {
			if (r->bad < 3)
				fprintf(stderr, "%s: rank %d: broadcast %d from %d: wrong bytes\n",
					prog, bs.rank, i, root);
			r->bad++;
		}
		ibmc_comm_get_stats(comm, &st);
		mc = st.mcast_bcasts > mc_before;
		if (i == 0)
			r->first_mcast = mc;
		r->last_mcast = mc;
		if (o->allreduce)
			allreduce_checked(comm, i, r);
		if (!o->until_mcast || i < o->count - 1 || (i + 1) % 8)
			continue;
		/* Enough multicast seen at rank 0 (with --allreduce: the last
		 * allreduce by multicast too)? Everyone stops together. */
		stop = me == 0 && st.mcast_bcasts >= (uint64_t)o->until_mcast &&
		       (!o->allreduce || !strcmp(r->last_ar, "mcast"));
		rc = ibmc_bcast(comm, &stop, sizeof(stop), 0);
		if (rc)
			die("stop flag: %s", ibmc_strerror(rc));
		if (stop)
			break;
	}
	free(buf);
	free(want);
	return 0;
}

int main(int argc, char **argv)
{
	struct report mine, *all = NULL;
	ibmc_comm_attr_t attr = { 0 };
	ibmc_context_t *ctx;
	ibmc_comm_t *comm = NULL, **others = NULL;
	ibmc_comm_stats_t st;
	struct opts o;
	const char *why = NULL;
	double t0 = 0;
	uint64_t m0 = 0;
	int rc, n, r, bad = 0, ready = 0, *ranks;

	parse(argc, argv, &o);
	ctx = check_init();
	n = o.size && o.size < bs.size ? o.size : bs.size;
	ranks = malloc(sizeof(*ranks) * (size_t)n);
	if (!ranks)
		die("out of memory");
	for (r = 0; r < n; r++)
		ranks[r] = r;
	memset(&mine, 0, sizeof(mine));
	mine.member = bs.rank < n;
	attr.mode = o.mode;
	if (o.comms > 1) {
		others = calloc((size_t)o.comms - 1, sizeof(*others));
		if (!others)
			die("out of memory");
		for (r = 0; r < o.comms - 1; r++) {
			rc = ibmc_comm_create_attr(ctx, NULL, bs.size, &attr,
						   &others[r]);
			if (rc)
				die("communicator %d: %s", r,
				    ibmc_strerror(rc));
		}
	}
	if (o.timing)
		m0 = check_model_align(ctx);
	check_sync_all();
	t0 = now();
	if (mine.member) {
		rc = ibmc_comm_create_attr(ctx, ranks, n, &attr, &comm);
		if (rc)
			die("ibmc_comm_create_attr(%s): %s",
			    o.mode ? o.mode : "default", ibmc_strerror(rc));
	}
	if (o.pause)
		check_hold(o.pause, "created", "start");
	if (o.steady) {
		if (mine.member)
			warm_up(comm, o.len);
		if (o.timing)
			m0 = check_model_align(ctx);
		check_sync_all();
		t0 = now();
	}
	if (mine.member) {
		if (o.compute_ms) {
			usleep((useconds_t)o.compute_ms * 1000);
			if (m0)
				ibmc_sim_compute(ctx, (uint64_t)o.compute_ms *
							 1000000);
		}
		run(comm, &o, &mine);
		mine.eff_us = (uint64_t)((now() - t0) * 1e6);
		mine.model_s = check_model_since(ctx, m0);
		mine.state = ibmc_comm_mcast_state(comm, &why);
		snprintf(mine.why, sizeof(mine.why), "%s", why ? why : "");
		ibmc_comm_get_stats(comm, &st);
		mine.bcasts = st.bcasts;
		mine.mcast_bcasts = st.mcast_bcasts;
		mine.tries = st.mtest_tries;
		mine.mtest_us = st.mtest_us;
		mine.switch_us = st.switch_us;
		mine.join_us = st.mtest_join_us;
		mine.allreduces = st.allreduces;
	}
	if (o.hold)
		check_hold(o.hold, "in_use", "go");
	if (comm && (rc = ibmc_comm_free(comm)))
		die("ibmc_comm_free: %s", ibmc_strerror(rc));
	for (r = 0; others && r < o.comms - 1; r++)
		if ((rc = ibmc_comm_free(others[r])))
			die("ibmc_comm_free: %s", ibmc_strerror(rc));
	free(others);
	if (o.hold)
		check_hold(o.hold, "freed", "go2");
	all = calloc((size_t)bs.size, sizeof(*all));
	if (!all || bs.allgather(bs.arg, &mine, all, sizeof(mine)))
		die("gathering the reports failed");
	if (bs.rank == 0) {
		uint64_t eff = 0;
		double model = 0;
		int first_p2p = 0, last_mc = 0, switched = 0, ar_mc = 0;

		for (r = 0; r < n; r++) {
			struct report *p = &all[r];

			printf("rank %d state=%d bcasts=%" PRIu64
			       " mcast_bcasts=%" PRIu64 " first=%s last=%s tries=%"
			       PRIu64 " mtest_us=%" PRIu64 " join_us=%" PRIu64
			       " switch_us=%" PRIu64
			       " allreduces=%" PRIu64 " first_ar=%s last_ar=%s"
			       " why=\"%s\"\n", r,
			       p->state, p->bcasts, p->mcast_bcasts,
			       p->first_mcast ? "mcast" : "p2p",
			       p->last_mcast ? "mcast" : "p2p", p->tries,
			       p->mtest_us, p->join_us, p->switch_us,
			       p->allreduces,
			       p->first_ar[0] ? p->first_ar : "-",
			       p->last_ar[0] ? p->last_ar : "-", p->why);
			bad += p->bad;
			ready += p->state == 0;
			first_p2p += !p->first_mcast;
			last_mc += p->last_mcast;
			switched += p->switch_us > 0;
			ar_mc += !strcmp(p->last_ar, "mcast");
			if (p->eff_us > eff)
				eff = p->eff_us;
			if (p->model_s > model)
				model = p->model_s;
		}
		printf("summary ranks=%d bad=%d ready=%d first_p2p=%d last_mcast=%d switched=%d last_ar_mcast=%d mcast_bcasts0=%" PRIu64 " why0=\"%s\"\n",
		       n, bad, ready, first_p2p, last_mc, switched, ar_mc,
		       all[0].mcast_bcasts, all[0].why);
		if (o.timing)
			printf("timing ranks=%d count=%d eff_us=%" PRIu64
			       " model_us=%.3f\n", n, o.count, eff,
			       model * 1e6);
		fflush(stdout);
	}
	free(all);
	free(ranks);
	rc = ibmc_finalize(ctx);
	if (rc)
		die("ibmc_finalize: %s", ibmc_strerror(rc));
	ibmc_bootstrap_fini(&bs);
	return bad ? 1 : 0;
}
