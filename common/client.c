/* SPDX-License-Identifier: BSD-3-Clause */
/* The client side of the control protocol: one connection, one request
 * (MUNGE-wrapped on TCP), one reply, all under one deadline. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/client.h"
#include "common/clock.h"
#include "common/net.h"
#include "common/proto.h"

/* What is left of the caller's bound; at least 1 ms so that an expired
 * deadline still reports a timeout rather than "no bound". */
static int remaining(int64_t deadline)
{
	int64_t d;

	if (deadline < 0)
		return -1;
	d = deadline - ibmc__now_ms();
	if (d < 1)
		return 1;
	return d > INT32_MAX ? INT32_MAX : (int)d;
}

/* The line to send: the request itself, or on TCP {"munge":"<cred>"}
 * whose credential carries the request text. */
static int build_line(const struct ibmc_addr *a, const char *munge_socket,
		      const json_t *request, char **out, char *detail,
		      size_t dlen)
{
	char *text, *cred = NULL;
	json_t *wrap;
	int rc;

	text = ibmc__json_line(request);
	if (!text) {
		snprintf(detail, dlen, "cannot encode the request");
		return -ENOMEM;
	}
	if (a->is_unix) {
		*out = text;
		return 0;
	}
	text[strlen(text) - 1] = '\0'; /* the payload has no newline */
	rc = ibmc__munge_wrap(text, munge_socket, &cred, detail, dlen);
	free(text);
	if (rc)
		return rc;
	wrap = json_pack("{s:s}", "munge", cred);
	free(cred);
	*out = wrap ? ibmc__json_line(wrap) : NULL;
	json_decref(wrap);
	if (!*out) {
		snprintf(detail, dlen, "cannot encode the request");
		return -ENOMEM;
	}
	return 0;
}

int ibmc__client_call(const char *server, const char *munge_socket,
		      const json_t *request, int timeout_ms, json_t **reply,
		      char *detail, size_t detail_len)
{
	int64_t deadline = timeout_ms < 0 ? -1 : ibmc__now_ms() + timeout_ms;
	char where[400], *line = NULL, *answer = NULL;
	struct ibmc_addr a;
	json_error_t jerr;
	json_t *r;
	int fd = -1, rc;

	*reply = NULL;
	if (!server || ibmc__addr_parse(server, &a)) {
		snprintf(detail, detail_len, "invalid server address \"%s\"",
			 server ? server : "");
		return -EINVAL;
	}
	ibmc__addr_format(&a, where, sizeof(where));

	rc = build_line(&a, munge_socket, request, &line, detail,
			detail_len);
	if (rc)
		return rc;
	if (strlen(line) > IBMC_PROTO_MAX_LINE) {
		snprintf(detail, detail_len, "request longer than %d bytes",
			 IBMC_PROTO_MAX_LINE);
		rc = -EMSGSIZE;
		goto out;
	}

	fd = ibmc__connect(&a, remaining(deadline));
	if (fd < 0) {
		rc = fd;
		snprintf(detail, detail_len, "cannot connect to %s: %s",
			 where, strerror(-rc));
		goto out;
	}
	rc = ibmc__write_all(fd, line, strlen(line), remaining(deadline));
	if (rc) {
		snprintf(detail, detail_len, "sending to %s: %s", where,
			 strerror(-rc));
		goto out;
	}
	rc = ibmc__read_line(fd, IBMC_PROTO_MAX_REPLY, remaining(deadline),
			     &answer);
	if (rc) {
		if (rc == -ETIMEDOUT)
			snprintf(detail, detail_len,
				 "no reply from %s within %d ms", where,
				 timeout_ms);
		else if (rc == -ECONNRESET)
			snprintf(detail, detail_len,
				 "%s closed the connection without a reply",
				 where);
		else if (rc == -EMSGSIZE)
			snprintf(detail, detail_len,
				 "reply from %s longer than %d bytes", where,
				 IBMC_PROTO_MAX_REPLY);
		else
			snprintf(detail, detail_len, "reading from %s: %s",
				 where, strerror(-rc));
		if (rc == -EMSGSIZE)
			rc = -EPROTO;
		goto out;
	}
	r = json_loads(answer, 0, &jerr);
	if (!r || !json_is_object(r) || !json_is_boolean(json_object_get(r,
								     "ok"))) {
		snprintf(detail, detail_len,
			 "unparsable reply from %s: %s", where,
			 r ? "not an object with \"ok\"" : jerr.text);
		json_decref(r);
		rc = -EPROTO;
		goto out;
	}
	*reply = r;
	rc = 0;
out:
	free(answer);
	free(line);
	if (fd >= 0)
		close(fd);
	return rc;
}
