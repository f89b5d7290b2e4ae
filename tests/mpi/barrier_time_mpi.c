/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * barrier_time_mpi: times the MPI library's own MPI_Barrier, for
 * tests/bench/barrier.sh to set beside libibmcast's barriers. Every rank
 * records when it entered and left each barrier on CLOCK_MONOTONIC (all
 * ranks run on this host); rank 0 gathers the records and prints the same
 * figures as barrier_check --timing:
 *   time ranks=P used=mpi iters=N median_us=.. min_us=.. p90_us=.. loop_us=..
 * latency = last exit - last entry of a barrier. Exit 1 when a rank left
 * a barrier before another entered it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int iters = 200, warmup = 5, rank, size, i, r, n, bad = 0;
	int64_t *rec, *all = NULL, *lat, in, out, last_out, e, l;
	double loop;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
			warmup = atoi(argv[++i]);
		else
			iters = 0;
	}
	if (iters < 1 || warmup < 0) {
		if (rank == 0)
			fprintf(stderr, "usage: barrier_mpi [--iters N] "
				"[--warmup N]\n");
		MPI_Finalize();
		return 2;
	}
	rec = malloc(sizeof(*rec) * 2 * (size_t)iters);
	lat = malloc(sizeof(*lat) * (size_t)iters);
	if (rank == 0)
		all = malloc(sizeof(*all) * 2 * (size_t)iters * (size_t)size);
	if (!rec || !lat || (rank == 0 && !all))
		MPI_Abort(MPI_COMM_WORLD, 2);

	/* Untimed: connections and shared memory set up on first use. */
	for (i = 0; i < warmup; i++)
		MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < iters; i++) {
		rec[2 * i] = now_ns();
		MPI_Barrier(MPI_COMM_WORLD);
		rec[2 * i + 1] = now_ns();
	}
	MPI_Gather(rec, 2 * iters, MPI_INT64_T, all, 2 * iters, MPI_INT64_T, 0,
		   MPI_COMM_WORLD);

	if (rank == 0) {
		for (i = 0; i < iters; i++) {
			in = last_out = INT64_MIN;
			out = INT64_MAX;
			for (r = 0; r < size; r++) {
				e = all[(size_t)r * 2 * iters + 2 * i];
				l = all[(size_t)r * 2 * iters + 2 * i + 1];
				in = e > in ? e : in;
				out = l < out ? l : out;
				last_out = l > last_out ? l : last_out;
			}
			if (in > out && ++bad <= 3)
				fprintf(stderr, "barrier_mpi: barrier %d: a "
					"rank left %.1f us before the last "
					"entered\n", i, (double)(in - out) / 1e3);
			lat[i] = last_out - in;
		}
		loop = (double)(rec[2 * iters - 1] - rec[0]) / iters;
		qsort(lat, (size_t)iters, sizeof(*lat), cmp_i64);
		n = iters;
		printf("time ranks=%d used=mpi iters=%d median_us=%.1f "
		       "min_us=%.1f p90_us=%.1f loop_us=%.1f violations=%d\n",
		       size, n,
		       (n % 2 ? (double)lat[n / 2] :
			(double)(lat[n / 2 - 1] + lat[n / 2]) / 2) / 1e3,
		       (double)lat[0] / 1e3, (double)lat[n * 9 / 10] / 1e3,
		       loop / 1e3, bad);
		fflush(stdout);
	}
	MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(rec);
	free(lat);
	free(all);
	MPI_Finalize();
	return bad ? 1 : 0;
}
