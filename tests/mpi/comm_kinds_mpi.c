/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_kinds_mpi: a plain MPI program that makes communicators every way
 * MPI offers besides split/create (a split only ranks 0 and 1 are in,
 * kept while a dup of MPI_COMM_WORLD is made, whose members then hold
 * different pool groups; MPI_Comm_dup_with_info, MPI_Comm_idup,
 * MPI_Comm_create_group, MPI_Comm_split_type) in a loop, runs MPI_Bcast (rotating root), MPI_Allreduce,
 * MPI_Allgather and MPI_Barrier on each, checks every element, and frees
 * them all: thousands of communicators come and go.
 *
 * Usage: comm_kinds_mpi [ITERATIONS] (default 100). Output: every rank
 * prints "comm_kinds_mpi: rank R: C communicators, K calls verified, E
 * errors". Exit 1 on errors.
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#define NCOMMS 6

static int wrank;
static long calls, errors;

static void check(int ok, const char *what, long it, MPI_Comm comm)
{
	char name[MPI_MAX_OBJECT_NAME];
	int len = 0;

	calls++;
	if (ok)
		return;
	if (errors++ < 5) {
		MPI_Comm_get_name(comm, name, &len);
		fprintf(stderr, "comm_kinds_mpi: rank %d: iteration %ld: %s on %s wrong\n",
			wrank, it, what, len ? name : "a communicator");
	}
}

/* Every mapped collective once on comm, each result checked. */
static void exercise(MPI_Comm comm, long it)
{
	int me, n, i, root, ok, count = 1 + (int)(it % 5) * 300;
	int *buf, *all, mine, sum = 0;

	if (comm == MPI_COMM_NULL)
		return;
	MPI_Comm_rank(comm, &me);
	MPI_Comm_size(comm, &n);
	buf = malloc(sizeof(int) * (size_t)count);
	all = malloc(sizeof(int) * (size_t)n);
	if (!buf || !all)
		MPI_Abort(MPI_COMM_WORLD, 2);
	root = (int)(it % n);
	for (i = 0; i < count; i++)
		buf[i] = me == root ? (int)(i * 7 + it) : -1;
	MPI_Bcast(buf, count, MPI_INT, root, comm);
	for (ok = 1, i = 0; i < count; i++)
		ok &= buf[i] == (int)(i * 7 + it);
	check(ok, "MPI_Bcast", it, comm);

	mine = me + (int)it;
	MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_SUM, comm);
	for (i = 0; i < n; i++)
		sum += i + (int)it;
	check(mine == sum, "MPI_Allreduce", it, comm);

	mine = me * 3 + (int)it;
	MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, comm);
	for (ok = 1, i = 0; i < n; i++)
		ok &= all[i] == i * 3 + (int)it;
	check(ok, "MPI_Allgather", it, comm);

	check(MPI_Barrier(comm) == MPI_SUCCESS, "MPI_Barrier", it, comm);
	free(buf);
	free(all);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 100, it, made = 0, total = 0;
	MPI_Group wg, most;
	MPI_Info info;
	int wsize, out[1], i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	MPI_Info_create(&info);
	MPI_Info_set(info, "mpi_assert_no_any_tag", "true");

	for (it = 0; it < iters; it++) {
		MPI_Comm c[NCOMMS];
		MPI_Request req;

		/* first, while the pool has groups left: the dup's
		 * members differ in the groups they hold */
		MPI_Comm_split(MPI_COMM_WORLD, wrank < 2 ? 0 : MPI_UNDEFINED,
			       wrank, &c[0]);
		MPI_Comm_dup(MPI_COMM_WORLD, &c[1]);
		MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c[2]);
		/* (MPI_Comm_idup's communicator exists once its request
		 * completes, as the standard has it) */
		MPI_Comm_idup(MPI_COMM_WORLD, &c[3], &req);
		MPI_Wait(&req, MPI_STATUS_IGNORE);
		/* every rank but one that moves with the iteration; only the
		 * group's members call MPI_Comm_create_group */
		out[0] = (int)(it % wsize);
		MPI_Group_excl(wg, wsize > 1 ? 1 : 0, out, &most);
		c[4] = MPI_COMM_NULL;
		if (wsize == 1 || wrank != out[0])
			MPI_Comm_create_group(MPI_COMM_WORLD, most, (int)it,
					      &c[4]);
		MPI_Group_free(&most);
		MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
				    -wrank, MPI_INFO_NULL, &c[5]);
		for (i = 0; i < NCOMMS; i++) {
			exercise(c[i], it);
			if (c[i] != MPI_COMM_NULL) {
				made++;
				MPI_Comm_free(&c[i]);
			}
		}
	}
	MPI_Info_free(&info);
	MPI_Group_free(&wg);
	MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	printf("comm_kinds_mpi: rank %d: %ld communicators, %ld calls verified, %ld errors\n",
	       wrank, made, calls, errors);
	MPI_Finalize();
	return total ? 1 : 0;
}
