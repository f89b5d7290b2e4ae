/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin's side of the control protocol: reserve, wait, renew and
 * release one pool, each bounded, each failure described in one line. */
#ifndef IBMCAST_SPANK_POOL_H
#define IBMCAST_SPANK_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spank/conf.h"

/* Step-only pools get ids with this bit set: (job << 5 | step % 32).
 * Slurm job ids stay below 2^26 (MaxJobId <= 67,043,328), so a job-wide
 * pool keeps the Slurm job id itself and the two never collide. */
#define SPANK_STEP_POOL_BIT 0x80000000U
#define SPANK_STEP_POOL_SLOTS 32U
#define SPANK_MAX_SLURM_JOB 0x03ffffffU

/* The reservation id of a pool: the job id (job-wide), or a step id as
 * above. 0, or -ERANGE when the job id does not fit. */
int spank_pool_id(uint32_t job, uint32_t step, bool jobwide, uint32_t *id);

enum spank_pool_state {
	SPANK_POOL_READY,
	SPANK_POOL_UNAVAILABLE, /* SM side unreachable or refused */
	SPANK_POOL_TIMEOUT,     /* not ready within the wait bound */
	SPANK_POOL_FAILED,      /* the SM reported the reservation failed */
};

const char *spank_pool_state_name(enum spank_pool_state s);

/* The outcome of waiting, ready to be exported to the tasks. */
struct spank_pool {
	enum spank_pool_state state;
	char reason[256];
	unsigned ngroups;
	char *groups; /* IBMCAST_GROUPS text; NULL unless ready */
};

void spank_pool_clear(struct spank_pool *p);

/* Reserve pool id on nodes for uid. *created tells whether this call made
 * it. 0, or -errno with why filled in. */
int spank_pool_reserve(const struct spank_conf *c, uint32_t id,
		       const char *nodes, uid_t uid, unsigned groups,
		       bool *created, char *why, size_t why_len);
int spank_pool_renew(const struct spank_conf *c, uint32_t id, char *why,
		     size_t why_len);
/* Idempotent; *released (may be NULL) says whether the pool existed. */
int spank_pool_release(const struct spank_conf *c, uint32_t id,
		       bool *released, char *why, size_t why_len);

/* Wait up to timeout_ms for pool id to be ready, asking again while the
 * server does not know the id yet (another node reserves it) and while
 * it is unreachable. A pool whose nodes differ from nodes (a hostlist)
 * belongs to someone else and counts as unavailable. Always fills p. */
void spank_pool_wait(const struct spank_conf *c, uint32_t id,
		     const char *nodes, int timeout_ms, struct spank_pool *p);

#endif
