/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bcast_mpi: a plain MPI program (nothing but MPI calls) that broadcasts
 * from every root, 1 B to 1 MiB, as MPI_BYTE, MPI_INT and MPI_DOUBLE, on
 * MPI_COMM_WORLD, a dup of it, a split of it and a communicator made by
 * MPI_Comm_create, plus a strided type and a root whose datatype differs
 * from the receivers' (same type signature); every element is checked.
 * mpi_shim.sh runs it with libibmcast_mpi.so preloaded and without.
 *
 * Output: rank 0 prints one "size" line per communicator, type and size
 * (errors summed over all ranks); every rank prints
 * "bcast_mpi: rank R: N broadcasts verified, E errors". Exit 1 on errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static const int sizes[] = { 1, 3, 100, 4096, 4097, 65536, 300000, 1 << 20 };
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

static int wrank;
static long done, errors;

/* The value of element i of broadcast seq from root: differs per root,
 * per broadcast and per element, so stale or misplaced data shows. */
static long long val(long seq, int root, long i)
{
	return (long long)i * 2654435761u + root * 1000003 + seq * 7919;
}

static void fill(MPI_Datatype t, void *buf, long n, long seq, int root)
{
	long i;

	for (i = 0; i < n; i++) {
		long long v = val(seq, root, i);

		if (t == MPI_BYTE)
			((unsigned char *)buf)[i] = (unsigned char)v;
		else if (t == MPI_INT)
			((int *)buf)[i] = (int)v;
		else
			((double *)buf)[i] = (double)(v % 100000007) / 3.0;
	}
}

static long check(MPI_Datatype t, const void *buf, long n, long seq,
		  int root)
{
	long i, bad = 0;

	for (i = 0; i < n; i++) {
		long long v = val(seq, root, i);
		int good;

		if (t == MPI_BYTE)
			good = ((const unsigned char *)buf)[i] ==
			       (unsigned char)v;
		else if (t == MPI_INT)
			good = ((const int *)buf)[i] == (int)v;
		else
			good = ((const double *)buf)[i] ==
			       (double)(v % 100000007) / 3.0;
		if (!good && bad++ < 3)
			fprintf(stderr,
				"bcast_mpi: rank %d: broadcast %ld from root %d: element %ld of %ld wrong\n",
				wrank, seq, root, i, n);
	}
	return bad;
}

static const char *tname(MPI_Datatype t)
{
	return t == MPI_BYTE ? "MPI_BYTE" : t == MPI_INT ? "MPI_INT" :
							     "MPI_DOUBLE";
}

/* Every size and every root on comm; one line per size on rank 0. */
static void sweep(MPI_Comm comm, const char *name, MPI_Datatype t,
		  long *seq)
{
	int n, me, root, s, tsize;
	long errs, all;
	void *buf;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	MPI_Type_size(t, &tsize);
	buf = malloc(1 << 20);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (s = 0; s < NSIZES; s++) {
		long count = sizes[s] / tsize;

		if (count == 0)
			continue;
		errs = 0;
		for (root = 0; root < n; root++) {
			(*seq)++;
			if (me == root)
				fill(t, buf, count, *seq, root);
			else
				memset(buf, 0xee, (size_t)count * tsize);
			MPI_Bcast(buf, (int)count, t, root, comm);
			errs += check(t, buf, count, *seq, root);
			done++;
		}
		errors += errs;
		MPI_Reduce(&errs, &all, 1, MPI_LONG, MPI_SUM, 0, comm);
		if (me == 0)
			printf("size comm=%s ranks=%d type=%s bytes=%ld roots=%d errors=%ld %s\n",
			       name, n, tname(t), count * tsize, n, all,
			       all ? "FAIL" : "ok");
	}
	free(buf);
}

/*
 * Every other int of 2 * count (a strided type) from the root, received
 * contiguously; and a contiguous derived type at the root against plain
 * MPI_INT elsewhere. MPI lets each rank use its own datatype for one type
 * signature.
 */
