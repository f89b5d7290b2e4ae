/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmcast-smpd: the OSM plugin's SMP reader. Reads switch multicast
 * forwarding table blocks over its own umad agent, pipelined, and answers
 * the plugin over a SOCK_SEQPACKET socket (wire format in smp_wire.h). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "common/clock.h"
#include "common/parse.h"
#include "osm-plugin/smp_wire.h"

#define SMP_CLASS_LID	0x01	/* LID-routed subnet management */
#define SMP_METHOD_GET	0x01
#define SMP_ATTR_MFT	0x001b
#define MAD_SIZE	256
#define SMP_DATA_OFFS	64	/* LID-routed SMP: data after 64-byte header */
#define SMP_TRIES	3	/* first send plus two retries */
/* Enough in flight to hide the round trip, few enough that a switch's
 * SMA (which on hardware drops VL15 under load) is not flooded. */
#define SMP_WINDOW	32
/* The low TID bits name the query; the rest is a per-send nonce so that
 * a late answer to an abandoned try is still recognised. The kernel and
 * umad2sim own the high 32 bits. */
#define TID_IDX_BITS	10
#define TID_IDX_MASK	((1u << TID_IDX_BITS) - 1)
/* umad2sim copies whole simulator packets, larger than a MAD, in and out
 * of our buffer; leave it room.
 * The MAD lands at struct ib_user_mad's data, 64 bytes in, where this
 * libibumad's umad_size() says 56: the buffer is sized by the struct, or a
 * receive of the full length would end 8 bytes past it. */
#define UMAD_ROOM	1024

_Static_assert(IBMC_SMP_MAX_QUERIES <= (1u << TID_IDX_BITS),
	       "TID index field too narrow");

enum qstate { Q_QUEUED, Q_INFLIGHT, Q_DONE };

struct qslot {
	uint64_t deadline_ns;
	uint32_t first_nonce;	/* nonce of the first send of this query */
	uint32_t nonce;		/* nonce of the latest send */
	uint8_t tries;
	uint8_t state;
};

struct smpd {
	int sock;
	int port;
	int agent;
	uint32_t nonce;
	void *umad;		/* one send/receive buffer */
	size_t umad_len;
	struct qslot slot[IBMC_SMP_MAX_QUERIES];
	struct ibmc_smp_request_msg req;
	struct ibmc_smp_reply_msg rep;
};

/* Set by SIGTERM/SIGINT: leave through exit() so that umad2sim's
 * destructor tells ibsim we are gone (a killed client keeps its slot, and
 * ibsim has only ten). */
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	stop = 1;
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static int send_query(struct smpd *d, unsigned int idx,
		      const struct ibmc_smp_query *q, uint32_t timeout_ms)
{
	struct qslot *s = &d->slot[idx];
	uint8_t *mad;
	uint32_t tid;
	int ret;

	/* Nonce 0 is never used, so a zeroed slot matches nothing. */
	if (!++d->nonce || d->nonce > (UINT32_MAX >> TID_IDX_BITS))
		d->nonce = 1;
	tid = d->nonce << TID_IDX_BITS | idx;

	memset(d->umad, 0, d->umad_len);
	umad_set_addr(d->umad, q->lid, 0, 0, 0);
	mad = umad_get_mad(d->umad);
	mad[0] = 1;			/* base version */
	mad[1] = SMP_CLASS_LID;
	mad[2] = 1;			/* class version */
	mad[3] = SMP_METHOD_GET;
	put_be32(mad + 12, tid);	/* low half of the 64-bit TID */
	put_be16(mad + 16, SMP_ATTR_MFT);
	put_be32(mad + 20, (uint32_t)(q->position & 0xf) << 28 |
			   (q->block & 0x1ff));

	/* The kernel matches the answer to this send only while it tracks
	 * it, so give it our timeout; we retry ourselves (retries 0). */
	ret = umad_send(d->port, d->agent, d->umad, MAD_SIZE,
			(int)timeout_ms, 0);
	if (ret < 0)
		return ret;
	if (!s->tries)
		s->first_nonce = d->nonce;
	s->nonce = d->nonce;
	s->tries++;
	s->state = Q_INFLIGHT;
	s->deadline_ns = ibmc__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	return 0;
}

