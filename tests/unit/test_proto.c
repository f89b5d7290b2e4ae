/* SPDX-License-Identifier: BSD-3-Clause */
/* The request codec: a valid suite (decoded and re-encoded), an invalid
 * suite (each refused as bad_request naming the field), names, replies. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/proto.h"
#include "tests/tap.h"

/* A request line and its canonical encoding after decoding. */
static const struct {
	const char *line, *canon;
} valid[] = {
	{ "{\"op\":\"reserve\",\"job\":42,\"nodes\":\"node[1-16]\"}",
	  "{\"op\":\"reserve\",\"job\":42,\"nodes\":\"node[1-16]\"}" },
	{ "{\"nodes\":\"a,b\",\"op\":\"reserve\",\"job\":1,\"uid\":1000,"
	  "\"groups\":8,\"lease_s\":3600}",
	  "{\"op\":\"reserve\",\"job\":1,\"uid\":1000,\"nodes\":\"a,b\","
	  "\"groups\":8,\"lease_s\":3600}" },
	{ "{\"op\":\"reserve\",\"job\":4294967293,\"nodes\":\"n1\","
	  "\"uid\":0,\"groups\":1024,\"lease_s\":2592000}",
	  "{\"op\":\"reserve\",\"job\":4294967293,\"uid\":0,\"nodes\":\"n1\","
	  "\"groups\":1024,\"lease_s\":2592000}" },
	{ "{\"op\":\"reserve\",\"job\":2,\"nodes\":\"n1\","
	  "\"uid\":4294967294,\"groups\":1,\"lease_s\":1}",
	  "{\"op\":\"reserve\",\"job\":2,\"uid\":4294967294,\"nodes\":\"n1\","
	  "\"groups\":1,\"lease_s\":1}" },
	{ "{\"op\":\"wait\",\"job\":42}", "{\"op\":\"wait\",\"job\":42}" },
	{ "{\"op\":\"wait\",\"job\":42,\"timeout_ms\":0}",
	  "{\"op\":\"wait\",\"job\":42,\"timeout_ms\":0}" },
	{ " {\"op\":\"wait\", \"timeout_ms\":3600000, \"job\":7}\r\n",
	  "{\"op\":\"wait\",\"job\":7,\"timeout_ms\":3600000}" },
	{ "{\"op\":\"release\",\"job\":42}",
	  "{\"op\":\"release\",\"job\":42}" },
	{ "{\"op\":\"renew\",\"job\":42}", "{\"op\":\"renew\",\"job\":42}" },
	{ "{\"op\":\"renew\",\"job\":42,\"lease_s\":60}",
	  "{\"op\":\"renew\",\"job\":42,\"lease_s\":60}" },
	{ "{\"op\":\"status\"}", "{\"op\":\"status\"}" },
	{ "{\"op\":\"status\",\"job\":9}", "{\"op\":\"status\",\"job\":9}" },
	{ "{\"op\":\"wait\",\"group\":3,\"job\":42}",
	  "{\"op\":\"wait\",\"job\":42,\"group\":3}" },
	{ "{\"op\":\"prune\",\"job\":7,\"group\":0,\"nodes\":\"n[1-3]\"}",
	  "{\"op\":\"prune\",\"job\":7,\"nodes\":\"n[1-3]\",\"group\":0}" },
	/* No nodes: widen back to the whole job. */
	{ "{\"op\":\"prune\",\"job\":7,\"group\":1023}",
	  "{\"op\":\"prune\",\"job\":7,\"group\":1023}" },
	{ "{\"op\":\"grow\",\"job\":7}", "{\"op\":\"grow\",\"job\":7}" },
	{ "{\"op\":\"grow\",\"job\":7,\"group\":8}",
	  "{\"op\":\"grow\",\"job\":7,\"group\":8}" },
};

