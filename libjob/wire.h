/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wire.h - the header every libjob datagram starts with.
 *
 * One transport instance serves all communicators of a context, so every
 * header names the communicator, its membership version, the collective
 * (its kind, and its sequence number on the communicator, counted across
 * all kinds: MPI orders collectives per communicator) and the sender (24
 * bytes with one word of kind-specific data). DATA adds the broadcast's shape (root,
 * algorithm, total length, fragment size, ack interval): a receiver learns
 * the root's choice from the first fragment that reaches it; the root
 * alone decides. Control packets stay small (24 to 36 bytes): they carry
 * no shape, and a rank that does not know it yet ignores them (or, for an
 * ack from a child, asks that child for data, which carries it).
 */
#ifndef IBMCAST_LIBJOB_WIRE_H
#define IBMCAST_LIBJOB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define IBMC__WIRE_MAGIC 0xbc
#define IBMC__WIRE_HDR 36	/* bytes before a DATA payload */
#define IBMC__WIRE_BASE 24	/* PROBE, FIN */
#define IBMC__WIRE_CTL 36	/* the largest control packet */
#define IBMC__WIRE_MSG 28	/* bytes before a MSG payload */
#define IBMC__WIRE_XDATA 32	/* bytes before an XDATA payload */
#define IBMC__WIRE_POOL 28	/* bytes before a POOL payload */

/* The collective a datagram belongs to (high nibble of byte 3). */
enum ibmc__coll {
	IBMC__C_BCAST = 0,
	IBMC__C_BARRIER = 1,
	IBMC__C_ALLGATHER = 2,
	IBMC__C_ALLREDUCE = 3,
	IBMC__C_COUNT,
	/* Not a collective: the multicast testing of a communicator's own
	 * group (mcast_test.c), a task with a sequence number like them. */
	IBMC__C_MTEST = IBMC__C_COUNT,
	/* Not a collective either: the members' agreement on the collective
	 * from which a communicator multicasts (mcast_switch.c); no task, no
	 * sequence number of its own. */
	IBMC__C_SWITCH,
	/* Nor this: the keeper of mode pool's own pool and the ranks
	 * (pool_keep.c), on a hidden communicator over every rank. */
	IBMC__C_POOL,
	/* Nor this: mode sm's prune keeper and the communicators claiming
	 * pool groups (prune_keep.c), on another hidden communicator. */
	IBMC__C_PRUNE,
	/* Nor this: liveness probes and answers between contexts (live.c):
	 * a waiting member asks the one it waits for whether it is alive. */
	IBMC__C_LIVE
};

enum ibmc__kind {
	IBMC__K_DATA = 1,	/* one fragment; a = fragment index */
	IBMC__K_ACK = 2,	/* a = have, b = cum, mask = held after have */
	IBMC__K_REQ = 3,	/* repair request or NACK: a = start, b = the
				 * sender's have, mask = wanted from a */
	IBMC__K_PROBE = 4,	/* "send me your ack" */
	IBMC__K_FIN = 5,	/* the sender's subtree and all above are done */
	/* Short messages of round-based algorithms (msg.h). */
	IBMC__K_MSG = 6,	/* a = slot, b = word; payload follows */
	IBMC__K_PULL = 7,	/* a = slot: "send me that message again" */
	/* Point-to-point transfers of any length (xfer.h). */
	IBMC__K_XDATA = 8,	/* a = fragment, b = tag, len; payload */
	IBMC__K_XACK = 9,	/* a = fragments held in a row, b = tag,
				 * mask = held after them */
	/* Multicast testing (mcast_test.c, seed 000). */
	IBMC__K_MTINV = 10,	/* root -> member: join/attach; a = MLID,
				 * b = group MTU */
	IBMC__K_MTJOINED = 11,	/* member -> root: a = 0 or the join's errno,
				 * IBMC__MT_WAITING: not invited yet */
	IBMC__K_MTPING = 12,	/* root -> group by multicast: a = try */
	IBMC__K_MTACK = 13,	/* member -> root: got ping a */
	IBMC__K_MTDONE = 14,	/* root -> member: a = 0 usable, else errno */
	/* Switching a communicator to multicast (mcast_switch.c). */
	IBMC__K_SWOFFER = 15,	/* rank 0 -> member: a group to attach to;
				 * payload: its "MGID/MLID/QKEY/PKEY/MTU" */
	IBMC__K_SWSEQ = 16,	/* member -> rank 0: a = the member's next
				 * sequence number when first offered,
				 * b = 0 attached, else the attach's errno */
	IBMC__K_SWAT = 17,	/* rank 0 -> member: b = 0: multicast from
				 * the first call at sequence number a or
				 * later; else never (b = errno) */
	/* A keeper's message: the job's own pool (pool_keep.c, coll
	 * IBMC__C_POOL) or the prune keeper (prune_keep.c, IBMC__C_PRUNE):
	 * a = its operation, b and seq as that says; a payload may
	 * follow. */
	IBMC__K_POOL = 18,
	/* A point-to-point collective's members disagree (xfer.h): flags
	 * ESIZE or EINVAL; every member that hears it fails at once. */
	IBMC__K_XSTOP = 19,
	/* Liveness (live.c, coll IBMC__C_LIVE): a = IBMC__LIVE_ASK, _ALIVE
	 * or _DEAD; b = the sender's context rank (DEAD: the dead one's);
	 * mask = ALIVE: the answerer's next sequence number on comm_id (low
	 * 32 bits) and, with F_FAILED, the errno its collective seq failed
	 * with (high 32 bits). */
	IBMC__K_LIVE = 20,
};