/* Match one received MAD to its query; ignores strays and duplicates. */
static int take_answer(struct smpd *d, unsigned int count, unsigned int *done)
{
	const uint8_t *mad = umad_get_mad(d->umad);
	struct ibmc_smp_result *r;
	uint32_t tid = get_be32(mad + 12), nonce;
	unsigned int idx = tid & TID_IDX_MASK, i;
	struct qslot *s;

	if (mad[1] != SMP_CLASS_LID || idx >= count)
		return 0;
	s = &d->slot[idx];
	nonce = tid >> TID_IDX_BITS;
	if (s->state != Q_INFLIGHT || nonce < s->first_nonce ||
	    nonce > s->nonce)
		return 0;
	r = &d->rep.r[idx];
	/* A send the kernel (or ibsim) gave up on: let the deadline logic
	 * retry it rather than waiting out the full timeout. */
	if (umad_status(d->umad)) {
		if (nonce == s->nonce)
			s->deadline_ns = 0;
		return 0;
	}
	if (!(mad[3] & 0x80) || get_be16(mad + 16) != SMP_ATTR_MFT)
		return 0;
	s->state = Q_DONE;
	(*done)++;
	if (get_be16(mad + 4) & 0x7fff) {
		r->status = -2;
		return 0;
	}
	r->status = 0;
	for (i = 0; i < 32; i++)
		r->masks[i] = get_be16(mad + SMP_DATA_OFFS + 2 * i);
	return 0;
}

static void run_batch(struct smpd *d)
{
	unsigned int count = d->req.hdr.count, next = 0, inflight = 0;
	unsigned int done = 0, i;
	uint32_t tmo = d->req.hdr.timeout_ms;
	int ret;

	if (!tmo)
		tmo = 1;
	for (i = 0; i < count; i++) {
		struct ibmc_smp_result *r = &d->rep.r[i];

		memset(r, 0, sizeof(*r));
		r->lid = d->req.q[i].lid;
		r->block = d->req.q[i].block;
		r->position = d->req.q[i].position;
		r->status = -1;
		memset(&d->slot[i], 0, sizeof(d->slot[i]));
	}

	while (done < count && !stop) {
		uint64_t now = ibmc__now_ns(), first = UINT64_MAX;
		int len = UMAD_ROOM, wait_ms;

		/* Expire and retry first, so a retry takes a freed window
		 * place before new queries do. */
		inflight = 0;
		for (i = 0; i < next; i++) {
			struct qslot *s = &d->slot[i];

			if (s->state != Q_INFLIGHT)
				continue;
			if (s->deadline_ns <= now) {
				if (s->tries >= SMP_TRIES) {
					s->state = Q_DONE;	/* status -1 */
					done++;
					continue;
				}
				if (send_query(d, i, &d->req.q[i], tmo) < 0) {
					s->state = Q_DONE;
					done++;
					continue;
				}
			}
			inflight++;
			if (s->deadline_ns < first)
				first = s->deadline_ns;
		}
		while (inflight < SMP_WINDOW && next < count) {
			ret = send_query(d, next, &d->req.q[next], tmo);
			if (ret < 0) {
				fprintf(stderr, "ibmcast-smpd: send to lid %u "
					"failed: %s\n", d->req.q[next].lid,
					strerror(-ret));
				d->slot[next].state = Q_DONE;
				done++;
			} else {
				inflight++;
				if (d->slot[next].deadline_ns < first)
					first = d->slot[next].deadline_ns;
			}
			next++;
		}
		if (done >= count)
			break;
		if (!inflight)
			continue;

		now = ibmc__now_ns();
		wait_ms = first > now ? (int)((first - now + 999999) / 1000000)
				      : 0;
		if (!wait_ms)
			continue;
		ret = umad_recv(d->port, d->umad, &len, wait_ms);
		if (ret < 0)
			continue;	/* timeout: the scan above retries */
		take_answer(d, count, &done);
		/* Drain whatever else already arrived without sleeping. */
		for (;;) {
			struct pollfd p = { .fd = d->port, .events = POLLIN };

			len = UMAD_ROOM;
			if (done >= count || poll(&p, 1, 0) != 1)
				break;
			if (umad_recv(d->port, d->umad, &len, 0) < 0)
				break;
			take_answer(d, count, &done);
		}
	}
}

