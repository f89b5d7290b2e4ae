/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bcast_skew - the process-skew benchmark of seed 001 (section 7.3, Figs.
 * 7-8): how long each rank spends inside ibmc_bcast when the members call
 * it at random times after a barrier. Run it under ibmcast-run(1); driven by
 * tests/bench/bcast_skew.sh. Public API only.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ibmcast/ibmcast.h"
#include "ibmcast/sim.h"
#include "tests/libjob/check_util.h"

#define MAX_SIZES 16
#define MAX_SKEWS 16

struct opts {
	size_t sizes[MAX_SIZES];
	int nsizes;
	double skew_x[MAX_SKEWS];	/* average skews, in units of base */
	int nskews;
	double base_us[MAX_SIZES];	/* per size; auto: measured */
	bool base_auto;
	int iters;
	int warmup;
	int root;			/* -1: rotate */
	uint64_t seed;
	const char *algo;
};

/* One (size, skew) point as one rank saw it: what rank 0 gathers. */
struct point {
	double in_all;		/* seconds inside ibmc_bcast, every call */
	double in_root;		/* ... of the calls as root */
	double in_member;	/* ... of the calls as non-root */
	double delay;		/* seconds from the barrier to the call */
	double longest;		/* the longest call */
	double model_all;	/* modeled seconds inside ibmc_bcast, every
				 * call (the simulated fabric; the skew is
				 * declared with ibmc_sim_compute) */
	uint32_t n_root, n_member, bad, mcast;
	/* the communicator's counters over the point: what the protocol
	 * had to recover, to tell it from the machine's scheduling */
	uint32_t retransmits, repairs, timeouts, pulls;
};

ibmc_bootstrap_t bs;
const char *prog = "bcast_skew";

/*
 * Sleeps until the absolute monotonic time t. The paper's ranks compute
 * through their skew; here 16 to 32 ranks share two cores, so a busy rank
 * would steal the CPU the others need to broadcast and the measurement
 * would show the machine, not the library.
 */
static void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* splitmix64 seeds xorshift64*: per rank, reproducible, and the same draws
 * in every configuration, so the three are compared on the same skews. */
static uint64_t rng_state;

static void rng_seed(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	rng_state = (z ^ (z >> 31)) | 1;
}

