/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll.h - the collectives libjob implements, each with its table of
 * algorithms selectable by name (after UCC's {id, name, desc} tables):
 * IBMCAST_<COLL>_ALGO, ibmc_comm_set_algo(3), and "auto" (id 0), which
 * each collective resolves itself. A name may carry one parameter,
 * "name:N" (the barrier's "nway:3").
 */
#ifndef IBMCAST_LIBJOB_COLL_COLL_H
#define IBMCAST_LIBJOB_COLL_COLL_H

#include <stddef.h>

#include "ibmcast/ibmcast.h"
#include "libjob/task.h"
#include "libjob/wire.h"

struct ibmc_comm;

struct ibmc__algo_desc {
	int id;			/* > 0 */
	const char *name;
	const char *desc;
	int takes_param;	/* "name:N" allowed, N in 1..param_max */
	int param_max;
};

struct ibmc__coll_desc {
	int coll;		/* enum ibmc__coll */
	const char *name;	/* "bcast", "barrier" */
	const char *env;	/* IBMCAST_BCAST_ALGO, ... */
	const struct ibmc__algo_desc *algos;
	int nalgos;
};

/* The collectives' tables (coll/bcast.c, coll/barrier.c). */
extern const struct ibmc__coll_desc ibmc__bcast_desc;
extern const struct ibmc__coll_desc ibmc__barrier_desc;
extern const struct ibmc__coll_desc ibmc__allgather_desc;
extern const struct ibmc__coll_desc ibmc__allreduce_desc;

/* By enum ibmc__coll, or NULL. */
const struct ibmc__coll_desc *ibmc__coll_get(int coll);
/* By name ("bcast"), or NULL. */
const struct ibmc__coll_desc *ibmc__coll_find(const char *name);
/* "bcast", ..., or "unknown". */
const char *ibmc__coll_name(int coll);

/* An algorithm name of coll, "auto" (0) or "name[:N]": its id, *param
 * (may be NULL) N or 0; -EINVAL for anything else. */
int ibmc__algo_lookup(int coll, const char *name, int *param);
/* The name of algorithm id of coll ("auto" for 0, "unknown" else). */
const char *ibmc__algo_name_of(int coll, int id);

/* Measure the barrier's candidates on comm now if auto needs it
 * (collective; ctx->lock held). 0 or -errno. */
int ibmc__barrier_measure_now(struct ibmc_comm *comm);

/* Start a broadcast on comm for req (ctx->lock held; see ibmc_ibcast),
 * for collectives built on it. 0 or -errno. */
int ibmc__bcast_start(struct ibmc_comm *comm, void *buf, size_t len,
		      int root, struct ibmc_request *req);
/* The same, where the root's data is known wrong (error: -EMSGSIZE or
 * -EINVAL, the members of the collective it belongs to disagree; 0: it is
 * not): the data carries error, and every member ends the broadcast with
 * it, none with 0. Only the root's error counts. */
int ibmc__bcast_start_error(struct ibmc_comm *comm, void *buf, size_t len,
			    int root, int error, struct ibmc_request *req);

/* A collective that runs others inside itself (the barrier's
 * measurement trials) takes a mark before and gives it back after: what
 * it ran is its own, not the caller's calls, and work the caller never
 * asked for. (A call of several stages marks its tasks inner instead,
 * stages.h: other calls' tasks complete meanwhile.) */
struct ibmc__inner_mark {
	ibmc_comm_stats_t st;
	int last_algo[IBMC__C_COUNT];
	int last_param[IBMC__C_COUNT];
};

void ibmc__inner_begin(const struct ibmc_comm *comm,
		       struct ibmc__inner_mark *m);
/* Restore every counter and the last algorithms. */
void ibmc__inner_end(struct ibmc_comm *comm,
		     const struct ibmc__inner_mark *m);

#endif
