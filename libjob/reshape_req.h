/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reshape_req.h - the control-protocol side of a job reshaping its groups
 * from libjob (grow.c, prune.c), apart from the library's headers (the
 * protocol's request and op names clash with the public API's): a thread
 * that sends one grow or prune to IBMCAST_SERVER and, unless told not to,
 * follows the group, bounded, until the SM confirms it ready.
 */
#ifndef IBMCAST_LIBJOB_RESHAPE_REQ_H
#define IBMCAST_LIBJOB_RESHAPE_REQ_H

#include <stdint.h>

#include "common/groups.h"

struct ibmc__reshape_req;

/* What to ask: server, munge_socket (may be NULL) and nodes are copied. */
struct ibmc__reshape_ask {
	const char *server, *munge_socket;
	uint32_t job;
	int grow;		/* 1: grow; 0: prune group to nodes */
	unsigned group;		/* prune */
	const char *nodes;	/* prune: hostlist; NULL widens back */
	int wait_ms;		/* follow until ready this long; 0: don't */
};

/* What a finished request found. */
struct ibmc__reshape_result {
	struct ibmc_tr_group group;
	unsigned index;
	int changed;		/* prune: the shape changed */
	unsigned members;	/* the group's member ports */
	int64_t granted_us;	/* from the request to the server's reply */
	int64_t ready_us;	/* ... to the SM's confirmation */
	const char *detail;	/* why not, when it failed */
};

/* Start asking. 0 or -errno. */
int ibmc__reshape_req_start(const struct ibmc__reshape_ask *ask,
			    struct ibmc__reshape_req **out);

/* 1 while under way; 0 with *res filled when done (the group ready, when
 * followed); -errno (res->detail saying why) when not. res stays valid
 * until ibmc__reshape_req_free. */
int ibmc__reshape_req_poll(struct ibmc__reshape_req *r,
			   struct ibmc__reshape_result *res);

/* Wait for the request to end by itself (one exchange when not
 * following the group; else up to its wait_ms). */
void ibmc__reshape_req_wait(struct ibmc__reshape_req *r);

/* Tell the request to stop following its group (it ends after the
 * exchange under way); never waits. */
void ibmc__reshape_req_cancel(struct ibmc__reshape_req *r);

/* Stop and join the thread (bounded by one exchange with the server). */
void ibmc__reshape_req_free(struct ibmc__reshape_req *r);

#endif
