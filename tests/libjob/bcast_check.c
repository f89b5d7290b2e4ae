/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bcast_check - broadcast from every root for a list of sizes, on one or
 * more communicators at once (one thread each), and verify every byte.
 * Uses only the public API; ranks come from ibmc_bootstrap_default() (run it
 * with ibmcast-run(1) or srun --mpi=pmi2). The bootstrap's own allgather
 * (not the library) gathers the verdicts, so a broken library cannot hide
 * its failures.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ibmcast/ibmcast.h"
#include "tests/libjob/check_util.h"
#include "ibmcast/sim.h"

#define MAX_SIZES 64
#define MAX_COMMS 16
#define MAX_ROOTS 4096

struct opts {
	size_t sizes[MAX_SIZES];
	int nsizes;
	int *roots;		/* NULL: every root */
	int nroots;
	int ncomms;
	bool halves;		/* also two half communicators */
	const char *algo;
	int reps;
	bool tap;
	bool timing;
	const char *expect;	/* "mcast", "p2p" or NULL */
	bool quiet;
};

/* One communicator's work, run by its own thread. */
struct job {
	int index;
	ibmc_comm_t *comm;
	const struct opts *o;
	int world_rank;
	uint64_t ok, bad, mcast, p2p, unexpected;
	double *times;		/* per size: sum of this rank's seconds */
	ibmc_comm_stats_t st0, st;	/* before and after the broadcasts */
};

ibmc_bootstrap_t bs;
static ibmc_context_t *the_ctx;
static bool modeled;		/* the transport keeps a modeled clock */
const char *prog = "bcast_check";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [--sizes LIST] [--roots all|LIST] [--comms N] [--halves]\n"
		"          [--algo NAME] [--reps N] [--expect mcast|p2p] [--tap]\n"
		"          [--timing] [--quiet]\n"
		"Broadcasts from every root (or LIST) each size of LIST (default\n"
		"1,2,100,4095,4096,4097,65536,1M; K and M suffixes) on N communicators\n"
		"over all ranks at once (one thread each; --halves adds one over each\n"
		"half of the ranks), verifying every byte. --algo sets the algorithm\n"
		"(auto, mcast, binomial, postal, shm_mcast); --expect checks whether\n"
		"broadcasts went by multicast.\n"
		"--timing prints per-size completion times (all ranks start together;\n"
		"end = the last rank's return), in wall time and, on the simulated\n"
		"fabric, in modeled time (ibmc_sim_clock_ns(3): every rank's clock is\n"
		"moved to a common start first, after every rank settled the\n"
		"last broadcast; with --halves the two halves broadcast at\n"
		"once, each on its own communicator, and the modeled time of the\n"
		"half done first (median) and of the other (least and median)\n"
		"is printed too). The \"stats\" line sums every rank's counters;\n"
		"its senders= counts the members (of each communicator) that sent\n"
		"any packet during the broadcasts. Exit 0 when every broadcast\n"
		"on every rank was correct, 1 if any was not, 2 on setup errors.\n",
		prog);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "roots", required_argument, NULL, 'r' },
		{ "comms", required_argument, NULL, 'c' },
		{ "halves", no_argument, NULL, 'H' },
		{ "algo", required_argument, NULL, 'a' },
		{ "reps", required_argument, NULL, 'n' },
		{ "expect", required_argument, NULL, 'e' },
		{ "tap", no_argument, NULL, 't' },
		{ "timing", no_argument, NULL, 'T' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *defsizes[] = { "1", "2", "100", "4095", "4096",
					  "4097", "65536", "1M" };
	int c;

	o->ncomms = 1;
	o->reps = 1;
	o->algo = NULL;
	for (c = 0; c < 8; c++)
		parse_size(defsizes[c], &o->sizes[c]);
	o->nsizes = 8;
	while ((c = getopt_long(argc, argv, "s:r:c:Ha:n:e:tTqh", lo,
				NULL)) != -1) {
		switch (c) {
		case 's':
			o->nsizes = size_list_arg("--sizes", optarg, o->sizes,
						  MAX_SIZES);
			break;
		case 'r':
			free(o->roots);
			o->roots = NULL;
			o->nroots = 0;
			if (!strcmp(optarg, "all"))
				break;
			o->roots = malloc(MAX_ROOTS * sizeof(int));
			if (!o->roots)
				die("out of memory");
			o->nroots = int_list_arg("--roots", optarg, o->roots,
						  MAX_ROOTS, 0, INT_MAX);
			break;
		case 'c':
			o->ncomms = int_arg("--comms", optarg, 1, MAX_COMMS);
			break;
		case 'H':
			o->halves = true;
			break;
		case 'a':
			o->algo = optarg;
			break;
		case 'n':
			o->reps = int_arg("--reps", optarg, 1, INT_MAX);
			break;
		case 'e':
			if (strcmp(optarg, "mcast") && strcmp(optarg, "p2p"))
				die("--expect: mcast or p2p");
			o->expect = optarg;
			break;
		case 't':
			o->tap = true;
			break;
		case 'T':
			o->timing = true;
			break;
		case 'q':
			o->quiet = true;
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
}

/* The byte pattern of one broadcast: differs per communicator, root, size
 * and repetition, and along the buffer (so a misplaced fragment shows). */
static uint32_t seed_of(int comm, int root, size_t len, int rep)
{
	uint32_t h = 2166136261u;

	h = (h ^ (uint32_t)comm) * 16777619u;
	h = (h ^ (uint32_t)root) * 16777619u;
	h = (h ^ (uint32_t)len) * 16777619u;
	h = (h ^ (uint32_t)rep) * 16777619u;
	return h;
}

static inline uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(seed + i * 131u + (i >> 8) * 7u + (i >> 16) * 3u);
}

static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(seed, i);
}

