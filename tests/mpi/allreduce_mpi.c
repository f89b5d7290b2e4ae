/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * allreduce_mpi: a plain MPI program that checks every element of
 * MPI_Allreduce with SUM, PROD, MIN, MAX, BXOR, LAND on signed char,
 * short, int, long, unsigned, unsigned long long and double (SUM, PROD,
 * MIN, MAX), MINLOC and MAXLOC on every pair type, counts 0 to 100000,
 * with and without MPI_IN_PLACE, on MPI_COMM_WORLD, a dup and a split;
 * every rank's result must hold the same bits as rank 0's (compared after
 * an MPI_Bcast). A user-defined operation (also on a derived type) and
 * MPI_C_BOOL, which a library mapping MPI onto libibmcast passes to MPI,
 * are checked as well.
 *
 * Output: rank 0 prints one "allreduce comm=..." line per communicator
 * (errors summed over all ranks); every rank prints
 * "allreduce_mpi: rank R: N allreduces verified (U user-defined op,
 * B MPI_C_BOOL), E errors", then how many of those had count 0. Exit 1
 * on errors.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static int wrank;
static long done, n_user, n_bool, errors;
static long z_done, z_user, z_bool;	/* ... of them with count 0 */

enum op { SUM, PROD, MIN, MAX, BXOR, LAND, MINLOC, MAXLOC };
static const char *const opname[] = { "SUM", "PROD", "MIN", "MAX", "BXOR",
				      "LAND", "MINLOC", "MAXLOC" };

static MPI_Op mpi_op(enum op o)
{
	static const MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX,
				      MPI_BXOR, MPI_LAND, MPI_MINLOC,
				      MPI_MAXLOC };
	return ops[o];
}

/* Rank k's element i of call seq under op o: small for PROD (the product
 * of every rank's stays exact), zero now and then for LAND, wide for the
 * rest (with negatives, which wrap for unsigned types in SUM and BXOR;
 * not in MIN and MAX, where MPICH 4.0.2's own MPI_UNSIGNED compares as
 * signed). */
static long long ival(enum op o, int k, long i, long seq, int wide)
{
	long long h = i * 7919 + k * 131 + seq * 17;

	if (o == PROD)
		return (i + k * 3 + seq) % 5 - 2;
	if (o == LAND)
		return (i * 3 + k + seq) % 4;
	return h % 61 - (wide < 0 && (o == MIN || o == MAX) ? 0 : 30) +
	       (wide ? (i % 100000) * 1000 + k : 0);
}

static double dval(enum op o, int k, long i, long seq)
{
	if (o == PROD)
		return 1 + ((i + k + seq) % 5 - 2) * 0.01;
	return (double)((i * 7919 + k * 131 + seq * 17) % 100003) / 7.0 +
	       k * 0.1;
}

/* Whether every rank holds rank 0's bits. */
static long same_bits(MPI_Comm comm, const void *r, size_t len)
{
	void *zero = malloc(len ? len : 1);
	int me, bad;
	long all = 0;

	if (!zero)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Comm_rank(comm, &me);
	if (me == 0)
		memcpy(zero, r, len);
	MPI_Bcast(zero, (int)len, MPI_BYTE, 0, comm);
	bad = memcmp(zero, r, len) != 0;
	if (bad)
		fprintf(stderr, "allreduce_mpi: rank %d: result differs from rank 0's\n",
			wrank);
	free(zero);
	all = bad;
	return all;
}

#define APPLY_I(o, a, b)						\
	((o) == SUM ? (a) + (b) : (o) == PROD ? (a) * (b) :		\
	 (o) == MIN ? ((a) < (b) ? (a) : (b)) :				\
	 (o) == MAX ? ((a) > (b) ? (a) : (b)) :				\
	 (o) == BXOR ? (a) ^ (b) : ((a) && (b)))

/* One allreduce of integer type T (WIDE: 1 wide values, -1 wide and
 * unsigned, 0 narrow): every element against the fold of
 * every rank's values, then the bits against rank 0's. */
