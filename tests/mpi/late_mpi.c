/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * late_mpi: a plain MPI program (nothing but MPI calls) with one slow
 * rank, as users write them: rank LATE_MPI_RANK (default 1) spends
 * LATE_MPI_SECONDS (default 5) computing, or writing a checkpoint, before
 * each of MPI_Barrier, MPI_Bcast, MPI_Allreduce and MPI_Allgather on
 * MPI_COMM_WORLD. A correct program: every rank must pass, however late
 * that rank is. Every result is checked against values computed here.
 * Prints "late_mpi: rank R: 4 collectives verified, E errors, waited W s".
 *
 * LATE_MPI_DIE=1 instead makes that rank leave at once (_exit, as a crash)
 * before the barrier, with MPI_ERRORS_RETURN on MPI_COMM_WORLD: every
 * survivor must get an error from MPI_Barrier, not hang, and then from
 * MPI_Bcast. Prints "late_mpi: rank R: barrier error CLASS after T s" and
 * "late_mpi: rank R: bcast error CLASS after T s", then leaves with
 * _exit(0) (MPI_Finalize with a dead rank is the MPI's own affair).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#define COUNT 1024

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int env_int(const char *name, int def)
{
	const char *s = getenv(name);

	return s && *s ? atoi(s) : def;
}

static void report(int rank, const char *what, int rc, double t0)
{
	int cls = -1;

	if (rc != MPI_SUCCESS)
		MPI_Error_class(rc, &cls);
	printf("late_mpi: rank %d: %s %s %d after %.1f s\n", rank, what,
	       rc == MPI_SUCCESS ? "success" : "error", cls, now_s() - t0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int rank, size, late, die, i, r, errors = 0, rc;
	int buf[COUNT], sum[COUNT], *all;
	double secs, t0, waited = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	late = env_int("LATE_MPI_RANK", 1) % size;
	secs = env_int("LATE_MPI_SECONDS", 5);
	die = env_int("LATE_MPI_DIE", 0);
	all = malloc(sizeof(int) * COUNT * (size_t)size);
	if (!all)
		MPI_Abort(MPI_COMM_WORLD, 1);

	if (die) {
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		MPI_Barrier(MPI_COMM_WORLD);	/* everyone is in */
		if (rank == late) {
			printf("late_mpi: rank %d leaves\n", rank);
			fflush(stdout);
			_exit(0);
		}
		t0 = now_s();
		rc = MPI_Barrier(MPI_COMM_WORLD);
		report(rank, "barrier", rc, t0);
		t0 = now_s();
		rc = MPI_Bcast(buf, COUNT, MPI_INT, 0, MPI_COMM_WORLD);
		report(rank, "bcast", rc, t0);
		_exit(0);
	}

	for (i = 0; i < 4; i++) {
		if (rank == late)
			usleep((useconds_t)(secs * 1e6));
		t0 = now_s();
		switch (i) {
		case 0:
			MPI_Barrier(MPI_COMM_WORLD);
			break;
		case 1:
			for (r = 0; r < COUNT; r++)
				buf[r] = rank == 0 ? r * 3 + 1 : -1;
			MPI_Bcast(buf, COUNT, MPI_INT, 0, MPI_COMM_WORLD);
			for (r = 0; r < COUNT; r++)
				errors += buf[r] != r * 3 + 1;
			break;
		case 2:
			for (r = 0; r < COUNT; r++)
				buf[r] = (rank + 1) * (r + 1);
			MPI_Allreduce(buf, sum, COUNT, MPI_INT, MPI_SUM,
				      MPI_COMM_WORLD);
			for (r = 0; r < COUNT; r++)
				errors += sum[r] != (r + 1) * size * (size + 1) / 2;
			break;
		default:
			for (r = 0; r < COUNT; r++)
				buf[r] = rank * COUNT + r;
			MPI_Allgather(buf, COUNT, MPI_INT, all, COUNT, MPI_INT,
				      MPI_COMM_WORLD);
			for (r = 0; r < COUNT * size; r++)
				errors += all[r] != r;
			break;
		}
		waited += now_s() - t0;
	}
	printf("late_mpi: rank %d: 4 collectives verified, %d errors, waited %.1f s\n",
	       rank, errors, waited);
	fflush(stdout);
	free(all);
	MPI_Finalize();
	return errors != 0;
}
