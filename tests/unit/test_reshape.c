/* SPDX-License-Identifier: BSD-3-Clause */
/* The client side of prune, grow and a group's wait: the requests are what
 * the server's decoder accepts, replies decode into the group's address,
 * refusals into -errno, and the calls go over a real socket. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/mgid.h"
#include "common/net.h"
#include "common/reshape.h"
#include "tests/tap.h"

/* The request's line, as a client sends it. */
static char *line_of(json_t *req)
{
	char *l = req ? ibmc__json_line(req) : NULL;

	json_decref(req);
	return l;
}

/* The line parses back (as the server would) into the fields given. */
static void check_request(json_t *req, const char *want, enum ibmc_op op,
			  int group, const char *nodes, const char *what)
{
	char *l = line_of(req), detail[128];
	struct ibmc_request r;
	enum ibmc_err err;
	int rc;

	tap_is_str(l, want, "%s: the request line", what);
	rc = l ? ibmc__request_parse(l, strlen(l), &r, &err, detail,
				     sizeof(detail))
	       : -EINVAL;
	tap_ok(!rc && r.op == op && r.job == 42 && r.group == group &&
		       !r.nodes == !nodes &&
		       (!nodes || !strcmp(r.nodes, nodes)),
	       "%s: the server's decoder takes it as meant", what);
	ibmc__request_clear(&r);
	free(l);
}

static void test_requests(void)
{
	check_request(ibmc__prune_request(42, 3, "n[1-4]"),
		      "{\"op\":\"prune\",\"job\":42,\"nodes\":\"n[1-4]\","
		      "\"group\":3}\n", IBMC_OP_PRUNE, 3, "n[1-4]", "prune");
	check_request(ibmc__prune_request(42, 0, NULL),
		      "{\"op\":\"prune\",\"job\":42,\"group\":0}\n",
		      IBMC_OP_PRUNE, 0, NULL, "widen");
	check_request(ibmc__grow_request(42, 8),
		      "{\"op\":\"grow\",\"job\":42,\"group\":8}\n",
		      IBMC_OP_GROW, 8, NULL, "grow with its index");
	check_request(ibmc__grow_request(42, -1),
		      "{\"op\":\"grow\",\"job\":42}\n", IBMC_OP_GROW, -1,
		      NULL, "grow without");
	check_request(ibmc__group_wait_request(42, 2, 500),
		      "{\"op\":\"wait\",\"job\":42,\"timeout_ms\":500,"
		      "\"group\":2}\n", IBMC_OP_WAIT, 2, NULL, "group wait");
	tap_ok(!ibmc__prune_request(42, IBMC_PROTO_MAX_GROUPS, NULL),
	       "a group past the protocol's range builds no request");
	tap_ok(!ibmc__group_wait_request(42, 0, -1),
	       "a negative wait builds no request");
}

/* A reply as the plugin writes it (docs/protocol.md). */
static const char *const grow_reply =
	"{\"ok\":true,\"created\":true,\"group\":{\"index\":8,"
	"\"mgid\":\"ff12:1bca:ffff:0000:0000:002a:0000:0008\","
	"\"mlid\":\"0xc009\",\"mtu\":4,\"rate\":7,\"state\":\"building\","
	"\"members\":16,\"switches\":0,\"grown\":true},"
	"\"job\":{\"job\":42,\"state\":\"building\",\"qkey\":\"0x1bca002a\","
	"\"pkey\":\"0xffff\",\"groups\":[]}}";

static int decode(const char *text, struct ibmc_group_reply *out,
		  enum ibmc_err *err, char *detail, size_t dlen)
{
	json_t *j = json_loads(text, 0, NULL);
	int rc = ibmc__group_reply_decode(j, out, err, detail, dlen);

	json_decref(j);
	return rc;
}

