/* SPDX-License-Identifier: BSD-3-Clause */
/* dp_tool: an endpoint of the simulated data plane for the shell tests:
 * receive (optionally attached to a group), send unicast or multicast,
 * join/leave through the SA proxy, and throw malformed messages at the
 * daemon. One line of output per event, for grep and awk. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sim-fabric/dp_client.h"

static const char *sock_path, *node = "node1", *text = "hello";
static uint32_t qkey, dqpn;
static uint16_t mlid, dlid;
static uint8_t mgid[16];
static bool have_mgid;
static long count = 1, timeout_ms = 5000, size = -1, join_state = 1;
static long interval_us;      /* send: pause between packets */
static const char *until_file; /* send: stop once this file exists */
static bool control_between;   /* recv: a control request before printing */
static long stall_ms;          /* recv: read nothing for this long first */

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "dp_tool: %s: %s\n", what, strerror(-err));
	exit(1);
}

static int parse_gid(const char *s, uint8_t g[16])
{
	int i, k = 0;
	unsigned v;

	/* 32 hex digits, colons anywhere ignored */
	for (i = 0; s[i] && k < 32; i++) {
		if (s[i] == ':')
			continue;
		if (sscanf(s + i, "%1x", &v) != 1)
			return -1;
		if (k % 2 == 0)
			g[k / 2] = (uint8_t)(v << 4);
		else
			g[k / 2] |= (uint8_t)v;
		k++;
	}
	return k == 32 && !s[i] ? 0 : -1;
}

static struct ibmc_dp *open_ep(void)
{
	struct ibmc_dp *dp;
	int ret = ibmc__dp_open(sock_path, node, qkey, &dp);

	if (ret)
		die("open", ret);
	return dp;
}

static int cmd_recv(void)
{
	struct ibmc_dp *dp = open_ep();
	const struct ibmc_dp_hello_ok *me = ibmc__dp_self(dp);
	struct ibmc_dp_recv h;
	struct timespec t0;
	const void *data;
	size_t len;
	long got = 0;
	int ret;

	if (have_mgid && (ret = ibmc__dp_attach(dp, mgid, mlid)))
		die("attach", ret);
	printf("ready lid %u qpn %u mtu %u\n", me->lid, me->qpn, me->mtu);
	fflush(stdout);
	/* An endpoint that does not read: what it is sent piles up in the
	 * daemon (its receive queue and the packet lifetime). */
	if (stall_ms > 0)
		usleep((useconds_t)(stall_ms * 1000));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (count <= 0 || got < count) {
		ret = ibmc__dp_recv(dp, &h, &data, &len, (int)timeout_ms);
		if (ret == -ETIMEDOUT)
			break;
		if (ret)
			die("recv", ret);
		got++;
		/* The view of a datagram lasts until the next recv, whatever
		 * control requests come between (libjob acts on a grant with
		 * a detach and an SA leave before it reads on): a detach of a
		 * group this endpoint never attached, refused or not. */
		if (control_between) {
			static const uint8_t none[16] = { 0xff, 0x12 };

			ibmc__dp_detach(dp, none, 0xc000);
		}
		printf("recv at %ld slid %u sqpn %u dlid %u mcast %u len %zu "
		       "%.*s\n", ms_since(&t0), h.slid, h.sqpn, h.dlid,
		       h.is_mcast, len,
		       (int)(len < 64 ? len : 64), (const char *)data);
		fflush(stdout);
	}
	printf("got %ld\n", got);
	ibmc__dp_close(dp);
	return 0;
}

