/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_map.h - how MPI's predefined reductions map onto libibmcast's, one
 * table for both MPI integrations (the MPICH shim, libjob/mpi_shim.c, and
 * the Open MPI component, ompi/). Header-only and included after the MPI's
 * own mpi.h: each integration is built against a different one, and the
 * MPI_* names are that MPI's. Each keeps only its own type queries.
 */
#ifndef IBMCAST_LIBJOB_MPI_MAP_H
#define IBMCAST_LIBJOB_MPI_MAP_H

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fnv.h"
#include "ibmcast/ibmcast.h"

/* The error class of a collective that a dead member failed (libibmcast's
 * -ESRCH): ULFM's process failure where the MPI has it (MPICH 4's
 * MPIX_ERR_PROC_FAILED), else MPI_ERR_OTHER. */
#ifdef MPIX_ERR_PROC_FAILED
#define IBMC__MPI_ERR_PROC_FAILED MPIX_ERR_PROC_FAILED
#else
#define IBMC__MPI_ERR_PROC_FAILED MPI_ERR_OTHER
#endif

/* X(mpi_op, ibmc_op) */
#define IBMC__MPI_OPS(X)						\
	X(MPI_SUM, IBMC_SUM) X(MPI_PROD, IBMC_PROD)			\
	X(MPI_MIN, IBMC_MIN) X(MPI_MAX, IBMC_MAX)			\
	X(MPI_LAND, IBMC_LAND) X(MPI_LOR, IBMC_LOR)			\
	X(MPI_LXOR, IBMC_LXOR) X(MPI_BAND, IBMC_BAND)			\
	X(MPI_BOR, IBMC_BOR) X(MPI_BXOR, IBMC_BXOR)			\
	X(MPI_MINLOC, IBMC_MINLOC) X(MPI_MAXLOC, IBMC_MAXLOC)

/* What a predefined datatype is to a reduction. */
enum ibmc__mpi_kind {
	IBMC__MK_SIGNED, IBMC__MK_UNSIGNED, IBMC__MK_CHAR, IBMC__MK_BYTE,
	IBMC__MK_FLOAT, IBMC__MK_PAIR,
};

/* The MINLOC/MAXLOC pairs as libibmcast lays them out (C's structs). */
struct ibmc__mpi_p_float { float v; int i; };
struct ibmc__mpi_p_double { double v; int i; };
struct ibmc__mpi_p_long { long v; int i; };
struct ibmc__mpi_p_int { int v; int i; };
struct ibmc__mpi_p_short { short v; int i; };
struct ibmc__mpi_p_ldouble { long double v; int i; };

/* X(mpi_type, kind, ibmc_dtype, element size): floats and pairs name
 * their type and size; integers map by size and signedness (so MPI_LONG
 * is IBMC_INT64 on LP64), see ibmc__mpi_dtype(). Fortran's numbers are
 * here too (a REAL is a C float, a DOUBLE PRECISION a double and a
 * 2INTEGER a pair of C ints: the size checks hold them to it); LOGICAL is
 * not: its truth values are the Fortran compiler's. */