static int reply(struct smpd *d, uint32_t seq, uint32_t count)
{
	size_t len = sizeof(d->rep.hdr) + count * sizeof(d->rep.r[0]);
	ssize_t n;

	d->rep.hdr.magic = IBMC_SMP_MAGIC;
	d->rep.hdr.seq = seq;
	d->rep.hdr.count = count;
	d->rep.hdr.timeout_ms = 0;
	do {
		n = send(d->sock, &d->rep, len, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* Returns 1 to go on, 0 on EOF, < 0 on a socket error. */
static int serve_one(struct smpd *d)
{
	ssize_t n;
	size_t want;

	do {
		n = recv(d->sock, &d->req, sizeof(d->req), MSG_TRUNC);
	} while (n < 0 && errno == EINTR && !stop);
	if (stop)
		return 0;
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	if ((size_t)n < sizeof(d->req.hdr)) {
		fprintf(stderr, "ibmcast-smpd: short request (%zd bytes)\n",
			n);
		return reply(d, 0, 0) ?: 1;
	}
	want = sizeof(d->req.hdr) +
	       (size_t)d->req.hdr.count * sizeof(d->req.q[0]);
	if (d->req.hdr.magic != IBMC_SMP_MAGIC ||
	    d->req.hdr.count > IBMC_SMP_MAX_QUERIES || (size_t)n != want) {
		fprintf(stderr, "ibmcast-smpd: malformed request seq %" PRIu32
			": magic 0x%08" PRIx32 ", count %" PRIu32
			", %zd bytes\n", d->req.hdr.seq, d->req.hdr.magic,
			d->req.hdr.count, n);
		return reply(d, d->req.hdr.seq, 0) ?: 1;
	}
	run_batch(d);
	return reply(d, d->req.hdr.seq, d->req.hdr.count) ?: 1;
}

static int parse_fd(int argc, char **argv)
{
	long v;

	if (argc == 1)
		return 3;
	if (argc == 3 && !strcmp(argv[1], "--fd") &&
	    !ibmc__parse_long(argv[2], 10, 0, 65535, &v))
		return (int)v;
	fprintf(stderr, "usage: ibmcast-smpd [--fd N]\n"
		"Serves MFT block reads to the ibmcast OpenSM plugin over a "
		"SOCK_SEQPACKET socket (default fd 3).\n");
	return -1;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct smpd *d;
	int ret, type;
	socklen_t tl = sizeof(type);

	d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, "ibmcast-smpd: out of memory\n");
		return 1;
	}
	d->sock = parse_fd(argc, argv);
	if (d->sock < 0)
		return 2;
	if (getsockopt(d->sock, SOL_SOCKET, SO_TYPE, &type, &tl) ||
	    type != SOCK_SEQPACKET) {
		fprintf(stderr, "ibmcast-smpd: fd %d is not a SOCK_SEQPACKET "
			"socket\n", d->sock);
		return 2;
	}
	/* A dead plugin shows as EOF or EPIPE, never as a signal. */
	signal(SIGPIPE, SIG_IGN);
	/* No SA_RESTART: a blocked recv() must return to see the flag. */
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_term;
	sa.sa_flags = 0;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	d->umad_len = sizeof(struct ib_user_mad) + UMAD_ROOM;
	d->umad = calloc(1, d->umad_len);
	if (!d->umad) {
		fprintf(stderr, "ibmcast-smpd: out of memory\n");
		return 1;
	}
	if (umad_init() < 0) {
		fprintf(stderr, "ibmcast-smpd: umad_init failed\n");
		return 1;
	}
	d->port = umad_open_port(NULL, 0);
	if (d->port < 0) {
		fprintf(stderr, "ibmcast-smpd: cannot open a umad port: %s\n",
			strerror(-d->port));
		return 1;
	}
	d->agent = umad_register(d->port, SMP_CLASS_LID, 1, 0, NULL);
	if (d->agent < 0) {
		fprintf(stderr, "ibmcast-smpd: cannot register an SMI agent: "
			"%s\n", strerror(-d->agent));
		umad_close_port(d->port);
		return 1;
	}

	while ((ret = serve_one(d)) > 0)
		;
	if (ret < 0)
		fprintf(stderr, "ibmcast-smpd: plugin socket: %s\n",
			strerror(-ret));

	umad_unregister(d->port, d->agent);
	umad_close_port(d->port);
	umad_done();
	free(d->umad);
	free(d);
	return ret < 0 ? 1 : 0;
}
