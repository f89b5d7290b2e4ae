/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barrier_mpi: a plain MPI program (nothing but MPI calls) that checks
 * MPI_Barrier's promise, no rank leaves before every rank entered, on
 * MPI_COMM_WORLD, a dup, a split and one-rank splits, interleaved with
 * verified MPI_Bcasts, plus an intercommunicator between the split's
 * halves. mpi_shim.sh runs it with libibmcast_mpi.so preloaded and without.
 *
 * Each rank reads CLOCK_MONOTONIC (one clock for all ranks of one host)
 * just before entering and just after leaving every barrier, after a
 * random delay that makes one rank per barrier late. At the end the times
 * are gathered (MPI_Gather: not something the shim maps) and the
 * communicator's rank 0 checks max(enter) <= min(leave) for every barrier;
 * on the intercommunicator, that each rank left after every rank of the
 * other group entered, which is all MPI promises there.
 *
 * Usage: barrier_mpi [ITERATIONS]. BARRIER_MPI_SKIP=1 leaves the barriers
 * out, so that a run shows the check catches a barrier that does not wait.
 * BARRIER_MPI_STALL_MS=T starts with one more barrier on MPI_COMM_WORLD
 * that the last rank enters T ms late (to see what a barrier that times
 * out does).
 *
 * Output: one "comm" line per communicator from its rank 0; every rank
 * prints "barrier_mpi: rank R: N barriers verified (I on an
 * intercommunicator), E errors". Exit 1 on errors.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#define BCAST_INTS 16
#define INTER_EVERY 5		/* an intercommunicator barrier per 5 rounds */
#define SHOW_MAX 3		/* violations printed per communicator */

struct bset {
	MPI_Comm comm;
	const char *name;
	int id;			/* the same on every member: picks the late rank */
	int n, me;
	int nb;			/* barriers so far */
	int64_t *enter, *leave;	/* ns, per barrier */
};

static int wrank, wsize, skip;
static long barriers, inter_barriers, errors;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	if (us > 0)
		nanosleep(&ts, NULL);
}

static void bset_init(struct bset *b, MPI_Comm comm, const char *name,
		      int id, int iters)
{
	b->comm = comm;
	b->name = name;
	b->id = id;
	b->nb = 0;
	MPI_Comm_size(comm, &b->n);
	MPI_Comm_rank(comm, &b->me);
	b->enter = malloc(sizeof(int64_t) * (size_t)iters);
	b->leave = malloc(sizeof(int64_t) * (size_t)iters);
	if (!b->enter || !b->leave)
		MPI_Abort(MPI_COMM_WORLD, 2);
}

/*
 * Round i's delay before the barrier: one member, the same on all (from
 * i and the set's id), arrives 0.2 to 1 ms late, the others within 50 us
 * of each other; every fourth round nobody waits, so barriers also follow
 * each other back to back.
 */
static void skew(const struct bset *b, int i, unsigned *seed)
{
	unsigned h = (unsigned)i * 2654435761u + (unsigned)b->id * 40503u;
	int late = (int)(h % (unsigned)b->n);

	if (i % 4 == 3)
		return;
	if (b->me == late)
		sleep_us(200 + rand_r(seed) % 800);
	else
		sleep_us(rand_r(seed) % 50);
}

static void timed_barrier(struct bset *b, int i, unsigned *seed)
{
	skew(b, i, seed);
	b->enter[b->nb] = now_ns();
	if (!skip)
		MPI_Barrier(b->comm);
	b->leave[b->nb] = now_ns();
	b->nb++;
}

/* A small broadcast between barriers, from a root that moves around. */
static void bcast(const struct bset *b, int i)
{
	int buf[BCAST_INTS], root = i % b->n, k, bad = 0;

	for (k = 0; k < BCAST_INTS; k++)
		buf[k] = b->me == root ? i * 131 + b->id * 7 + k : -1;
	MPI_Bcast(buf, BCAST_INTS, MPI_INT, root, b->comm);
	for (k = 0; k < BCAST_INTS; k++)
		bad += buf[k] != i * 131 + b->id * 7 + k;
	if (bad) {
		fprintf(stderr,
			"barrier_mpi: rank %d: comm %s: broadcast %d from root %d: %d of %d ints wrong\n",
			wrank, b->name, i, root, bad, BCAST_INTS);
		errors++;
	}
}

/* Gathers b's times at its rank 0 and counts the barriers someone left
 * before everyone entered; the count is known on every member. */