/* A bad line and the start of the detail, which names the field. */
static const struct {
	const char *line, *detail;
} invalid[] = {
	{ "", "request: empty line" },
	{ "\n", "request: empty line" },
	{ "{\"op\":", "request: invalid JSON" },
	{ "{\"op\":\"status\"} x", "request: invalid JSON" },
	{ "[1,2]", "request: expected a JSON object" },
	{ "\"status\"", "request: expected a JSON object" },
	{ "42", "request: expected a JSON object" },
	{ "null", "request: expected a JSON object" },
	{ "{\"op\":\"status\",\"op\":\"wait\"}", "request: invalid JSON" },
	{ "{}", "op: missing" },
	{ "{\"job\":1}", "op: missing" },
	{ "{\"op\":1}", "op: expected a string" },
	{ "{\"op\":null}", "op: expected a string" },
	{ "{\"op\":\"shrink\",\"job\":1}", "op: unknown operation \"shrink\"" },
	{ "{\"op\":\"STATUS\"}", "op: unknown operation" },
	{ "{\"op\":\"status\",\"verbose\":true}",
	  "verbose: unknown key for op status" },
	/* reserve */
	{ "{\"op\":\"reserve\",\"nodes\":\"n1\"}", "job: missing" },
	{ "{\"op\":\"reserve\",\"job\":1}", "nodes: missing" },
	{ "{\"op\":\"reserve\",\"job\":0,\"nodes\":\"n1\"}",
	  "job: expected an integer in 1..4294967293" },
	{ "{\"op\":\"reserve\",\"job\":4294967294,\"nodes\":\"n1\"}",
	  "job: expected an integer in 1..4294967293" },
	{ "{\"op\":\"reserve\",\"job\":-1,\"nodes\":\"n1\"}", "job:" },
	{ "{\"op\":\"reserve\",\"job\":1.0,\"nodes\":\"n1\"}", "job:" },
	{ "{\"op\":\"reserve\",\"job\":\"1\",\"nodes\":\"n1\"}", "job:" },
	{ "{\"op\":\"reserve\",\"job\":true,\"nodes\":\"n1\"}", "job:" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":5}",
	  "nodes: expected a hostlist string" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"\"}", "nodes:" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":[\"n1\"]}", "nodes:" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n\\u0000x\"}",
	  "request: invalid JSON" },
	{ "{\"op\":\"status\\u0000x\"}", "request: invalid JSON" },
	{ "{\"op\":\"status\",\"job\\u0000x\":1}",
	  "request: invalid JSON" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\",\"uid\":-1}",
	  "uid: expected an integer in 0..4294967294" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\",\"uid\":4294967295}",
	  "uid:" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\",\"uid\":\"root\"}",
	  "uid:" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\",\"groups\":0}",
	  "groups: expected an integer in 1..1024" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\",\"groups\":1025}",
	  "groups:" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\",\"groups\":8.5}",
	  "groups:" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\",\"lease_s\":0}",
	  "lease_s: expected an integer in 1..2592000" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\","
	  "\"lease_s\":2592001}", "lease_s:" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\","
	  "\"lease_s\":null}", "lease_s:" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\","
	  "\"timeout_ms\":5}", "timeout_ms: unknown key for op reserve" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\","
	  "\"job\":2}", "request: invalid JSON" },
	{ "{\"op\":\"reserve\",\"job\":99999999999999999999999,"
	  "\"nodes\":\"n1\"}", "request: invalid JSON" },
	/* wait */
	{ "{\"op\":\"wait\"}", "job: missing for op wait" },
	{ "{\"op\":\"wait\",\"job\":1,\"timeout_ms\":-1}",
	  "timeout_ms: expected an integer in 0..3600000" },
	{ "{\"op\":\"wait\",\"job\":1,\"timeout_ms\":3600001}",
	  "timeout_ms:" },
	{ "{\"op\":\"wait\",\"job\":1,\"timeout_ms\":1e3}", "timeout_ms:" },
	{ "{\"op\":\"wait\",\"job\":1,\"timeout_ms\":\"10\"}",
	  "timeout_ms:" },
	{ "{\"op\":\"wait\",\"job\":1,\"nodes\":\"n1\"}",
	  "nodes: unknown key for op wait" },
	{ "{\"op\":\"wait\",\"job\":1,\"lease_s\":5}",
	  "lease_s: unknown key for op wait" },
	/* release */
	{ "{\"op\":\"release\"}", "job: missing for op release" },
	{ "{\"op\":\"release\",\"job\":{}}", "job:" },
	{ "{\"op\":\"release\",\"job\":1,\"groups\":2}",
	  "groups: unknown key for op release" },
	/* renew */
	{ "{\"op\":\"renew\"}", "job: missing for op renew" },
	{ "{\"op\":\"renew\",\"job\":1,\"lease_s\":-5}", "lease_s:" },
	{ "{\"op\":\"renew\",\"job\":1,\"uid\":5}",
	  "uid: unknown key for op renew" },
	{ "{\"op\":\"wait\",\"job\":1,\"group\":-1}",
	  "group: expected an integer in 0..1023" },
	/* prune */
	{ "{\"op\":\"prune\",\"group\":0}", "job: missing for op prune" },
	{ "{\"op\":\"prune\",\"job\":1}", "group: missing for op prune" },
	{ "{\"op\":\"prune\",\"job\":1,\"group\":1024}",
	  "group: expected an integer in 0..1023" },
	{ "{\"op\":\"prune\",\"job\":1,\"group\":\"0\"}", "group:" },
	{ "{\"op\":\"prune\",\"job\":1,\"group\":0,\"nodes\":\"\"}",
	  "nodes:" },
	{ "{\"op\":\"prune\",\"job\":1,\"group\":0,\"nodes\":[]}",
	  "nodes: expected a hostlist string" },
	{ "{\"op\":\"prune\",\"job\":1,\"group\":0,\"groups\":2}",
	  "groups: unknown key for op prune" },
	/* grow */
	{ "{\"op\":\"grow\"}", "job: missing for op grow" },
	{ "{\"op\":\"grow\",\"job\":1,\"group\":1.5}", "group:" },
	{ "{\"op\":\"grow\",\"job\":1,\"nodes\":\"n1\"}",
	  "nodes: unknown key for op grow" },
	{ "{\"op\":\"grow\",\"job\":1,\"groups\":2}",
	  "groups: unknown key for op grow" },
	/* the others carry no group */
	{ "{\"op\":\"release\",\"job\":1,\"group\":0}",
	  "group: unknown key for op release" },
	{ "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"n1\",\"group\":0}",
	  "group: unknown key for op reserve" },
	/* status */
	{ "{\"op\":\"status\",\"job\":0}", "job:" },
	{ "{\"op\":\"status\",\"job\":\"all\"}", "job:" },
	{ "{\"op\":\"status\",\"munge\":\"MUNGE:...\"}",
	  "munge: unknown key for op status" },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Test names must stay on one TAP line. */
static const char *shown(const char *s)
{
	static char buf[160];
	size_t i = 0;

	for (; *s && i < sizeof(buf) - 4; s++) {
		if (*s == '\n' || *s == '\r') {
			buf[i++] = '\\';
			buf[i++] = *s == '\n' ? 'n' : 'r';
		} else {
			buf[i++] = *s;
		}
	}
	buf[i] = '\0';
	return buf;
}

static void check_valid(const char *line, const char *canon)
{
	struct ibmc_request req;
	enum ibmc_err err = 0;
	char detail[256] = "", *got = NULL;
	json_t *j;
	int rc;

	rc = ibmc__request_parse(line, strlen(line), &req, &err, detail,
				 sizeof(detail));
	if (!rc) {
		j = ibmc__request_to_json(&req);
		got = j ? ibmc__json_line(j) : NULL;
		json_decref(j);
		if (got)
			got[strlen(got) - 1] = '\0';
	} else {
		tap_diag("refused: %s", detail);
	}
	tap_is_str(got, canon, "valid: %s", shown(line));
	free(got);
	ibmc__request_clear(&req);
}

static void check_invalid(const char *line, const char *detail_start)
{
	struct ibmc_request req;
	enum ibmc_err err = 0;
	char detail[256] = "";
	int rc;

	rc = ibmc__request_parse(line, strlen(line), &req, &err, detail,
				 sizeof(detail));
	if (!tap_ok(rc == -EINVAL && err == IBMC_ERR_BAD_REQUEST &&
		    !strncmp(detail, detail_start, strlen(detail_start)),
		    "invalid: %s", shown(line)))
		tap_diag("  rc %d err %d detail \"%s\", want \"%s...\"", rc,
			 err, detail, detail_start);
	tap_ok(!req.nodes, "... leaves nothing allocated");
	ibmc__request_clear(&req);
}

static void check_fields(void)
{
	const char *l = "{\"op\":\"wait\",\"job\":5}";
	struct ibmc_request req;
	enum ibmc_err err;
	char detail[128];
	int rc;

	rc = ibmc__request_parse(l, strlen(l), &req, &err, detail,
				 sizeof(detail));
	tap_ok(!rc && req.op == IBMC_OP_WAIT && req.job == 5 &&
	       req.uid == -1 && !req.nodes && !req.groups && !req.lease_s &&
	       req.timeout_ms == -1 && req.group == -1,
	       "absent fields hold their absent values");
	ibmc__request_clear(&req);

	l = "{\"op\":\"reserve\",\"job\":3,\"nodes\":\"n[1-2]\",\"uid\":7,"
	    "\"groups\":4,\"lease_s\":9}";
	rc = ibmc__request_parse(l, strlen(l), &req, &err, detail,
				 sizeof(detail));
	tap_ok(!rc && req.op == IBMC_OP_RESERVE && req.job == 3 &&
	       req.uid == 7 && req.nodes && !strcmp(req.nodes, "n[1-2]") &&
	       req.groups == 4 && req.lease_s == 9, "reserve fields decoded");
	ibmc__request_clear(&req);
	tap_ok(!req.nodes && req.uid == -1, "clear frees and resets");

	l = "{\"op\":\"prune\",\"job\":3,\"group\":0,\"nodes\":\"n2\"}";
	rc = ibmc__request_parse(l, strlen(l), &req, &err, detail,
				 sizeof(detail));
	tap_ok(!rc && req.op == IBMC_OP_PRUNE && req.job == 3 &&
	       req.group == 0 && req.nodes && !strcmp(req.nodes, "n2"),
	       "prune fields decoded (group 0 is a group, not absent)");
	ibmc__request_clear(&req);
	tap_ok(req.group == -1, "clear resets group to absent");

	l = "{\"op\":\"grow\",\"job\":3,\"group\":9}";
	rc = ibmc__request_parse(l, strlen(l), &req, &err, detail,
				 sizeof(detail));
	tap_ok(!rc && req.op == IBMC_OP_GROW && req.job == 3 &&
	       req.group == 9 && !req.nodes, "grow fields decoded");
	ibmc__request_clear(&req);

	/* Length given explicitly: bytes after it are not part of it. */
	l = "{\"op\":\"status\"}garbage";
	rc = ibmc__request_parse(l, 15, &req, &err, detail, sizeof(detail));
	tap_is_int(rc, 0, "parse honours len");
	ibmc__request_clear(&req);
}

static void check_big_nodes(void)
{
	size_t n = IBMC_PROTO_MAX_NODES_LEN + 1;
	char *line = malloc(n + 64), detail[128];
	struct ibmc_request req;
	enum ibmc_err err;
	int rc, off;

	off = sprintf(line, "{\"op\":\"reserve\",\"job\":1,\"nodes\":\"");
	memset(line + off, 'a', n);
	strcpy(line + off + n, "\"}");
	rc = ibmc__request_parse(line, strlen(line), &req, &err, detail,
				 sizeof(detail));
	tap_ok(rc == -EINVAL && !strncmp(detail, "nodes:", 6),
	       "nodes longer than %d bytes refused", IBMC_PROTO_MAX_NODES_LEN);
	ibmc__request_clear(&req);

	memset(line + off, 'a', n - 1);
	strcpy(line + off + n - 1, "\"}");
	rc = ibmc__request_parse(line, strlen(line), &req, &err, detail,
				 sizeof(detail));
	tap_is_int(rc, 0, "nodes of exactly %d bytes accepted",
		   IBMC_PROTO_MAX_NODES_LEN);
	ibmc__request_clear(&req);
	free(line);
}

static void check_names(void)
{
	static const char *const errs[] = {
		"bad_request", "unauthorized", "unknown_job", "unknown_node",
		"no_mlid", "quota", "busy", "internal",
	};
	static const char *const ops[] = {
		"reserve", "wait", "release", "renew", "status", "prune",
		"grow",
	};
	int i, all = 1;

	for (i = 0; i < 8; i++) {
		all &= !strcmp(ibmc__err_name((enum ibmc_err)(i + 1)),
			       errs[i]);
		all &= ibmc__err_from_name(errs[i]) == i + 1;
	}
	tap_ok(all, "error names and codes round trip");
	tap_is_int(ibmc__err_from_name("nope"), -EINVAL, "unknown error name");
	all = 1;
	for (i = 0; i < 7; i++) {
		all &= !strcmp(ibmc__op_name((enum ibmc_op)(i + 1)), ops[i]);
		all &= ibmc__op_from_name(ops[i]) == i + 1;
	}
	tap_ok(all, "op names round trip");
	tap_is_int(ibmc__op_from_name("shrink"), -EINVAL, "unknown op name");
	tap_is_int(ibmc__op_from_name(NULL), -EINVAL, "NULL op name");
}

static void check_replies(void)
{
	json_t *e;
	char *line;

	e = ibmc__reply_error(IBMC_ERR_UNKNOWN_JOB, "job %d: not reserved",
			      42);
	line = ibmc__json_line(e);
	tap_is_str(line,
		   "{\"ok\":false,\"error\":\"unknown_job\","
		   "\"detail\":\"job 42: not reserved\"}\n",
		   "reply_error line");
	free(line);
	json_decref(e);

	e = ibmc__reply_error(IBMC_ERR_BAD_REQUEST, "op: \"%s\"",
			      "a\xe9\nb");
	line = ibmc__json_line(e);
	tap_ok(line && strchr(line, '\n') == line + strlen(line) - 1,
	       "non-UTF-8 detail still encodes, on one line");
	free(line);
	json_decref(e);

	e = json_pack("{s:s}", "x", "two\nlines");
	line = ibmc__json_line(e);
	tap_is_str(line, "{\"x\":\"two\\nlines\"}\n",
		   "newlines inside strings are escaped");
	free(line);
	json_decref(e);
}

int main(void)
{
	size_t i;

	tap_plan((int)(NELEM(valid) + 2 * NELEM(invalid)) + 7 + 2 + 5 + 3);
	for (i = 0; i < NELEM(valid); i++)
		check_valid(valid[i].line, valid[i].canon);
	for (i = 0; i < NELEM(invalid); i++)
		check_invalid(invalid[i].line, invalid[i].detail);
	check_fields();
	check_big_nodes();
	check_names();
	check_replies();
	return tap_done();
}
