/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grow_thread.h - the control-protocol side of grow.h, apart from the
 * library's headers (the protocol's request and op names clash with the
 * public API's): a thread that asks the server for one more group of the
 * job and follows it, bounded, until the SM confirms it ready.
 */
#ifndef IBMCAST_LIBJOB_GROW_THREAD_H
#define IBMCAST_LIBJOB_GROW_THREAD_H

#include <stdint.h>

#include "common/groups.h"

struct ibmc__grow_req;

/* What a finished request found. */
struct ibmc__grow_result {
	struct ibmc_tr_group group;
	unsigned index;
	int64_t granted_us;	/* from the request to the grow's reply */
	int64_t ready_us;	/* ... to the SM's confirmation */
	const char *detail;	/* why not, when it failed */
};

/* Start asking (server, munge_socket and the strings stay valid until
 * ibmc__grow_req_free). 0 or -errno. */
int ibmc__grow_req_start(const char *server, const char *munge_socket,
			 uint32_t job, int wait_ms,
			 struct ibmc__grow_req **out);

/* 1 while under way; 0 with *res filled when the group is ready; -errno
 * (res->detail saying why) when it is not. */
int ibmc__grow_req_poll(struct ibmc__grow_req *r,
			struct ibmc__grow_result *res);

/* Stop and join the thread (bounded by one exchange with the server). */
void ibmc__grow_req_free(struct ibmc__grow_req *r);

#endif
