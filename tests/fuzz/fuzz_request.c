/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the control protocol's request decoder: one input
 * is the byte stream of one client connection, framed and decoded the way
 * osm-plugin/server.c does it, with the codec's invariants checked. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/net.h"
#include "common/proto.h"
#include "tests/fuzz/fuzz.h"

/* The server's detail buffer; a longer detail is cut, never overrun. */
#define DETAIL_LEN 256

/* Which fields each op may carry and must carry, written out again from
 * docs/protocol.md rather than taken from proto.c, so that a decoder that
 * drifts from the document is caught. */
enum { F_JOB = 1, F_UID = 2, F_NODES = 4, F_GROUPS = 8, F_LEASE = 16,
       F_TIMEOUT = 32, F_GROUP = 64 };
static const struct {
	unsigned allowed, required;
} spec[] = {
	[IBMC_OP_RESERVE] = { F_JOB | F_UID | F_NODES | F_GROUPS | F_LEASE,
			      F_JOB | F_NODES },
	[IBMC_OP_WAIT] = { F_JOB | F_GROUP | F_TIMEOUT, F_JOB },
	[IBMC_OP_RELEASE] = { F_JOB, F_JOB },
	[IBMC_OP_RENEW] = { F_JOB | F_LEASE, F_JOB },
	[IBMC_OP_STATUS] = { F_JOB, 0 },
	[IBMC_OP_PRUNE] = { F_JOB | F_GROUP | F_NODES, F_JOB | F_GROUP },
	[IBMC_OP_GROW] = { F_JOB | F_GROUP, F_JOB },
};

/* A decoded request has every field in range, or at its "absent" value,
 * and only the fields its op allows. */
static void check_request(const struct ibmc_request *r)
{
	unsigned present = 0;

	FUZZ_CHECK(r->op >= IBMC_OP_RESERVE && r->op <= IBMC_OP_GROW);
	if (r->job) {
		FUZZ_CHECK(r->job <= IBMC_PROTO_MAX_JOB);
		present |= F_JOB;
	}
	if (r->uid != -1) {
		FUZZ_CHECK(r->uid >= 0 && r->uid <= (int64_t)UINT32_MAX - 1);
		present |= F_UID;
	}
	if (r->nodes) {
		size_t n = strlen(r->nodes);

		FUZZ_CHECK(n >= 1 && n <= IBMC_PROTO_MAX_NODES_LEN);
		present |= F_NODES;
	}
	if (r->groups) {
		FUZZ_CHECK(r->groups <= IBMC_PROTO_MAX_GROUPS);
		present |= F_GROUPS;
	}
	if (r->lease_s) {
		FUZZ_CHECK(r->lease_s <= IBMC_PROTO_MAX_LEASE_S);
		present |= F_LEASE;
	}
	if (r->timeout_ms != -1) {
		FUZZ_CHECK(r->timeout_ms >= 0 &&
			   r->timeout_ms <= IBMC_PROTO_MAX_WAIT_MS);
		present |= F_TIMEOUT;
	}
	if (r->group != -1) {
		FUZZ_CHECK(r->group >= 0 && r->group < IBMC_PROTO_MAX_GROUPS);
		present |= F_GROUP;
	}
	FUZZ_CHECK(!(present & ~spec[r->op].allowed));
	FUZZ_CHECK((present & spec[r->op].required) == spec[r->op].required);
}

static bool same_request(const struct ibmc_request *a,
			 const struct ibmc_request *b)
{
	if (!a->nodes != !b->nodes ||
	    (a->nodes && strcmp(a->nodes, b->nodes)))
		return false;
	return a->op == b->op && a->job == b->job && a->uid == b->uid &&
	       a->groups == b->groups && a->lease_s == b->lease_s &&
	       a->timeout_ms == b->timeout_ms && a->group == b->group;
}

/* Every refusal becomes one reply line the client can parse, naming the
 * error code, whatever client bytes the detail quotes. */