/* First wrong byte or -1. */
static long check(const uint8_t *buf, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pattern(seed, i))
			return (long)i;
	return -1;
}

/* One broadcast on j's communicator; returns 0 when correct. */
static int one(struct job *j, uint8_t *buf, int root, int si, int rep,
	       double *secs)
{
	const struct opts *o = j->o;
	size_t len = o->sizes[si];
	int me = ibmc_comm_rank(j->comm);
	uint32_t seed = seed_of(j->index, root, len, rep);
	ibmc_comm_stats_t st0, st1;
	const char *algo;
	double t0;
	long bad;
	int rc, mc;

	if (me == root)
		fill(buf, len, seed);
	else
		memset(buf, (int)(~seed & 255), len);
	ibmc_comm_get_stats(j->comm, &st0);
	t0 = now();
	rc = ibmc_bcast(j->comm, buf, len, root);
	*secs = now() - t0;
	ibmc_comm_get_stats(j->comm, &st1);
	algo = ibmc_comm_last_bcast_algo(j->comm);
	/* Multicast or not by the counter: "shm_mcast" counts what its
	 * node leaders ran on every rank. */
	mc = st1.mcast_bcasts > st0.mcast_bcasts;
	if (mc)
		j->mcast++;
	else
		j->p2p++;
	if (o->expect && rc == 0 && (strcmp(o->expect, "mcast") != 0) == mc) {
		j->unexpected++;
		if (j->unexpected <= 3)
			fprintf(stderr, "%s: rank %d: comm %d root %d size "
				"%zu: algorithm %s, expected %s\n", prog,
				j->world_rank, j->index, root, len, algo,
				o->expect);
	}
	if (rc) {
		fprintf(stderr, "%s: rank %d: comm %d root %d size %zu rep %d: "
			"ibmc_bcast: %s\n", prog, j->world_rank, j->index, root,
			len, rep, ibmc_strerror(rc));
		return -1;
	}
	bad = check(buf, len, seed);
	if (bad >= 0) {
		fprintf(stderr, "%s: rank %d: comm %d root %d size %zu rep %d "
			"(%s): byte %ld is 0x%02x, not 0x%02x\n", prog,
			j->world_rank, j->index, root, len, rep, algo, bad,
			buf[bad], pattern(seed, (size_t)bad));
		return -1;
	}
	return 0;
}