#define IBMC__MPI_DTYPES(X)						\
	X(MPI_CHAR, IBMC__MK_CHAR, 0, 0)				\
	X(MPI_SIGNED_CHAR, IBMC__MK_SIGNED, 0, 0)			\
	X(MPI_SHORT, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_INT, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_LONG, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_LONG_LONG_INT, IBMC__MK_SIGNED, 0, 0)			\
	X(MPI_LONG_LONG, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_INT8_T, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_INT16_T, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_INT32_T, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_INT64_T, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_AINT, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_OFFSET, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_COUNT, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_UNSIGNED_CHAR, IBMC__MK_UNSIGNED, 0, 0)			\
	X(MPI_UNSIGNED_SHORT, IBMC__MK_UNSIGNED, 0, 0)			\
	X(MPI_UNSIGNED, IBMC__MK_UNSIGNED, 0, 0)			\
	X(MPI_UNSIGNED_LONG, IBMC__MK_UNSIGNED, 0, 0)			\
	X(MPI_UNSIGNED_LONG_LONG, IBMC__MK_UNSIGNED, 0, 0)		\
	X(MPI_UINT8_T, IBMC__MK_UNSIGNED, 0, 0)				\
	X(MPI_UINT16_T, IBMC__MK_UNSIGNED, 0, 0)			\
	X(MPI_UINT32_T, IBMC__MK_UNSIGNED, 0, 0)			\
	X(MPI_UINT64_T, IBMC__MK_UNSIGNED, 0, 0)			\
	X(MPI_BYTE, IBMC__MK_BYTE, 0, 0)				\
	X(MPI_INTEGER, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_INTEGER1, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_INTEGER2, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_INTEGER4, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_INTEGER8, IBMC__MK_SIGNED, 0, 0)				\
	X(MPI_REAL, IBMC__MK_FLOAT, IBMC_FLOAT, sizeof(float))		\
	X(MPI_REAL4, IBMC__MK_FLOAT, IBMC_FLOAT, sizeof(float))		\
	X(MPI_DOUBLE_PRECISION, IBMC__MK_FLOAT, IBMC_DOUBLE,		\
	  sizeof(double))						\
	X(MPI_REAL8, IBMC__MK_FLOAT, IBMC_DOUBLE, sizeof(double))	\
	X(MPI_2INTEGER, IBMC__MK_PAIR, IBMC_2INT,			\
	  sizeof(struct ibmc__mpi_p_int))				\
	X(MPI_FLOAT, IBMC__MK_FLOAT, IBMC_FLOAT, sizeof(float))		\
	X(MPI_DOUBLE, IBMC__MK_FLOAT, IBMC_DOUBLE, sizeof(double))	\
	X(MPI_LONG_DOUBLE, IBMC__MK_FLOAT, IBMC_LONG_DOUBLE,		\
	  sizeof(long double))						\
	X(MPI_FLOAT_INT, IBMC__MK_PAIR, IBMC_FLOAT_INT,			\
	  sizeof(struct ibmc__mpi_p_float))				\
	X(MPI_DOUBLE_INT, IBMC__MK_PAIR, IBMC_DOUBLE_INT,		\
	  sizeof(struct ibmc__mpi_p_double))				\
	X(MPI_LONG_INT, IBMC__MK_PAIR, IBMC_LONG_INT,			\
	  sizeof(struct ibmc__mpi_p_long))				\
	X(MPI_2INT, IBMC__MK_PAIR, IBMC_2INT,				\
	  sizeof(struct ibmc__mpi_p_int))				\
	X(MPI_SHORT_INT, IBMC__MK_PAIR, IBMC_SHORT_INT,			\
	  sizeof(struct ibmc__mpi_p_short))				\
	X(MPI_LONG_DOUBLE_INT, IBMC__MK_PAIR, IBMC_LONG_DOUBLE_INT,	\
	  sizeof(struct ibmc__mpi_p_ldouble))

/*
 * The ibmc_dtype_t of a table entry (kind, ibmc, esize) for a datatype of
 * this size and extent (lower bounds 0, checked by the caller), whose
 * elements must follow each other without holes at its size (a pair: at
 * the C struct's size); -1 when they do not.
 */
static inline int ibmc__mpi_dtype(int kind, int ibmc, size_t esize,
				  size_t size, size_t extent)
{
	static const ibmc_dtype_t ints[2][4] = {
		{ IBMC_INT8, IBMC_INT16, IBMC_INT32, IBMC_INT64 },
		{ IBMC_UINT8, IBMC_UINT16, IBMC_UINT32, IBMC_UINT64 },
	};
	int u;

	if (kind == IBMC__MK_PAIR)
		return extent == esize ? ibmc : -1;
	if (size != extent)
		return -1;
	if (kind == IBMC__MK_FLOAT)
		return extent == esize ? ibmc : -1;
	u = kind == IBMC__MK_UNSIGNED || kind == IBMC__MK_BYTE ||
	    (kind == IBMC__MK_CHAR && CHAR_MIN == 0);
	switch (size) {
	case 1: return (int)ints[u][0];
	case 2: return (int)ints[u][1];
	case 4: return (int)ints[u][2];
	case 8: return (int)ints[u][3];
	}
	return -1;
}

