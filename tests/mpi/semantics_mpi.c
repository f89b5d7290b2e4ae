/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * semantics_mpi: a plain MPI program that checks the MPI rules a
 * collective library is easiest to get wrong, on MPI_COMM_WORLD, a dup,
 * a Cartesian ring and a merged intercommunicator: type signatures, not
 * type maps, match between ranks (a permuted indexed type, a
 * negative-stride vector and an absolute-address type at MPI_BOTTOM on
 * one side, plain MPI_INT on the other, for MPI_Bcast and MPI_Allgather);
 * count 0 with no buffers; and, on MPI_COMM_WORLD with MPI_ERRORS_RETURN,
 * broadcasts whose lengths disagree between ranks: the ranks that get
 * less or more than they asked for see an error, never success, and the
 * communicator works afterwards; with "trunc", on every communicator, an
 * inner rank of the broadcast tree receiving less than the root sends:
 * only it sees MPI_ERR_TRUNCATE, the others succeed with the data (and in
 * an allreduce or allgather of disagreeing counts every rank sees an
 * error).
 *
 * Output: one "semantics comm=... case=... errors=E ok|FAIL" line per
 * case from rank 0 (errors summed over all ranks), then every rank
 * prints "semantics_mpi: rank R: N cases verified, E errors". Exit 1 on
 * errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define COUNT 1000	/* ints per rank in each case (even) */

static int wrank;
static long done, errors;

static int val(int seq, int r, int i)
{
	return i * 7919 + r * 1000003 + seq * 31;
}

/* Rank 0 prints the case's verdict, errors summed over comm. */
static void verdict(MPI_Comm comm, const char *cname, const char *what,
		    long errs)
{
	long all = 0;
	int me;

	MPI_Comm_rank(comm, &me);
	MPI_Allreduce(&errs, &all, 1, MPI_LONG, MPI_SUM, comm);
	if (me == 0)
		printf("semantics comm=%s case=%s errors=%ld %s\n", cname,
		       what, all, all ? "FAIL" : "ok");
	done++;
	errors += errs;
}

/* count ints in pairs, each pair's two ints swapped: a type map that is
 * not in memory order, though it has no holes. */
static MPI_Datatype swapped_pairs(int count)
{
	int lens[2] = { 1, 1 }, disps[2] = { 1, 0 };
	MPI_Datatype pair, t;

	MPI_Type_indexed(2, lens, disps, MPI_INT, &pair);
	MPI_Type_contiguous(count / 2, pair, &t);
	MPI_Type_commit(&t);
	MPI_Type_free(&pair);
	return t;
}

/* count ints backwards from the buffer's address. */
static MPI_Datatype backwards(int count)
{
	MPI_Datatype t;

	MPI_Type_vector(count, 1, -1, MPI_INT, &t);
	MPI_Type_commit(&t);
	return t;
}

/* The index in memory of element i of the type map made by make_type
 * (0: swapped pairs, 1: backwards, from the buffer's last int). */
static int at(int kind, int i)
{
	return kind == 0 ? (i ^ 1) : COUNT - 1 - i;
}

static void bcast_types(MPI_Comm comm, const char *cname, int *seq)
{
	static const char *const names[2] = { "bcast-swapped-pairs",
					      "bcast-negative-stride" };
	int n, me, root, kind, i, *a = malloc(sizeof(int) * COUNT);
	MPI_Datatype t;
	long errs;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	for (kind = 0; kind < 2; kind++) {
		t = kind == 0 ? swapped_pairs(COUNT) : backwards(COUNT);
		errs = 0;
		/* the derived type at the root, then at the receivers */
		for (root = 0; root < n; root++) {
			int *p = kind == 0 ? a : a + COUNT - 1;

			(*seq)++;
			if (me == root) {
				for (i = 0; i < COUNT; i++)
					a[at(kind, i)] = val(*seq, root, i);
				MPI_Bcast(p, 1, t, root, comm);
			} else {
				memset(a, 0xee, sizeof(int) * COUNT);
				MPI_Bcast(a, COUNT, MPI_INT, root, comm);
				for (i = 0; i < COUNT; i++)
					errs += a[i] != val(*seq, root, i);
			}
			(*seq)++;
			if (me == root) {
				for (i = 0; i < COUNT; i++)
					a[i] = val(*seq, root, i);
				MPI_Bcast(a, COUNT, MPI_INT, root, comm);
			} else {
				memset(a, 0xee, sizeof(int) * COUNT);
				MPI_Bcast(p, 1, t, root, comm);
				for (i = 0; i < COUNT; i++)
					errs += a[at(kind, i)] !=
						val(*seq, root, i);
			}
		}
		MPI_Type_free(&t);
		verdict(comm, cname, names[kind], errs);
	}
	free(a);
}