static void *run_comm(void *arg)
{
	struct job *j = arg;
	const struct opts *o = j->o;
	int n = ibmc_comm_size(j->comm), si, ri, rep, root, nr;
	size_t maxlen = 1;
	double secs;
	uint8_t *buf;

	for (si = 0; si < o->nsizes; si++)
		if (o->sizes[si] > maxlen)
			maxlen = o->sizes[si];
	buf = malloc(maxlen);
	if (!buf) {
		j->bad++;
		return NULL;
	}
	ibmc_comm_get_stats(j->comm, &j->st0);
	nr = o->roots ? o->nroots : n;
	for (si = 0; si < o->nsizes; si++)
		for (rep = 0; rep < o->reps; rep++)
			for (ri = 0; ri < nr; ri++) {
				root = o->roots ? o->roots[ri] % n : ri;
				if (one(j, buf, root, si, rep, &secs))
					j->bad++;
				else
					j->ok++;
				j->times[si] += secs;
			}
	free(buf);
	ibmc_comm_get_stats(j->comm, &j->st);
	return NULL;
}

/* Timing mode: each broadcast starts after a bootstrap barrier, so all
 * ranks start together; completion = the last rank's end, on the machine's
 * one monotonic clock (every rank of the simulated fabric runs here). */
/* Modeled time: the common start of every rank (check_util.h). */
static uint64_t model_align(void)
{
	return modeled ? check_model_align(the_ctx) : 0;
}

static void sort(double *v, int n)
{
	int k, i;
	double t;

	for (k = 1; k < n; k++)
		for (i = k; i > 0 && v[i - 1] > v[i]; i--) {
			t = v[i];
			v[i] = v[i - 1];
			v[i - 1] = t;
		}
}

