/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dp_pingpong - a ping-pong between two endpoints of the simulated data
 * plane, in modeled time (ibmcast-dataplane(8), MODELED TIME): one
 * process holds both QPs and plays both sides in turn, so no real-time
 * race can touch the result. A message of SIZE bytes goes as
 * ceil(SIZE / MTU) packets one way, all taken in, then as many back; the
 * round trip is the pinging QP's clock from the common start to the last
 * packet taken. Prints one line per repetition:
 *   pingpong size=SIZE packets=K rtt_ns=T
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-fabric/dp_client.h"

static void die(const char *what, int err)
{
	fprintf(stderr, "dp_pingpong: %s: %s\n", what, strerror(-err));
	exit(1);
}

/* Both clocks to the later one plus 1 ms of modeled time (queues left
 * by earlier packets drain): the common start. */
static uint64_t align(struct ibmc_dp *a, struct ibmc_dp *b)
{
	uint64_t ca = ibmc__dp_clock(a), cb = ibmc__dp_clock(b);
	uint64_t t0 = (ca > cb ? ca : cb) + 1000000;

	ibmc__dp_advance(a, t0 - ca);
	ibmc__dp_advance(b, t0 - cb);
	return t0;
}

/* from sends size bytes to to in packets of at most mtu; to takes them
 * all in, in order (a missing packet is an error: nothing here is lost
 * unless faults were injected). */
static void one_way(struct ibmc_dp *from, struct ibmc_dp *to, size_t size,
		    size_t mtu, unsigned char *buf)
{
	const struct ibmc_dp_hello_ok *dst = ibmc__dp_self(to);
	struct ibmc_dp_recv h;
	const void *data;
	size_t off, len, got = 0;
	struct iovec iov;
	int ret;

	for (off = 0; off < size || (!size && off == 0); off += mtu) {
		iov.iov_base = buf + off;
		iov.iov_len = size - off < mtu ? size - off : mtu;
		ret = ibmc__dp_send_uc(from, dst->lid, dst->qpn, 0, &iov, 1);
		if (ret)
			die("send", ret);
		if (!size)
			break;
	}
	while (got < size || (!size && got == 0)) {
		ret = ibmc__dp_recv(to, &h, &data, &len, 10000);
		if (ret)
			die("receive (a packet lost?)", ret);
		ibmc__dp_take(to, h.t_ns);
		got += len ? len : 1;
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "ping", required_argument, NULL, 'a' },
		{ "pong", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *na = "node1", *nb = "node2";
	struct ibmc_dp *a, *b;
	unsigned char *buf;
	long size = 1, reps = 3, i;
	size_t mtu, packets;
	uint64_t t0;
	int c, ret;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'S': sock = optarg; break;
		case 'a': na = optarg; break;
		case 'b': nb = optarg; break;
		case 's': size = strtol(optarg, NULL, 0); break;
		case 'n': reps = strtol(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: dp_pingpong [--socket PATH] "
				"[--ping NODE] [--pong NODE] [--size BYTES] "
				"[--reps N]\n");
			return 2;
		}
	}
	if (size < 0 || size > (64L << 20) || reps < 1) {
		fprintf(stderr, "dp_pingpong: --size 0..64M, --reps >= 1\n");
		return 2;
	}
	if ((ret = ibmc__dp_open(sock, na, 0, &a)))
		die(na, ret);
	if ((ret = ibmc__dp_open(sock, nb, 0, &b)))
		die(nb, ret);
	mtu = ibmc__dp_self(a)->mtu;
	if (ibmc__dp_self(b)->mtu < mtu)
		mtu = ibmc__dp_self(b)->mtu;
	buf = calloc(1, (size_t)size + 1);
	if (!buf)
		die("buffer", -ENOMEM);
	packets = size ? ((size_t)size + mtu - 1) / mtu : 1;
	for (i = 0; i < reps; i++) {
		t0 = align(a, b);
		one_way(a, b, (size_t)size, mtu, buf);
		one_way(b, a, (size_t)size, mtu, buf);
		printf("pingpong size=%ld packets=%zu mtu=%zu rtt_ns=%llu\n",
		       size, packets, mtu,
		       (unsigned long long)(ibmc__dp_clock(a) - t0));
		fflush(stdout);
	}
	free(buf);
	ibmc__dp_close(b);
	ibmc__dp_close(a);
	return 0;
}