static void check_reply(enum ibmc_err err, const char *detail)
{
	json_t *reply, *back;
	char *line;
	size_t n;

	reply = ibmc__reply_error(err, "%s", detail);
	FUZZ_CHECK(reply);
	line = ibmc__json_line(reply);
	FUZZ_CHECK(line);
	n = strlen(line);
	FUZZ_CHECK(n >= 2 && line[n - 1] == '\n');
	FUZZ_CHECK(!memchr(line, '\n', n - 1));
	back = json_loadb(line, n - 1, JSON_REJECT_DUPLICATES, NULL);
	FUZZ_CHECK(json_is_object(back));
	FUZZ_CHECK(json_is_false(json_object_get(back, "ok")));
	FUZZ_CHECK(json_is_string(json_object_get(back, "error")));
	FUZZ_CHECK(!strcmp(json_string_value(json_object_get(back, "error")),
			   ibmc__err_name(err)));
	FUZZ_CHECK(json_is_string(json_object_get(back, "detail")));
	json_decref(back);
	free(line);
	json_decref(reply);
}

/* A request re-encoded (as ibmcastctl and the SPANK plugin send it)
 * decodes to the same fields, as an object and as a wire line. */
static void check_round_trip(const struct ibmc_request *r)
{
	struct ibmc_request again;
	enum ibmc_err err;
	char detail[DETAIL_LEN];
	json_t *j;
	char *line;

	j = ibmc__request_to_json(r);
	FUZZ_CHECK(j);
	FUZZ_CHECK(ibmc__request_from_json(j, &again, &err, detail,
					   sizeof(detail)) == 0);
	FUZZ_CHECK(same_request(r, &again));
	ibmc__request_clear(&again);

	line = ibmc__json_line(j);
	FUZZ_CHECK(line);
	FUZZ_CHECK(strlen(line) <= IBMC_PROTO_MAX_LINE);
	FUZZ_CHECK(ibmc__request_parse(line, strlen(line), &again, &err,
				       detail, sizeof(detail)) == 0);
	FUZZ_CHECK(same_request(r, &again));
	ibmc__request_clear(&again);
	free(line);
	json_decref(j);
}

/* After a decode: success with every field in range (then the round trip
 * and, for a reserve, the hostlist the server would expand), or failure
 * with an error code and a detail. */
static void check_decoded(int rc, struct ibmc_request *req,
			  enum ibmc_err err, const char *detail)
{
	if (rc) {
		FUZZ_CHECK(rc == -EINVAL || rc == -ENOMEM);
		FUZZ_CHECK(err == (rc == -EINVAL ? IBMC_ERR_BAD_REQUEST
						 : IBMC_ERR_INTERNAL));
		FUZZ_CHECK(detail[0] != '\0');
		FUZZ_CHECK(memchr(detail, '\0', DETAIL_LEN));
		FUZZ_CHECK(!req->nodes); /* nothing left to leak */
		check_reply(err, detail);
		return;
	}
	check_request(req);
	check_round_trip(req);
	if (req->op == IBMC_OP_RESERVE)
		fuzz_check_hostlist(req->nodes, FUZZ_MAX_NODES);
	ibmc__request_clear(req);
}

/* One request line as server.c's handle_line() takes it. */
static void handle_line(const char *line, size_t len)
{
	struct ibmc_request req;
	enum ibmc_err err = IBMC_ERR_BAD_REQUEST;
	char detail[DETAIL_LEN] = "";
	json_error_t jerr;
	json_t *obj, *cred;
	char *payload;
	int rc;

	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!obj || !json_is_object(obj)) {
		snprintf(detail, sizeof(detail), "invalid JSON: %s",
			 obj ? "a request must be an object" : jerr.text);
		json_decref(obj);
		check_reply(IBMC_ERR_BAD_REQUEST, detail);
		return;
	}
	cred = json_object_get(obj, "munge");
	if (!cred) {
		rc = ibmc__request_from_json(obj, &req, &err, detail,
					     sizeof(detail));
		json_decref(obj);
		check_decoded(rc, &req, err, detail);
		return;
	}
	if (!json_is_string(cred) || json_object_size(obj) != 1 ||
	    strlen(json_string_value(cred)) != json_string_length(cred)) {
		/* The last one is auth.c's "payload is not text". */
		json_decref(obj);
		check_reply(IBMC_ERR_BAD_REQUEST, "munge: refused");
		return;
	}
	/* munged cannot run here: the credential string stands for the
	 * payload munge_decode() would hand back, which is then decoded
	 * from text exactly as the server does. */
	payload = strdup(json_string_value(cred));
	FUZZ_CHECK(payload);
	json_decref(obj);
	rc = ibmc__request_parse(payload, strlen(payload), &req, &err, detail,
				 sizeof(detail));
	free(payload);
	check_decoded(rc, &req, err, detail);
}