static double median(const double *v, int n)
{
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double *model_med, *model_max, *model_first, *model_min;
/* --halves, per size: the median over repetitions of the half that
 * finished first, and the least and the median of the one that finished
 * later (which half that is, is real time's choice in each repetition). */
static double *model_half_first, *model_half_later_min, *model_half_later;

static int run_timed(struct job *j, double *cmpl_med, double *cmpl_max)
{
	const struct opts *o = j->o;
	int n = ibmc_comm_size(j->comm), si, rep, k, root, bad = 0;
	double secs, mine[3], *all, *samples, *msamp, *mfirst, t, t0, t1, m;
	double *hsamp[2], *hearly, *hlate;
	uint64_t mt0;
	size_t maxlen = 1;
	uint8_t *buf;

	for (si = 0; si < o->nsizes; si++)
		if (o->sizes[si] > maxlen)
			maxlen = o->sizes[si];
	buf = malloc(maxlen);
	all = malloc(sizeof(double) * 3 * (size_t)bs.size);
	samples = malloc(sizeof(double) * (size_t)o->reps);
	msamp = malloc(sizeof(double) * (size_t)o->reps);
	mfirst = malloc(sizeof(double) * (size_t)o->reps);
	hsamp[0] = calloc((size_t)o->reps, sizeof(double));
	hsamp[1] = calloc((size_t)o->reps, sizeof(double));
	hearly = calloc((size_t)o->reps, sizeof(double));
	hlate = calloc((size_t)o->reps, sizeof(double));
	if (!buf || !all || !samples || !msamp || !mfirst || !hsamp[0] ||
	    !hsamp[1] || !hearly || !hlate)
		die("out of memory");
	ibmc_comm_get_stats(j->comm, &j->st0);
	for (si = 0; si < o->nsizes; si++) {
		for (rep = 0; rep < o->reps; rep++) {
			root = o->roots ? o->roots[rep % o->nroots] % n :
					  rep % n;
			if (bs.allgather(bs.arg, mine, all, sizeof(mine)))
				die("bootstrap barrier failed");
			mt0 = model_align();
			mine[0] = now();
			if (one(j, buf, root, si, rep, &secs))
				bad++;
			else
				j->ok++;
			mine[1] = now();
			mine[2] = 0;
			/* at the return: what the progress thread takes
			 * in afterwards is not this broadcast's time */
			if (modeled)
				mine[2] = check_model_since(the_ctx, mt0);
			if (bs.allgather(bs.arg, mine, all, sizeof(mine)))
				die("bootstrap allgather failed");
			/* from the first start to the last end */
			t0 = all[0];
			t1 = all[1];
			m = mfirst[rep] = all[2];
			hsamp[0][rep] = hsamp[1][rep] = 0;
			for (k = 0; k < bs.size; k++) {
				/* the halves: the first bs.size / 2 ranks */
				int hf = k >= bs.size / 2;

				if (all[3 * k + 2] > hsamp[hf][rep])
					hsamp[hf][rep] = all[3 * k + 2];
			}
			hearly[rep] = hsamp[0][rep] < hsamp[1][rep] ?
					      hsamp[0][rep] : hsamp[1][rep];
			hlate[rep] = hsamp[0][rep] < hsamp[1][rep] ?
					     hsamp[1][rep] : hsamp[0][rep];
			for (k = 1; k < bs.size; k++) {
				if (all[3 * k] < t0)
					t0 = all[3 * k];
				if (all[3 * k + 1] > t1)
					t1 = all[3 * k + 1];
				if (all[3 * k + 2] > m)
					m = all[3 * k + 2];
				if (all[3 * k + 2] < mfirst[rep])
					mfirst[rep] = all[3 * k + 2];
			}
			t = t1 - t0;
			samples[rep] = t;
			/* modeled: from the common start to the last end */
			msamp[rep] = m;
		}
		/* median and max of the repetitions */
		sort(samples, o->reps);
		sort(msamp, o->reps);
		sort(mfirst, o->reps);
		cmpl_med[si] = median(samples, o->reps);
		cmpl_max[si] = samples[o->reps - 1];
		model_med[si] = median(msamp, o->reps);
		model_max[si] = msamp[o->reps - 1];
		model_min[si] = msamp[0];
		model_first[si] = median(mfirst, o->reps);
		if (o->halves) {
			sort(hearly, o->reps);
			sort(hlate, o->reps);
			model_half_first[si] = median(hearly, o->reps);
			model_half_later_min[si] = hlate[0];
			model_half_later[si] = median(hlate, o->reps);
		}
	}
	free(msamp);
	free(mfirst);
	free(hsamp[0]);
	free(hsamp[1]);
	free(hearly);
	free(hlate);
	j->bad += (uint64_t)bad;
	ibmc_comm_get_stats(j->comm, &j->st);
	free(samples);
	free(all);
	free(buf);
	return bad;
}

/* What each rank reports to rank 0 through the bootstrap. */
struct verdict {
	uint64_t ok, bad, mcast, p2p, unexpected;
	uint64_t packets, bytes, retransmits, repairs, timeouts, duplicates;
	/* members (of each communicator) that sent any packet during the
	 * broadcasts: with the node-leader layout, the leaders alone */
	uint64_t senders;
};

int main(int argc, char **argv)
{
	struct opts o;
	struct job jobs[MAX_COMMS + 2];
	pthread_t th[MAX_COMMS + 2];
	ibmc_context_t *ctx;
	struct verdict v = { 0 }, *all;
	int rc, i, k, nj, n, *half = NULL, nhalf = 0, timed = 0;
	double *med = NULL, *max = NULL, t0;

	memset(&o, 0, sizeof(o));
	parse_args(argc, argv, &o);
	ctx = check_init();
	the_ctx = ctx;
	n = ibmc_context_size(ctx);
	t0 = now();

	nj = 0;
	for (i = 0; i < o.ncomms; i++, nj++) {
		memset(&jobs[nj], 0, sizeof(jobs[nj]));
		rc = ibmc_comm_create(ctx, NULL, 0, &jobs[nj].comm);
		if (rc)
			die("ibmc_comm_create %d: %s", i, ibmc_strerror(rc));
	}
	if (o.halves && n >= 2) {
		/* ranks of my half: the first n/2, or the rest */
		int first = bs.rank < n / 2, lo = first ? 0 : n / 2;
		int hi = first ? n / 2 : n;

		half = malloc(sizeof(int) * (size_t)n);
		if (!half)
			die("out of memory");
		for (k = lo; k < hi; k++)
			half[nhalf++] = k;
		memset(&jobs[nj], 0, sizeof(jobs[nj]));
		rc = ibmc_comm_create(ctx, half, nhalf, &jobs[nj].comm);
		if (rc)
			die("ibmc_comm_create (half): %s", ibmc_strerror(rc));
		nj++;
	}
	for (i = 0; i < nj; i++) {
		/* the half communicators get one index: their members never
		 * meet, and the pattern only needs to differ per comm */
		jobs[i].index = i;
		jobs[i].o = &o;
		jobs[i].world_rank = bs.rank;
		jobs[i].times = calloc((size_t)o.nsizes, sizeof(double));
		if (!jobs[i].times)
			die("out of memory");
		if (o.algo) {
			rc = ibmc_comm_set_bcast_algo(jobs[i].comm, o.algo);
			if (rc)
				die("--algo %s: %s", o.algo, ibmc_strerror(rc));
		}
	}
	if (!o.quiet && bs.rank == 0) {
		const char *why = NULL;

		rc = ibmc_comm_mcast_state(jobs[0].comm, &why);
		printf("# %d ranks, %d communicator%s%s, %d sizes, %s roots, "
		       "algo %s; multicast %s%s%s\n", n, nj, nj > 1 ? "s" : "",
		       o.halves ? " (with halves)" : "", o.nsizes,
		       o.roots ? "some" : "all", o.algo ? o.algo : "default",
		       rc ? "unavailable" : "available", rc ? ": " : "",
		       rc ? why : "");
		fflush(stdout);
	}

	if (o.timing) {
		med = calloc((size_t)o.nsizes, sizeof(double));
		max = calloc((size_t)o.nsizes, sizeof(double));
		model_med = calloc((size_t)o.nsizes, sizeof(double));
		model_max = calloc((size_t)o.nsizes, sizeof(double));
		model_first = calloc((size_t)o.nsizes, sizeof(double));
		model_min = calloc((size_t)o.nsizes, sizeof(double));
		model_half_first = calloc((size_t)o.nsizes, sizeof(double));
		model_half_later_min = calloc((size_t)o.nsizes,
					      sizeof(double));
		model_half_later = calloc((size_t)o.nsizes, sizeof(double));
		if (!med || !max || !model_med || !model_max || !model_first ||
		    !model_min || !model_half_first ||
		    !model_half_later_min || !model_half_later)
			die("out of memory");
		{
			uint64_t c;

			modeled = !ibmc_sim_clock_ns(ctx, &c);
		}
		/* --halves: each half broadcasts on its own communicator,
		 * both at once (contention between them shows) */
		timed = o.halves && half ? nj - 1 : 0;
		run_timed(&jobs[timed], med, max);
	} else {
		for (i = 0; i < nj; i++)
			if (pthread_create(&th[i], NULL, run_comm, &jobs[i]))
				die("pthread_create failed");
		for (i = 0; i < nj; i++)
			pthread_join(th[i], NULL);
	}
	for (i = 0; i < nj; i++) {
		if (o.timing && i != timed)
			continue;
		v.ok += jobs[i].ok;
		v.bad += jobs[i].bad;
		v.mcast += jobs[i].mcast;
		v.p2p += jobs[i].p2p;
		v.unexpected += jobs[i].unexpected;
		v.packets += jobs[i].st.packets_sent;
		v.bytes += jobs[i].st.bytes_sent;
		v.retransmits += jobs[i].st.retransmits;
		v.repairs += jobs[i].st.repairs;
		v.timeouts += jobs[i].st.timeouts;
		v.duplicates += jobs[i].st.duplicates;
		v.senders += jobs[i].st.packets_sent > jobs[i].st0.packets_sent;
	}

	all = calloc((size_t)bs.size, sizeof(*all));
	if (!all)
		die("out of memory");
	rc = bs.allgather(bs.arg, &v, all, sizeof(v));
	if (rc)
		die("gathering the verdicts: %s", ibmc_strerror(rc));
	memset(&v, 0, sizeof(v));
	for (i = 0; i < bs.size; i++) {
		v.ok += all[i].ok;
		v.bad += all[i].bad;
		v.mcast += all[i].mcast;
		v.p2p += all[i].p2p;
		v.unexpected += all[i].unexpected;
		v.packets += all[i].packets;
		v.bytes += all[i].bytes;
		v.retransmits += all[i].retransmits;
		v.repairs += all[i].repairs;
		v.timeouts += all[i].timeouts;
		v.duplicates += all[i].duplicates;
		v.senders += all[i].senders;
	}
	if (bs.rank == 0) {
		if (o.tap) {
			printf("%s - %d ranks, %d comms: %" PRIu64
			       " broadcasts correct on every rank, %" PRIu64
			       " wrong or failed\n", v.bad ? "not ok" : "ok", n,
			       nj, v.ok, v.bad);
			if (o.expect)
				printf("%s - algorithm %s as expected (%" PRIu64
				       " times not)\n",
				       v.unexpected ? "not ok" : "ok", o.expect,
				       v.unexpected);
		}
		printf("%sresult ranks=%d comms=%d ok=%" PRIu64 " bad=%" PRIu64
		       " mcast=%" PRIu64 " p2p=%" PRIu64 " unexpected=%" PRIu64
		       " seconds=%.2f\n", o.tap ? "# " : "", n, nj, v.ok, v.bad,
		       v.mcast, v.p2p, v.unexpected, now() - t0);
		printf("%sstats packets=%" PRIu64 " bytes=%" PRIu64
		       " retransmits=%" PRIu64 " repairs=%" PRIu64
		       " timeouts=%" PRIu64 " duplicates=%" PRIu64
		       " senders=%" PRIu64 "\n",
		       o.tap ? "# " : "", v.packets, v.bytes, v.retransmits,
		       v.repairs, v.timeouts, v.duplicates, v.senders);
		if (o.timing)
			for (i = 0; i < o.nsizes; i++)
			{
				printf("%stime size=%zu algo=%s reps=%d "
				       "median_us=%.1f max_us=%.1f",
				       o.tap ? "# " : "", o.sizes[i],
				       ibmc_comm_last_bcast_algo(
					       jobs[timed].comm),
				       o.reps, med[i] * 1e6, max[i] * 1e6);
				if (modeled)
					printf(" model_us=%.3f model_max_us=%.3f"
					       " model_first_us=%.3f"
					       " model_min_us=%.3f",
					       model_med[i] * 1e6,
					       model_max[i] * 1e6,
					       model_first[i] * 1e6,
					       model_min[i] * 1e6);
				if (modeled && o.halves && half)
					printf(" model_half_first_us=%.3f"
					       " model_half_later_min_us=%.3f"
					       " model_half_later_us=%.3f",
					       model_half_first[i] * 1e6,
					       model_half_later_min[i] * 1e6,
					       model_half_later[i] * 1e6);
				printf("\n");
			}
		fflush(stdout);
	}

	for (i = nj - 1; i >= 0; i--) {
		ibmc_comm_free(jobs[i].comm);
		free(jobs[i].times);
	}
	ibmc_finalize(ctx);
	ibmc_bootstrap_fini(&bs);
	free(all);
	free(half);
	free(med);
	free(max);
	free(model_med);
	free(model_max);
	free(model_first);
	free(model_min);
	free(model_half_first);
	free(model_half_later_min);
	free(model_half_later);
	free(o.roots);
	return v.bad || v.unexpected ? 1 : 0;
}