#define DEF_INT(T, NAME, WIDE)						\
static long run_##NAME(MPI_Comm comm, MPI_Datatype dt, enum op o,	\
		       long count, int inplace, long seq)		\
{									\
	T *s = malloc(sizeof(T) * (size_t)(count + 1));			\
	T *r = malloc(sizeof(T) * (size_t)(count + 1));			\
	int n, me, k;							\
	long i, bad = 0;						\
									\
	if (!s || !r)							\
		MPI_Abort(MPI_COMM_WORLD, 2);				\
	MPI_Comm_size(comm, &n);					\
	MPI_Comm_rank(comm, &me);					\
	for (i = 0; i < count; i++) {					\
		s[i] = (T)ival(o, me, i, seq, WIDE);			\
		r[i] = inplace ? s[i] : (T)0x5a;			\
	}								\
	MPI_Allreduce(inplace ? MPI_IN_PLACE : s, r, (int)count, dt,	\
		      mpi_op(o), comm);					\
	for (i = 0; i < count; i++) {					\
		T e = (T)ival(o, 0, i, seq, WIDE);			\
		for (k = 1; k < n; k++) {				\
			T v = (T)ival(o, k, i, seq, WIDE);		\
			e = (T)APPLY_I(o, e, v);			\
		}							\
		if (r[i] != e && bad++ < 3)				\
			fprintf(stderr, "allreduce_mpi: rank %d: " #T	\
				" %s count %ld: element %ld wrong\n",	\
				wrank, opname[o], count, i);		\
	}								\
	bad += same_bits(comm, r, sizeof(T) * (size_t)count);		\
	free(s);							\
	free(r);							\
	return bad;							\
}

DEF_INT(signed char, schar, 0)
DEF_INT(short, short, 0)
DEF_INT(int, int, 1)
DEF_INT(long, long, 1)
DEF_INT(unsigned, unsigned, -1)
DEF_INT(unsigned long long, ull, -1)

/* double: MIN and MAX exact, SUM and PROD within rounding (the order of
 * the operations is the library's), the same bits on every rank. */
static long run_double(MPI_Comm comm, enum op o, long count, int inplace,
		       long seq)
{
	double *s = malloc(sizeof(double) * (size_t)(count + 1));
	double *r = malloc(sizeof(double) * (size_t)(count + 1));
	int n, me, k;
	long i, bad = 0;

	if (!s || !r)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	for (i = 0; i < count; i++) {
		s[i] = dval(o, me, i, seq);
		r[i] = inplace ? s[i] : -1;
	}
	MPI_Allreduce(inplace ? MPI_IN_PLACE : s, r, (int)count, MPI_DOUBLE,
		      mpi_op(o), comm);
	for (i = 0; i < count; i++) {
		double e = dval(o, 0, i, seq), v;
		int good;

		for (k = 1; k < n; k++) {
			v = dval(o, k, i, seq);
			e = o == SUM ? e + v : o == PROD ? e * v :
			    o == MIN ? (v < e ? v : e) : (v > e ? v : e);
		}
		good = o == MIN || o == MAX ? r[i] == e :
		       fabs(r[i] - e) <= 1e-12 * fabs(e);
		if (!good && bad++ < 3)
			fprintf(stderr, "allreduce_mpi: rank %d: double %s count %ld: element %ld is %.17g, not %.17g\n",
				wrank, opname[o], count, i, r[i], e);
	}
	bad += same_bits(comm, r, sizeof(double) * (size_t)count);
	free(s);
	free(r);
	return bad;
}

/* MINLOC/MAXLOC on pair type P of value type T: values with ties (the
 * smaller index wins), indices that name the rank. */