/* Feed the input through a pipe in writes of at most chunk bytes and take
 * lines out as server.c's read_client() does. The lines handed out must
 * be the input's own lines, in order, and only a line longer than the
 * limit may be refused. With decode, each line is then decoded. */
static void feed_connection(const uint8_t *data, size_t size, size_t chunk,
			    bool decode)
{
	struct ibmc_linebuf lb;
	size_t off = 0, done = 0, len, got;
	int fds[2];
	char *line;
	long n;

	FUZZ_CHECK(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
	ibmc__linebuf_init(&lb, IBMC_PROTO_MAX_LINE);
	for (;;) {
		if (off < size) {
			size_t want = size - off < chunk ? size - off : chunk;
			ssize_t w = write(fds[1], data + off, want);

			FUZZ_CHECK(w > 0 || (w < 0 && errno == EAGAIN));
			if (w > 0)
				off += (size_t)w;
		}
		if (off == size && fds[1] >= 0) {
			close(fds[1]); /* the client hangs up */
			fds[1] = -1;
		}
		n = ibmc__linebuf_fill(&lb, fds[0]);
		if (n == -EAGAIN)
			continue;
		if (n == -EMSGSIZE) {
			/* Refused: the pending line has no newline within
			 * the limit. */
			FUZZ_CHECK(size - done >= IBMC_PROTO_MAX_LINE);
			FUZZ_CHECK(!memchr(data + done, '\n',
					   IBMC_PROTO_MAX_LINE));
			break;
		}
		if (n <= 0 && n != -ENOBUFS) {
			/* End of stream: what is left is a partial line. */
			FUZZ_CHECK(n == 0);
			FUZZ_CHECK(!memchr(data + done, '\n', size - done));
			break;
		}
		got = 0;
		while ((line = ibmc__linebuf_next(&lb, &len))) {
			const uint8_t *nl = memchr(data + done, '\n',
						   size - done);
			size_t raw;

			FUZZ_CHECK(nl);
			raw = (size_t)(nl - (data + done));
			FUZZ_CHECK(raw + 1 <= IBMC_PROTO_MAX_LINE);
			/* One '\r' before the newline is dropped. */
			FUZZ_CHECK(len == raw ||
				   (len + 1 == raw && nl[-1] == '\r'));
			FUZZ_CHECK(!memcmp(line, data + done, len));
			FUZZ_CHECK(line[len] == '\0');
			done += raw + 1;
			if (decode)
				handle_line(line, len);
			got++;
		}
		/* A full buffer holds a line, or the caller would spin. */
		FUZZ_CHECK(n != -ENOBUFS || got);
	}
	ibmc__linebuf_free(&lb);
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibmc_request req;
	enum ibmc_err err = IBMC_ERR_BAD_REQUEST;
	char detail[DETAIL_LEN] = "";
	size_t chunk;
	int rc;

	/* The whole input as one request text (a MUNGE payload is decoded
	 * this way, and so is anything ibmcastctl reads). */
	rc = ibmc__request_parse((const char *)data, size, &req, &err, detail,
				 sizeof(detail));
	check_decoded(rc, &req, err, detail);

	/* The input as a connection, read as fast as the pipe allows, then
	 * again in small writes derived from the input so that lines are
	 * split across reads at many places (framing checks only). */
	feed_connection(data, size, 65536, true);
	chunk = 1 + (size * 7 + (size ? data[size - 1] : 0)) % 127;
	feed_connection(data, size, chunk, false);
	return 0;
}
