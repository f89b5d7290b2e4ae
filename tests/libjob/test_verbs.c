/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs transport. Without an HCA (as on the build machines) it checks
 * what needs none: the ops table, that opening fails cleanly with a clear
 * error (directly and through ibmc_init), and skips the rest saying why.
 * With an HCA: two QPs on one port exchange datagrams, time out, refuse
 * oversize sends, and attach, multicast to and detach a group.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "common/log.h"
#include "ibmcast/ibmcast.h"
#include "libjob/transport.h"
#include "tests/tap.h"

static char logged[1024];

static void sink(int level, const char *msg, void *arg)
{
	(void)level;
	(void)arg;
	snprintf(logged, sizeof(logged), "%s", msg);
}

static int one_rank_allgather(void *arg, const void *in, void *out,
			      size_t len)
{
	(void)arg;
	memcpy(out, in, len);
	return 0;
}

static void without_hardware(const struct ibmc_tr_ops *ops)
{
	struct ibmc_tr_config cfg = { .node = "node1", .qkey = 0x1bca0001 };
	ibmc_bootstrap_t bs = { .rank = 0, .size = 1,
				.allgather = one_rank_allgather };
	ibmc_context_t *ctx = NULL;
	struct ibmc_tr *tr = NULL;
	int rc;

	logged[0] = '\0';
	rc = ops->open(&cfg, &tr);
	tap_is_int(rc, -ENODEV, "open without a device: -ENODEV");
	tap_ok(tr == NULL, "  ... and no transport");
	tap_ok(strstr(logged, "no RDMA device") != NULL,
	       "  ... saying why: '%s'", logged);
	cfg.device = "nosuch_hca0";
	logged[0] = '\0';
	rc = ops->open(&cfg, &tr);
	tap_ok(rc == -ENODEV && strstr(logged, "no RDMA device"),
	       "open of a named device that does not exist: %d, '%s'", rc,
	       logged);

	setenv("IBMCAST_TRANSPORT", "verbs", 1);
	unsetenv("IBMCAST_SIM_DATAPLANE");
	setenv("IBMCAST_NODE", "node1", 1);
	logged[0] = '\0';
	rc = ibmc_init(&bs, &ctx);
	tap_ok(rc < 0 && ctx == NULL,
	       "ibmc_init over verbs without a device fails cleanly: %s",
	       ibmc_strerror(rc));
	tap_ok(logged[0] != '\0', "  ... with a message: '%s'", logged);
}

static int recv_one(const struct ibmc_tr_ops *ops, struct ibmc_tr *tr,
		    struct ibmc_tr_pkt *pkt)
{
	return ops->recv(tr, pkt, 5000);
}

static void with_hardware(const struct ibmc_tr_ops *ops)
{
	struct ibmc_tr_config cfg = { .node = "node1", .qkey = 0x1bca0001 };
	struct ibmc_tr_group g = { .mlid = 0xc3ff, .qkey = 0x1bca0001,
				   .pkey = 0xffff, .mtu = 2048 };
	struct ibmc_tr *a = NULL, *b = NULL;
	struct ibmc_tr_addr aa, ba;
	struct ibmc_tr_pkt pkt;
	static char big[8192];
	struct iovec iov[2];
	int pa, pb, ga, rc;
	size_t mtu;

	tap_is_int(ops->open(&cfg, &a), 0, "open a QP");
	tap_is_int(ops->open(&cfg, &b), 0, "open a second QP");
	if (!a || !b) {
		ops->close(a);
		ops->close(b);
		return;
	}
	mtu = ops->mtu(a);
	tap_ok(mtu >= 256 && mtu <= 4096, "MTU from the port: %zu", mtu);
	ops->local_addr(a, &aa);
	ops->local_addr(b, &ba);
	pb = ops->peer_add(a, &ba);
	pa = ops->peer_add(b, &aa);
	tap_ok(pa >= 0 && pb >= 0, "address handles for both");
	tap_is_int(ops->peer_add(a, &ba), pb, "a peer added twice: one AH");

	iov[0].iov_base = (void *)"hello, ";
	iov[0].iov_len = 7;
	iov[1].iov_base = (void *)"verbs";
	iov[1].iov_len = 6;
	tap_is_int(ops->send(a, pb, iov, 2), 0, "send a -> b");
	rc = recv_one(ops, b, &pkt);
	tap_ok(rc == 0 && pkt.len == 13 && !memcmp(pkt.data, "hello, verbs", 13)
	       && !pkt.is_mcast, "b receives it (rc %d)", rc);
	memset(big, 'x', sizeof(big));
	iov[0].iov_base = big;
	iov[0].iov_len = mtu;
	tap_is_int(ops->send(b, pa, iov, 1), 0, "send one MTU b -> a");
	rc = recv_one(ops, a, &pkt);
	tap_ok(rc == 0 && pkt.len == mtu, "a receives %zu bytes", pkt.len);
	iov[0].iov_len = mtu + 1;
	tap_is_int(ops->send(b, pa, iov, 1), -EMSGSIZE, "MTU + 1: -EMSGSIZE");
	tap_is_int(ops->recv(a, &pkt, 50), -ETIMEDOUT,
		   "nothing more: -ETIMEDOUT after the timeout");
	tap_is_int(ops->recv(a, &pkt, 0), -ETIMEDOUT, "poll: -ETIMEDOUT");

	memcpy(g.mgid, "\xff\x12\x1b\xca\xff\xff\x00\x00\x00\x00\x0b\xad"
		       "\x00\x00\x00\x00", 16);
	ga = ops->mcast_attach(a, &g);
	tap_ok(ga >= 0, "attach to a group (local, no SA join): %d", ga);
	iov[0].iov_len = 100;
	tap_is_int(ops->mcast_send(a, ga, iov, 1), 0, "multicast send");
	tap_is_int(ops->mcast_detach(a, ga), 0, "detach");
	tap_is_int(ops->mcast_detach(a, ga), -EINVAL, "detach twice: -EINVAL");
	ops->close(b);
	ops->close(a);
}

int main(void)
{
	const struct ibmc_tr_ops *ops = ibmc__tr_find("verbs");
	struct ibv_device **list;
	int n = 0;

	ibmc__log_set_sink(sink, NULL);
	tap_ok(ops == &ibmc__tr_verbs_ops, "ibmc__tr_find(\"verbs\")");
	tap_ok(ops && ops->open && ops->close && ops->local_addr && ops->mtu &&
	       ops->peer_add && ops->send && ops->mcast_supported &&
	       ops->mcast_attach && ops->mcast_detach && ops->mcast_send &&
	       ops->recv, "every operation is there");
	if (!ops)
		return tap_done();
	tap_is_int(ops->mcast_supported(NULL), 0, "it can multicast");

	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	if (n == 0) {
		without_hardware(ops);
		/* one skipped result, so the summary shows the reason */
		printf("ok %d # SKIP hardware checks (two QPs, unicast, "
		       "multicast attach/send/detach): ibv_get_device_list "
		       "finds no RDMA device on this machine\n", ++tap__n);
	} else {
		tap_diag("%d RDMA device(s): running the hardware checks", n);
		with_hardware(ops);
	}
	tap_plan(tap__n);
	return tap_done();
}
