/* SPDX-License-Identifier: BSD-3-Clause */
/* The control protocol's codec: newline-delimited JSON requests decoded and
 * validated into struct ibmc_request, error codes, and reply helpers.
 * Spoken by ibmcastctl, the SPANK plugin and libjob to the OSM plugin. */
#ifndef IBMCAST_COMMON_PROTO_H
#define IBMCAST_COMMON_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* A request or reply line may not exceed this many bytes (newline
 * included); a longer line is refused and the connection closed. */
#define IBMC_PROTO_MAX_LINE (64 * 1024)
/* A reply may be longer (a status of many large pools); clients accept up
 * to this, and the server drops a client that leaves more unread. */
#define IBMC_PROTO_MAX_REPLY (4 * 1024 * 1024)

/* Hard limits of the protocol itself; a server may configure lower ones. */
#define IBMC_PROTO_MAX_GROUPS 1024
#define IBMC_PROTO_MAX_LEASE_S (30U * 24 * 3600)
#define IBMC_PROTO_MAX_WAIT_MS 3600000
#define IBMC_PROTO_MAX_NODES_LEN 16384 /* hostlist expression bytes */
#define IBMC_PROTO_MAX_JOB 0xfffffffdU /* Slurm's NO_VAL/INFINITE excluded */

enum ibmc_op {
	IBMC_OP_RESERVE = 1,
	IBMC_OP_WAIT,
	IBMC_OP_RELEASE,
	IBMC_OP_RENEW,
	IBMC_OP_STATUS,
	IBMC_OP_PRUNE,
	IBMC_OP_GROW,
};

enum ibmc_err {
	IBMC_ERR_BAD_REQUEST = 1,
	IBMC_ERR_UNAUTHORIZED,
	IBMC_ERR_UNKNOWN_JOB,
	IBMC_ERR_UNKNOWN_NODE,
	IBMC_ERR_NO_MLID,
	IBMC_ERR_QUOTA,
	IBMC_ERR_BUSY,
	IBMC_ERR_INTERNAL,
};

/* One decoded request. Fields not given by the client hold their "absent"
 * value so the server can apply its own defaults. */
struct ibmc_request {
	enum ibmc_op op;
	uint32_t job;       /* 1..IBMC_PROTO_MAX_JOB; 0 = absent */
	int64_t uid;        /* reserve: job owner; -1 = absent */
	char *nodes;        /* reserve: hostlist expression; NULL = absent */
	unsigned groups;    /* reserve: 1..IBMC_PROTO_MAX_GROUPS; 0 = absent */
	unsigned lease_s;   /* reserve/renew; 0 = absent */
	int64_t timeout_ms; /* wait: 0..IBMC_PROTO_MAX_WAIT_MS; -1 = absent */
	int group;          /* prune, wait: a group index; grow: the index
			     * the client expects the new group to get;
			     * 0..IBMC_PROTO_MAX_GROUPS-1; -1 = absent */
};

/* Wire format (keys; anything else is refused as bad_request):
 *   {"op":"reserve","job":N,"nodes":"node[1-16]"[,"uid":U][,"groups":G]
 *    [,"lease_s":S]}
 *   {"op":"wait","job":N[,"group":I][,"timeout_ms":T]}
 *   {"op":"release","job":N}
 *   {"op":"renew","job":N[,"lease_s":S]}
 *   {"op":"status"[,"job":N]}
 *   {"op":"prune","job":N,"group":I[,"nodes":"node[1-4]"]}
 *   {"op":"grow","job":N[,"group":I]}
 * On TCP the line is {"munge":"<credential>"} whose payload is the request
 * text; see auth.h. */

/* Decode and validate. Returns 0, or -EINVAL with *err and a human detail
 * ("job: expected an integer in 1..4294967293") filled in. req is
 * zero-initialised first and must be cleared with ibmc__request_clear. */
int ibmc__request_parse(const char *line, size_t len,
			struct ibmc_request *req, enum ibmc_err *err,
			char *detail, size_t detail_len);
int ibmc__request_from_json(const json_t *obj, struct ibmc_request *req,
			    enum ibmc_err *err, char *detail,
			    size_t detail_len);
void ibmc__request_clear(struct ibmc_request *req);

/* Encode a request (absent fields omitted). NULL on allocation failure. */
json_t *ibmc__request_to_json(const struct ibmc_request *req);

const char *ibmc__op_name(enum ibmc_op op);
int ibmc__op_from_name(const char *name); /* enum value or -EINVAL */
const char *ibmc__err_name(enum ibmc_err err);
int ibmc__err_from_name(const char *name); /* enum value or -EINVAL */

/* {"ok":false,"error":"<code>","detail":"<formatted>"}; NULL on ENOMEM. */
json_t *ibmc__reply_error(enum ibmc_err err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Compact one-line JSON followed by '\n', malloc'd; NULL on ENOMEM. */
char *ibmc__json_line(const json_t *j);

#endif
