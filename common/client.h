/* SPDX-License-Identifier: BSD-3-Clause */
/* One request, one reply: the client side of the control protocol used by
 * ibmcastctl, the SPANK plugin and libjob. */
#ifndef IBMCAST_COMMON_CLIENT_H
#define IBMCAST_COMMON_CLIENT_H

#include <stddef.h>
#include <jansson.h>

/* Send request to server (an address as in net.h) and return the parsed
 * reply object. Over TCP the request is wrapped in a MUNGE credential
 * (munge_socket as in auth.h). The whole exchange is bounded by
 * timeout_ms (< 0: no bound). Returns 0 with *reply set (its "ok" may be
 * false: that is the server's answer), or -errno with detail filled in
 * (-ECONNREFUSED, -ETIMEDOUT, -EPROTO for an unparsable reply). */
int ibmc__client_call(const char *server, const char *munge_socket,
		      const json_t *request, int timeout_ms, json_t **reply,
		      char *detail, size_t detail_len);

#endif
