/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bcast_op.h - one reliable broadcast in progress on one member.
 *
 * The engine (bcast_op.c) is shared by every algorithm: MTU fragments
 * numbered within the broadcast, a send window at the root, cumulative
 * acknowledgments up a tree rooted at the sender (each rank reports the
 * contiguous prefix it holds and the prefix its whole subtree holds, once
 * per quarter window and at the end), retransmission timers from measured ack
 * delays per child subtree height (SRTT/RTTVAR, Karn's rule, backoff),
 * selective retransmission to the children that did not acknowledge,
 * immediate NACKs of gaps to the parent, repair requests when a child
 * acknowledges data its parent lacks, and a FIN, multicast by the root
 * (or sent down the tree), once the root holds every acknowledgment.
 *
 * The algorithms differ only in how new data moves, behind the hooks of
 * struct ibmc__bcast_strategy: coll/bcast_mcast.c multicasts it from the
 * root (the tree carries acks and repairs), coll/bcast_binomial.c and
 * coll/bcast_postal.c forward it down their trees.
 */
#ifndef IBMCAST_LIBJOB_BCAST_OP_H
#define IBMCAST_LIBJOB_BCAST_OP_H

#include <stdint.h>

#include "libjob/comm.h"
#include "libjob/tree.h"
#include "libjob/wire.h"

struct ibmc__op;
struct ibmc__child;

/* What one broadcast algorithm adds to the engine. */
struct ibmc__bcast_strategy {
	int tree;		/* shape of the ack (and data) tree:
				 * IBMC__A_BINOMIAL or IBMC__A_POSTAL */
	int uses_group;		/* data goes by multicast: fragments fit the
				 * group's MTU, the root announces how far
				 * it sent and multicasts the FIN */
	/* Root: send new fragments within the window; 1 when it did. */
	int (*push)(struct ibmc__op *op);
	/* A fragment this rank just got: pass it on (NULL: nothing). */
	void (*forward)(struct ibmc__op *op, uint32_t frag);
	/* Root: children whose timers expired; it may serve some at once
	 * (setting their slot to NULL), the engine serves the rest. */
	int (*retransmit)(struct ibmc__op *op, struct ibmc__child **due,
			  int ndue);
};

/* The strategy of IBMC__A_MCAST, _BINOMIAL, _POSTAL; NULL else. */
const struct ibmc__bcast_strategy *ibmc__bcast_strategy(int algo);

struct ibmc__child {
	int rank;		/* communicator rank */
	int height;		/* of its subtree: picks its delay estimate */
	uint32_t have;		/* contiguous fragments it holds */
	uint32_t cum;		/* ... that its whole subtree holds */
	uint64_t mask;		/* bit i: it holds fragment have + 1 + i */
	int mc;			/* its subtree saw multicast data */
	int heard;		/* acked or NACKed in this broadcast */
	int fin_sent;
	int backoff;
	int karn;		/* resent or probed since its last progress:
				 * its next ack is no delay sample */
	int64_t kick;		/* us: last resend or probe to it */
	uint32_t want_lo;	/* fragments it asked for that we lacked: */
	uint64_t want;		/* bit i: want_lo + i */
	uint32_t req_a;		/* its last request (NACKs come in pairs) */
	uint64_t req_mask;
	int64_t req_at;		/* us */
	/* Modeled arrival of its latest acks that raised cum (a ring):
	 * the root charges a window's advance at the latest child's first
	 * ack covering it, whatever order real time handed them in. */
	struct { uint32_t cum; uint64_t t_ns; } cum_at[8];
	unsigned ncum_at;
};

struct ibmc__op {
	struct ibmc_comm *comm;
	uint32_t seq;
	int root, me;
	/* The ranks that take part (the node-leader broadcast runs among
	 * node leaders only): NULL for every rank; else its tree is built
	 * over indices of this list and mapped back to communicator ranks. */
	const int *members;
	int nmembers;
	int known;		/* shape learnt (always at the root) */
	int algo, lambda;
	const struct ibmc__bcast_strategy *strat;
	unsigned char *buf;
	size_t len;		/* the root's length (what the packets say) */
	/* A member whose length differs from the root's (ibmc_bcast(3),
	 * EMSGSIZE) still relays for its subtree: buf is then a scratch
	 * buffer of the root's length (owned), and the caller's buffer gets
	 * what fits once the data is complete (ibmc__op_deliver). */
	unsigned char *scratch;
	unsigned char *user_buf;	/* NULL once delivered */
	size_t user_len;
	int error;		/* -EMSGSIZE, -EINVAL: the data is wrong (a
				 * collective around this broadcast saw its
				 * members disagree); set at the root, learnt
				 * from the data elsewhere, carried on */
	uint32_t fragsz, nfrags;
	uint32_t ackint;	/* children ack every ackint fragments */

	struct ibmc__tree tree;
	struct ibmc__child *kids;
	unsigned char *got;	/* bitmap of held fragments */
	uint64_t *t_model;	/* modeled time each fragment first went out
				 * (model.h: its retransmissions carry it) */
	int64_t *t_avail;	/* us: when this rank first held (root: sent)
				 * each fragment; negative: by a repair */
	uint32_t have;		/* contiguous prefix held */
	uint32_t top;		/* 1 + the highest fragment held */
	uint32_t cum;		/* prefix the whole subtree holds */
	uint32_t sent;		/* root: fragments sent once */
	int mc_seen;		/* got a fragment by multicast */
	int child_mc;		/* some child reported multicast data */

	/* What the parent last heard from us. */
	uint32_t acked_have, acked_cum;
	int ack_due;		/* send an ack at the next flush */
	int64_t final_ack;	/* us: first final ack sent (FIN delay) */
	int final_acks;		/* final acks sent */
	int64_t ack_resend;	/* us: re-send the final ack then */

	/* Gaps: NACKs to the parent, each fragment asked for at most once
	 * per (backed-off) NACK timeout. */
	int64_t *t_nack;	/* us: last NACK of each fragment, 0: never */
	uint8_t *n_nack;	/* NACKs of each fragment so far */
	uint32_t nack_hi;	/* top when the gaps were last scanned */
	int64_t nack_next;	/* us: the earliest re-NACK due */

	int fin;		/* FIN received (or root done) */
	int64_t linger_until;	/* us: give up waiting for the FIN then */
	int returned;		/* the caller returned (early return): its
				 * FINs are bookkeeping, not modeled */
	int64_t req_next;	/* us: earliest next repair request */
	int64_t parent_heard;	/* us: the parent's last unicast packet */
	int64_t root_req_next;	/* us: earliest next request to the root
				 * (parent silent: ask_root; no fragment
				 * yet: ask_shape) */
	int shape_asks;		/* ask_shape's requests so far */
	int remcast_ok;		/* the last re-multicast made progress */
	int64_t last_progress;	/* ms */

	uint32_t backed_off;	/* heights whose timeout doubled already */
	int done, rc;
};

/* Start broadcast number seq (its task's: a stage's number was reserved
 * at its call, stages.h). At the root algo is the resolved algorithm;
 * elsewhere it is ignored (learnt from the first packet). 0 or -errno. */
int ibmc__op_start(struct ibmc__op *op, struct ibmc_comm *comm, void *buf,
		   size_t len, int root, int algo, uint32_t seq);
/* The same among n communicator ranks members[] (ascending, holding root
 * and this rank; the list must outlive the op), as broadcast number seq
 * (a task may start its engine after later calls were numbered). */
int ibmc__op_start_among(struct ibmc__op *op, struct ibmc_comm *comm,
			 void *buf, size_t len, int root, int algo,
			 uint32_t seq, const int *members, int n);
void ibmc__op_fini(struct ibmc__op *op);
/* Once this member holds every fragment (the root: at once): 0; or (its
 * length differed from the root's) copy what fits into the caller's
 * buffer, once, and -EMSGSIZE; or the error the data carries. The op
 * goes on relaying from its scratch buffer. */
int ibmc__op_deliver(struct ibmc__op *op);
/* A datagram for this op (its comm, version and seq already matched). */
void ibmc__op_input(struct ibmc__op *op, const struct ibmc__hdr *h,
		    const unsigned char *payload, size_t plen, int is_mcast);
/* Timers, pending acks and completion checks; sets op->done. now: us. */
void ibmc__op_progress(struct ibmc__op *op, int64_t now);
/* The communicator ranks this member waits for (live.h): without the
 * shape, the root; lacking data, the root (a silent parent is gone
 * around: ask_root); children whose subtrees still owe acks. */
int ibmc__op_waits_for(const struct ibmc__op *op, int *ranks, int max);
/* This op's next timer, us on ibmc__op_now()'s clock. */
int64_t ibmc__op_next_deadline(const struct ibmc__op *op);
/* Monotonic microseconds. */
int64_t ibmc__op_now(void);

/* Low-level sends shared with the strategies. */
int ibmc__op_send_frag(struct ibmc__op *op, int to, uint32_t frag,
		       int retx);
int ibmc__op_mcast_frag(struct ibmc__op *op, uint32_t frag, int retx);
int ibmc__op_send_ctl(struct ibmc__op *op, int to, int kind, uint32_t a,
		      uint32_t b, uint64_t mask, int flags);

/* The strategies (coll/bcast_*.c); the tree ones share push and forward
 * (coll/bcast_binomial.c). */
extern const struct ibmc__bcast_strategy ibmc__bcast_mcast;
extern const struct ibmc__bcast_strategy ibmc__bcast_binomial;
extern const struct ibmc__bcast_strategy ibmc__bcast_postal;
int ibmc__bcast_tree_push(struct ibmc__op *op);
void ibmc__bcast_tree_forward(struct ibmc__op *op, uint32_t frag);

#endif
