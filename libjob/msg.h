/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * msg.h - reliable short messages for algorithms made of rounds (the
 * n-way dissemination barrier; recursive doubling).
 *
 * Each message has a slot, its place in the algorithm (round and index),
 * that sender and receiver both know, and a word and an optional payload
 * of up to one datagram. The receiver, not the sender, makes it reliable:
 * a slot it waits for longer than the pull timeout (measured: first pull
 * to arrival, else IBMCAST_BCAST_RTO_MS; doubling to at most 100 ms) is
 * pulled from its sender (IBMC__K_PULL), which sends it again if it has
 * sent it already, also after its own call returned (its task lingers).
 * Without loss a round costs one message per peer and no acks.
 */
#ifndef IBMCAST_LIBJOB_MSG_H
#define IBMCAST_LIBJOB_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "libjob/task.h"
#include "libjob/wire.h"

struct ibmc__msg_out {
	int peer;		/* communicator rank, -1: none */
	int sent;
	uint32_t word;
	unsigned char *data;	/* a copy, for pulls */
	size_t len;
	uint64_t t_model;	/* modeled time it first went (model.h:
				 * an answer to a pull carries it) */
};

struct ibmc__msg_in {
	int peer;		/* expected sender, -1: none */
	int got;
	uint32_t word;
	unsigned char *data;	/* the payload, malloc'ed */
	size_t len;
	uint64_t model_ns;	/* modeled arrival, charged when consumed */
	int charged;
	int64_t wait_since;	/* us: waited for since, 0: not yet */
	int64_t next_pull;	/* us */
	int64_t first_pull;	/* us, 0: never pulled */
	int npull;
};

struct ibmc__msgs {
	struct ibmc__task *task;
	int nslots;
	struct ibmc__msg_out *out;
	struct ibmc__msg_in *in;
};

/* nslots slots, none expected nor sent. 0 or -ENOMEM. */
int ibmc__msgs_init(struct ibmc__msgs *m, struct ibmc__task *t, int nslots);
void ibmc__msgs_fini(struct ibmc__msgs *m);

/* Slot comes from peer (a message from anyone else is dropped). */
void ibmc__msgs_expect(struct ibmc__msgs *m, int slot, int peer);
/* The caller now waits for slot: its pull timer starts. */
void ibmc__msgs_wait(struct ibmc__msgs *m, int slot, int64_t now);
/* Slot arrived? */
int ibmc__msgs_got(const struct ibmc__msgs *m, int slot);

/* The algorithm consumes slots first .. first + n - 1, all arrived:
 * charges those not charged yet in modeled-arrival order (model.h). */
void ibmc__msgs_consume(struct ibmc__msgs *m, int first, int n);

/* Send slot to peer (data copied, len up to a datagram). 0 or -errno. */
int ibmc__msgs_send(struct ibmc__msgs *m, int slot, int peer, uint32_t word,
		    const void *data, size_t len);

/* A MSG or PULL datagram of this task (also after completion). Returns 1
 * when it delivered a new slot, 0 else. */
int ibmc__msgs_input(struct ibmc__msgs *m, const struct ibmc__hdr *h,
		     const unsigned char *payload, size_t plen);

/* The senders of slots waited for and not arrived (live.h), at most
 * max. */
int ibmc__msgs_waits_for(const struct ibmc__msgs *m, int *ranks, int max);

/* Pull overdue slots; returns the next pull time (INT64_MAX: none). */
int64_t ibmc__msgs_progress(struct ibmc__msgs *m, int64_t now);

#endif
