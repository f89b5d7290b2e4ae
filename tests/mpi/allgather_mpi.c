/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allgather_mpi: a plain MPI program that checks every element of
 * MPI_Allgather: blocks of 0 B to 256 KiB as MPI_BYTE, MPI_INT and
 * MPI_DOUBLE, with and without MPI_IN_PLACE, on MPI_COMM_WORLD, a dup and
 * a split; then derived datatypes: a strided send type, a strided
 * receive type (with and without MPI_IN_PLACE), and a rank whose send
 * type differs from the others' (same type signature).
 *
 * Output: rank 0 prints one "allgather comm=..." line per communicator
 * (errors summed over all ranks); every rank prints
 * "allgather_mpi: rank R: N allgathers verified (D of derived types),
 * E errors", then how many of those had blocks of 0 B. Exit 1 on
 * errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static int wrank;
static long done, derived, errors, zero;	/* zero: blocks of 0 B */

/* Element i of rank r's block in call seq. */
static long long val(long seq, int r, long i)
{
	return (long long)i * 2654435761u + r * 1000003 + seq * 7919;
}

static void put(MPI_Datatype t, void *buf, long i, long long v)
{
	if (t == MPI_BYTE)
		((unsigned char *)buf)[i] = (unsigned char)v;
	else if (t == MPI_INT)
		((int *)buf)[i] = (int)v;
	else
		((double *)buf)[i] = (double)(v % 100000007) / 3.0;
}

static int good(MPI_Datatype t, const void *buf, long i, long long v)
{
	if (t == MPI_BYTE)
		return ((const unsigned char *)buf)[i] == (unsigned char)v;
	if (t == MPI_INT)
		return ((const int *)buf)[i] == (int)v;
	return ((const double *)buf)[i] == (double)(v % 100000007) / 3.0;
}

static const char *tname(MPI_Datatype t)
{
	return t == MPI_BYTE ? "MPI_BYTE" : t == MPI_INT ? "MPI_INT" :
							     "MPI_DOUBLE";
}

/* Checks count elements of every rank's block in recv (elements of type
 * t, stride elements apart). */
static long check(MPI_Datatype t, const void *recv, int n, long count,
		  long stride, long seq, const char *what)
{
	long i, bad = 0;
	int r;

	for (r = 0; r < n; r++)
		for (i = 0; i < count; i++)
			if (!good(t, recv, (r * count + i) * stride,
				  val(seq, r, i)) &&
			    bad++ < 3)
				fprintf(stderr,
					"allgather_mpi: rank %d: %s call %ld: block %d element %ld of %ld wrong\n",
					wrank, what, seq, r, i, count);
	return bad;
}

static long plain(MPI_Comm comm, MPI_Datatype t, long count, int inplace,
		  long seq)
{
	int n, me, tsize;
	long i, bad;
	char *send, *recv;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	MPI_Type_size(t, &tsize);
	send = malloc((size_t)count * tsize + 1);
	recv = malloc((size_t)count * tsize * n + 1);
	if (!send || !recv)
		MPI_Abort(MPI_COMM_WORLD, 2);
	memset(recv, 0xee, (size_t)count * tsize * n);
	for (i = 0; i < count; i++)
		put(t, inplace ? recv + (size_t)me * count * tsize : send, i,
		    val(seq, me, i));
	MPI_Allgather(inplace ? MPI_IN_PLACE : send, (int)count, t, recv,
		      (int)count, t, comm);
	bad = check(t, recv, n, count, 1, seq, tname(t));
	zero += !count;
	free(send);
	free(recv);
	done++;
	return bad;
}

/*
 * Derived types: ints sent every other one (a vector) and received
 * contiguously; sent contiguously and received every other one (a
 * resized type), also in place; one rank sending a single contiguous
 * derived element where the others send count MPI_INTs.
 */