/* Whether libibmcast algorithm name multicasts ("mcast", "shm_mcast"):
 * what the shim's and the component's summaries count as multicast. */
static inline int ibmc__mpi_algo_mcast(const char *name)
{
	return name && strstr(name, "mcast") != NULL;
}

/* libibmcast's rule (ibmc_op_valid, MPI's own), plus MPI_BYTE's: a byte
 * type takes only the bitwise operations. */
static inline int ibmc__mpi_op_fits(ibmc_op_t op, ibmc_dtype_t dt,
				    int bitwise_only)
{
	int bitwise = op == IBMC_BAND || op == IBMC_BOR || op == IBMC_BXOR;

	return (bitwise || !bitwise_only) && ibmc_op_valid(op, dt) == 0;
}

/*
 * A new communicator's agreement among its members, one allreduce of
 * IBMC__AGREE_LEN uint64_t by bitwise AND (the MPI integrations' own, on
 * the new communicator): [0] all ones when every member can map it, [1]
 * the pool groups every member offers (free, and held for no other
 * communicator, see ibmc__mpi_agree_offer), [2] the id its rank 0 drew
 * (its MPI_COMM_WORLD rank and how many it drew before, so no two
 * communicators of the job draw alike; the others give all ones), [3] the
 * pool groups free on every member, held or not. With the group and the
 * id agreed, members that saw other communicators come and go (a split
 * that left some of them out) take the same pool group, and creation
 * order no longer names the communicator.
 */
#define IBMC__AGREE_LEN 4

static inline void ibmc__mpi_agree_mine(ibmc_context_t *ctx, int ok,
					int comm_rank, int world_rank,
					uint32_t *drawn, uint64_t *v)
{
	uint64_t mask = 0;

	if (ok && ibmc_pool_free(ctx, &mask))
		mask = 0;
	v[0] = ok ? ~UINT64_C(0) : 0;
	v[1] = mask;
	v[2] = comm_rank == 0 ?
		(uint64_t)(uint32_t)world_rank << 32 |
			__atomic_add_fetch(drawn, 1, __ATOMIC_RELAXED) :
		~UINT64_C(0);
	v[3] = mask;
}

/*
 * The attributes every member creates the communicator with; 0 when some
 * member cannot map it. multicast 0: no pool group (IBMC_GROUP_NONE).
 * sibling: what tells this communicator from disjoint ones made by the
 * same call (an MPI_Comm_split's color, >= 0; 0 else), the same on all
 * its members: it takes the (sibling mod n)-th lowest of the n groups
 * offered, so that the halves of a split (colors 0 and 1, or any two
 * apart by less than n), whose members see the same groups free, take
 * different ones instead of all the lowest: each half's packets reach its
 * own members only. (Colors n apart still share one: the prune keeper
 * narrows it to the nodes of both, prune_keep.h.)
 */
static inline int ibmc__mpi_agree_attr(const uint64_t *v, int multicast,
				       int sibling, ibmc_comm_attr_t *attr)
{
	uint32_t id = ibmc__fnv1a32(IBMC__FNV32_INIT, &v[2], sizeof(v[2]));
	uint64_t offered = v[1];
	int k = offered && sibling > 0 ?
		sibling % __builtin_popcountll(offered) : 0;

	attr->mode = NULL;
	attr->id = id ? id : 1;
	while (k--)
		offered &= offered - 1;	/* drop the lowest group */
	attr->group = multicast && offered ? __builtin_ctzll(offered) + 1 :
					     IBMC_GROUP_NONE;
	return v[0] != 0;
}