static double rng_uniform(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) *
	       (1.0 / 9007199254740992.0);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [--sizes LIST] [--skew-x LIST] [--base-us LIST|auto]\n"
		"          [--iters N] [--warmup N] [--root R] [--seed N] [--algo NAME]\n"
		"Per iteration: ibmc_barrier, then every non-root rank sleeps a\n"
		"skew drawn uniformly from [0, max] (seeded per rank), then all call\n"
		"ibmc_bcast; each rank times its call. The average skew (the expected\n"
		"distance between two non-root ranks' skews, max/3 as in seed 001)\n"
		"of a point is its --skew-x factor times the size's --base-us. auto:\n"
		"the first factor must be 0 and that point's average root time is\n"
		"the base (run it with IBMCAST_BCAST_SYNC=1 for the time a broadcast\n"
		"takes to reach everyone). --root -1 (default) rotates the root.\n"
		"Rank 0 prints one 'point' line per size and skew. Exit 0 when every\n"
		"broadcast delivered the root's bytes, 1 if not, 2 on setup errors.\n",
		prog);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "skew-x", required_argument, NULL, 'x' },
		{ "base-us", required_argument, NULL, 'b' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "root", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "algo", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, nbase = 0;

	o->sizes[0] = 2;
	o->nsizes = 1;
	o->skew_x[0] = 0;
	o->nskews = 1;
	o->iters = 50;
	o->warmup = 5;
	o->root = -1;
	o->seed = 1;
	while ((c = getopt_long(argc, argv, "s:x:b:n:w:r:S:a:h", lo,
				NULL)) != -1) {
		switch (c) {
		case 's':
			o->nsizes = size_list_arg("--sizes", optarg, o->sizes,
						  MAX_SIZES);
			break;
		case 'x':
			o->nskews = double_list_arg("--skew-x", optarg, o->skew_x,
						    MAX_SKEWS);
			break;
		case 'b':
			o->base_auto = !strcmp(optarg, "auto");
			if (!o->base_auto)
				nbase = double_list_arg("--base-us", optarg,
							 o->base_us, MAX_SIZES);
			break;
		case 'n':
			o->iters = int_arg("--iters", optarg, 1, INT_MAX);
			break;
		case 'w':
			o->warmup = int_arg("--warmup", optarg, 0, INT_MAX);
			break;
		case 'r':
			o->root = int_arg("--root", optarg, -1, INT_MAX);
			break;
		case 'S':
			o->seed = strtoull(optarg, NULL, 0);
			break;
		case 'a':
			o->algo = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (o->base_auto && o->skew_x[0] != 0)
		die("--base-us auto: the first --skew-x must be 0");
	if (!o->base_auto) {
		bool skewed = false;

		for (c = 0; c < o->nskews; c++)
			skewed |= o->skew_x[c] > 0;
		if (skewed && nbase != o->nsizes)
			die("--base-us: one value per size (%d), or auto",
			    o->nsizes);
	}
}

/* The root's bytes for one broadcast; differs per size and iteration. */
static inline uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(seed + i * 131u + (i >> 8) * 7u);
}

static uint32_t seed_of(size_t len, int it)
{
	return (uint32_t)len * 2654435761u ^ (uint32_t)it * 40503u;
}

/* Untimed broadcasts: the data plane reads a new group's MFTs within its
 * staleness bound, and a first multicast sent before that reaches nobody;
 * steady state is what is measured. */
static void warm_up(ibmc_comm_t *comm, uint8_t *buf, size_t len, int n)
{
	int i, rc;

	for (i = 0; i < n; i++) {
		rc = ibmc_bcast(comm, buf, len, 0);
		if (rc)
			die("warm-up broadcast of %zu B: %s", len,
			    ibmc_strerror(rc));
	}
	rc = ibmc_barrier(comm);
	if (rc)
		die("ibmc_barrier: %s", ibmc_strerror(rc));
}

/* One point: o->iters skewed broadcasts of len bytes. */
static void run_point(ibmc_context_t *ctx, ibmc_comm_t *comm,
		      const struct opts *o, uint8_t *buf, size_t len,
		      double max_skew, int base_it, struct point *p)
{
	int n = ibmc_comm_size(comm), me = ibmc_comm_rank(comm);
	int it, root, rc;
	double d, t0, t1, tb;
	uint64_t m0;
	ibmc_comm_stats_t st0, st1;
	uint32_t seed;
	size_t i;

	memset(p, 0, sizeof(*p));
	ibmc_comm_get_stats(comm, &st0);
	for (it = 0; it < o->iters; it++) {
		root = o->root >= 0 ? o->root % n : (base_it + it) % n;
		seed = seed_of(len, base_it + it);
		/* Every rank draws every time, so the sequence does not
		 * depend on when a rank is the root. */
		d = rng_uniform() * max_skew;
		if (me == root)
			for (i = 0; i < len; i++)
				buf[i] = pattern(seed, i);
		else
			memset(buf, (int)(~seed & 255), len);
		rc = ibmc_barrier(comm);
		if (rc)
			die("ibmc_barrier: %s", ibmc_strerror(rc));
		/* Modeled time: from a common start, a skewed rank enters
		 * d later, declared as computation (ibmc_sim_compute(3)). */
		m0 = check_model_align(ctx);
		if (m0 && me != root && d > 0 &&
		    ibmc_sim_compute(ctx, (uint64_t)(d * 1e9)))
			die("ibmc_sim_compute failed");
		tb = now();
		if (me != root && d > 0)
			sleep_until(tb + d);
		t0 = now();
		rc = ibmc_bcast(comm, buf, len, root);
		t1 = now();
		if (m0)
			p->model_all += check_model_since(ctx, m0) -
					(me != root ? d : 0);
		if (!strcmp(ibmc_comm_last_bcast_algo(comm), "mcast"))
			p->mcast++;
		p->in_all += t1 - t0;
		if (t1 - t0 > p->longest)
			p->longest = t1 - t0;
		if (me == root) {
			p->in_root += t1 - t0;
			p->n_root++;
		} else {
			p->in_member += t1 - t0;
			p->delay += t0 - tb;
			p->n_member++;
		}
		if (rc) {
			fprintf(stderr, "%s: rank %d: size %zu root %d "
				"iteration %d: ibmc_bcast: %s\n", prog, me,
				len, root, it, ibmc_strerror(rc));
			p->bad++;
			continue;
		}
		for (i = 0; i < len; i++)
			if (buf[i] != pattern(seed, i))
				break;
		if (i < len) {
			fprintf(stderr, "%s: rank %d: size %zu root %d "
				"iteration %d: byte %zu is wrong\n", prog, me,
				len, root, it, i);
			p->bad++;
		}
	}
	ibmc_comm_get_stats(comm, &st1);
	p->retransmits = (uint32_t)(st1.retransmits - st0.retransmits);
	p->repairs = (uint32_t)(st1.repairs - st0.repairs);
	p->timeouts = (uint32_t)(st1.timeouts - st0.timeouts);
	p->pulls = (uint32_t)(st1.pulls - st0.pulls);
}

/* Sums every rank's view of a point (all ranks get the same sums). */
static void gather(const struct point *mine, struct point *all,
		   struct point *sum)
{
	int k, rc;

	rc = bs.allgather(bs.arg, mine, all, sizeof(*mine));
	if (rc)
		die("gathering the times: %s", ibmc_strerror(rc));
	memset(sum, 0, sizeof(*sum));
	for (k = 0; k < bs.size; k++) {
		sum->in_all += all[k].in_all;
		sum->in_root += all[k].in_root;
		sum->in_member += all[k].in_member;
		sum->delay += all[k].delay;
		sum->model_all += all[k].model_all;
		if (all[k].longest > sum->longest)
			sum->longest = all[k].longest;
		sum->n_root += all[k].n_root;
		sum->n_member += all[k].n_member;
		sum->bad += all[k].bad;
		sum->mcast += all[k].mcast;
		sum->retransmits += all[k].retransmits;
		sum->repairs += all[k].repairs;
		sum->timeouts += all[k].timeouts;
		sum->pulls += all[k].pulls;
	}
}

int main(int argc, char **argv)
{
	struct point mine, s, *all;
	ibmc_context_t *ctx;
	ibmc_comm_t *comm;
	struct opts o;
	const char *why = NULL, *sync;
	size_t maxlen = 1;
	uint8_t *buf;
	uint64_t bad = 0;
	double avg, calls;
	int rc, si, k, n, it = 0;

	memset(&o, 0, sizeof(o));
	parse_args(argc, argv, &o);
	ctx = check_init();
	comm = check_world(ctx, "bcast", o.algo);
	n = ibmc_comm_size(comm);
	for (si = 0; si < o.nsizes; si++)
		if (o.sizes[si] > maxlen)
			maxlen = o.sizes[si];
	buf = malloc(maxlen);
	all = calloc((size_t)bs.size, sizeof(*all));
	if (!buf || !all)
		die("out of memory");
	rng_seed(o.seed ^ ((uint64_t)bs.rank << 32));
	sync = getenv("IBMCAST_BCAST_SYNC");
	if (bs.rank == 0) {
		rc = ibmc_comm_mcast_state(comm, &why);
		printf("# %d ranks, algo %s, return %s, %d iterations per "
		       "point; multicast %s%s%s\n", n, o.algo ? o.algo : "auto",
		       sync && !strcmp(sync, "1") ? "synchronizing" : "early",
		       o.iters, rc ? "unavailable" : "available",
		       rc ? ": " : "", rc ? why : "");
		fflush(stdout);
	}

	for (si = 0; si < o.nsizes; si++) {
		warm_up(comm, buf, o.sizes[si], o.warmup);
		for (k = 0; k < o.nskews; k++) {
			/* max/3 is the expected distance between two
			 * uniform draws from [0, max]: seed 001's
			 * "average skew" */
			avg = o.skew_x[k] * o.base_us[si] * 1e-6;
			run_point(ctx, comm, &o, buf, o.sizes[si], 3 * avg,
				  it, &mine);
			it += o.iters;
			gather(&mine, all, &s);
			bad += s.bad;
			if (o.base_auto && k == 0)
				o.base_us[si] = s.n_root ?
					s.in_root / s.n_root * 1e6 : 0;
			calls = (double)s.n_root + s.n_member;
			if (bs.rank == 0) {
				if (o.base_auto && k == 0)
					printf("base size=%zu us=%.1f\n",
					       o.sizes[si], o.base_us[si]);
				printf("point size=%zu skew_x=%g "
				       "avg_skew_us=%.1f max_skew_us=%.1f "
				       "iters=%d all_us=%.1f root_us=%.1f "
				       "member_us=%.1f delay_us=%.1f "
				       "longest_us=%.1f algo=%s mcast=%u "
				       "calls=%.0f bad=%u retransmits=%u "
				       "repairs=%u timeouts=%u pulls=%u "
				       "model_all_us=%.3f\n",
				       o.sizes[si], o.skew_x[k], avg * 1e6,
				       3 * avg * 1e6, o.iters,
				       s.in_all / calls * 1e6,
				       s.n_root ? s.in_root / s.n_root * 1e6 : 0,
				       s.n_member ?
					s.in_member / s.n_member * 1e6 : 0,
				       s.n_member ? s.delay / s.n_member * 1e6 :
						    0,
				       s.longest * 1e6,
				       ibmc_comm_last_bcast_algo(comm),
				       s.mcast, calls, s.bad, s.retransmits,
				       s.repairs, s.timeouts, s.pulls,
				       s.model_all / calls * 1e6);
				fflush(stdout);
			}
		}
	}
	if (bs.rank == 0) {
		printf("result ranks=%d bad=%" PRIu64 "\n", n, bad);
		fflush(stdout);
	}

	ibmc_comm_free(comm);
	ibmc_finalize(ctx);
	ibmc_bootstrap_fini(&bs);
	free(all);
	free(buf);
	return bad ? 1 : 0;
}