/* An hindexed type of the buffer's absolute address, at MPI_BOTTOM, on
 * every rank (each its own address) and as the root. */
static void bcast_bottom(MPI_Comm comm, const char *cname, int *seq)
{
	int n, me, root, i, len = COUNT, *a = malloc(sizeof(int) * COUNT);
	MPI_Aint addr;
	MPI_Datatype t;
	long errs = 0;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	MPI_Get_address(a, &addr);
	MPI_Type_create_hindexed(1, &len, &addr, MPI_INT, &t);
	MPI_Type_commit(&t);
	for (root = 0; root < n; root++) {
		(*seq)++;
		for (i = 0; i < COUNT; i++)
			a[i] = me == root ? val(*seq, root, i) : -1;
		MPI_Bcast(MPI_BOTTOM, 1, t, root, comm);
		for (i = 0; i < COUNT; i++)
			errs += a[i] != val(*seq, root, i);
	}
	MPI_Type_free(&t);
	free(a);
	verdict(comm, cname, "bcast-mpi-bottom", errs);
}

/* Every rank sends its block by a derived type (swapped pairs or
 * backwards), received as MPI_INT; then sent as MPI_INT and received by
 * the derived type, block by block. */
static void allgather_types(MPI_Comm comm, const char *cname, int *seq)
{
	static const char *const names[2] = { "allgather-swapped-pairs",
					      "allgather-negative-stride" };
	int n, me, kind, r, i, *mine = malloc(sizeof(int) * COUNT), *all;
	MPI_Datatype t, rt;
	long errs;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	all = malloc(sizeof(int) * COUNT * (size_t)n);
	for (kind = 0; kind < 2; kind++) {
		t = kind == 0 ? swapped_pairs(COUNT) : backwards(COUNT);
		errs = 0;
		(*seq)++;
		for (i = 0; i < COUNT; i++)
			mine[at(kind, i)] = val(*seq, me, i);
		memset(all, 0xee, sizeof(int) * COUNT * (size_t)n);
		MPI_Allgather(kind == 0 ? mine : mine + COUNT - 1, 1, t, all,
			      COUNT, MPI_INT, comm);
		for (r = 0; r < n; r++)
			for (i = 0; i < COUNT; i++)
				errs += all[r * COUNT + i] != val(*seq, r, i);
		/* the receive side: blocks of the derived type, COUNT ints
		 * apart (resized: a backwards block starts at its end) */
		(*seq)++;
		for (i = 0; i < COUNT; i++)
			mine[i] = val(*seq, me, i);
		MPI_Type_create_resized(t, 0, (MPI_Aint)sizeof(int) * COUNT,
					&rt);
		MPI_Type_commit(&rt);
		memset(all, 0xee, sizeof(int) * COUNT * (size_t)n);
		MPI_Allgather(mine, COUNT, MPI_INT,
			      kind == 0 ? all : all + COUNT - 1, 1, rt, comm);
		for (r = 0; r < n; r++)
			for (i = 0; i < COUNT; i++)
				errs += all[r * COUNT + at(kind, i)] !=
					val(*seq, r, i);
		MPI_Type_free(&rt);
		MPI_Type_free(&t);
		verdict(comm, cname, names[kind], errs);
	}
	free(mine);
	free(all);
}

/* Count 0, with no buffers at all: nothing to move, nothing to fail. */
static void zero_counts(MPI_Comm comm, const char *cname)
{
	long errs = 0;

	errs += MPI_Bcast(NULL, 0, MPI_INT, 0, comm) != MPI_SUCCESS;
	errs += MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, comm) !=
		MPI_SUCCESS;
	errs += MPI_Allreduce(MPI_IN_PLACE, NULL, 0, MPI_DOUBLE, MPI_MAX,
			      comm) != MPI_SUCCESS;
	errs += MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, comm) !=
		MPI_SUCCESS;
	verdict(comm, cname, "zero-counts", errs);
}

