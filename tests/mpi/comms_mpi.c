/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comms_mpi: a plain MPI program that creates and frees communicators in a
 * loop (dup, split, create from a group), broadcasts on each from a
 * rotating root (contiguous and strided types, sizes up to 64 KiB, with an
 * MPI_Ibcast in between) and checks every element, then a barrier. Shows
 * that communicators come and go without leaking what backs them.
 *
 * Usage: comms_mpi [ITERATIONS] (default 200). Output: every rank prints
 * "comms_mpi: rank R: C communicators, B broadcasts verified, E errors".
 * Exit 1 on errors.
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

static int wrank;
static long bcasts, errors;

static int val(long seq, int root, int i)
{
	return (int)(i * 40503 + root * 1000003 + seq * 7919);
}

/* One broadcast of n ints from root on comm; stride > 1 uses a vector
 * type at every member. */
static void bcast_check(MPI_Comm comm, long seq, int root, int n,
			int stride, int nonblocking)
{
	MPI_Datatype vec = MPI_DATATYPE_NULL;
	int me, i, bad = 0, *buf;

	MPI_Comm_rank(comm, &me);
	buf = malloc(sizeof(int) * (size_t)n * (size_t)stride + 1);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (i = 0; i < n * stride; i++)
		buf[i] = me == root && i % stride == 0 ?
				 val(seq, root, i / stride) : -1;
	if (stride > 1) {
		MPI_Type_vector(n, 1, stride, MPI_INT, &vec);
		MPI_Type_commit(&vec);
	}
	if (nonblocking) {
		MPI_Request req;

		MPI_Ibcast(buf, stride > 1 ? 1 : n,
			   stride > 1 ? vec : MPI_INT, root, comm, &req);
		MPI_Wait(&req, MPI_STATUS_IGNORE);
	} else {
		MPI_Bcast(buf, stride > 1 ? 1 : n, stride > 1 ? vec : MPI_INT,
			  root, comm);
	}
	for (i = 0; i < n * stride; i++) {
		int want = i % stride == 0 ? val(seq, root, i / stride) : -1;

		if (buf[i] != want && bad++ < 3)
			fprintf(stderr,
				"comms_mpi: rank %d: broadcast %ld from root %d: int %d of %d is %d, not %d\n",
				wrank, seq, root, i, n * stride, buf[i], want);
	}
	errors += bad > 0;
	bcasts++;
	if (vec != MPI_DATATYPE_NULL)
		MPI_Type_free(&vec);
	free(buf);
}

static void exercise(MPI_Comm comm, long it)
{
	static const int sizes[] = { 1, 17, 1000, 16384 };
	int n;

	if (comm == MPI_COMM_NULL)
		return;
	MPI_Comm_size(comm, &n);
	bcast_check(comm, it, (int)(it % n), sizes[it % 4], 1, 0);
	bcast_check(comm, it + 1, (int)((it + 1) % n), sizes[(it + 1) % 4],
		    3, 0);
	bcast_check(comm, it + 2, (int)((it + 2) % n), 100, 1, 1);
	MPI_Barrier(comm);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 200, it, comms = 0;
	MPI_Group wg, evens;
	long total = 0;
	int wsize, range[1][3];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	range[0][0] = 0;
	range[0][1] = wsize - 1;
	range[0][2] = 2;
	MPI_Group_range_incl(wg, 1, range, &evens);

	for (it = 0; it < iters; it++) {
		MPI_Comm dup, split, sub;

		MPI_Comm_dup(MPI_COMM_WORLD, &dup);
		/* reversed order in the split: ranks differ from world's */
		MPI_Comm_split(dup, (int)(wrank + it) % 2, -wrank, &split);
		MPI_Comm_create(MPI_COMM_WORLD, evens, &sub);
		comms += 2 + (sub != MPI_COMM_NULL);
		exercise(dup, it * 10);
		exercise(split, it * 10 + 3);
		exercise(sub, it * 10 + 6);
		if (sub != MPI_COMM_NULL)
			MPI_Comm_free(&sub);
		MPI_Comm_free(&split);
		MPI_Comm_free(&dup);
	}
	exercise(MPI_COMM_WORLD, iters * 10);
	MPI_Group_free(&evens);
	MPI_Group_free(&wg);
	MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	printf("comms_mpi: rank %d: %ld communicators, %ld broadcasts verified, %ld errors\n",
	       wrank, comms, bcasts, errors);
	MPI_Finalize();
	return total ? 1 : 0;
}
