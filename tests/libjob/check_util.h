/* SPDX-License-Identifier: BSD-3-Clause */
/* check_util.h - what the check programs run under ibmcast-run share
 * (bcast_check, barrier_check, coll_check, bcast_skew, modes_check,
 * pool_keep_check): a fatal error naming the program and rank, the
 * monotonic clock, a barrier and a hold for the test script, and their
 * options' values (numbers, sizes in binary units, comma-separated lists), each
 * checked with a message naming the option. Each program defines prog
 * and bs. */
#ifndef IBMCAST_TESTS_CHECK_UTIL_H
#define IBMCAST_TESTS_CHECK_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "ibmcast/ibmcast.h"

extern const char *prog;	/* the program's name */
extern ibmc_bootstrap_t bs;	/* its bootstrap (bs.rank in messages) */

/* Fills bs from the launcher (ibmcast-run, srun --mpi=pmi2) and starts
 * libibmcast on it; exits 2 saying why when either fails. */
ibmc_context_t *check_init(void);

/* A communicator of every rank of ctx using algo (NULL: the default) for
 * collective coll ("bcast", ...); dies saying why on failure. */
ibmc_comm_t *check_world(ibmc_context_t *ctx, const char *coll,
			 const char *algo);

/* "PROG: rank R: MESSAGE" on stderr, exit 2. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
					      noreturn));

/* CLOCK_MONOTONIC in seconds. */
double now(void);

/* A barrier of every rank over the bootstrap; dies if it fails. */
void check_sync_all(void);

/* Waits (at most 300 s, else dies) until DIR/NAME exists; not collective. */
void check_wait_file(const char *dir, const char *name);

/* Every rank stops until the test drives it on: rank 0 creates DIR/HERE,
 * then waits (at most 300 s, else dies) until DIR/GO exists. For test
 * scripts that look at the fabric at a given point of a run. Collective. */
void check_hold(const char *dir, const char *here, const char *go);

/* Modeled time on the simulated fabric (ibmc_sim_clock_ns(3)). Every rank
 * first settles what it still owes the last collective (else it lands in
 * the next one's time or not, by real time), then every clock goes to the
 * latest one plus 1 ms that lets the model's queues drain: returns that
 * common start, or 0 when the transport models no time. Collective: all
 * ranks call it. */
uint64_t check_model_align(ibmc_context_t *ctx);
/* Seconds of modeled time from start to this rank's last return from a
 * blocking call (ibmc_sim_return_ns(3)); 0 without a model. */
double check_model_since(ibmc_context_t *ctx, uint64_t start);

/* "4096", "4K", "1M" (binary units, at most 2^32-1): 0, or -1. */
int parse_size(const char *s, size_t *out);

/* Option what's value s: an integer in lo..hi, or die saying so. */
int int_arg(const char *what, const char *s, int lo, int hi);

/* Option what's value arg: a comma-separated list of 1..max sizes (as
 * parse_size) into out; returns how many, or dies saying what is wrong. */
int size_list_arg(const char *what, const char *arg, size_t *out, int max);

/* The same for integers in lo..hi. */
int int_list_arg(const char *what, const char *arg, int *out, int max,
		 int lo, int hi);

/* The same for non-negative numbers ("0.5"). */
int double_list_arg(const char *what, const char *arg, double *out,
		    int max);

#endif
