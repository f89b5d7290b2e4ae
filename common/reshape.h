/* SPDX-License-Identifier: BSD-3-Clause */
/* The client side of prune, grow and a group's wait, for libjob: request
 * builders, one reply decoder, and calls around ibmc__client_call. A job
 * narrows a group for a sub-communicator, widens it back when that is
 * freed, grows one more group when its pool is empty, and learns when
 * the SM has confirmed the result. */
#ifndef IBMCAST_COMMON_RESHAPE_H
#define IBMCAST_COMMON_RESHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "common/groups.h"
#include "common/proto.h"

/* What a prune, grow or group wait reply says about the group. */
struct ibmc_group_reply {
	unsigned index;
	struct ibmc_tr_group group; /* what a transport attaches to */
	bool ready;     /* SM-confirmed now; else building (or failed) */
	bool changed;   /* prune: the shape changed; grow: created now */
	bool timed_out; /* wait: the timeout ran out first */
	unsigned members; /* member ports */
};

/* {"op":"prune","job":job,"group":group[,"nodes":nodes]}: nodes NULL
 * widens the group back to the whole job. NULL on ENOMEM or a group
 * outside the protocol's range. */
json_t *ibmc__prune_request(uint32_t job, unsigned group, const char *nodes);
/* {"op":"grow","job":job[,"group":expect]}: expect < 0 leaves out the
 * idempotency handle (every call then adds a group). */
json_t *ibmc__grow_request(uint32_t job, int expect);
/* {"op":"wait","job":job,"group":group,"timeout_ms":wait_ms}. */
json_t *ibmc__group_wait_request(uint32_t job, unsigned group, int wait_ms);

/* Decode a reply to one of those. 0 with *out filled (and *err 0); for a
 * group's wait on a job released meanwhile -ENOENT (unknown_job); for a
 * refusal the
 * server's code in *err, its detail, and the code as -errno: bad_request
 * -EINVAL, unauthorized -EACCES, unknown_job -ENOENT, unknown_node -ENXIO,
 * no_mlid -ENOSPC, quota -EDQUOT, busy -EAGAIN, internal -EIO; -EPROTO
 * for a reply that is not what the protocol says. */
int ibmc__group_reply_decode(const json_t *reply, struct ibmc_group_reply *out,
			     enum ibmc_err *err, char *detail,
			     size_t detail_len);

/* Send and decode in one (server and munge_socket as for
 * ibmc__client_call, timeout_ms bounding the exchange). Returns as the
 * decoder does, or the transport's -errno with its detail (err then
 * IBMC_ERR_INTERNAL). */
int ibmc__prune(const char *server, const char *munge_socket, uint32_t job,
		unsigned group, const char *nodes, int timeout_ms,
		struct ibmc_group_reply *out, enum ibmc_err *err,
		char *detail, size_t detail_len);
int ibmc__grow(const char *server, const char *munge_socket, uint32_t job,
	       int expect, int timeout_ms, struct ibmc_group_reply *out,
	       enum ibmc_err *err, char *detail, size_t detail_len);
/* Blocks up to wait_ms at the server (the exchange is bounded by
 * wait_ms + timeout_ms). */
int ibmc__group_wait(const char *server, const char *munge_socket,
		     uint32_t job, unsigned group, int wait_ms, int timeout_ms,
		     struct ibmc_group_reply *out, enum ibmc_err *err,
		     char *detail, size_t detail_len);

#endif
