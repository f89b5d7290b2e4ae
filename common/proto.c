/* SPDX-License-Identifier: BSD-3-Clause */
/* The control protocol's codec: strict decoding of request lines (every key
 * known, every number a JSON integer in range), op and error names, and the
 * helpers that build reply lines. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"

static const char *const op_names[] = {
	[IBMC_OP_RESERVE] = "reserve",
	[IBMC_OP_WAIT] = "wait",
	[IBMC_OP_RELEASE] = "release",
	[IBMC_OP_RENEW] = "renew",
	[IBMC_OP_STATUS] = "status",
	[IBMC_OP_PRUNE] = "prune",
	[IBMC_OP_GROW] = "grow",
};

static const char *const err_names[] = {
	[IBMC_ERR_BAD_REQUEST] = "bad_request",
	[IBMC_ERR_UNAUTHORIZED] = "unauthorized",
	[IBMC_ERR_UNKNOWN_JOB] = "unknown_job",
	[IBMC_ERR_UNKNOWN_NODE] = "unknown_node",
	[IBMC_ERR_NO_MLID] = "no_mlid",
	[IBMC_ERR_QUOTA] = "quota",
	[IBMC_ERR_BUSY] = "busy",
	[IBMC_ERR_INTERNAL] = "internal",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *ibmc__op_name(enum ibmc_op op)
{
	if ((size_t)op >= NELEM(op_names) || !op_names[op])
		return "unknown";
	return op_names[op];
}

int ibmc__op_from_name(const char *name)
{
	size_t i;

	for (i = 1; name && i < NELEM(op_names); i++)
		if (!strcmp(name, op_names[i]))
			return (int)i;
	return -EINVAL;
}

const char *ibmc__err_name(enum ibmc_err err)
{
	if ((size_t)err >= NELEM(err_names) || !err_names[err])
		return "internal";
	return err_names[err];
}

int ibmc__err_from_name(const char *name)
{
	size_t i;

	for (i = 1; name && i < NELEM(err_names); i++)
		if (!strcmp(name, err_names[i]))
			return (int)i;
	return -EINVAL;
}

/* Which keys each op accepts; "op" is always accepted. */
enum field {
	F_JOB = 1 << 0,
	F_UID = 1 << 1,
	F_NODES = 1 << 2,
	F_GROUPS = 1 << 3,
	F_LEASE = 1 << 4,
	F_TIMEOUT = 1 << 5,
	F_GROUP = 1 << 6,
};

struct op_fields {
	unsigned allowed, required;
};

static const struct op_fields op_fields[] = {
	[IBMC_OP_RESERVE] = { F_JOB | F_UID | F_NODES | F_GROUPS | F_LEASE,
			      F_JOB | F_NODES },
	[IBMC_OP_WAIT] = { F_JOB | F_GROUP | F_TIMEOUT, F_JOB },
	[IBMC_OP_RELEASE] = { F_JOB, F_JOB },
	[IBMC_OP_RENEW] = { F_JOB | F_LEASE, F_JOB },
	[IBMC_OP_STATUS] = { F_JOB, 0 },
	/* No "nodes" widens the group back to all the job's nodes. */
	[IBMC_OP_PRUNE] = { F_JOB | F_GROUP | F_NODES, F_JOB | F_GROUP },
	[IBMC_OP_GROW] = { F_JOB | F_GROUP, F_JOB },
};

struct int_field {
	const char *key;
	enum field f;
	int64_t min, max;
};

static const struct int_field int_fields[] = {
	{ "job", F_JOB, 1, IBMC_PROTO_MAX_JOB },
	/* (uid_t)-1 means "no uid" to the kernel, so it is never valid. */
	{ "uid", F_UID, 0, UINT32_MAX - 1 },
	{ "groups", F_GROUPS, 1, IBMC_PROTO_MAX_GROUPS },
	{ "lease_s", F_LEASE, 1, IBMC_PROTO_MAX_LEASE_S },
	{ "timeout_ms", F_TIMEOUT, 0, IBMC_PROTO_MAX_WAIT_MS },
	{ "group", F_GROUP, 0, IBMC_PROTO_MAX_GROUPS - 1 },
};

