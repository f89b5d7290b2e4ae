/* SPDX-License-Identifier: BSD-3-Clause */
/* The protocol's operations: reserve, wait, release, renew, status, prune
 * and grow. Each
 * takes a validated request and the authenticated uid and builds the reply;
 * only the server thread calls them. */
#ifndef IBMCAST_OSM_OPS_H
#define IBMCAST_OSM_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "common/proto.h"
#include "plugin.h"

/* A wait that cannot be answered yet: the server parks the client. */
struct ibmc_wait {
	uint32_t job;
	int group;           /* -1: the whole job */
	uint64_t start_ns;
	uint64_t deadline_ns;
};

/* Returns the reply, or NULL with *park filled in when the request is a
 * wait that must block. Never NULL otherwise (an allocation failure
 * becomes a static "internal" reply built by the caller). */
json_t *ibmc__op_dispatch(struct ibmc_plugin *p, const struct ibmc_request *r,
			  uid_t uid, struct ibmc_wait *park, bool *parked);

/* Reshaping a job's groups (ops_resize.c). */
json_t *ibmc__op_prune(struct ibmc_plugin *p, const struct ibmc_request *r,
		       uid_t uid);
json_t *ibmc__op_grow(struct ibmc_plugin *p, const struct ibmc_request *r,
		      uid_t uid);

/* Shared by the handlers: root or the Slurm user; and reply with the job
 * object added as "job" (NULL, reply freed, on ENOMEM). */
bool ibmc__op_privileged(struct ibmc_plugin *p, uid_t uid);
json_t *ibmc__reply_with_job(json_t *reply, const struct ibmc_job *j);

/* The reply to a parked wait, or NULL if it must keep waiting. */
json_t *ibmc__op_wait_check(struct ibmc_plugin *p, const struct ibmc_wait *w,
			    uint64_t now_ns);

/* Release every job whose lease ended; returns how many. */
unsigned ibmc__op_expire_leases(struct ibmc_plugin *p, uint64_t now_ns);

#endif