static void test_decode(void)
{
	struct ibmc_group_reply g;
	uint8_t want[16];
	enum ibmc_err err;
	char detail[256];
	int rc;

	rc = decode(grow_reply, &g, &err, detail, sizeof(detail));
	ibmc__mgid_derive(42, 8, 0xffff, want);
	tap_ok(!rc && g.index == 8 && !memcmp(g.group.mgid, want, 16) &&
		       g.group.mlid == 0xc009 && g.group.qkey == 0x1bca002a &&
		       g.group.pkey == 0xffff && g.group.mtu == 2048 &&
		       g.members == 16 && !g.ready && g.changed &&
		       !g.timed_out,
	       "a grow reply gives the new group's address, building, "
	       "created");

	rc = decode("{\"ok\":true,\"changed\":false,\"group\":{\"index\":0,"
		    "\"mgid\":\"ff12:1bca:ffff::2a:0:0\",\"mlid\":\"0xc001\","
		    "\"mtu\":5,\"state\":\"ready\",\"members\":3,"
		    "\"nodes\":\"n[1-3]\"},\"job\":{\"qkey\":\"0x1bca002a\","
		    "\"pkey\":\"0x7fff\"}}",
		    &g, &err, detail, sizeof(detail));
	tap_ok(!rc && g.index == 0 && g.ready && !g.changed &&
		       g.members == 3 && g.group.mtu == 4096 &&
		       g.group.pkey == 0x7fff,
	       "a repeated prune: ready, unchanged");

	rc = decode("{\"ok\":false,\"error\":\"quota\",\"detail\":\"job 42 "
		    "already holds 64 groups\"}",
		    &g, &err, detail, sizeof(detail));
	tap_ok(rc == -EDQUOT && err == IBMC_ERR_QUOTA &&
		       !strcmp(detail, "quota: job 42 already holds 64 groups"),
	       "quota: -EDQUOT with the server's detail");
	rc = decode("{\"ok\":false,\"error\":\"unauthorized\"}", &g, &err,
		    detail, sizeof(detail));
	tap_ok(rc == -EACCES && err == IBMC_ERR_UNAUTHORIZED,
	       "unauthorized: -EACCES");
	rc = decode("{\"ok\":false,\"error\":\"no_mlid\",\"detail\":\"x\"}",
		    &g, &err, detail, sizeof(detail));
	tap_is_int(rc, -ENOSPC, "no_mlid: -ENOSPC");
	rc = decode("{\"ok\":false,\"error\":\"unknown_node\",\"detail\":"
		    "\"x\"}", &g, &err, detail, sizeof(detail));
	tap_is_int(rc, -ENXIO, "unknown_node: -ENXIO");
	rc = decode("{\"ok\":true,\"timed_out\":false,\"job\":{\"job\":42,"
		    "\"state\":\"released\"}}", &g, &err, detail,
		    sizeof(detail));
	tap_ok(rc == -ENOENT && err == IBMC_ERR_UNKNOWN_JOB,
	       "a wait on a job released meanwhile: -ENOENT");

	rc = decode("{\"ok\":false,\"error\":\"nonsense\"}", &g, &err, detail,
		    sizeof(detail));
	tap_is_int(rc, -EPROTO, "an unknown error code: -EPROTO");
	rc = decode("{\"ok\":true,\"group\":{\"index\":1}}", &g, &err, detail,
		    sizeof(detail));
	tap_is_int(rc, -EPROTO, "a group without its address: -EPROTO");
	rc = decode("{\"ok\":true,\"group\":{\"index\":1,\"mgid\":\"fe80::1\","
		    "\"mlid\":\"0xc001\",\"mtu\":4,\"state\":\"ready\","
		    "\"members\":2},\"job\":{\"qkey\":\"0x1\","
		    "\"pkey\":\"0xffff\"}}",
		    &g, &err, detail, sizeof(detail));
	tap_is_int(rc, -EPROTO, "a unicast GID is no group: -EPROTO");
	rc = decode("[1]", &g, &err, detail, sizeof(detail));
	tap_is_int(rc, -EPROTO, "not an object: -EPROTO");
}

/* One connection: read the request line, keep it, answer with reply. */
struct peer {
	int lfd;
	const char *reply;
	char *got;
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	int fd, i;

	for (i = 0; (fd = accept(p->lfd, NULL, NULL)) < 0 && i < 300; i++)
		usleep(10000);
	if (fd < 0)
		return NULL;
	if (!ibmc__read_line(fd, IBMC_PROTO_MAX_LINE, 3000, &p->got))
		ibmc__write_all(fd, p->reply, strlen(p->reply), 1000);
	close(fd);
	return NULL;
}

static void test_call(void)
{
	char dir[] = "/tmp/ibmcast-reshape.XXXXXX", spec[300], detail[256];
	struct peer p = { .reply = NULL };
	struct ibmc_group_reply g;
	struct ibmc_addr a;
	enum ibmc_err err;
	char reply[1024];
	pthread_t th;
	int rc;

	if (!mkdtemp(dir)) {
		tap_ok(0, "mkdtemp: %s", strerror(errno));
		tap_ok(0, "(skipped)");
		tap_ok(0, "(skipped)");
		return;
	}
	snprintf(spec, sizeof(spec), "unix:%s/ctl.sock", dir);
	snprintf(reply, sizeof(reply), "%s\n", grow_reply);
	p.reply = reply;
	ibmc__addr_parse(spec, &a);
	p.lfd = ibmc__listen(&a, 4);
	pthread_create(&th, NULL, peer_main, &p);
	rc = ibmc__grow(spec, NULL, 42, 8, 3000, &g, &err, detail,
			sizeof(detail));
	pthread_join(th, NULL);
	if (!tap_ok(!rc && g.index == 8 && g.group.mlid == 0xc009,
		    "ibmc__grow over a Unix socket decodes the reply"))
		tap_diag("  %d: %s", rc, detail);
	tap_is_str(p.got, "{\"op\":\"grow\",\"job\":42,\"group\":8}",
		   "... the server got the grow request");
	free(p.got);
	close(p.lfd);
	snprintf(spec, sizeof(spec), "%s/ctl.sock", dir);
	unlink(spec);

	snprintf(spec, sizeof(spec), "unix:%s/none.sock", dir);
	rc = ibmc__prune(spec, NULL, 42, 0, NULL, 1000, &g, &err, detail,
			 sizeof(detail));
	tap_ok(rc == -ECONNREFUSED || rc == -ENOENT,
	       "no server: the transport's error (%d)", rc);
	rmdir(dir);
}

int main(void)
{
	tap_plan(5 * 2 + 2 + 11 + 3);
	test_requests();
	test_decode();
	test_call();
	return tap_done();
}