static int bad(enum ibmc_err *err, char *detail, size_t detail_len,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int bad(enum ibmc_err *err, char *detail, size_t detail_len,
	       const char *fmt, ...)
{
	va_list ap;

	if (err)
		*err = IBMC_ERR_BAD_REQUEST;
	if (detail && detail_len) {
		va_start(ap, fmt);
		vsnprintf(detail, detail_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static void request_init(struct ibmc_request *req)
{
	memset(req, 0, sizeof(*req));
	req->uid = -1;
	req->timeout_ms = -1;
	req->group = -1;
}

void ibmc__request_clear(struct ibmc_request *req)
{
	if (!req)
		return;
	free(req->nodes);
	request_init(req);
}

static void set_int(struct ibmc_request *req, enum field f, int64_t v)
{
	switch (f) {
	case F_JOB:
		req->job = (uint32_t)v;
		break;
	case F_UID:
		req->uid = v;
		break;
	case F_GROUPS:
		req->groups = (unsigned)v;
		break;
	case F_LEASE:
		req->lease_s = (unsigned)v;
		break;
	case F_TIMEOUT:
		req->timeout_ms = v;
		break;
	case F_GROUP:
		req->group = (int)v;
		break;
	default:
		break;
	}
}

static const char *field_key(enum field f)
{
	size_t i;

	if (f == F_NODES)
		return "nodes";
	for (i = 0; i < NELEM(int_fields); i++)
		if (int_fields[i].f == f)
			return int_fields[i].key;
	return "?";
}

/* Validate one key of an op's request; fills req. */
static int decode_key(const char *key, json_t *val, enum ibmc_op op,
		      unsigned *seen, struct ibmc_request *req,
		      enum ibmc_err *err, char *detail, size_t dlen)
{
	const struct op_fields *of = &op_fields[op];
	size_t i;

	if (!strcmp(key, "nodes")) {
		const char *s;
		size_t n;

		if (!(of->allowed & F_NODES))
			goto unknown;
		if (!json_is_string(val))
			return bad(err, detail, dlen,
				   "nodes: expected a hostlist string");
		s = json_string_value(val);
		n = json_string_length(val);
		if (!n || n > IBMC_PROTO_MAX_NODES_LEN || strlen(s) != n)
			return bad(err, detail, dlen,
				   "nodes: expected a hostlist string of "
				   "1..%d bytes", IBMC_PROTO_MAX_NODES_LEN);
		req->nodes = strdup(s);
		if (!req->nodes) {
			if (err)
				*err = IBMC_ERR_INTERNAL;
			snprintf(detail, dlen, "out of memory");
			return -ENOMEM;
		}
		*seen |= F_NODES;
		return 0;
	}
	for (i = 0; i < NELEM(int_fields); i++) {
		const struct int_field *f = &int_fields[i];
		json_int_t v;

		if (strcmp(key, f->key))
			continue;
		if (!(of->allowed & f->f))
			goto unknown;
		/* JSON integers only: 1.0, "1" and true are refused. */
		if (!json_is_integer(val))
			goto range;
		v = json_integer_value(val);
		if (v < f->min || v > f->max)
			goto range;
		set_int(req, f->f, v);
		*seen |= f->f;
		return 0;
range:
		return bad(err, detail, dlen,
			   "%s: expected an integer in %" PRId64 "..%" PRId64,
			   f->key, f->min, f->max);
	}
unknown:
	return bad(err, detail, dlen, "%s: unknown key for op %s", key,
		   ibmc__op_name(op));
}

int ibmc__request_from_json(const json_t *obj, struct ibmc_request *req,
			    enum ibmc_err *err, char *detail,
			    size_t detail_len)
{
	const struct op_fields *of;
	unsigned seen = 0, missing;
	const char *key, *name;
	json_t *val, *jop;
	int op, rc;

	request_init(req);
	if (!json_is_object(obj))
		return bad(err, detail, detail_len,
			   "request: expected a JSON object");
	jop = json_object_get(obj, "op");
	if (!jop)
		return bad(err, detail, detail_len, "op: missing");
	if (!json_is_string(jop))
		return bad(err, detail, detail_len,
			   "op: expected a string");
	name = json_string_value(jop);
	op = ibmc__op_from_name(name);
	if (op < 0)
		return bad(err, detail, detail_len,
			   "op: unknown operation \"%.32s\"", name);
	req->op = (enum ibmc_op)op;
	of = &op_fields[op];

	/* json_object_foreach wants a non-const object; it only reads. */
	json_object_foreach((json_t *)obj, key, val) {
		if (!strcmp(key, "op"))
			continue;
		rc = decode_key(key, val, req->op, &seen, req, err, detail,
				detail_len);
		if (rc) {
			ibmc__request_clear(req);
			return rc;
		}
	}
	missing = of->required & ~seen;
	if (missing) {
		enum field f = (enum field)(missing & -missing);

		ibmc__request_clear(req);
		return bad(err, detail, detail_len, "%s: missing for op %s",
			   field_key(f), ibmc__op_name((enum ibmc_op)op));
	}
	return 0;
}

int ibmc__request_parse(const char *line, size_t len,
			struct ibmc_request *req, enum ibmc_err *err,
			char *detail, size_t detail_len)
{
	json_error_t jerr;
	json_t *obj;
	int rc;

	request_init(req);
	/* A trailing newline (or CRLF) is not part of the request. */
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (!len)
		return bad(err, detail, detail_len, "request: empty line");
	if (len >= IBMC_PROTO_MAX_LINE)
		return bad(err, detail, detail_len,
			   "request: longer than %d bytes",
			   IBMC_PROTO_MAX_LINE);
	/* Scalars are let through the parser so that the check below can
	 * say what is wrong with them. "\u0000" stays refused: keys and
	 * values are compared as C strings. */
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
			 &jerr);
	if (!obj)
		return bad(err, detail, detail_len,
			   "request: invalid JSON at column %d: %s",
			   jerr.column, jerr.text);
	rc = ibmc__request_from_json(obj, req, err, detail, detail_len);
	json_decref(obj);
	return rc;
}

static int set_new(json_t *o, const char *key, json_t *v)
{
	return v ? json_object_set_new(o, key, v) : -1;
}

json_t *ibmc__request_to_json(const struct ibmc_request *req)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= set_new(o, "op", json_string(ibmc__op_name(req->op)));
	if (req->job)
		rc |= set_new(o, "job", json_integer(req->job));
	if (req->uid >= 0)
		rc |= set_new(o, "uid", json_integer(req->uid));
	if (req->nodes)
		rc |= set_new(o, "nodes", json_string(req->nodes));
	if (req->groups)
		rc |= set_new(o, "groups", json_integer(req->groups));
	if (req->lease_s)
		rc |= set_new(o, "lease_s", json_integer(req->lease_s));
	if (req->timeout_ms >= 0)
		rc |= set_new(o, "timeout_ms", json_integer(req->timeout_ms));
	if (req->group >= 0)
		rc |= set_new(o, "group", json_integer(req->group));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A detail may quote client bytes cut mid-character; jansson would refuse
 * to encode them, so anything not UTF-8 becomes '?'. */
static json_t *utf8_string(char *s)
{
	json_t *j = json_string(s);
	char *p;

	if (j)
		return j;
	for (p = s; *p; p++)
		if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
			*p = '?';
	return json_string(s);
}

json_t *ibmc__reply_error(enum ibmc_err err, const char *fmt, ...)
{
	char detail[512];
	json_t *o;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	o = json_object();
	if (!o)
		return NULL;
	if (set_new(o, "ok", json_false()) ||
	    set_new(o, "error", json_string(ibmc__err_name(err))) ||
	    set_new(o, "detail", utf8_string(detail))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

char *ibmc__json_line(const json_t *j)
{
	char *s, *line;
	size_t n;

	/* Compact output escapes control characters, so no raw newline can
	 * appear inside the line. */
	s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!s)
		return NULL;
	n = strlen(s);
	line = realloc(s, n + 2);
	if (!line) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	return line;
}
