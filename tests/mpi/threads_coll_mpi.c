/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * threads_coll_mpi: MPI_THREAD_MULTIPLE with collectives on different
 * communicators from different threads at once. The main thread makes 4
 * duplicates of MPI_COMM_WORLD; then 4 threads each run 150 rounds of
 * MPI_Bcast (root rotating; 10 B and 5000 B), MPI_Allreduce, MPI_Allgather
 * and MPI_Barrier on their own duplicate, all at the same time, and every
 * result is checked. Then the main thread broadcasts 5000 B once on
 * MPI_COMM_WORLD (checked, not counted among the calls): the one
 * communicator whose multicast group does not depend on the threads'
 * timing carries multicast.
 *
 * Output: "threads_coll_mpi: rank R: N calls, E errors". Exit 1 on errors, 2
 * when the MPI does not give MPI_THREAD_MULTIPLE.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define THREADS 4
#define ROUNDS 150

static MPI_Comm comms[THREADS];
static int rank, size;
static long errors[THREADS], calls[THREADS];

/* One broadcast of 5000 B from rank 0 on MPI_COMM_WORLD, checked. */
static void world_bcast(long *e)
{
	unsigned char buf[5000];
	int i;

	for (i = 0; i < 5000; i++)
		buf[i] = rank == 0 ? (unsigned char)(i * 7 + 1) : 0;
	if (MPI_Bcast(buf, 5000, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
		(*e)++;
	for (i = 0; i < 5000; i++)
		*e += buf[i] != (unsigned char)(i * 7 + 1);
}

static void *run(void *arg)
{
	int t = (int)(long)arg, i, j, v, sum, root, n;
	int *all = malloc(sizeof(int) * (size_t)size);
	char buf[5000];

	if (!all)
		return (void *)1;
	for (i = 0; i < ROUNDS; i++) {
		root = (i + t) % size;
		n = i % 3 ? (int)sizeof(buf) : 10;
		memset(buf, rank == root ? i + t : 0xff, sizeof(buf));
		MPI_Bcast(buf, n, MPI_CHAR, root, comms[t]);
		errors[t] += buf[0] != (char)(i + t) ||
			     buf[n - 1] != (char)(i + t);
		v = rank * 1000 + i + t;
		MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comms[t]);
		errors[t] += sum != 1000 * size * (size - 1) / 2 +
				    size * (i + t);
		MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, comms[t]);
		for (j = 0; j < size; j++)
			errors[t] += all[j] != j * 1000 + i + t;
		MPI_Barrier(comms[t]);
		calls[t] += 4;
	}
	free(all);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	long e = 0, n = 0;
	int provided, t;

	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (provided != MPI_THREAD_MULTIPLE) {
		fprintf(stderr, "threads_coll_mpi: no MPI_THREAD_MULTIPLE\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (t = 0; t < THREADS; t++)
		MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
	for (t = 0; t < THREADS; t++)
		if (pthread_create(&th[t], NULL, run, (void *)(long)t))
			MPI_Abort(MPI_COMM_WORLD, 2);
	for (t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
		e += errors[t];
		n += calls[t];
	}
	for (t = 0; t < THREADS; t++)
		MPI_Comm_free(&comms[t]);
	world_bcast(&e);
	printf("threads_coll_mpi: rank %d: %ld calls, %ld errors\n", rank, n, e);
	MPI_Finalize();
	return e != 0;
}
