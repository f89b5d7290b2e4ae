/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * threads_mpi: a plain MPI_THREAD_MULTIPLE program whose threads each
 * create a communicator of all ranks at once (MPI_Comm_create on their
 * own dup of MPI_COMM_WORLD, as MPICH's threads/comm/comm_create_threads
 * does) and run barriers and allreduces on it, checking every result;
 * then the main thread's allreduce on MPI_COMM_WORLD.
 *
 * Output: every rank prints "threads_mpi: rank R: N allreduces verified,
 * E errors" (or that MPI gave less than MPI_THREAD_MULTIPLE). Exit 1 on
 * errors.
 */
#include <pthread.h>
#include <stdio.h>

#include <mpi.h>

#define NTHREADS 4
#define ROUNDS 20

static MPI_Comm dups[NTHREADS];
static MPI_Group world;
static long done[NTHREADS], errs[NTHREADS];

static void *worker(void *arg)
{
	int t = (int)(long)arg, n, me, i, v, sum;
	MPI_Comm comm;

	MPI_Comm_create(dups[t], world, &comm);
	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	for (i = 0; i < ROUNDS; i++) {
		MPI_Barrier(comm);
		v = me * 100 + t * 10 + i;
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm);
		errs[t] += sum != 100 * n * (n - 1) / 2 + n * (t * 10 + i);
		done[t]++;
	}
	MPI_Comm_free(&comm);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[NTHREADS];
	int provided, rank, n, t, v, sum;
	long all = 0, bad = 0;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (provided < MPI_THREAD_MULTIPLE) {
		printf("threads_mpi: rank %d: MPI gave thread level %d\n", rank,
		       provided);
		MPI_Finalize();
		return 1;
	}
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	for (t = 0; t < NTHREADS; t++)
		MPI_Comm_dup(MPI_COMM_WORLD, &dups[t]);
	for (t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(long)t);
	for (t = 0; t < NTHREADS; t++) {
		pthread_join(th[t], NULL);
		all += done[t];
		bad += errs[t];
		MPI_Comm_free(&dups[t]);
	}
	v = rank;
	MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	bad += sum != n * (n - 1) / 2;
	all++;
	MPI_Group_free(&world);
	printf("threads_mpi: rank %d: %ld allreduces verified, %ld errors\n",
	       rank, all, bad);
	fflush(stdout);
	MPI_Finalize();
	return bad ? 1 : 0;
}
