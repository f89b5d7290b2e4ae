/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * progress_mpi: MPI's progress rule across a collective. Before each of
 * MPI_Barrier, MPI_Bcast (root 1), MPI_Allreduce and MPI_Allgather, rank 0
 * starts an MPI_Isend of 8 MiB to rank 1 and enters the collective; rank 1
 * receives it (MPI_Recv) before it enters. A large message needs its
 * sender's progress engine, so the collective on rank 0 must keep MPI's
 * moving while it waits for rank 1, or both wait for ever. Every message
 * and every result is checked.
 *
 * Output: "progress_mpi: rank R: N rounds, E errors". Exit 1 on errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define BIG (8 << 20)

int main(int argc, char **argv)
{
	int rank, size, round, coll, errors = 0, rounds = 0, v, sum, *all;
	char *big;
	MPI_Request req;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	big = malloc(BIG);
	all = malloc(sizeof(int) * (size_t)size);
	if (!big || !all || size < 2)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (round = 0; round < 3; round++)
		for (coll = 0; coll < 4; coll++, rounds++) {
			if (rank == 0) {
				memset(big, rounds + 1, BIG);
				MPI_Isend(big, BIG, MPI_BYTE, 1, rounds,
					  MPI_COMM_WORLD, &req);
			} else if (rank == 1) {
				MPI_Recv(big, BIG, MPI_BYTE, 0, rounds,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				errors += big[0] != (char)(rounds + 1) ||
					  big[BIG - 1] != (char)(rounds + 1);
			}
			v = rank == 1 ? 1000 + rounds : rank;
			switch (coll) {
			case 0:
				MPI_Barrier(MPI_COMM_WORLD);
				break;
			case 1:
				MPI_Bcast(&v, 1, MPI_INT, 1, MPI_COMM_WORLD);
				errors += v != 1000 + rounds;
				break;
			case 2:
				MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM,
					      MPI_COMM_WORLD);
				errors += sum != size * (size - 1) / 2;
				break;
			case 3:
				MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT,
					      MPI_COMM_WORLD);
				errors += all[1] != 1000 + rounds ||
					  all[size - 1] != (size - 1 == 1 ?
							    1000 + rounds :
							    size - 1);
				break;
			}
			if (rank == 0)
				MPI_Wait(&req, MPI_STATUS_IGNORE);
		}
	printf("progress_mpi: rank %d: %d rounds, %d errors\n", rank, rounds,
	       errors);
	free(big);
	free(all);
	MPI_Finalize();
	return errors != 0;
}
