/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_time_mpi: times the MPI library's own MPI_Allgather or
 * MPI_Allreduce (doubles, MPI_SUM), for tests/bench/allgather.sh and
 * allreduce.sh to set beside libibmcast's, which build it with
 * mpicc.mpich and run it with mpiexec.mpich (no shim). Each call starts
 * after an MPI_Barrier; its time is the first start to the last return
 * (all ranks run on this host, one CLOCK_MONOTONIC). Prints, like
 * coll_check --timing:
 *   time coll=C size=N bytes=B algo=mpi reps=R median_us=..
 * size = bytes per rank (allgather) or elements (allreduce).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int rank, size, reps = 5, allreduce = 0, i, r;
	long n = 8;
	double t[2], tmin, tmax, *all, *lat, med;
	char *send, *recv;
	size_t sbytes, rbytes;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--coll") && i + 1 < argc)
			allreduce = !strcmp(argv[++i], "allreduce");
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			n = atol(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else
			reps = 0;
	}
	if (reps < 1 || n < 0) {
		if (rank == 0)
			fprintf(stderr, "usage: coll_time_mpi [--coll allgather|"
				"allreduce] [--size N] [--reps N]\n");
		MPI_Finalize();
		return 2;
	}
	sbytes = allreduce ? (size_t)n * sizeof(double) : (size_t)n;
	rbytes = allreduce ? sbytes : sbytes * (size_t)size;
	send = calloc(sbytes + 1, 1);
	recv = malloc(rbytes + 1);
	all = malloc(sizeof(double) * 2 * (size_t)size);
	lat = malloc(sizeof(double) * (size_t)reps);
	if (!send || !recv || !all || !lat)
		MPI_Abort(MPI_COMM_WORLD, 2);
	/* untimed: connections and shared memory set up on first use */
	for (r = -1; r < reps; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t[0] = now();
		if (allreduce)
			MPI_Allreduce(send, recv, (int)n, MPI_DOUBLE, MPI_SUM,
				      MPI_COMM_WORLD);
		else
			MPI_Allgather(send, (int)n, MPI_BYTE, recv, (int)n,
				      MPI_BYTE, MPI_COMM_WORLD);
		t[1] = now();
		MPI_Allgather(t, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE,
			      MPI_COMM_WORLD);
		if (r < 0)
			continue;
		tmin = all[0];
		tmax = all[1];
		for (i = 1; i < size; i++) {
			tmin = all[2 * i] < tmin ? all[2 * i] : tmin;
			tmax = all[2 * i + 1] > tmax ? all[2 * i + 1] : tmax;
		}
		lat[r] = tmax - tmin;
	}
	if (rank == 0) {
		qsort(lat, (size_t)reps, sizeof(double), cmp_dbl);
		med = reps % 2 ? lat[reps / 2] :
			(lat[reps / 2 - 1] + lat[reps / 2]) / 2;
		printf("time coll=%s size=%ld bytes=%zu algo=mpi reps=%d "
		       "median_us=%.1f\n", allreduce ? "allreduce" : "allgather",
		       n, sbytes, reps, med * 1e6);
		fflush(stdout);
	}
	free(send);
	free(recv);
	free(all);
	free(lat);
	MPI_Finalize();
	return 0;
}
