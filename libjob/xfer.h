/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xfer.h - reliable point-to-point transfers of any length inside one
 * collective task (the rounds of ring and recursive-doubling algorithms).
 *
 * A transfer is named by its tag within the task and by the peer. The
 * sender sends datagram-sized fragments within a window past what the
 * receiver acknowledged; the receiver acknowledges cumulatively (with a
 * mask of what it holds beyond) once per quarter window, at the end
 * (twice), and at once when it sees a gap, which makes the sender resend
 * the missing fragments; a sender that hears nothing for a retransmission
 * timeout resends the first unacknowledged fragments, doubling the
 * timeout. A fragment for a receive not posted yet (a peer a round
 * ahead, or a node leader still gathering its node) is kept, within
 * bounds, and taken in when the receive is posted: dropped, it would
 * cost the sender a retransmission timeout, doubled on every repeat. The
 * tag's low 16 bits name the transfer; the high 16 bits carry what both
 * sides must agree on (the allreduce's datatype and operation), so a
 * mismatch is seen.
 */
#ifndef IBMCAST_LIBJOB_XFER_H
#define IBMCAST_LIBJOB_XFER_H

#include <stddef.h>
#include <stdint.h>

#include "libjob/task.h"
#include "libjob/wire.h"

/* Tag bits that name the algorithm (ibmc__ar_tag): members whose tags
 * differ there ran different algorithms, which auto chooses by length,
 * so the disagreement is reported as one on the length (-EMSGSIZE). */
#define IBMC__XTAG_ALGO_SHIFT 27
#define IBMC__XTAG_ALGO_MASK (0xfu << IBMC__XTAG_ALGO_SHIFT)

struct ibmc__xfer {
	int peer;		/* communicator rank; -1: slot unused */
	int send;		/* 1: we send, 0: we receive */
	uint32_t tag;
	unsigned char *buf;	/* send: source; receive: destination */
	size_t len;
	uint32_t fragsz, nfrags;
	int posted, done;
	/* sender */
	uint32_t next;		/* first fragment never sent */
	uint32_t acked;		/* fragments acknowledged in a row */
	uint64_t amask;		/* acknowledged after them */
	int64_t t_progress;	/* us: last new ack (or first send), or
				 * resend */
	int64_t t_moved;	/* us: last new ack (or first send) */
	int64_t t_resend;	/* us: last resend on a gap report */
	int backoff;
	uint64_t *t_model;	/* send: modeled time each fragment first
				 * went (model.h: its resends carry it);
				 * receive: each fragment's modeled
				 * arrival, charged when the receive is
				 * consumed */
	int charged;		/* receive: its fragments were charged */
	/* receiver */
	unsigned char *got;	/* bitmap */
	uint32_t have, top, acked_have;
	int final_acks;
	/* A receive whose sender disagrees on the length or the tag takes
	 * the sender's shape into a scratch buffer (owned), so that the
	 * sender completes; user gets what fits when it is done. */
	unsigned char *scratch;
	unsigned char *user;
	size_t user_len;
};

/* Datagrams kept for a receiver not there yet (a receive not posted, an
 * inner task not started), each with its modeled arrival, bounded by
 * count and bytes: beyond, one is dropped and its sender sends it again. */
struct ibmc__xkept;
struct ibmc__xkept_list {
	struct ibmc__xkept *head;
	int n;
	size_t bytes;
};

void ibmc__xkept_add(struct ibmc__xkept_list *l, struct ibmc_context *ctx,
		     const struct ibmc__hdr *h, const unsigned char *payload,
		     size_t plen);
/* Input again to fn, in the order they came, each at its own modeled
 * arrival, the kept datagrams match() takes (match NULL: all); they
 * leave the list first. */
void ibmc__xkept_replay(struct ibmc__xkept_list *l, struct ibmc_context *ctx,
			int (*match)(const struct ibmc__hdr *h,
				     const void *arg),
			void (*fn)(void *arg, const struct ibmc__hdr *h,
				   const unsigned char *payload, size_t plen),
			void *arg);
void ibmc__xkept_free(struct ibmc__xkept_list *l);

struct ibmc__xfers {
	struct ibmc__task *task;
	int n;
	struct ibmc__xfer *x;
	int error;		/* -EMSGSIZE, -EINVAL: the peers disagree
				 * (seen here or carried by a peer's data);
				 * every send from then on carries it */
	/* ibmc__xfers_stop_all: the members told of a disagreement
	 * (communicator ranks; NULL: the whole communicator), and whether
	 * the transfers stopped (told, or told by a peer). */
	int stop_all;
	const int *stop_group;
	int stop_n;
	uint32_t stop_tag;	/* the high 16 bits every tag must carry */
	int stopped;
	int64_t progress_ms;	/* last new fragment or acknowledgment */
	int64_t next;		/* us: the next timer, set by progress */
	struct ibmc__xkept_list kept;	/* for receives not posted yet */
};

/* n transfer slots. 0 or -ENOMEM. */
int ibmc__xfers_init(struct ibmc__xfers *xs, struct ibmc__task *t, int n);
void ibmc__xfers_fini(struct ibmc__xfers *xs);

/*
 * On a disagreement, tell the n members (communicator ranks group[i];
 * group NULL: ranks 0..n-1) at once, and stop: the task fails with it
 * now, as does every member that hears it, and so does every member that
 * enters the collective later. For algorithms whose members may have
 * run different algorithms (auto's choice by the vector's length): there
 * the data path alone would leave some waiting for rounds that never
 * come, until the timeout, and a peer's datagram may match no transfer
 * at all; so every datagram's tag is checked against tag's high 16 bits
 * (the datatype, operation and algorithm) as it arrives. Each member
 * that learns it tells the others (twice), so a notice lost to the
 * fabric is made up by the others'.
 */
void ibmc__xfers_stop_all(struct ibmc__xfers *xs, const int *group, int n,
			  uint32_t tag);

/* Post slot i: send len bytes of buf to peer, or receive them into buf.
 * buf stays valid until the transfer is done. 0 or -errno. */
int ibmc__xfer_post(struct ibmc__xfers *xs, int i, int send, int peer,
		    uint32_t tag, void *buf, size_t len);
/* Slot i done? A receive's first "done" consumes it: its fragments are
 * charged in modeled time then, in modeled-arrival order, so that a
 * rank's clock follows the rounds in the algorithm's order and not the
 * real-time order of several peers' data (model.h). Acknowledgments are
 * reliability over datagrams, as a reliable connection's are hardware:
 * they cost no modeled time. A send is posted with its first window sent
 * at once. */
int ibmc__xfer_done(struct ibmc__xfers *xs, int i);

/* An XDATA or XACK datagram of this task (also after it completed). */
void ibmc__xfers_input(struct ibmc__xfers *xs, const struct ibmc__hdr *h,
		       const unsigned char *payload, size_t plen);

/* Send, resend and acknowledge what is due; the next timer (us). */
int64_t ibmc__xfers_progress(struct ibmc__xfers *xs, int64_t now);

/* Task operations for an algorithm whose state (the task's priv) starts
 * with its struct ibmc__xfers: transfer datagrams, also after completion
 * (input and late), and the next timer. */
void ibmc__xfers_task_input(struct ibmc__task *t, const struct ibmc__hdr *h,
			    const unsigned char *payload, size_t plen,
			    int is_mcast);
int64_t ibmc__xfers_task_deadline(const struct ibmc__task *t);

/* The peers of posted transfers not done yet (live.h), at most max. */
int ibmc__xfers_waits_for(const struct ibmc__xfers *xs, int *ranks, int max);
/* ... as a task operation, for a task whose priv starts with them. */
int ibmc__xfers_task_waits_for(const struct ibmc__task *t, int *ranks,
			       int max);

/* 1 when every posted transfer is done; then consumes the receives not
 * consumed yet, in slot order. */
int ibmc__xfers_all_done(struct ibmc__xfers *xs);

/* 0, or why the task must fail: the peers disagree (-EMSGSIZE, -EINVAL),
 * or nothing moved for IBMCAST_BCAST_TIMEOUT_MS (-ETIMEDOUT). */
int ibmc__xfers_check(const struct ibmc__xfers *xs);

/* A transfer task's progress result (consuming the receives as
 * ibmc__xfers_all_done does): stopped (ibmc__xfers_stop_all), the
 * disagreement at once; when the task has posted all it will
 * (finished) and every transfer is done, 0 or the peers' disagreement
 * (-EMSGSIZE, -EINVAL: the task ran to its end so that its peers, which
 * learn it from its data, end too instead of timing out); else, when
 * nothing moved for IBMCAST_BCAST_TIMEOUT_MS, the disagreement if there
 * is one, else -ETIMEDOUT; else IBMC_INPROGRESS. */
int ibmc__xfers_result(struct ibmc__xfers *xs, int finished);

#endif
