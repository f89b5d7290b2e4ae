/* SPDX-License-Identifier: BSD-3-Clause */
/* prune, grow and a group's wait from the client's side: requests made
 * with the protocol's own encoder, replies decoded into what a transport
 * needs (the group's address) and what the caller decides on (ready,
 * changed), refusals turned into -errno. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/client.h"
#include "common/mgid.h"
#include "common/parse.h"
#include "common/reshape.h"

static json_t *encode(enum ibmc_op op, uint32_t job, int group,
		      const char *nodes, int64_t timeout_ms)
{
	struct ibmc_request r = {
		.op = op, .job = job, .uid = -1, .nodes = (char *)nodes,
		.timeout_ms = timeout_ms, .group = group,
	};

	if (group >= IBMC_PROTO_MAX_GROUPS)
		return NULL;
	return ibmc__request_to_json(&r);
}

json_t *ibmc__prune_request(uint32_t job, unsigned group, const char *nodes)
{
	if (group >= IBMC_PROTO_MAX_GROUPS)
		return NULL;
	return encode(IBMC_OP_PRUNE, job, (int)group, nodes, -1);
}

json_t *ibmc__grow_request(uint32_t job, int expect)
{
	return encode(IBMC_OP_GROW, job, expect < 0 ? -1 : expect, NULL, -1);
}

json_t *ibmc__group_wait_request(uint32_t job, unsigned group, int wait_ms)
{
	if (group >= IBMC_PROTO_MAX_GROUPS || wait_ms < 0 ||
	    wait_ms > IBMC_PROTO_MAX_WAIT_MS)
		return NULL;
	return encode(IBMC_OP_WAIT, job, (int)group, NULL, wait_ms);
}

/* The protocol's error codes as errno values, in enum ibmc_err order. */
static const int err_errno[] = {
	[IBMC_ERR_BAD_REQUEST] = EINVAL, [IBMC_ERR_UNAUTHORIZED] = EACCES,
	[IBMC_ERR_UNKNOWN_JOB] = ENOENT, [IBMC_ERR_UNKNOWN_NODE] = ENXIO,
	[IBMC_ERR_NO_MLID] = ENOSPC,      [IBMC_ERR_QUOTA] = EDQUOT,
	[IBMC_ERR_BUSY] = EAGAIN,         [IBMC_ERR_INTERNAL] = EIO,
};

static int malformed(enum ibmc_err *err, char *detail, size_t dlen,
		     const char *what)
{
	*err = IBMC_ERR_INTERNAL;
	snprintf(detail, dlen, "malformed reply: %s", what);
	return -EPROTO;
}

/* "0x..." text of a job or group field, within max. */
static int hex_field(const json_t *o, const char *key, unsigned long max,
		     unsigned long *v)
{
	return ibmc__parse_hex(json_string_value(json_object_get(o, key)), 0,
			       max, v);
}

int ibmc__group_reply_decode(const json_t *reply, struct ibmc_group_reply *out,
			     enum ibmc_err *err, char *detail, size_t dlen)
{
	const json_t *g = json_object_get(reply, "group");
	const json_t *job = json_object_get(reply, "job");
	const json_t *flag;
	unsigned long mlid, qkey, pkey;
	json_int_t index, mtu, members;
	const char *state, *text;
	int code;