enum ibmc__live_op {
	IBMC__LIVE_ASK = 1,	/* "are you alive?" about collective seq */
	IBMC__LIVE_ALIVE = 2,	/* "yes": entered the collectives below mask */
	IBMC__LIVE_DEAD = 3,	/* "context rank b is dead": fail with it */
};

#define IBMC__MT_WAITING 0xffffffffu

enum ibmc__algo {
	IBMC__A_AUTO = 0,
	IBMC__A_MCAST = 1,
	IBMC__A_BINOMIAL = 2,
	IBMC__A_POSTAL = 3,
	IBMC__A_SHM_MCAST = 4,	/* broadcast only: node leaders on the
				 * network (with one of the above), the
				 * other ranks from shared memory */
};

/* Flags. */
#define IBMC__F_MC 0x1		/* ACK: this subtree saw multicast data */
#define IBMC__F_RETX 0x2	/* DATA: a retransmission or repair */
#define IBMC__F_MASK 0x4	/* ACK: a mask follows (wire only) */
/* DATA, XDATA: members of this collective disagree on the length
 * (ESIZE) or on the datatype or operation (EINVAL): the sender saw it or
 * got data that carried it, so the result is wrong; its receivers finish
 * the collective and fail with that error (ibmc_allreduce(3)). */
#define IBMC__F_ESIZE 0x8
#define IBMC__F_EINVAL 0x10
/* ALIVE: the answerer has no communicator comm_id (not created yet, or
 * freed): it entered none of its collectives. */
#define IBMC__F_NOCOMM 0x20
/* ALIVE: the answerer's collective seq failed, for all its members (the
 * members disagree, or one is dead): the asker fails it too rather than
 * wait for what will never come (its notices lost). */
#define IBMC__F_FAILED 0x40

struct ibmc__hdr {
	uint8_t kind;
	uint8_t coll;		/* enum ibmc__coll */
	uint8_t algo;
	uint8_t lambda;		/* postal tree's latency ratio */
	uint8_t flags;
	uint32_t comm_id;
	uint32_t version;	/* membership version */
	uint32_t seq;		/* broadcast number on the communicator */
	uint32_t src;		/* sender's communicator rank */
	uint32_t root;
	uint32_t len;		/* broadcast's total bytes */
	uint16_t fragsz;	/* payload bytes per fragment */
	uint8_t ackint;		/* DATA: ack every this many fragments */
	uint32_t a, b;
	uint64_t mask;
	uint16_t hlen;		/* decode: bytes before the payload */
};

/* Encode h into out (at least IBMC__WIRE_CTL bytes): IBMC__WIRE_HDR bytes
 * for DATA and IBMC__WIRE_MSG for MSG (the payload follows), 24 to 36 for
 * control kinds. Returns the encoded length. */
size_t ibmc__wire_encode(const struct ibmc__hdr *h, uint8_t *out);
/* 0 and *h filled, or -EBADMSG for a datagram that is not ours. */
int ibmc__wire_decode(const void *buf, size_t len, struct ibmc__hdr *h);

#endif
