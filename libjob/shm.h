/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm.h - one POSIX shared-memory segment per node per communicator: the
 * node leader creates it, the node's other ranks map it, and the last rank
 * to map it unlinks its name, so from then on only the mappings hold it
 * and a crash leaves nothing behind in /dev/shm. A collective that needs
 * more room than the segment has moves the whole node to a new, larger
 * segment: every local rank sees the same calls with the same sizes, so
 * they agree on when without a word.
 *
 * The segment starts with a header and one cache line of flags per local
 * rank (C11 atomics; a flag holds the number of the call, its "stamp",
 * that it last reached), then the collective's data.
 */
#ifndef IBMCAST_LIBJOB_SHM_H
#define IBMCAST_LIBJOB_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct ibmc_comm;

/* One local rank's flags. */
struct ibmc__shm_flags {
	_Atomic uint32_t written;	/* its input is in the segment */
	_Atomic uint32_t copied;	/* it took out all it needed */
	uint64_t len;			/* its argument, checked by the others */
	char pad[48];
};

struct ibmc__shm_hdr {
	_Atomic uint32_t ready;		/* set by the leader once initialized */
	_Atomic uint32_t attached;	/* ranks that mapped it */
	uint32_t nlocal;
	uint32_t pad0;
	uint64_t size;			/* bytes of the whole segment */
	uint64_t data_off;
	/* The leader's word to its node: (stamp << 32) | steps done, the
	 * last time its network part moved, and (stamp << 32) | -errno when
	 * its call failed. */
	_Atomic uint64_t steps;
	_Atomic int64_t beat;
	_Atomic uint64_t failed;
	char pad[8];
	struct ibmc__shm_flags flag[];
};

/* This rank's view of its node's segment for one communicator. */
struct ibmc__shm {
	struct ibmc__shm_hdr *hdr;	/* NULL: none mapped */
	unsigned char *data;
	size_t data_size;
	uint32_t gen;			/* segment generation */
	int pending;			/* waiting for generation gen */
	int created;			/* this rank (the leader) created it */
	char name[80];
	uint32_t stamp;			/* the last call's number */
	uint32_t first_stamp;		/* the first call in this segment */
	uint32_t finished;		/* the last call of this rank done
					 * with the segment */
};

/* c's segment state (allocated at first use, nothing mapped); NULL: no
 * memory. */
struct ibmc__shm *ibmc__shm_get(struct ibmc_comm *c);

/*
 * Make sure c's node segment has at least need data bytes, for the call
 * numbered stamp (a new segment starts with it): 0 when mapped,
 * IBMC_INPROGRESS while this rank waits for its leader's new segment (call
 * again), -errno on failure. ctx->lock held.
 */
int ibmc__shm_ensure(struct ibmc_comm *c, size_t need, uint32_t stamp);

/* A call on the segment failed: make sure its name is gone (the node may
 * never finish mapping it). */
void ibmc__shm_abandon(struct ibmc__shm *s);

/* Unmap and free (NULL accepted). */
void ibmc__shm_free(struct ibmc__shm *s);

/* Wrap-safe "flag reached stamp". */
static inline int ibmc__stamp_reached(uint32_t flag, uint32_t stamp)
{
	return (int32_t)(flag - stamp) >= 0;
}

/*
 * One call's place on its node: its number (stamp) and when the node last
 * moved, for the bounded-time rule (a local rank that stops moving fails
 * the others' calls after the timeout, never hangs them).
 */
struct ibmc__shm_call {
	struct ibmc__shm *shm;
	uint32_t stamp;
	int nseen;			/* flags seen at the last look */
	int64_t moved_ms;
	/* What the call waits for on its node at its last look, for
	 * liveness (ibmc__shm_waits_for): never a rank that is done. */
	int wait;			/* enum ibmc__shm_wait */
	int wait_which;			/* 0 written, 1 copied */
	int wait_local;			/* IBMC__SHM_WAIT_ONE: whose */
	uint32_t wait_stamp;		/* ... flags must reach this */
};

enum ibmc__shm_wait {
	IBMC__SHM_WAIT_NONE,		/* nobody on the node (itself, the
					 * network, or nothing) */
	IBMC__SHM_WAIT_FLAGS,		/* every local rank's flag */
	IBMC__SHM_WAIT_ONE,		/* one local rank's flag */
	IBMC__SHM_WAIT_LEADER,		/* its leader's word or segment */
};

/* Number the call on c's segment state (every local rank numbers the
 * same calls alike); -ENOMEM. */
int ibmc__shm_call_begin(struct ibmc__shm_call *k, struct ibmc_comm *c);

/* Something moved on the node now. */
void ibmc__shm_moved(struct ibmc__shm_call *k);

/*
 * 0 when every earlier call of this rank on the segment is done with it,
 * else IBMC_INPROGRESS. Non-blocking calls may be in flight together, but
 * the segment serves one call at a time (a later call may even move the
 * node to a larger segment): each waits for its turn before touching it.
 * The wait counts as movement: the earlier call is bounded on its own.
 */
int ibmc__shm_my_turn(struct ibmc__shm_call *k);

/*
 * The call's turn (ibmc__shm_my_turn), then a segment of at least need
 * data bytes (ibmc__shm_ensure): 0, IBMC_INPROGRESS (a rank other than
 * the leader may be waiting for its leader's new segment), -errno.
 */
int ibmc__shm_take(struct ibmc__shm_call *k, struct ibmc_comm *c,
		   size_t need);

/*
 * A local rank reads its leader's word for call k: 1 with *steps (what
 * the leader last published for this call), 0 while it published nothing
 * for it yet, -errno when the leader's call failed. A beat of the
 * leader's network part not seen before (*beat) counts as the node
 * moving.
 */
int ibmc__shm_leader_word(struct ibmc__shm_call *k, int64_t *beat,
			  uint32_t *steps);

/* This rank's call is done with the segment (completed or failed): the
 * next call's turn. */
void ibmc__shm_call_end(struct ibmc__shm_call *k);

/* 0 when the written (which 0) or copied (1) flag of every one of the
 * nlocal ranks reached stamp, else IBMC_INPROGRESS. */
int ibmc__shm_wait_all(struct ibmc__shm_call *k, int nlocal, int which,
		       uint32_t stamp);

/* 0 when the written (which 0) or copied (1) flag of local rank local
 * reached stamp, else IBMC_INPROGRESS. */
int ibmc__shm_wait_one(struct ibmc__shm_call *k, int local, int which,
		       uint32_t stamp);

/* 0 when the call may write into the segment: it is the segment's first,
 * or every local rank took out what the previous call left there. */
int ibmc__shm_wait_free(struct ibmc__shm_call *k, int nlocal);

/*
 * The node's ranks of c that call k waits for now (live.h: a local rank
 * that died leaves the node's calls waiting), at most max: those whose
 * flag has not reached what the call's last look wanted, or its leader.
 * Never a rank that is done with the call: it may have left the program,
 * and a rank that left answers no probe.
 */
int ibmc__shm_waits_for(const struct ibmc__shm_call *k, struct ibmc_comm *c,
			int *ranks, int max);

/* 1 when nothing moved on the node for timeout_ms (0: never). */
int ibmc__shm_stale(const struct ibmc__shm_call *k, int timeout_ms);

#endif