/*
 * Broadcast lengths that disagree (as MPICH's errors/coll/bcastlength
 * does): rank 0 with one int, the others with ten, then the reverse.
 * Under MPI_ERRORS_RETURN the others must see an error, never success
 * (rank 0 may not notice); then a valid broadcast, allreduce and
 * allgather on the same communicator must still give every rank the
 * right data.
 */
static void mismatched(MPI_Comm comm, const char *cname, int *seq)
{
	int n, me, i, rc, buf[10], out[10], *all, first;
	long errs = 0;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	all = malloc(sizeof(int) * 10 * (size_t)n);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	for (first = 1; first <= 10; first += 9) {
		for (i = 0; i < 10; i++)
			buf[i] = val(*seq, me, i);
		rc = MPI_Bcast(buf, me == 0 ? first : 11 - first, MPI_INT, 0,
			       comm);
		errs += me != 0 && rc == MPI_SUCCESS;
	}
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
	verdict(comm, cname, "mismatched-lengths-fail", errs);

	errs = 0;
	(*seq)++;
	for (i = 0; i < 10; i++)
		buf[i] = me == 0 ? val(*seq, 0, i) : -1;
	MPI_Bcast(buf, 10, MPI_INT, 0, comm);
	for (i = 0; i < 10; i++)
		errs += buf[i] != val(*seq, 0, i);
	for (i = 0; i < 10; i++)
		buf[i] = i + me;
	MPI_Allreduce(buf, out, 10, MPI_INT, MPI_SUM, comm);
	for (i = 0; i < 10; i++)
		errs += out[i] != i * n + n * (n - 1) / 2;
	MPI_Allgather(buf, 10, MPI_INT, all, 10, MPI_INT, comm);
	for (i = 0; i < 10 * n; i++)
		errs += all[i] != i % 10 + i / 10;
	verdict(comm, cname, "after-mismatch", errs);
	free(all);
}

/*
 * With the argument "trunc": one inner rank of the broadcast's tree (comm
 * rank 2, parent of 3 in the binomial tree rooted at 0; the last rank on
 * fewer than 4) receives with half the root's count, as a small message
 * and as one of several fragments. Under MPI_ERRORS_RETURN that rank must
 * get MPI_ERR_TRUNCATE and the start of the data, every other rank
 * MPI_SUCCESS and all of it (none may wait for a timeout or abort); then a
 * valid broadcast succeeds everywhere. Then an allreduce and an
 * allgather where that rank passes half the count, and an allreduce where
 * it passes another operation: every rank must get an error, and the
 * communicator still works. MPI's own collectives need not
 * pass this (a short inner rank of their trees may forward only what it
 * received), so the IBMCAST_MPI=0 runs leave it out.
 */
static void truncated(MPI_Comm comm, const char *cname, int *seq)
{
	static const int counts[] = { 10, 3000 };
	int n, me, i, k, rc, cls, cut, *buf, count;
	long errs = 0;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	cut = n > 3 ? 2 : n - 1;
	buf = malloc(sizeof(int) * 3000);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	for (k = 0; k < 2; k++) {
		(*seq)++;
		count = counts[k];
		for (i = 0; i < count; i++)
			buf[i] = me == 0 ? val(*seq, 0, i) : -1;
		rc = MPI_Bcast(buf, me == cut ? count / 2 : count, MPI_INT, 0,
			       comm);
		cls = MPI_SUCCESS;
		if (rc != MPI_SUCCESS)
			MPI_Error_class(rc, &cls);
		if (cls != (me == cut ? MPI_ERR_TRUNCATE : MPI_SUCCESS)) {
			fprintf(stderr,
				"semantics_mpi: rank %d: %s: truncated bcast of %d ints: error class %d\n",
				wrank, cname, count, cls);
			errs++;
		}
		for (i = 0; i < (me == cut ? count / 2 : count); i++)
			errs += buf[i] != val(*seq, 0, i);
	}
	/* An allreduce and an allgather where the same rank passes half
	 * the count: every rank's result would hold wrong data, so every
	 * rank gets an error (none succeeds, none aborts). */
	for (i = 0; i < 20; i++)
		buf[i] = i;
	rc = MPI_Allreduce(buf, buf + 1000, me == cut ? 10 : 20, MPI_INT,
			   MPI_SUM, comm);
	errs += rc == MPI_SUCCESS;
	rc = MPI_Allgather(buf, me == cut ? 5 : 10, MPI_INT, buf + 1000,
			   me == cut ? 5 : 10, MPI_INT, comm);
	errs += rc == MPI_SUCCESS;
	/* And where that rank passes another operation: every rank gets an
	 * error too. */
	rc = MPI_Allreduce(buf, buf + 1000, 20, MPI_INT,
			   me == cut ? MPI_MAX : MPI_SUM, comm);
	errs += rc == MPI_SUCCESS;
	/* The communicator still works, on every rank. */
	(*seq)++;
	for (i = 0; i < 3000; i++)
		buf[i] = me == 0 ? val(*seq, 0, i) : -1;
	errs += MPI_Bcast(buf, 3000, MPI_INT, 0, comm) != MPI_SUCCESS;
	for (i = 0; i < 3000; i++)
		errs += buf[i] != val(*seq, 0, i);
	for (i = 0; i < 10; i++)
		buf[i] = i + me;
	errs += MPI_Allreduce(buf, buf + 1000, 10, MPI_INT, MPI_SUM, comm) !=
		MPI_SUCCESS;
	for (i = 0; i < 10; i++)
		errs += buf[1000 + i] != i * n + n * (n - 1) / 2;
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
	verdict(comm, cname, "truncated-inner-rank", errs);
	free(buf);
}