	memset(out, 0, sizeof(*out));
	*err = IBMC_ERR_INTERNAL;
	if (detail && dlen)
		detail[0] = '\0';
	if (!json_is_object(reply))
		return malformed(err, detail, dlen, "not an object");
	if (!json_is_true(json_object_get(reply, "ok"))) {
		code = ibmc__err_from_name(
			json_string_value(json_object_get(reply, "error")));
		if (code < 0)
			return malformed(err, detail, dlen, "unknown error");
		*err = (enum ibmc_err)code;
		text = json_string_value(json_object_get(reply, "detail"));
		snprintf(detail, dlen, "%s: %s", ibmc__err_name(*err),
			 text ? text : "(no detail)");
		return -err_errno[code];
	}
	/* A group's wait on a job released meanwhile. */
	text = json_string_value(json_object_get(job, "state"));
	if (text && !strcmp(text, "released")) {
		*err = IBMC_ERR_UNKNOWN_JOB;
		snprintf(detail, dlen, "unknown_job: the job was released");
		return -ENOENT;
	}
	if (json_unpack((json_t *)g, "{s:I, s:s, s:I, s:I}", "index", &index,
			"state", &state, "mtu", &mtu, "members", &members) ||
	    index < 0 || index >= IBMC_PROTO_MAX_GROUPS || mtu < 1 ||
	    mtu > 5 || members < 0)
		return malformed(err, detail, dlen, "no usable group");
	text = json_string_value(json_object_get(g, "mgid"));
	if (!text || ibmc__mgid_parse(text, out->group.mgid) ||
	    hex_field(g, "mlid", 0xffff, &mlid) ||
	    hex_field(job, "qkey", 0xffffffffUL, &qkey) ||
	    hex_field(job, "pkey", 0xffff, &pkey))
		return malformed(err, detail, dlen, "no group address");
	out->index = (unsigned)index;
	out->group.mlid = (uint16_t)mlid;
	out->group.qkey = (uint32_t)qkey;
	out->group.pkey = (uint16_t)pkey;
	out->group.mtu = 128U << mtu; /* IBA encoding: 1 = 256 bytes */
	if (ibmc__group_check(&out->group))
		return malformed(err, detail, dlen, "not a multicast group");
	out->members = (unsigned)members;
	out->ready = !strcmp(state, "ready");
	flag = json_object_get(reply, "changed");
	if (!flag)
		flag = json_object_get(reply, "created");
	out->changed = json_is_true(flag);
	out->timed_out = json_is_true(json_object_get(reply, "timed_out"));
	*err = (enum ibmc_err)0;
	return 0;
}

static int call(const char *server, const char *munge_socket, json_t *req,
		int timeout_ms, struct ibmc_group_reply *out,
		enum ibmc_err *err, char *detail, size_t dlen)
{
	json_t *reply = NULL;
	int ret;

	*err = IBMC_ERR_INTERNAL;
	if (!req) {
		snprintf(detail, dlen, "cannot build the request");
		return -EINVAL;
	}
	ret = ibmc__client_call(server, munge_socket, req, timeout_ms, &reply,
				detail, dlen);
	json_decref(req);
	if (ret)
		return ret;
	ret = ibmc__group_reply_decode(reply, out, err, detail, dlen);
	json_decref(reply);
	return ret;
}

int ibmc__prune(const char *server, const char *munge_socket, uint32_t job,
		unsigned group, const char *nodes, int timeout_ms,
		struct ibmc_group_reply *out, enum ibmc_err *err,
		char *detail, size_t dlen)
{
	return call(server, munge_socket,
		    ibmc__prune_request(job, group, nodes), timeout_ms, out,
		    err, detail, dlen);
}

int ibmc__grow(const char *server, const char *munge_socket, uint32_t job,
	       int expect, int timeout_ms, struct ibmc_group_reply *out,
	       enum ibmc_err *err, char *detail, size_t dlen)
{
	return call(server, munge_socket, ibmc__grow_request(job, expect),
		    timeout_ms, out, err, detail, dlen);
}

int ibmc__group_wait(const char *server, const char *munge_socket,
		     uint32_t job, unsigned group, int wait_ms, int timeout_ms,
		     struct ibmc_group_reply *out, enum ibmc_err *err,
		     char *detail, size_t dlen)
{
	return call(server, munge_socket,
		    ibmc__group_wait_request(job, group, wait_ms),
		    timeout_ms < 0 ? -1 : wait_ms + timeout_ms, out, err,
		    detail, dlen);
}