#define DEF_LOC(T, NAME)						\
struct NAME##_pair { T v; int i; };					\
static long run_##NAME(MPI_Comm comm, MPI_Datatype dt, enum op o,	\
		       long count, int inplace, long seq)		\
{									\
	struct NAME##_pair *s, *r;					\
	int n, me, k;							\
	long i, bad = 0;						\
									\
	s = malloc(sizeof(*s) * (size_t)(count + 1));			\
	r = malloc(sizeof(*r) * (size_t)(count + 1));			\
	if (!s || !r)							\
		MPI_Abort(MPI_COMM_WORLD, 2);				\
	memset(s, 0, sizeof(*s) * (size_t)(count + 1));		\
	MPI_Comm_size(comm, &n);					\
	MPI_Comm_rank(comm, &me);					\
	for (i = 0; i < count; i++) {					\
		s[i].v = (T)((i * 37 + me * 11 + seq) % 5);		\
		s[i].i = me * 1000 + (int)(i % 1000);			\
		r[i] = s[i];						\
		if (!inplace)						\
			r[i].i = -7;					\
	}								\
	MPI_Allreduce(inplace ? MPI_IN_PLACE : s, r, (int)count, dt,	\
		      mpi_op(o), comm);					\
	for (i = 0; i < count; i++) {					\
		T ev = (T)((i * 37 + seq) % 5);				\
		int ei = (int)(i % 1000);				\
									\
		for (k = 1; k < n; k++) {				\
			T v = (T)((i * 37 + k * 11 + seq) % 5);		\
			if (o == MINLOC ? v < ev : v > ev) {		\
				ev = v;					\
				ei = k * 1000 + (int)(i % 1000);	\
			}						\
		}							\
		if ((r[i].v != ev || r[i].i != ei) && bad++ < 3)	\
			fprintf(stderr, "allreduce_mpi: rank %d: " #NAME \
				" %s count %ld: element %ld wrong\n",	\
				wrank, opname[o], count, i);		\
	}								\
	/* (the value and index only: padding is not compared) */	\
	for (i = 0; i < count; i++) {					\
		struct NAME##_pair c;					\
		memset(&c, 0, sizeof(c));				\
		c.v = r[i].v;						\
		c.i = r[i].i;						\
		r[i] = c;						\
	}								\
	bad += same_bits(comm, r, sizeof(*r) * (size_t)count);		\
	free(s);							\
	free(r);							\
	return bad;							\
}

DEF_LOC(float, float_int)
DEF_LOC(double, double_int)
DEF_LOC(long, long_int)
DEF_LOC(int, two_int)
DEF_LOC(short, short_int)
DEF_LOC(long double, ldouble_int)

/* A user-defined operation: elementwise sum of ints. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	int *a = in, *b = inout, i, n = *len;

	if (*dt != MPI_INT) {
		int size;

		MPI_Type_size(*dt, &size);
		n *= size / (int)sizeof(int);
	}
	for (i = 0; i < n; i++)
		b[i] += a[i];
}

/* Calls MPI passes a library by: a user-defined operation on MPI_INT and
 * on a derived type, and MPI_C_BOOL with MPI_LAND. */
static long passed_through(MPI_Comm comm, long count, long seq)
{
	int *s = malloc(sizeof(int) * (size_t)(2 * count + 1));
	int *r = malloc(sizeof(int) * (size_t)(2 * count + 1));
	bool *bs = malloc((size_t)count + 1), *br = malloc((size_t)count + 1);
	MPI_Datatype pair;
	MPI_Op op;
	int n, me, k, d;
	long i, bad = 0;

	if (!s || !r || !bs || !br)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	MPI_Op_create(user_sum, 1, &op);
	MPI_Type_contiguous(2, MPI_INT, &pair);
	MPI_Type_commit(&pair);
	for (d = 0; d < 2; d++) {
		long m = d ? 2 * count : count;

		for (i = 0; i < m; i++)
			s[i] = (int)ival(SUM, me, i, seq + d, 1);
		MPI_Allreduce(s, r, (int)count, d ? pair : MPI_INT, op, comm);
		for (i = 0; i < m; i++) {
			int e = 0;

			for (k = 0; k < n; k++)
				e += (int)ival(SUM, k, i, seq + d, 1);
			if (r[i] != e && bad++ < 3)
				fprintf(stderr, "allreduce_mpi: rank %d: user-defined op%s count %ld: element %ld wrong\n",
					wrank, d ? " on a derived type" : "",
					count, i);
		}
		n_user++;
		done++;
	}
	for (i = 0; i < count; i++)
		bs[i] = ival(LAND, me, i, seq, 0) != 0;
	MPI_Allreduce(bs, br, (int)count, MPI_C_BOOL, MPI_LAND, comm);
	for (i = 0; i < count; i++) {
		bool e = true;

		for (k = 0; k < n; k++)
			e = e && ival(LAND, k, i, seq, 0) != 0;
		if (br[i] != e && bad++ < 3)
			fprintf(stderr, "allreduce_mpi: rank %d: MPI_C_BOOL LAND count %ld: element %ld wrong\n",
				wrank, count, i);
	}
	n_bool++;
	done++;
	MPI_Type_free(&pair);
	MPI_Op_free(&op);
	free(s);
	free(r);
	free(bs);
	free(br);
	return bad;
}