/*
 * With the argument "alias": a send buffer that overlaps the receive
 * buffer is an error MPICH reports (MPI_ERR_BUFFER), not a collective to
 * run; under MPI_ERRORS_RETURN every rank must see an error, then the
 * communicator still works. (Open MPI does not check.)
 */
static void aliased(MPI_Comm comm, const char *cname)
{
	int n, me, i, buf[64];
	long errs = 0;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	for (i = 0; i < n; i++)
		buf[i] = i;
	errs += MPI_Allreduce(buf, buf, n, MPI_INT, MPI_SUM, comm) ==
		MPI_SUCCESS;
	errs += MPI_Allgather(&buf[me], 1, MPI_INT, buf, 1, MPI_INT, comm) ==
		MPI_SUCCESS;
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
	MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT, MPI_SUM, comm);
	for (i = 0; i < n; i++)
		errs += buf[i] != i * n;
	verdict(comm, cname, "aliased-buffers-fail", errs);
}

static int trunc_case;

static void run(MPI_Comm comm, const char *cname)
{
	int seq = 0;

	bcast_types(comm, cname, &seq);
	bcast_bottom(comm, cname, &seq);
	allgather_types(comm, cname, &seq);
	zero_counts(comm, cname);
	if (trunc_case)
		truncated(comm, cname, &seq);
}

int main(int argc, char **argv)
{
	MPI_Comm dup, cart, half, inter, merged;
	int wsize, low, seq, alias = 0, i, dims[1] = { 0 }, periods[1] = { 1 };

	MPI_Init(&argc, &argv);
	for (i = 1; i < argc; i++) {
		alias |= !strcmp(argv[i], "alias");
		trunc_case |= !strcmp(argv[i], "trunc");
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	/* a ring topology, and the two halves' intercommunicator merged
	 * with the upper half first */
	MPI_Dims_create(wsize, 1, dims);
	MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
	low = wrank < wsize / 2;
	MPI_Comm_split(MPI_COMM_WORLD, low, wrank, &half);
	MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? wsize / 2 : 0, 7,
			     &inter);
	MPI_Intercomm_merge(inter, low, &merged);
	run(MPI_COMM_WORLD, "world");
	run(dup, "dup");
	run(cart, "cart");
	run(merged, "merged");
	/* (on MPI_COMM_WORLD only: the IBMCAST_MPI=0 runs check MPI's own
	 * broadcast with it) */
	seq = 9000;
	mismatched(MPI_COMM_WORLD, "world", &seq);
	if (alias)
		aliased(MPI_COMM_WORLD, "world");
	printf("semantics_mpi: rank %d: %ld cases verified, %ld errors\n",
	       wrank, done, errors);
	fflush(stdout);
	MPI_Comm_free(&merged);
	MPI_Comm_free(&inter);
	MPI_Comm_free(&half);
	MPI_Comm_free(&cart);
	MPI_Comm_free(&dup);
	MPI_Finalize();
	return errors ? 1 : 0;
}