/*
 * Under MPI_THREAD_MULTIPLE communicators of the same members may be
 * agreed on at once, each holding on some member a pool group another
 * needs, so that they agree on none. When a round agreed on no group
 * while some are free on every member, the members ask each other (one
 * more allreduce) whether any was contended (ibmc__mpi_agree_offer); if
 * so, all release what they offered, wait apart and try again, offering
 * one preferred group each, at most IBMC__AGREE_ROUNDS rounds. Every
 * decision rests on allreduced values, alike on every member.
 */
#define IBMC__AGREE_ROUNDS 10

/*
 * From the second round on a communicator offers one pool group only: the
 * one that the id agreed in the round before points to among the groups
 * that round found free on every member (prev: its agreed values).
 * Communicators that contend then spread over the free groups instead of
 * each holding every one on some member, and a new id each round moves
 * two that pointed to the same group apart. Round 0: every group (all
 * ones); none free anywhere: none.
 */
static inline uint64_t ibmc__mpi_agree_prefer(const uint64_t *prev,
					      int round)
{
	uint64_t free_all;
	uint32_t id, k;

	if (round == 0)
		return ~UINT64_C(0);
	free_all = prev[3];
	if (!free_all)
		return 0;
	id = ibmc__fnv1a32(IBMC__FNV32_INIT, &prev[2], sizeof(prev[2]));
	k = id % (uint32_t)__builtin_popcountll(free_all);
	while (k--)
		free_all &= free_all - 1;	/* drop the lowest group */
	return free_all & -free_all;
}

/*
 * This rank's values for one round of the agreement (the caller holds the
 * lock that guards held): ibmc__mpi_agree_mine, with the groups offered
 * narrowed to those no other thread's communicator holds and, from round
 * 1, to the preferred one (prev: the values agreed in the round before,
 * unused in round 0); what is offered is added to held. Returns 1 when
 * this rank is contended, so another round may succeed: a group it would
 * offer is held by another thread, or its preferred group is gone while
 * others are free.
 */
static inline int ibmc__mpi_agree_offer(ibmc_context_t *ctx, int ok,
					int comm_rank, int world_rank,
					uint32_t *drawn, const uint64_t *prev,
					int round, uint64_t *held, uint64_t *v)
{
	uint64_t want = ibmc__mpi_agree_prefer(prev, round), avail;
	int contended;

	ibmc__mpi_agree_mine(ctx, ok, comm_rank, world_rank, drawn, v);
	avail = v[1] & ~*held;
	contended = (v[1] & *held & want) != 0 ||
		    (round > 0 && !(avail & want) && avail);
	v[1] = avail & want;
	*held |= v[1];
	return contended;
}

/* 1 when the round that gave all (with ok) may be tried again: no group
 * agreed while some are free on every member. */
static inline int ibmc__mpi_agree_may_retry(int ok, const uint64_t *all,
					    int threads, int round)
{
	return ok && !all[1] && all[3] && threads &&
	       round + 1 < IBMC__AGREE_ROUNDS;
}

/* Waits a random time below 100 us << round, so that communicators that
 * took each other's groups on different members try again apart. */
static inline void ibmc__mpi_back_off(unsigned int *seed, int round)
{
	long us = (long)(rand_r(seed) % (100u << round));
	struct timespec ts = { .tv_sec = us / 1000000,
			       .tv_nsec = us % 1000000 * 1000 };

	nanosleep(&ts, NULL);
}

/* Adds a freed communicator's counters into the totals the integration
 * reports at finalize. */
static inline void ibmc__mpi_stats_add(ibmc_comm_stats_t *to,
				       const ibmc_comm_stats_t *s)
{
	to->bcasts += s->bcasts;
	to->mcast_bcasts += s->mcast_bcasts;
	to->barriers += s->barriers;
	to->allgathers += s->allgathers;
	to->allreduces += s->allreduces;
	to->packets_sent += s->packets_sent;
	to->bytes_sent += s->bytes_sent;
	to->retransmits += s->retransmits;
	to->repairs += s->repairs;
	to->timeouts += s->timeouts;
	to->duplicates += s->duplicates;
	to->stale_dropped += s->stale_dropped;
	to->pulls += s->pulls;
	to->messages_sent += s->messages_sent;
}

#endif