static long verify(struct bset *b)
{
	int64_t *en = NULL, *lv = NULL, maxe, minl, slack = INT64_MAX;
	long bad = 0;
	int i, r, nb = b->nb;

	if (b->me == 0) {
		en = malloc(sizeof(int64_t) * (size_t)nb * (size_t)b->n);
		lv = malloc(sizeof(int64_t) * (size_t)nb * (size_t)b->n);
		if (!en || !lv)
			MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Gather(b->enter, nb, MPI_INT64_T, en, nb, MPI_INT64_T, 0, b->comm);
	MPI_Gather(b->leave, nb, MPI_INT64_T, lv, nb, MPI_INT64_T, 0, b->comm);
	if (b->me == 0) {
		for (i = 0; i < nb; i++) {
			maxe = INT64_MIN;
			minl = INT64_MAX;
			for (r = 0; r < b->n; r++) {
				if (en[r * nb + i] > maxe)
					maxe = en[r * nb + i];
				if (lv[r * nb + i] < minl)
					minl = lv[r * nb + i];
			}
			if (minl - maxe < slack)
				slack = minl - maxe;
			if (maxe <= minl)
				continue;
			if (bad++ < SHOW_MAX)
				fprintf(stderr,
					"barrier_mpi: comm %s: barrier %d: a rank left %.1f us before the last one entered\n",
					b->name, i, (double)(maxe - minl) / 1e3);
		}
		printf("comm %s ranks=%d barriers=%d violations=%ld min_slack_us=%.1f %s\n",
		       b->name, b->n, nb, bad, (double)slack / 1e3,
		       bad ? "FAIL" : "ok");
		free(en);
		free(lv);
	}
	MPI_Bcast(&bad, 1, MPI_LONG, 0, b->comm);
	return bad;
}

/*
 * The intercommunicator's barriers, gathered over MPI_COMM_WORLD: a rank
 * of one half may leave once every rank of the other half entered.
 */
static long verify_inter(struct bset *b, int low)
{
	int64_t *en = NULL, *lv = NULL, maxe[2];
	int *side = NULL;
	long bad = 0;
	int i, r, nb = b->nb;

	if (wrank == 0) {
		en = malloc(sizeof(int64_t) * (size_t)nb * (size_t)wsize);
		lv = malloc(sizeof(int64_t) * (size_t)nb * (size_t)wsize);
		side = malloc(sizeof(int) * (size_t)wsize);
		if (!en || !lv || !side)
			MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Gather(&low, 1, MPI_INT, side, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Gather(b->enter, nb, MPI_INT64_T, en, nb, MPI_INT64_T, 0,
		   MPI_COMM_WORLD);
	MPI_Gather(b->leave, nb, MPI_INT64_T, lv, nb, MPI_INT64_T, 0,
		   MPI_COMM_WORLD);
	if (wrank == 0) {
		for (i = 0; i < nb; i++) {
			maxe[0] = maxe[1] = INT64_MIN;
			for (r = 0; r < wsize; r++)
				if (en[r * nb + i] > maxe[side[r]])
					maxe[side[r]] = en[r * nb + i];
			for (r = 0; r < wsize; r++) {
				if (lv[r * nb + i] >= maxe[!side[r]])
					continue;
				if (bad++ < SHOW_MAX)
					fprintf(stderr,
						"barrier_mpi: comm %s: barrier %d: rank %d left %.1f us before the other group's last rank entered\n",
						b->name, i, r,
						(double)(maxe[!side[r]] -
							 lv[r * nb + i]) / 1e3);
			}
		}
		printf("comm %s ranks=%d barriers=%d violations=%ld %s\n",
		       b->name, wsize, nb, bad, bad ? "FAIL" : "ok");
		free(en);
		free(lv);
		free(side);
	}
	MPI_Bcast(&bad, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	return bad;
}

int main(int argc, char **argv)
{
	struct bset sets[4], inter;
	MPI_Comm dup, half, solo, ic = MPI_COMM_NULL;
	const char *s = getenv("BARRIER_MPI_SKIP");
	const char *stall = getenv("BARRIER_MPI_STALL_MS");
	int iters = argc > 1 ? atoi(argv[1]) : 250, i, k, low;
	unsigned seed;
	long all;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	skip = s && !strcmp(s, "1");
	if (iters < 1)
		iters = 1;
	seed = 12345u + (unsigned)wrank * 7919u;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	/* halves, the second in reverse order, as in bcast_mpi */
	low = wrank < wsize / 2;
	MPI_Comm_split(MPI_COMM_WORLD, low, low ? wrank : -wrank, &half);
	MPI_Comm_split(MPI_COMM_WORLD, wrank, 0, &solo);
	/* Local leaders: world rank 0 for the low half, wsize - 1 (first in
	 * the reversed order) for the other. */
	if (wsize > 1)
		MPI_Intercomm_create(half, 0, MPI_COMM_WORLD,
				     low ? wsize - 1 : 0, 77, &ic);

	if (stall) {
		if (wrank == wsize - 1)
			sleep_us(atol(stall) * 1000);
		MPI_Barrier(MPI_COMM_WORLD);
	}

	bset_init(&sets[0], MPI_COMM_WORLD, "world", 1, iters);
	bset_init(&sets[1], dup, "dup", 2, iters);
	bset_init(&sets[2], half, low ? "split-low" : "split-high", 3, iters);
	bset_init(&sets[3], solo, "solo", 4, iters);
	if (ic != MPI_COMM_NULL)
		bset_init(&inter, ic, "inter", 5, iters / INTER_EVERY + 1);

	for (i = 0; i < iters; i++) {
		for (k = 0; k < 4; k++) {
			timed_barrier(&sets[k], i, &seed);
			if (i % 3 == k % 3)
				bcast(&sets[k], i);
		}
		/* (n and rank of the local group: a late rank in each) */
		if (ic != MPI_COMM_NULL && i % INTER_EVERY == 0) {
			timed_barrier(&inter, i, &seed);
			inter_barriers++;
		}
	}

	for (k = 0; k < 4; k++) {
		errors += verify(&sets[k]);
		barriers += sets[k].nb;
	}
	if (ic != MPI_COMM_NULL) {
		errors += verify_inter(&inter, low);
		barriers += inter.nb;
	}
	MPI_Allreduce(&errors, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	printf("barrier_mpi: rank %d: %ld barriers %s (%ld on an intercommunicator), %ld errors\n",
	       wrank, barriers, skip ? "skipped" : "verified", inter_barriers,
	       errors);
	fflush(stdout);
	if (ic != MPI_COMM_NULL)
		MPI_Comm_free(&ic);
	MPI_Comm_free(&solo);
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
	for (k = 0; k < 4; k++) {
		free(sets[k].enter);
		free(sets[k].leave);
	}
	if (ic != MPI_COMM_NULL) {
		free(inter.enter);
		free(inter.leave);
	}
	MPI_Finalize();
	return all ? 1 : 0;
}
