/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barrier_check - many ibmc_barrier() calls on a communicator over all
 * ranks, each rank recording when it entered and left every barrier on
 * CLOCK_MONOTONIC (every rank of the simulated fabric runs on this host,
 * so the clock is shared). The bootstrap's own allgather, not the library,
 * brings the records to rank 0, which checks max(enter) <= min(leave) for
 * every barrier and that all ranks report the same algorithm; --timing adds
 * latencies and the algorithm's modeled critical path.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ibmcast/ibmcast.h"
#include "ibmcast/sim.h"
#include "tests/libjob/check_util.h"

/* The bootstrap takes at most 1 MiB from one rank: two int64 per barrier. */
#define MAX_ITERS 50000
#define MAX_SKEW_US 1000000
#define NAME_LEN 32
#define SHOW_MAX 3		/* violations printed in full */

struct opts {
	const char *algo;	/* NULL: IBMCAST_BARRIER_ALGO or the default */
	int iters;
	int skew_us;
	int warmup;		/* leading barriers left out of --timing */
	int break_at;		/* -1, or the barrier to fake an exit of */
	int idle_ms;		/* outside the library after the last one */
	bool timing;
	bool quiet;
};

/* One rank's summary, gathered before its records. */
struct report {
	char algo[NAME_LEN];	/* ibmc_comm_last_algo(comm, "barrier") */
	int32_t rc;		/* first failure, 0 when none */
	int32_t done;		/* barriers that returned 0 */
	uint64_t barriers;	/* the communicator's own count */
	uint64_t packets;
	uint64_t pulls;
	uint64_t last_pulls;	/* ... of them in the last barrier */
	uint64_t timeouts;
	/* Modeled ns this rank spent in the timed barriers, back to back
	 * (ibmc_sim_return_ns(3)); 0 off the simulated fabric. */
	uint64_t model_ns;
};