/* Every type and operation on comm at each count, MPI_IN_PLACE every
 * other call. */
static void sweep(MPI_Comm comm, const char *name, const long *counts,
		  int ncounts, long *seq)
{
	static const enum op iops[] = { SUM, PROD, MIN, MAX, BXOR, LAND };
	static const enum op fops[] = { SUM, PROD, MIN, MAX };
	static const enum op lops[] = { MINLOC, MAXLOC };
	long errs = 0, all = 0, calls = done;
	int c, j, me, n, ip = 0;

	MPI_Comm_rank(comm, &me);
	MPI_Comm_size(comm, &n);
	for (c = 0; c < ncounts; c++) {
		long cnt = counts[c], d0 = done, u0 = n_user, b0 = n_bool;

		for (j = 0; j < 6; j++) {
			enum op o = iops[j];

			errs += run_schar(comm, MPI_SIGNED_CHAR, o, cnt, ip ^= 1, ++*seq);
			errs += run_short(comm, MPI_SHORT, o, cnt, ip ^= 1, ++*seq);
			errs += run_int(comm, MPI_INT, o, cnt, ip ^= 1, ++*seq);
			errs += run_long(comm, MPI_LONG, o, cnt, ip ^= 1, ++*seq);
			errs += run_unsigned(comm, MPI_UNSIGNED, o, cnt, ip ^= 1, ++*seq);
			errs += run_ull(comm, MPI_UNSIGNED_LONG_LONG, o, cnt, ip ^= 1, ++*seq);
			done += 6;
		}
		for (j = 0; j < 4; j++) {
			errs += run_double(comm, fops[j], cnt, ip ^= 1, ++*seq);
			done++;
		}
		for (j = 0; j < 2; j++) {
			enum op o = lops[j];

			errs += run_float_int(comm, MPI_FLOAT_INT, o, cnt, ip ^= 1, ++*seq);
			errs += run_double_int(comm, MPI_DOUBLE_INT, o, cnt, ip ^= 1, ++*seq);
			errs += run_long_int(comm, MPI_LONG_INT, o, cnt, ip ^= 1, ++*seq);
			errs += run_two_int(comm, MPI_2INT, o, cnt, ip ^= 1, ++*seq);
			errs += run_short_int(comm, MPI_SHORT_INT, o, cnt, ip ^= 1, ++*seq);
			errs += run_ldouble_int(comm, MPI_LONG_DOUBLE_INT, o, cnt, ip ^= 1, ++*seq);
			done += 6;
		}
		errs += passed_through(comm, cnt, ++*seq);
		if (!cnt) {
			z_done += done - d0;
			z_user += n_user - u0;
			z_bool += n_bool - b0;
		}
	}
	errors += errs;
	MPI_Reduce(&errs, &all, 1, MPI_LONG, MPI_SUM, 0, comm);
	if (me == 0)
		printf("allreduce comm=%s ranks=%d calls=%ld errors=%ld %s\n",
		       name, n, done - calls, all, all ? "FAIL" : "ok");
}

int main(int argc, char **argv)
{
	static const long big[] = { 0, 1, 7, 1000, 100000 };
	static const long small[] = { 0, 3, 1000 };
	MPI_Comm dup, half;
	int wsize;
	long seq = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_split(MPI_COMM_WORLD, wrank < wsize / 2,
		       wrank < wsize / 2 ? wrank : -wrank, &half);

	sweep(MPI_COMM_WORLD, "world", big, 5, &seq);
	sweep(dup, "dup", small, 3, &seq);
	sweep(half, "split", small, 3, &seq);

	printf("allreduce_mpi: rank %d: %ld allreduces verified (%ld user-defined op, %ld MPI_C_BOOL), %ld errors\n",
	       wrank, done, n_user, n_bool, errors);
	/* (Open MPI returns from a call of count 0 before any collective
	 * component sees it) */
	printf("allreduce_mpi: rank %d: of count 0: %ld allreduces (%ld user-defined op, %ld MPI_C_BOOL)\n",
	       wrank, z_done, z_user, z_bool);
	fflush(stdout);
	MPI_Comm_free(&half);
	MPI_Comm_free(&dup);
	MPI_Finalize();
	return errors ? 1 : 0;
}