static long derived_types(MPI_Comm comm, long count, long *seq)
{
	MPI_Datatype vec, spaced, block;
	int n, me, k, ip;
	long i, bad = 0;
	int *a = malloc(sizeof(int) * 2 * (size_t)count);
	int *b;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	b = malloc(sizeof(int) * 2 * (size_t)count * (size_t)n);
	if (!a || !b)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Type_vector((int)count, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spaced);
	MPI_Type_commit(&spaced);
	MPI_Type_contiguous((int)count, MPI_INT, &block);
	MPI_Type_commit(&block);

	/* strided send */
	++*seq;
	for (i = 0; i < count; i++) {
		a[2 * i] = (int)val(*seq, me, i);
		a[2 * i + 1] = -1;
	}
	memset(b, 0xee, sizeof(int) * (size_t)count * (size_t)n);
	MPI_Allgather(a, 1, vec, b, (int)count, MPI_INT, comm);
	bad += check(MPI_INT, b, n, count, 1, *seq, "vector send");

	/* strided receive, from a buffer and in place */
	for (ip = 0; ip < 2; ip++) {
		++*seq;
		for (i = 0; i < 2 * count * n; i++)
			b[i] = -2;
		for (i = 0; i < count; i++) {
			a[i] = (int)val(*seq, me, i);
			if (ip)
				b[2 * (me * count + i)] = a[i];
		}
		MPI_Allgather(ip ? MPI_IN_PLACE : a, (int)count, MPI_INT, b,
			      (int)count, spaced, comm);
		bad += check(MPI_INT, b, n, count, 2, *seq,
			     ip ? "spaced receive in place" : "spaced receive");
		for (i = 0; i < count * n; i++)
			if (b[2 * i + 1] != -2 && bad++ < 3)
				fprintf(stderr, "allgather_mpi: rank %d: spaced receive wrote a gap at %ld\n",
					wrank, 2 * i + 1);
	}

	/* rank 0 sends one block element, the others count MPI_INTs; every
	 * rank receives as one block element per rank */
	++*seq;
	for (i = 0; i < count; i++)
		a[i] = (int)val(*seq, me, i);
	memset(b, 0xee, sizeof(int) * (size_t)count * (size_t)n);
	if (me == 0)
		MPI_Allgather(a, 1, block, b, 1, block, comm);
	else
		MPI_Allgather(a, (int)count, MPI_INT, b, 1, block, comm);
	bad += check(MPI_INT, b, n, count, 1, *seq, "mixed types");
	k = 4;
	done += k;
	derived += k;
	MPI_Type_free(&vec);
	MPI_Type_free(&spaced);
	MPI_Type_free(&block);
	free(a);
	free(b);
	return bad;
}

static void sweep(MPI_Comm comm, const char *name, long *seq)
{
	static const long bytes[] = { 0, 1, 3, 100, 4096, 65537, 262144 };
	MPI_Datatype types[] = { MPI_BYTE, MPI_INT, MPI_DOUBLE };
	long errs = 0, all = 0, calls = done;
	int s, t, me, n, ip;

	MPI_Comm_rank(comm, &me);
	MPI_Comm_size(comm, &n);
	for (t = 0; t < 3; t++) {
		int tsize;

		MPI_Type_size(types[t], &tsize);
		for (s = 0; s < (int)(sizeof(bytes) / sizeof(bytes[0])); s++)
			for (ip = 0; ip < 2; ip++)
				errs += plain(comm, types[t], bytes[s] / tsize,
					      ip, ++*seq);
	}
	errs += derived_types(comm, 3, seq);
	errs += derived_types(comm, 20000, seq);
	errors += errs;
	MPI_Reduce(&errs, &all, 1, MPI_LONG, MPI_SUM, 0, comm);
	if (me == 0)
		printf("allgather comm=%s ranks=%d calls=%ld errors=%ld %s\n",
		       name, n, done - calls, all, all ? "FAIL" : "ok");
}

int main(int argc, char **argv)
{
	MPI_Comm dup, half;
	int wsize;
	long seq = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_split(MPI_COMM_WORLD, wrank < wsize / 2,
		       wrank < wsize / 2 ? wrank : -wrank, &half);

	sweep(MPI_COMM_WORLD, "world", &seq);
	sweep(dup, "dup", &seq);
	sweep(half, "split", &seq);

	printf("allgather_mpi: rank %d: %ld allgathers verified (%ld of derived types), %ld errors\n",
	       wrank, done, derived, errors);
	/* (Open MPI returns from a call of 0 B before any collective
	 * component sees it) */
	printf("allgather_mpi: rank %d: of 0 B: %ld allgathers\n", wrank, zero);
	fflush(stdout);
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
	MPI_Finalize();
	return errors ? 1 : 0;
}