ibmc_bootstrap_t bs;
const char *prog = "barrier_check";

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [--algo NAME] [--iters N] [--skew-us N] [--timing]\n"
		"          [--warmup N] [--quiet] [--break-at I] [--idle-ms N]\n"
		"Runs N (default 200) barriers on a communicator over all ranks.\n"
		"--algo sets the algorithm (nway, nway:1..nway:8, mcast, auto;\n"
		"default: IBMCAST_BARRIER_ALGO, else the library's). --skew-us\n"
		"delays a random quarter of the entries by up to N us. Rank 0\n"
		"checks that no rank left a barrier before the last one entered\n"
		"it and that every rank used the same algorithm. --timing prints\n"
		"the latency of a barrier (last entry to last exit; median, min and\n"
		"90th percentile over the barriers after the first --warmup,\n"
		"default 1), rank 0's time per barrier back to back (loop_us),\n"
		"on the simulated fabric the slowest rank's modeled time per\n"
		"barrier back to back (model_us; --skew-us delays are outside it),\n"
		"and the algorithm's rounds and messages on the critical path.\n"
		"--break-at I tests the check itself: the last rank claims to\n"
		"leave barrier I before the others enter it. --idle-ms sleeps\n"
		"outside the library after the last barrier, before finalizing.\n"
		"Exit 0 when all held, 1 if any did not, 2 on setup errors.\n",
		prog);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "algo", required_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'n' },
		{ "skew-us", required_argument, NULL, 's' },
		{ "timing", no_argument, NULL, 'T' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "break-at", required_argument, NULL, 'B' },
		{ "idle-ms", required_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->iters = 200;
	o->warmup = 1;
	o->break_at = -1;
	while ((c = getopt_long(argc, argv, "a:n:s:Tw:qB:I:h", lo, NULL)) !=
	       -1) {
		switch (c) {
		case 'a':
			o->algo = optarg;
			break;
		case 'n':
			o->iters = int_arg("--iters", optarg, 1, MAX_ITERS);
			break;
		case 's':
			o->skew_us = int_arg("--skew-us", optarg, 0,
					     MAX_SKEW_US);
			break;
		case 'T':
			o->timing = true;
			break;
		case 'w':
			o->warmup = int_arg("--warmup", optarg, 0, MAX_ITERS);
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'B':
			o->break_at = int_arg("--break-at", optarg, 0,
					      MAX_ITERS - 1);
			break;
		case 'I':
			o->idle_ms = int_arg("--idle-ms", optarg, 0, 600000);
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
	if (o->timing && o->warmup >= o->iters)
		die("--timing needs more --iters (%d) than --warmup (%d)",
		    o->iters, o->warmup);
}

/*
 * The algorithm a fixed name must report: "nway:N" comes back with N
 * clamped to 1..P-1 as the library does; "mcast" as is. NULL when the
 * name leaves the choice to the library (auto, nway, none given).
 */
static const char *expected_algo(const char *algo, int p, char *buf,
				 size_t len)
{
	int n, max = p > 1 ? p - 1 : 1;

	if (!algo)
		return NULL;
	if (!strcmp(algo, "mcast"))
		return algo;
	if (sscanf(algo, "nway:%d", &n) == 1) {
		snprintf(buf, len, "nway:%d", n < max ? n : max);
		return buf;
	}
	return NULL;
}

/* ---- the modeled critical path --------------------------------------- */

/* Rounds of the n-way dissemination: ceil(log_{n+1} p). */
static int nway_rounds(int p, int n)
{
	int64_t s = 1;
	int r = 0;

	while (s < p) {
		s *= n + 1;
		r++;
	}
	return r;
}

/* Messages one rank sends in all rounds: n per round, less the peers
 * i (n+1)^r mod p that would be the rank itself (skipped, not sent). */
static int nway_msgs(int p, int n)
{
	int64_t stride = 1;
	int r, i, m = 0, rounds = nway_rounds(p, n);

	for (r = 0; r < rounds; r++, stride *= n + 1)
		for (i = 1; i <= n; i++)
			if ((i * stride) % p)
				m++;
	return m;
}

/* Height of the binomial tree over p ranks: ceil(log2 p). */
static int binomial_depth(int p)
{
	int d = 0;

	while ((1 << d) < p)
		d++;
	return d;
}

/* "rounds=R msgs_per_rank=M critical=..." for the algorithm used. */
static void model(const char *used, int p, char *buf, size_t len)
{
	int n, d;

	if (sscanf(used, "nway:%d", &n) == 1 && n >= 1) {
		d = nway_rounds(p, n);
		snprintf(buf, len, "rounds=%d msgs_per_rank=%d "
			 "critical=%d_rounds_of_%d_parallel_unicasts", d,
			 nway_msgs(p, n), d, n);
	} else if (!strcmp(used, "mcast")) {
		d = binomial_depth(p);
		snprintf(buf, len, "rounds=%d msgs_per_rank=1 "
			 "critical=%d_unicast_arrivals+1_multicast", d + 1, d);
	} else {
		snprintf(buf, len, "rounds=? msgs_per_rank=? critical=?");
	}
}

/* ---- the barriers ------------------------------------------------------ */

static int one_barrier(ibmc_comm_t *comm, int64_t *rec)
{
	int rc;

	rec[0] = now_ns();
	rc = ibmc_barrier(comm);
	rec[1] = now_ns();
	return rc;
}

/*
 * --break-at: proves the check can fail. All ranks meet through the
 * bootstrap first (a channel independent of the barrier under test); the
 * last rank then records its exit as soon as it started the barrier (as a
 * barrier that does not wait would) and completes it; the others enter
 * 50 ms later, after that claimed exit, however slow the host.
 */
static int broken_barrier(ibmc_comm_t *comm, int64_t *rec)
{
	ibmc_request_t *req;
	int rc, sync = 0, *all = calloc((size_t)bs.size, sizeof(int));

	if (!all || bs.allgather(bs.arg, &sync, all, sizeof(sync)))
		die("bootstrap sync failed");
	free(all);
	if (bs.rank != bs.size - 1) {
		usleep(50000);
		return one_barrier(comm, rec);
	}
	rec[0] = now_ns();
	rc = ibmc_ibarrier(comm, &req);
	rec[1] = now_ns();
	return rc ? rc : ibmc_wait(&req);
}

/* ---- checks ------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Barriers some rank left before another entered, among the first done
 * ones. rec is [rank][2 * iter + {0: enter, 1: leave}]. Fills lat[i] (ns)
 * with the last exit minus the last entry, the barrier's own latency with
 * the ranks' skew taken out.
 */
static int violations(const int64_t *rec, int p, int iters, int done,
		      int64_t *lat)
{
	int i, r, bad = 0, in_r, out_r;
	int64_t max_in, min_out, max_out, e, l;

	for (i = 0; i < done; i++) {
		max_in = max_out = INT64_MIN;
		min_out = INT64_MAX;
		in_r = out_r = 0;
		for (r = 0; r < p; r++) {
			e = rec[(size_t)r * 2 * iters + 2 * i];
			l = rec[(size_t)r * 2 * iters + 2 * i + 1];
			if (e > max_in) {
				max_in = e;
				in_r = r;
			}
			if (l < min_out) {
				min_out = l;
				out_r = r;
			}
			if (l > max_out)
				max_out = l;
		}
		lat[i] = max_out - max_in;
		if (max_in <= min_out)
			continue;
		if (++bad <= SHOW_MAX)
			fprintf(stderr, "%s: barrier %d: rank %d left %.1f us "
				"before rank %d entered\n", prog, i, out_r,
				(double)(max_in - min_out) / 1e3, in_r);
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct report me, *all = NULL;
	ibmc_context_t *ctx;
	ibmc_comm_t *comm;
	ibmc_comm_stats_t st;
	int64_t *rec, *allrec = NULL, *lat = NULL;
	int *verdicts;
	unsigned seed;
	char ebuf[NAME_LEN], mbuf[160];
	const char *want, *why = NULL;
	int rc, i, p, done, bad = 0, viol = 0, mism = 0, fails = 0;
	uint64_t model0 = 0, model1 = 0, pulls0 = 0;
	bool model_ok;

	memset(&o, 0, sizeof(o));
	parse_args(argc, argv, &o);
	ctx = check_init();
	comm = check_world(ctx, "barrier", o.algo);
	p = ibmc_comm_size(comm);
	rec = calloc((size_t)o.iters * 2, sizeof(*rec));
	if (!rec)
		die("out of memory");
	if (!o.quiet && bs.rank == 0) {
		rc = ibmc_comm_mcast_state(comm, &why);
		printf("# %d ranks, %d barriers, algo %s, skew %d us; "
		       "multicast %s%s%s\n", p, o.iters,
		       o.algo ? o.algo : "default", o.skew_us,
		       rc ? "unavailable" : "available", rc ? ": " : "",
		       rc ? why : "");
		fflush(stdout);
	}

	/* Start together, so the first barrier does not time the launch. */
	verdicts = calloc((size_t)bs.size, sizeof(*verdicts));
	if (!verdicts)
		die("out of memory");
	if (bs.allgather(bs.arg, &bad, verdicts, sizeof(bad)))
		die("bootstrap barrier failed");
	seed = (unsigned)bs.rank * 2654435761u + 17;
	memset(&me, 0, sizeof(me));
	/* The modeled clock where the timed barriers start: before the
	 * first, or at the return of the last warm-up one. */
	model_ok = o.timing && !ibmc_sim_clock_ns(ctx, &model0);
	for (done = 0; done < o.iters; done++) {
		if (model_ok && done && done == o.warmup)
			model_ok = !ibmc_sim_return_ns(ctx, &model0);
		if (o.skew_us && rand_r(&seed) % 4 == 0)
			usleep((useconds_t)(rand_r(&seed) % o.skew_us));
		/* What the last barrier alone asked again: a test that
		 * drops one of its messages shows the drop landed there. */
		if (done == o.iters - 1 && !ibmc_comm_get_stats(comm, &st))
			pulls0 = st.pulls;
		if (done == o.break_at && bs.size > 1)
			rc = broken_barrier(comm, &rec[2 * done]);
		else
			rc = one_barrier(comm, &rec[2 * done]);
		if (rc) {
			fprintf(stderr, "%s: rank %d: barrier %d: %s\n", prog,
				bs.rank, done, ibmc_strerror(rc));
			me.rc = rc;
			break;
		}
	}
	me.done = done;
	if (model_ok && done == o.iters && !ibmc_sim_return_ns(ctx, &model1))
		me.model_ns = model1 - model0;
	snprintf(me.algo, sizeof(me.algo), "%s",
		 ibmc_comm_last_algo(comm, "barrier"));
	if (!ibmc_comm_get_stats(comm, &st)) {
		me.barriers = st.barriers;
		me.packets = st.packets_sent;
		me.pulls = st.pulls;
		if (done >= o.iters - 1)	/* it entered the last one */
			me.last_pulls = st.pulls - pulls0;
		me.timeouts = st.timeouts;
	}
	/* A program computing outside the library after its last barrier. */
	if (o.idle_ms)
		usleep((useconds_t)o.idle_ms * 1000);
	/*
	 * Finalize before blocking in the bootstrap: the library has no
	 * progress thread, so a rank that left the last barrier answers a
	 * peer's pull for a lost message of it only while it calls the
	 * library, and finalize serves them until all is quiet.
	 */
	ibmc_comm_free(comm);
	rc = ibmc_finalize(ctx);
	if (rc && !me.rc)
		me.rc = rc;

	all = calloc((size_t)bs.size, sizeof(*all));
	allrec = calloc((size_t)bs.size * 2 * o.iters, sizeof(*rec));
	lat = calloc((size_t)o.iters, sizeof(*lat));
	if (!all || !allrec || !lat)
		die("out of memory");
	rc = bs.allgather(bs.arg, &me, all, sizeof(me));
	if (!rc)
		rc = bs.allgather(bs.arg, rec, allrec,
				  sizeof(*rec) * 2 * (size_t)o.iters);
	if (rc)
		die("gathering the records: %s", ibmc_strerror(rc));

	if (bs.rank == 0) {
		uint64_t packets = 0, pulls = 0, last_pulls = 0, timeouts = 0;
		uint64_t model_max = 0;
		bool modeled = true;
		int mindone = o.iters;

		want = expected_algo(o.algo, p, ebuf, sizeof(ebuf));
		for (i = 0; i < bs.size; i++) {
			if (all[i].done < mindone)
				mindone = all[i].done;
			if (all[i].rc) {
				fails++;
				if (all[i].done < o.iters)
					fprintf(stderr, "%s: rank %d failed "
						"barrier %d: %s\n", prog, i,
						all[i].done,
						ibmc_strerror(all[i].rc));
				else
					fprintf(stderr, "%s: rank %d: "
						"ibmc_finalize: %s\n", prog, i,
						ibmc_strerror(all[i].rc));
			} else if (all[i].barriers != (uint64_t)o.iters) {
				fails++;
				fprintf(stderr, "%s: rank %d: its communicator "
					"counted %" PRIu64 " barriers, not %d\n",
					prog, i, all[i].barriers, o.iters);
			}
			if (strcmp(all[i].algo, all[0].algo) ||
			    (want && strcmp(all[i].algo, want))) {
				if (++mism <= SHOW_MAX)
					fprintf(stderr, "%s: rank %d used %s, "
						"rank 0 %s%s%s\n", prog, i,
						all[i].algo, all[0].algo,
						want ? ", expected " : "",
						want ? want : "");
			}
			if (!all[i].model_ns)
				modeled = false;
			else if (all[i].model_ns > model_max)
				model_max = all[i].model_ns;
			packets += all[i].packets;
			pulls += all[i].pulls;
			last_pulls += all[i].last_pulls;
			timeouts += all[i].timeouts;
		}
		viol = violations(allrec, bs.size, o.iters, mindone, lat);
		if (viol)
			fprintf(stderr, "%s: %d of %d barriers let a rank leave "
				"before the last one entered (max(enter) > "
				"min(leave))\n", prog, viol, mindone);
		bad = viol || mism || fails;
		model(all[0].algo, p, mbuf, sizeof(mbuf));
		printf("result ranks=%d algo=%s used=%s barriers=%d checked=%d "
		       "violations=%d algo_mismatches=%d failed_ranks=%d "
		       "verdict=%s\n", p, o.algo ? o.algo : "default",
		       all[0].algo, o.iters, mindone, viol, mism, fails,
		       bad ? "FAIL" : "ok");
		printf("stats packets=%" PRIu64 " packets_per_barrier=%.1f "
		       "pulls=%" PRIu64 " last_pulls=%" PRIu64
		       " timeouts=%" PRIu64 "\n", packets,
		       (double)packets / o.iters, pulls, last_pulls, timeouts);
		if (o.timing && mindone > o.warmup) {
			int n = mindone - o.warmup;
			int64_t *s = lat + o.warmup;
			/* rank 0's time per barrier, back to back */
			double loop = (double)(rec[2 * mindone - 1] -
					       rec[2 * o.warmup]) / n;

			qsort(s, (size_t)n, sizeof(*s), cmp_i64);
			printf("time ranks=%d used=%s iters=%d median_us=%.1f "
			       "min_us=%.1f p90_us=%.1f loop_us=%.1f", p,
			       all[0].algo, n,
			       (n % 2 ? (double)s[n / 2] :
				(double)(s[n / 2 - 1] + s[n / 2]) / 2) / 1e3,
			       (double)s[0] / 1e3, (double)s[n * 9 / 10] / 1e3,
			       loop / 1e3);
			/* the slowest rank's modeled time per barrier */
			if (modeled && mindone == o.iters)
				printf(" model_us=%.3f",
				       (double)model_max / n / 1e3);
			printf(" %s\n", mbuf);
		}
		fflush(stdout);
	}
	/* Everyone learns rank 0's verdict: no rank exits 0 on a failure. */
	rc = bs.allgather(bs.arg, &bad, verdicts, sizeof(bad));
	if (rc)
		die("sharing the verdict: %s", ibmc_strerror(rc));
	bad = verdicts[0];

	ibmc_bootstrap_fini(&bs);
	free(all);
	free(allrec);
	free(lat);
	free(rec);
	free(verdicts);
	return bad ? 1 : 0;
}