static int cmd_send(bool mc)
{
	struct ibmc_dp *dp = open_ep();
	static char buf[IBMC_DP_MAX_PAYLOAD + 1];
	struct iovec iov = { .iov_base = buf };
	long i;
	int ret;

	iov.iov_len = size >= 0 ? (size_t)size : strlen(text);
	if (iov.iov_len > sizeof(buf))
		die("size", -EMSGSIZE);
	memset(buf, 'x', sizeof(buf));
	/* With --until-file, count <= 0 means no bound but the file. */
	for (i = 0; (count <= 0 && until_file) || i < count; i++) {
		char t[64];

		if (until_file && !access(until_file, F_OK))
			break;
		if (i && interval_us > 0)
			usleep((useconds_t)interval_us);
		int tl = snprintf(t, sizeof(t), "%s-%ld", text, i + 1);

		/* "TEXT-N " then filler: the receiver sees which one. */
		if (size < 0)
			iov.iov_len = (size_t)tl;
		memcpy(buf, t, (size_t)tl < iov.iov_len ? (size_t)tl :
		       iov.iov_len);
		ret = mc ? ibmc__dp_send_mc(dp, mgid, mlid, qkey, &iov, 1) :
			   ibmc__dp_send_uc(dp, dlid, dqpn, qkey, &iov, 1);
		if (ret)
			die("send", ret);
	}
	printf("sent %ld\n", i);
	/* The daemon answers a rejected send with ERROR: give it a moment. */
	{
		struct ibmc_dp_recv h;
		const void *d;
		size_t l;

		ibmc__dp_recv(dp, &h, &d, &l, 200);
	}
	printf("errors %lu\n", ibmc__dp_errors(dp));
	ibmc__dp_close(dp);
	return 0;
}

static int cmd_join(bool leave)
{
	struct ibmc_dp *dp = open_ep();
	struct ibmc_dp_join j = { .join_state = (uint8_t)join_state,
				  .qkey = qkey };
	struct ibmc_dp_join_ok ok;
	int ret, i;

	memcpy(j.mgid, mgid, 16);
	ret = ibmc__dp_join(dp, &j, &ok);
	if (ret)
		die("join", ret);
	printf("joined mlid 0x%04x qkey 0x%x pkey 0x%04x mtu %u mgid ",
	       ok.mlid, ok.qkey, ok.pkey, ok.mtu);
	for (i = 0; i < 16; i++)
		printf("%02x", ok.mgid[i]);
	printf("\n");
	if (leave) {
		memcpy(j.mgid, ok.mgid, 16);
		ret = ibmc__dp_leave(dp, &j);
		if (ret)
			die("leave", ret);
		printf("left\n");
	}
	ibmc__dp_close(dp);
	return 0;
}

/* Raw messages, each answered by ERROR; then a valid HELLO still works
 * on the same connection. */