static void mixed_types(MPI_Comm comm, const char *name, long *seq)
{
	int n, me, root, i, count = 50000;
	MPI_Datatype strided, block;
	long errs = 0, all;
	int *a = malloc(sizeof(int) * 2 * (size_t)count);
	int *b = malloc(sizeof(int) * (size_t)count);

	if (!a || !b)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	MPI_Type_vector(count, 1, 2, MPI_INT, &strided);
	MPI_Type_commit(&strided);
	MPI_Type_contiguous(1000, MPI_INT, &block);
	MPI_Type_commit(&block);
	for (root = 0; root < n; root++) {
		(*seq)++;
		if (me == root) {
			for (i = 0; i < count; i++) {
				a[2 * i] = (int)val(*seq, root, i);
				a[2 * i + 1] = -1;
			}
			MPI_Bcast(a, 1, strided, root, comm);
		} else {
			memset(b, 0xee, sizeof(int) * (size_t)count);
			MPI_Bcast(b, count, MPI_INT, root, comm);
			errs += check(MPI_INT, b, count, *seq, root);
		}
		(*seq)++;
		if (me == root) {
			fill(MPI_INT, b, count, *seq, root);
			MPI_Bcast(b, count / 1000, block, root, comm);
		} else {
			memset(a, 0xee, sizeof(int) * (size_t)count);
			MPI_Bcast(a, count, MPI_INT, root, comm);
			errs += check(MPI_INT, a, count, *seq, root);
		}
		done += 2;
	}
	MPI_Type_free(&strided);
	MPI_Type_free(&block);
	free(a);
	free(b);
	errors += errs;
	MPI_Reduce(&errs, &all, 1, MPI_LONG, MPI_SUM, 0, comm);
	if (me == 0)
		printf("size comm=%s ranks=%d type=strided+derived bytes=%ld roots=%d errors=%ld %s\n",
		       name, n, (long)count * 4, n, all, all ? "FAIL" : "ok");
}

int main(int argc, char **argv)
{
	MPI_Datatype types[] = { MPI_BYTE, MPI_INT, MPI_DOUBLE };
	MPI_Comm dup, half, sub;
	MPI_Group wg, odd;
	int wsize, t, i, nodd, *odds;
	long seq = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	/* halves, the second in reverse order */
	MPI_Comm_split(MPI_COMM_WORLD, wrank < wsize / 2,
		       wrank < wsize / 2 ? wrank : -wrank, &half);
	/* the odd ranks, by group (even ranks get MPI_COMM_NULL) */
	nodd = wsize / 2;
	odds = malloc(sizeof(int) * (size_t)(nodd ? nodd : 1));
	for (i = 0; i < nodd; i++)
		odds[i] = 2 * i + 1;
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	MPI_Group_incl(wg, nodd, odds, &odd);
	MPI_Comm_create(MPI_COMM_WORLD, odd, &sub);

	/* (seq numbers per communicator: not every rank is in sub) */
	for (t = 0; t < 3; t++) {
		seq = 1000000 * t;
		sweep(MPI_COMM_WORLD, "world", types[t], &seq);
		sweep(dup, "dup", types[t], &seq);
		sweep(half, "split", types[t], &seq);
		seq = 1000000 * t + 500000;
		if (sub != MPI_COMM_NULL)
			sweep(sub, "create", types[t], &seq);
	}
	seq = 5000000;
	mixed_types(MPI_COMM_WORLD, "world", &seq);
	mixed_types(half, "split", &seq);

	printf("bcast_mpi: rank %d: %ld broadcasts verified, %ld errors\n",
	       wrank, done, errors);
	fflush(stdout);
	if (sub != MPI_COMM_NULL)
		MPI_Comm_free(&sub);
	MPI_Group_free(&odd);
	MPI_Group_free(&wg);
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
	free(odds);
	MPI_Finalize();
	return errors ? 1 : 0;
}
