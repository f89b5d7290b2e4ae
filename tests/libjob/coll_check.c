/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_check - ibmc_allgather or ibmc_allreduce for a list of sizes, on one
 * or more communicators at once (one thread each), every result verified:
 * every block of every rank byte for byte, integer reductions exactly,
 * floating point ones within rounding of the rank-order sum and bit for bit
 * the same on every member; by the blocking calls, or (--nonblocking) by
 * the non-blocking ones and a wait. Uses only the public API; ranks come from
 * ibmc_bootstrap_default() (run it with ibmcast-run(1)). The bootstrap's own
 * allgather (not the library) gathers verdicts and result digests, so a
 * broken library cannot hide its failures.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
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

#define MAX_SIZES 64
#define MAX_COMMS 16

/* One reduction the check knows how to verify. */
struct rcase {
	const char *name;
	ibmc_dtype_t dtype;
	ibmc_op_t op;
	size_t esize;
};

struct pair_2int {
	int v, i;
};

static const struct rcase cases[] = {
	{ "i64sum", IBMC_INT64, IBMC_SUM, sizeof(int64_t) },
	{ "i32max", IBMC_INT32, IBMC_MAX, sizeof(int32_t) },
	{ "u8bxor", IBMC_UINT8, IBMC_BXOR, sizeof(uint8_t) },
	{ "u16min", IBMC_UINT16, IBMC_MIN, sizeof(uint16_t) },
	{ "dblsum", IBMC_DOUBLE, IBMC_SUM, sizeof(double) },
	{ "fltsum", IBMC_FLOAT, IBMC_SUM, sizeof(float) },
	{ "2intminloc", IBMC_2INT, IBMC_MINLOC, sizeof(struct pair_2int) },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

struct opts {
	bool allreduce;
	size_t sizes[MAX_SIZES];	/* allgather: block bytes; allreduce:
					 * elements */
	int nsizes;
	int ncomms;
	bool halves;
	const char *algo;
	const char *expect;	/* algorithm every call must have used */
	int cases[NCASES];	/* allreduce: indexes into cases[] */
	int ncases;
	int reps;
	bool timing;
	bool quiet;
	bool nonblocking;	/* ibmc_iallgather/ibmc_iallreduce + wait */
};

/* One communicator's work, run by its own thread. */
struct job {
	int index;
	int color;		/* members of one communicator share it */
	ibmc_comm_t *comm;
	ibmc_context_t *ctx;
	const struct opts *o;
	uint64_t ok, bad, unexpected;
	uint64_t *digest;	/* per operation: hash of the result */
	int nops;
	char used[32];		/* the last call's algorithm */
	ibmc_comm_stats_t st;
};

ibmc_bootstrap_t bs;
const char *prog = "coll_check";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [--coll allgather|allreduce] [--algo NAME] [--sizes LIST]\n"
		"          [--reps N] [--comms N] [--halves] [--case LIST]\n"
		"          [--expect NAME] [--nonblocking] [--timing] [--quiet]\n"
		"Runs the collective for each size of LIST (allgather: bytes per\n"
		"rank, default 0,1,100,4096,65537; allreduce: elements, default\n"
		"0,1,7,1000,20000; K and M suffixes) --reps times on N communicators\n"
		"over all ranks at once (one thread each; --halves adds one over each\n"
		"half of the ranks), odd repetitions in place. Allgather: every block\n"
		"verified byte for byte. Allreduce: each case of LIST (default all:\n"
		"i64sum,i32max,u8bxor,u16min,dblsum,fltsum,2intminloc) verified\n"
		"exactly (integers) or within rounding of the rank-order result\n"
		"(floating point), and the result bit for bit the same on every\n"
		"member. --algo sets the algorithm (ring, recursive_doubling, mcast,\n"
		"auto); --expect checks the one every call used. --nonblocking:\n"
		"the non-blocking calls, each waited for at once. --timing: one\n"
		"communicator, each call started together after a bootstrap barrier,\n"
		"per size the median of the first start to the last return.\n"
		"The \"stats\" line sums every member's counters (messages=: the\n"
		"messages sent to other nodes, ibmc_comm_get_stats(3)).\n"
		"Exit 0 when every result on every rank was right, 1 if any was not,\n"
		"2 on setup errors.\n", prog);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "coll", required_argument, NULL, 'C' },
		{ "algo", required_argument, NULL, 'a' },
		{ "sizes", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'n' },
		{ "comms", required_argument, NULL, 'c' },
		{ "halves", no_argument, NULL, 'H' },
		{ "case", required_argument, NULL, 'k' },
		{ "expect", required_argument, NULL, 'e' },
		{ "timing", no_argument, NULL, 'T' },
		{ "nonblocking", no_argument, NULL, 'N' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const size_t ag_sizes[] = { 0, 1, 100, 4096, 65537 };
	static const size_t ar_sizes[] = { 0, 1, 7, 1000, 20000 };
	bool sized = false;
	char *list, *tok, *save;
	int c, k;

	o->ncomms = 1;
	o->reps = 2;
	o->ncases = 0;
	while ((c = getopt_long(argc, argv, "C:a:s:n:c:Hk:e:TNqh", lo,
				NULL)) != -1) {
		switch (c) {
		case 'C':
			if (!strcmp(optarg, "allreduce"))
				o->allreduce = true;
			else if (strcmp(optarg, "allgather"))
				die("--coll: allgather or allreduce");
			break;
		case 'a':
			o->algo = optarg;
			break;
		case 's':
			sized = true;
			o->nsizes = size_list_arg("--sizes", optarg, o->sizes,
						  MAX_SIZES);
			break;
		case 'n':
			o->reps = int_arg("--reps", optarg, 1, INT_MAX);
			break;
		case 'c':
			o->ncomms = int_arg("--comms", optarg, 1, MAX_COMMS);
			break;
		case 'H':
			o->halves = true;
			break;
		case 'k':
			o->ncases = 0;
			list = strdup(optarg);
			if (!list)
				die("out of memory");
			for (tok = strtok_r(list, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				for (k = 0; k < NCASES; k++)
					if (!strcmp(tok, cases[k].name))
						break;
				if (k == NCASES || o->ncases == NCASES)
					die("--case: unknown '%s'", tok);
				o->cases[o->ncases++] = k;
			}
			free(list);
			break;
		case 'e':
			o->expect = optarg;
			break;
		case 'T':
			o->timing = true;
			break;
		case 'N':
			o->nonblocking = true;
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
	if (!sized) {
		o->nsizes = 5;
		for (k = 0; k < 5; k++)
			o->sizes[k] = o->allreduce ? ar_sizes[k] : ag_sizes[k];
	}
	if (!o->ncases) {
		if (o->timing) {
			/* the benchmark's vector: doubles summed */
			o->cases[0] = 4;
			o->ncases = 1;
		} else {
			for (k = 0; k < NCASES; k++)
				o->cases[k] = k;
			o->ncases = NCASES;
		}
	}
	if (!o->allreduce)
		o->ncases = 1;
}

static uint32_t mix(uint32_t h, uint32_t v)
{
	return (h ^ v) * 16777619u;
}

/* Differs per communicator, rank, size, repetition and case. */
static uint32_t seed_of(int comm, int rank, size_t len, int rep, int cs)
{
	uint32_t h = 2166136261u;

	h = mix(h, (uint32_t)comm);
	h = mix(h, (uint32_t)rank);
	h = mix(h, (uint32_t)len);
	h = mix(h, (uint32_t)rep);
	return mix(h, (uint32_t)cs);
}

static inline uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(seed + i * 131u + (i >> 8) * 7u + (i >> 16) * 3u);
}

/* A well-mixed 32-bit value of (seed, i). */
static inline uint32_t val(uint32_t seed, size_t i)
{
	uint32_t x = seed ^ (uint32_t)(i * 2654435761u);

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	return x ^ (x >> 16);
}

static uint64_t fnv64(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 14695981039346656037ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void report(struct job *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void report(struct job *j, const char *fmt, ...)
{
	va_list ap;

	if (j->bad > 3)
		return;
	fprintf(stderr, "%s: rank %d: comm %d: ", prog, bs.rank, j->index);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void note_algo(struct job *j)
{
	const char *a = ibmc_comm_last_algo(j->comm, j->o->allreduce ?
					    "allreduce" : "allgather");

	snprintf(j->used, sizeof(j->used), "%s", a ? a : "(null)");
	if (j->o->expect && strcmp(j->o->expect, j->used)) {
		if (++j->unexpected <= 3)
			fprintf(stderr, "%s: rank %d: comm %d: algorithm %s, "
				"expected %s\n", prog, bs.rank, j->index,
				j->used, j->o->expect);
	}
}

/* The call as --nonblocking asks: the blocking one, or the non-blocking
 * one and a wait. */
static int allgather(struct job *j, const void *send, void *recv,
		     size_t len)
{
	ibmc_request_t *q;

	if (!j->o->nonblocking)
		return ibmc_allgather(j->comm, send, recv, len);
	return ibmc_iallgather(j->comm, send, recv, len, &q) ?: ibmc_wait(&q);
}

static int allreduce(struct job *j, const void *send, void *recv,
		     size_t count, ibmc_dtype_t dtype, ibmc_op_t op)
{
	ibmc_request_t *q;

	if (!j->o->nonblocking)
		return ibmc_allreduce(j->comm, send, recv, count, dtype, op);
	return ibmc_iallreduce(j->comm, send, recv, count, dtype, op, &q) ?:
	       ibmc_wait(&q);
}

/* One allgather; 0 when every block is right. */
static int one_allgather(struct job *j, uint8_t *send, uint8_t *recv,
			 size_t len, int rep, double *secs)
{
	int n = ibmc_comm_size(j->comm), me = ibmc_comm_rank(j->comm), r, rc;
	bool in_place = rep % 2;
	uint8_t *mine = in_place ? recv + (size_t)me * len : send;
	uint32_t seed;
	size_t i;
	double t0;

	memset(recv, (rep * 37 + 11) & 255, (size_t)n * len);
	seed = seed_of(j->index, me, len, rep, 0);
	for (i = 0; i < len; i++)
		mine[i] = pattern(seed, i);
	t0 = now();
	rc = allgather(j, in_place ? IBMC_IN_PLACE : send, recv, len);
	*secs = now() - t0;
	note_algo(j);
	if (rc) {
		report(j, "allgather %zu B rep %d: %s", len, rep,
		       ibmc_strerror(rc));
		return -1;
	}
	for (r = 0; r < n; r++) {
		seed = seed_of(j->index, r, len, rep, 0);
		for (i = 0; i < len; i++)
			if (recv[(size_t)r * len + i] != pattern(seed, i)) {
				report(j, "allgather %zu B rep %d%s (%s): "
				       "block %d byte %zu is 0x%02x, not "
				       "0x%02x", len, rep,
				       in_place ? " in place" : "", j->used, r,
				       i, recv[(size_t)r * len + i],
				       pattern(seed, i));
				return -1;
			}
	}
	return 0;
}

/* Rank r's element i of case cs, written to p. */
static void input(const struct rcase *c, uint32_t seed, int r, size_t i,
		  void *p)
{
	uint32_t v = val(seed, i);

	switch (c->dtype) {
	case IBMC_INT64:
		*(int64_t *)p = (int64_t)(v % 2000001u) - 1000000 +
				((int64_t)r << 33);
		break;
	case IBMC_INT32:
		*(int32_t *)p = (int32_t)v;
		break;
	case IBMC_UINT8:
		*(uint8_t *)p = (uint8_t)v;
		break;
	case IBMC_UINT16:
		*(uint16_t *)p = (uint16_t)(v >> 3);
		break;
	case IBMC_DOUBLE:
		/* not exactly representable, of both signs: the sum's last
		 * bits depend on the order */
		*(double *)p = ((double)(v % 100000) - 49999.5) / 3.0;
		break;
	case IBMC_FLOAT:
		*(float *)p = (float)(((double)(v % 1000) - 499.5) / 7.0);
		break;
	case IBMC_2INT: {
		/* few values: ties, where MINLOC takes the least index */
		struct pair_2int q = { (int)(v % 5), r };

		memcpy(p, &q, sizeof(q));
		break;
	}
	default:
		break;
	}
}

/* Checks element i of res against the reduction of every rank's input;
 * 0 when right. */
static int verify(const struct rcase *c, const uint32_t *seeds, int n,
		  size_t i, const void *res, char *why, size_t whylen)
{
	union {
		int64_t i64;
		int32_t i32;
		uint8_t u8;
		uint16_t u16;
		double d;
		float f;
		struct pair_2int p;
	} in, acc;
	double sum = 0, mag = 0, got;
	int r;

	memset(&acc, 0, sizeof(acc));
	for (r = 0; r < n; r++) {
		input(c, seeds[r], r, i, &in);
		switch (c->dtype) {
		case IBMC_INT64:
			acc.i64 = (int64_t)((uint64_t)acc.i64 +
					    (uint64_t)in.i64);
			break;
		case IBMC_INT32:
			if (!r || in.i32 > acc.i32)
				acc.i32 = in.i32;
			break;
		case IBMC_UINT8:
			acc.u8 ^= in.u8;
			break;
		case IBMC_UINT16:
			if (!r || in.u16 < acc.u16)
				acc.u16 = in.u16;
			break;
		case IBMC_DOUBLE:
			sum += in.d;
			mag += fabs(in.d);
			break;
		case IBMC_FLOAT:
			sum += in.f;
			mag += fabs(in.f);
			break;
		case IBMC_2INT:
			if (!r || in.p.v < acc.p.v ||
			    (in.p.v == acc.p.v && in.p.i < acc.p.i))
				acc.p = in.p;
			break;
		default:
			break;
		}
	}
	switch (c->dtype) {
	case IBMC_DOUBLE:
	case IBMC_FLOAT:
		if (c->dtype == IBMC_DOUBLE)
			memcpy(&got, res, sizeof(got));
		else {
			float g;

			memcpy(&g, res, sizeof(g));
			got = g;
		}
		/* any order of n - 1 additions: error <= n eps sum|x| */
		if (fabs(got - sum) <= (double)n * mag *
		    (c->dtype == IBMC_DOUBLE ? 2.3e-16 : 1.2e-7) + 1e-300)
			return 0;
		snprintf(why, whylen, "%.17g, not %.17g", got, sum);
		return -1;
	default:
		if (!memcmp(res, &acc, c->esize))
			return 0;
		if (c->dtype == IBMC_2INT)
			snprintf(why, whylen, "(%d,%d), not (%d,%d)",
				 ((const struct pair_2int *)res)->v,
				 ((const struct pair_2int *)res)->i,
				 acc.p.v, acc.p.i);
		else
			snprintf(why, whylen, "wrong bytes (%zu-byte "
				 "element)", c->esize);
		return -1;
	}
}

/* One allreduce of case cs; 0 when every element is right. The result's
 * digest goes to *digest for the cross-rank comparison. */
static int one_allreduce(struct job *j, uint8_t *send, uint8_t *recv,
			 size_t count, int rep, int cs, uint32_t *seeds,
			 uint64_t *digest, double *secs)
{
	const struct rcase *c = &cases[cs];
	int n = ibmc_comm_size(j->comm), me = ibmc_comm_rank(j->comm), r, rc;
	bool in_place = rep % 2;
	uint8_t *mine = in_place ? recv : send;
	size_t i, len = count * c->esize;
	char why[96];
	double t0;

	for (r = 0; r < n; r++)
		seeds[r] = seed_of(j->index, r, count, rep, cs);
	for (i = 0; i < count; i++)
		input(c, seeds[me], me, i, mine + i * c->esize);
	if (!in_place)
		memset(recv, 0xa5, len);
	t0 = now();
	rc = allreduce(j, in_place ? IBMC_IN_PLACE : send, recv, count,
		       c->dtype, c->op);
	*secs = now() - t0;
	note_algo(j);
	*digest = 0;
	if (rc) {
		report(j, "allreduce %s %zu elements rep %d: %s", c->name,
		       count, rep, ibmc_strerror(rc));
		return -1;
	}
	*digest = fnv64(recv, len) | 1;	/* 0 marks a failed call */
	for (i = 0; i < count; i++)
		if (verify(c, seeds, n, i, recv + i * c->esize, why,
			   sizeof(why))) {
			report(j, "allreduce %s %zu elements rep %d%s (%s): "
			       "element %zu is %s", c->name, count, rep,
			       in_place ? " in place" : "", j->used, i, why);
			return -1;
		}
	return 0;
}

static size_t max_size(const struct opts *o)
{
	size_t m = 1;
	int si;

	for (si = 0; si < o->nsizes; si++)
		if (o->sizes[si] > m)
			m = o->sizes[si];
	return m;
}

/* One call of the job's collective at operation number op. */
static int one(struct job *j, uint8_t *send, uint8_t *recv, uint32_t *seeds,
	       int si, int rep, int ci, int op, double *secs)
{
	const struct opts *o = j->o;

	if (o->allreduce)
		return one_allreduce(j, send, recv, o->sizes[si], rep,
				     o->cases[ci], seeds, &j->digest[op],
				     secs);
	j->digest[op] = 1;
	return one_allgather(j, send, recv, o->sizes[si], rep, secs);
}

static int alloc_bufs(struct job *j, uint8_t **send, uint8_t **recv,
		      uint32_t **seeds)
{
	size_t n = (size_t)ibmc_comm_size(j->comm), m = max_size(j->o);
	size_t es = j->o->allreduce ? 16 : 1;	/* largest element */

	*send = malloc(m * es);
	*recv = malloc(j->o->allreduce ? m * es : n * m);
	*seeds = malloc(n * sizeof(uint32_t));
	return *send && *recv && *seeds ? 0 : -ENOMEM;
}

static void *run_comm(void *arg)
{
	struct job *j = arg;
	const struct opts *o = j->o;
	int si, rep, ci, op = 0;
	uint8_t *send, *recv;
	uint32_t *seeds;
	double secs;

	if (alloc_bufs(j, &send, &recv, &seeds)) {
		j->bad++;
		report(j, "out of memory");
		goto out;
	}
	for (si = 0; si < o->nsizes; si++)
		for (rep = 0; rep < o->reps; rep++)
			for (ci = 0; ci < o->ncases; ci++, op++) {
				if (one(j, send, recv, seeds, si, rep, ci, op,
					&secs))
					j->bad++;
				else
					j->ok++;
			}
out:
	free(send);
	free(recv);
	free(seeds);
	ibmc_comm_get_stats(j->comm, &j->st);
	return NULL;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Timing: each call starts after a bootstrap barrier; its time is the
 * first start to the last return on the host's one monotonic clock
 * (every rank of the simulated fabric runs here). med[si] = the median. */
static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* On the simulated fabric also modeled time (check_util.h): from the
 * common start to the last rank's return; mmed[si] = its median. */
static void run_timed(struct job *j, double *med, double *mmed)
{
	const struct opts *o = j->o;
	double mine[3], *all, *samples, *msamp, secs, t0, t1, m;
	int si, rep, k, op = 0;
	uint8_t *send, *recv;
	uint32_t *seeds;
	uint64_t mt0;

	all = malloc(sizeof(double) * 3 * (size_t)bs.size);
	samples = malloc(sizeof(double) * (size_t)o->reps);
	msamp = malloc(sizeof(double) * (size_t)o->reps);
	if (!all || !samples || !msamp ||
	    alloc_bufs(j, &send, &recv, &seeds))
		die("out of memory");
	for (si = 0; si < o->nsizes; si++) {
		for (rep = 0; rep < o->reps; rep++, op++) {
			if (bs.allgather(bs.arg, mine, all, sizeof(mine)))
				die("bootstrap barrier failed");
			mt0 = check_model_align(j->ctx);
			mine[0] = now();
			if (one(j, send, recv, seeds, si, rep, 0, op, &secs))
				j->bad++;
			else
				j->ok++;
			mine[1] = now();
			mine[2] = check_model_since(j->ctx, mt0);
			if (bs.allgather(bs.arg, mine, all, sizeof(mine)))
				die("bootstrap allgather failed");
			t0 = all[0];
			t1 = all[1];
			m = all[2];
			for (k = 1; k < bs.size; k++) {
				if (all[3 * k] < t0)
					t0 = all[3 * k];
				if (all[3 * k + 1] > t1)
					t1 = all[3 * k + 1];
				if (all[3 * k + 2] > m)
					m = all[3 * k + 2];
			}
			samples[rep] = t1 - t0;
			msamp[rep] = m;
		}
		med[si] = median_of(samples, o->reps);
		mmed[si] = median_of(msamp, o->reps);
	}
	free(send);
	free(recv);
	free(seeds);
	free(samples);
	free(msamp);
	free(all);
	ibmc_comm_get_stats(j->comm, &j->st);
}

/* What each rank reports to rank 0 through the bootstrap. */
struct verdict {
	uint64_t ok, bad, unexpected;
	uint64_t packets, bytes, retransmits, timeouts, duplicates;
	uint64_t messages;	/* to other nodes (messages_sent) */
	char used[32];
};

/* Rank 0: every member's digest of every operation equals the first
 * member's (per job: the members are the ranks of its color). Returns the
 * number of operations some member disagreed on. */
static uint64_t compare_digests(const uint64_t *all, const int *colors,
				int nj, int nops)
{
	size_t per = (size_t)nj * (size_t)nops;
	int jb, op, r, color, first;
	uint64_t mism = 0, d;

	for (jb = 0; jb < nj; jb++)
		for (color = 0; color < 3; color++)
			for (op = 0; op < nops; op++) {
				first = -1;
				for (r = 0; r < bs.size; r++) {
					d = all[(size_t)r * per +
						(size_t)jb * nops + op];
					if (colors[r * nj + jb] != color || !d)
						continue;
					if (first < 0) {
						first = r;
						continue;
					}
					if (d == all[(size_t)first * per +
						     (size_t)jb * nops + op])
						continue;
					if (++mism <= 3)
						fprintf(stderr, "%s: comm %d "
							"operation %d: rank %d's "
							"result differs from rank "
							"%d's\n", prog, jb, op,
							r, first);
				}
			}
	return mism;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct job jobs[MAX_COMMS + 1];
	pthread_t th[MAX_COMMS + 1];
	ibmc_context_t *ctx;
	struct verdict v = { 0 }, *all;
	uint64_t *digests, *alldig, mism = 0;
	int rc, i, k, nj, n, nops, *half = NULL, nhalf = 0, *colors, *allcol;
	double *med = NULL, *mmed = NULL, t0;
	uint64_t c;
	int modeled;
	const char *coll;

	memset(&o, 0, sizeof(o));
	parse_args(argc, argv, &o);
	coll = o.allreduce ? "allreduce" : "allgather";
	ctx = check_init();
	modeled = !ibmc_sim_clock_ns(ctx, &c);
	n = ibmc_context_size(ctx);
	t0 = now();
	nops = o.nsizes * o.reps * o.ncases;

	memset(jobs, 0, sizeof(jobs));
	nj = 0;
	for (i = 0; i < o.ncomms; i++, nj++) {
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
		rc = ibmc_comm_create(ctx, half, nhalf, &jobs[nj].comm);
		if (rc)
			die("ibmc_comm_create (half): %s", ibmc_strerror(rc));
		jobs[nj].color = first ? 1 : 2;
		nj++;
	}
	digests = calloc((size_t)nj * (size_t)nops, sizeof(uint64_t));
	colors = calloc((size_t)nj, sizeof(int));
	if (!digests || !colors)
		die("out of memory");
	for (i = 0; i < nj; i++) {
		jobs[i].index = i;
		jobs[i].o = &o;
		jobs[i].digest = digests + (size_t)i * nops;
		jobs[i].nops = nops;
		snprintf(jobs[i].used, sizeof(jobs[i].used), "none");
		colors[i] = jobs[i].color;
		if (o.algo) {
			rc = ibmc_comm_set_algo(jobs[i].comm, coll, o.algo);
			if (rc)
				die("--algo %s: %s", o.algo, ibmc_strerror(rc));
		}
	}
	if (!o.quiet && bs.rank == 0) {
		const char *why = NULL;

		rc = ibmc_comm_mcast_state(jobs[0].comm, &why);
		printf("# %s: %d ranks, %d communicator%s%s, %d sizes, %d "
		       "reps, algo %s; multicast %s%s%s\n", coll, n, nj,
		       nj > 1 ? "s" : "", o.halves ? " (with halves)" : "",
		       o.nsizes, o.reps, o.algo ? o.algo : "default",
		       rc ? "unavailable" : "available", rc ? ": " : "",
		       rc ? why : "");
		fflush(stdout);
	}

	if (o.timing) {
		/* one communicator: the others stay idle */
		med = calloc((size_t)o.nsizes, sizeof(double));
		mmed = calloc((size_t)o.nsizes, sizeof(double));
		if (!med || !mmed)
			die("out of memory");
		jobs[0].ctx = ctx;
		run_timed(&jobs[0], med, mmed);
		for (i = 1; i < nj; i++)
			colors[i] = -1;
	} else {
		for (i = 0; i < nj; i++)
			if (pthread_create(&th[i], NULL, run_comm, &jobs[i]))
				die("pthread_create failed");
		for (i = 0; i < nj; i++)
			pthread_join(th[i], NULL);
	}
	for (i = 0; i < (o.timing ? 1 : nj); i++) {
		v.ok += jobs[i].ok;
		v.bad += jobs[i].bad;
		v.unexpected += jobs[i].unexpected;
		v.packets += jobs[i].st.packets_sent;
		v.bytes += jobs[i].st.bytes_sent;
		v.retransmits += jobs[i].st.retransmits;
		v.timeouts += jobs[i].st.timeouts;
		v.duplicates += jobs[i].st.duplicates;
		v.messages += jobs[i].st.messages_sent;
	}
	snprintf(v.used, sizeof(v.used), "%s", jobs[0].used);

	all = calloc((size_t)bs.size, sizeof(*all));
	alldig = calloc((size_t)bs.size * (size_t)nj * (size_t)nops,
			sizeof(uint64_t));
	allcol = calloc((size_t)bs.size * (size_t)nj, sizeof(int));
	if (!all || !alldig || !allcol)
		die("out of memory");
	if (bs.allgather(bs.arg, &v, all, sizeof(v)) ||
	    (nops && bs.allgather(bs.arg, digests, alldig, sizeof(uint64_t) *
				  (size_t)nj * (size_t)nops)) ||
	    bs.allgather(bs.arg, colors, allcol, sizeof(int) * (size_t)nj))
		die("gathering the verdicts failed");
	if (bs.rank == 0 && nops)
		mism = compare_digests(alldig, allcol, nj, nops);
	memset(&v, 0, sizeof(v));
	for (i = 0; i < bs.size; i++) {
		v.ok += all[i].ok;
		v.bad += all[i].bad;
		v.unexpected += all[i].unexpected;
		v.packets += all[i].packets;
		v.bytes += all[i].bytes;
		v.retransmits += all[i].retransmits;
		v.timeouts += all[i].timeouts;
		v.duplicates += all[i].duplicates;
		v.messages += all[i].messages;
		/* every rank must report the same algorithm */
		if (strcmp(all[i].used, all[0].used))
			v.unexpected++;
	}
	if (bs.rank == 0) {
		printf("result coll=%s ranks=%d comms=%d ok=%" PRIu64
		       " bad=%" PRIu64 " mismatch=%" PRIu64 " unexpected=%"
		       PRIu64 " algo=%s seconds=%.2f\n", coll, n, nj, v.ok,
		       v.bad, mism, v.unexpected, all[0].used, now() - t0);
		printf("stats packets=%" PRIu64 " bytes=%" PRIu64
		       " retransmits=%" PRIu64 " timeouts=%" PRIu64
		       " duplicates=%" PRIu64 " messages=%" PRIu64 "\n",
		       v.packets, v.bytes, v.retransmits, v.timeouts,
		       v.duplicates, v.messages);
		if (o.timing)
			for (i = 0; i < o.nsizes; i++)
			{
				printf("time coll=%s size=%zu bytes=%zu "
				       "algo=%s reps=%d median_us=%.1f",
				       coll, o.sizes[i], o.allreduce ?
				       o.sizes[i] * cases[o.cases[0]].esize :
				       o.sizes[i], all[0].used, o.reps,
				       med[i] * 1e6);
				if (modeled)
					printf(" model_us=%.3f", mmed[i] * 1e6);
				printf("\n");
			}
		fflush(stdout);
	}

	for (i = nj - 1; i >= 0; i--)
		ibmc_comm_free(jobs[i].comm);
	ibmc_finalize(ctx);
	ibmc_bootstrap_fini(&bs);
	free(all);
	free(alldig);
	free(allcol);
	free(digests);
	free(colors);
	free(half);
	free(med);
	free(mmed);
	return v.bad || v.unexpected || mism ? 1 : 0;
}