static int cmd_junk(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ibmc_dp_hdr h = { .version = IBMC_DP_VERSION };
	static uint8_t big[IBMC_DP_MSG_MAX * 2], rep[IBMC_DP_MSG_MAX];
	struct ibmc_dp_hello hello = { 0 };
	int fd, i, errs = 0;
	ssize_t n;
	struct {
		const char *what;
		size_t len;
		uint16_t type, version;
		uint32_t plen;
	} cases[] = {
		{ "short", 3, 0, 0, 0 },
		{ "bad version", sizeof(h), IBMC_DP_HELLO, 99, 0 },
		{ "unknown type", sizeof(h), 77, IBMC_DP_VERSION, 0 },
		{ "hello truncated", sizeof(h) + 5, IBMC_DP_HELLO,
		  IBMC_DP_VERSION, 0 },
		{ "send before hello", sizeof(h) +
		  sizeof(struct ibmc_dp_send_uc), IBMC_DP_SEND_UC,
		  IBMC_DP_VERSION, 0 },
		{ "length mismatch", sizeof(h) + sizeof(hello) + 9,
		  IBMC_DP_HELLO, IBMC_DP_VERSION, 1 },
		{ "oversized", sizeof(big), IBMC_DP_SEND_UC, IBMC_DP_VERSION,
		  0 },
	};

	if (!sock_path)
		sock_path = getenv("IBMCAST_SIM_DATAPLANE");
	if (!sock_path)
		die("socket", -EINVAL);
	strcpy(a.sun_path, sock_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect", -errno);
	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		memset(big, 0xa5, sizeof(big));
		h.type = cases[i].type;
		h.version = cases[i].version;
		h.len = cases[i].plen;
		memcpy(big, &h, sizeof(h));
		if (send(fd, big, cases[i].len, 0) < 0)
			die("send", -errno);
		n = recv(fd, rep, sizeof(rep), 0);
		memcpy(&h, rep, sizeof(h));
		if (n >= (ssize_t)sizeof(h) && h.type == IBMC_DP_ERROR) {
			errs++;
			printf("error for %s\n", cases[i].what);
		} else {
			printf("no error for %s\n", cases[i].what);
		}
	}
	/* Still served: a valid HELLO. */
	h = (struct ibmc_dp_hdr){ .type = IBMC_DP_HELLO,
				  .version = IBMC_DP_VERSION };
	snprintf(hello.node, sizeof(hello.node), "%s", node);
	memcpy(big, &h, sizeof(h));
	memcpy(big + sizeof(h), &hello, sizeof(hello));
	send(fd, big, sizeof(h) + sizeof(hello), 0);
	n = recv(fd, rep, sizeof(rep), 0);
	memcpy(&h, rep, sizeof(h));
	printf("errors %d of %zu\n", errs, sizeof(cases) / sizeof(cases[0]));
	printf("hello after junk: %s\n", n > 0 && h.type == IBMC_DP_HELLO_OK ?
	       "ok" : "refused");
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "node", required_argument, NULL, 'n' },
		{ "qkey", required_argument, NULL, 'q' },
		{ "mgid", required_argument, NULL, 'g' },
		{ "mlid", required_argument, NULL, 'm' },
		{ "lid", required_argument, NULL, 'l' },
		{ "qpn", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "text", required_argument, NULL, 't' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "join-state", required_argument, NULL, 'j' },
		{ "interval-us", required_argument, NULL, 'i' },
		{ "until-file", required_argument, NULL, 'u' },
		{ "control-between", no_argument, NULL, 'C' },
		{ "stall-ms", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd;
	int c;

	if (argc < 2) {
		fprintf(stderr, "usage: dp_tool recv|send-uc|send-mc|join|"
			"join-leave|junk [options]\n");
		return 2;
	}
	cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'S': sock_path = optarg; break;
		case 'n': node = optarg; break;
		case 'q': qkey = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'g':
			if (parse_gid(optarg, mgid)) {
				fprintf(stderr, "dp_tool: bad MGID %s\n",
					optarg);
				return 2;
			}
			have_mgid = true;
			break;
		case 'm': mlid = (uint16_t)strtoul(optarg, NULL, 0); break;
		case 'l': dlid = (uint16_t)strtoul(optarg, NULL, 0); break;
		case 'p': dqpn = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'c': count = strtol(optarg, NULL, 0); break;
		case 's': size = strtol(optarg, NULL, 0); break;
		case 't': text = optarg; break;
		case 'T': timeout_ms = strtol(optarg, NULL, 0); break;
		case 'j': join_state = strtol(optarg, NULL, 0); break;
		case 'i': interval_us = strtol(optarg, NULL, 0); break;
		case 'u': until_file = optarg; break;
		case 'C': control_between = true; break;
		case 'w': stall_ms = strtol(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (!strcmp(cmd, "recv"))
		return cmd_recv();
	if (!strcmp(cmd, "send-uc"))
		return cmd_send(false);
	if (!strcmp(cmd, "send-mc"))
		return cmd_send(true);
	if (!strcmp(cmd, "join"))
		return cmd_join(false);
	if (!strcmp(cmd, "join-leave"))
		return cmd_join(true);
	if (!strcmp(cmd, "junk"))
		return cmd_junk();
	fprintf(stderr, "dp_tool: unknown command %s\n", cmd);
	return 2;
}
