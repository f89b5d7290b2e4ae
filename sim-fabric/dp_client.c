/* SPDX-License-Identifier: BSD-3-Clause */
/* dp_client.c - an endpoint of the simulated data plane over its
 * SOCK_SEQPACKET socket. Packets that arrive while a control reply is
 * awaited are kept, in order, for the next receive. It keeps the
 * endpoint's modeled clock: + o_s per charged send, max(clock, arrival) +
 * o_r per receive its user takes (ibmcast-dataplane(8), MODELED TIME). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "sim-fabric/dp_client.h"

#define SOCK_BUF (4 << 20)
/* What this endpoint sent and the daemon has not read yet waits in the
 * socket, where no packet lifetime reaches it; kept shallow, a sender that
 * outruns the daemon waits in sendmsg as an HCA waits for link credits, and
 * a small answer it sends is not behind megabytes of its own data. */
#define SEND_BUF (256 << 10)
#define STASH_MAX 65536		/* packets kept while awaiting a reply */
#define DP_BUF_SIZE (IBMC_DP_MSG_MAX + 64)	/* one message from the daemon */

struct stash {
	struct stash *next;
	size_t len;
	uint8_t data[];
};

struct ibmc_dp {
	int fd;
	struct ibmc_dp_hello_ok self;
	struct stash *head, *tail, *cur;
	unsigned nstash;
	unsigned long errors;
	uint64_t clock_ns;		/* modeled time */
	uint32_t o_s_ns, o_r_ns;	/* the model's, as last heard */
	bool unmodeled;			/* sends cost no modeled time */
	uint64_t unmodeled_at;		/* ... stamped so, 0: now */
	/* Datagrams read by ibmc__dp_recv; the caller's view of the last
	 * one must survive the control requests it may make before its
	 * next recv (a grant acted on with a detach and an SA leave), so
	 * their answers are read into ctl. */
	uint8_t buf[DP_BUF_SIZE];
	uint8_t ctl[DP_BUF_SIZE];
};

/* One message into buf (dp->buf or dp->ctl, DP_BUF_SIZE bytes): its
 * length, -ETIMEDOUT or -EPIPE. */
static ssize_t read_msg(struct ibmc_dp *dp, uint8_t *buf, int timeout_ms)
{
	struct pollfd p = { .fd = dp->fd, .events = POLLIN };
	int64_t end = timeout_ms > 0 ? ibmc__now_ms() + timeout_ms : 0, left;
	ssize_t n;
	int r;

	for (;;) {
		n = recv(dp->fd, buf, DP_BUF_SIZE, MSG_DONTWAIT);
		if (n > 0)
			return n;
		if (n == 0)
			return -EPIPE;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -EPIPE;
		if (!timeout_ms)
			return -ETIMEDOUT;
		left = end - ibmc__now_ms();
		r = poll(&p, 1, timeout_ms < 0 ? -1 : (int)(left > 0 ? left : 0));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r == 0 && timeout_ms > 0 && ibmc__now_ms() >= end)
			return -ETIMEDOUT;
	}
}

static int send_msg(struct ibmc_dp *dp, uint16_t type, const void *body,
		    size_t blen, const struct iovec *iov, int iovcnt)
{
	struct ibmc_dp_hdr h = { .type = type, .version = IBMC_DP_VERSION };
	struct iovec v[18];
	struct msghdr mh = { .msg_iov = v };
	size_t total = 0;
	int i;

	if (iovcnt < 0 || iovcnt > 16)
		return -EINVAL;
	for (i = 0; i < iovcnt; i++) {
		v[2 + i] = iov[i];
		total += iov[i].iov_len;
	}
	if (total > IBMC_DP_MAX_PAYLOAD || total > dp->self.mtu)
		return -EMSGSIZE;
	h.len = (uint32_t)total;
	v[0] = (struct iovec){ .iov_base = &h, .iov_len = sizeof(h) };
	v[1] = (struct iovec){ .iov_base = (void *)body, .iov_len = blen };
	mh.msg_iovlen = (size_t)(2 + iovcnt);
	for (;;) {
		if (sendmsg(dp->fd, &mh, MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno != EINTR)
			return errno == EAGAIN ? -EAGAIN : -EPIPE;
	}
}

static void stash(struct ibmc_dp *dp, const uint8_t *buf, size_t n)
{
	struct stash *s;

	if (dp->nstash >= STASH_MAX)
		return;		/* an RQ overflow of our own */
	s = malloc(sizeof(*s) + n);
	if (!s)
		return;
	s->next = NULL;
	s->len = n;
	memcpy(s->data, buf, n);
	if (dp->tail)
		dp->tail->next = s;
	else
		dp->head = s;
	dp->tail = s;
	dp->nstash++;
}

/* Wait for the answer to a control request: OK, ERROR or want. */
static int await(struct ibmc_dp *dp, uint16_t want, void *body, size_t blen)
{
	struct ibmc_dp_hdr h;
	struct ibmc_dp_error e;
	ssize_t n;

	for (;;) {
		n = read_msg(dp, dp->ctl, 30000);
		if (n < 0)
			return (int)n;
		if ((size_t)n < sizeof(h))
			return -EPROTO;
		memcpy(&h, dp->ctl, sizeof(h));
		if (h.type == IBMC_DP_RECV) {
			stash(dp, dp->ctl, (size_t)n);
			continue;
		}
		if (h.type == IBMC_DP_ERROR) {
			if ((size_t)n < sizeof(h) + sizeof(e))
				return -EPROTO;
			memcpy(&e, dp->ctl + sizeof(h), sizeof(e));
			return e.err < 0 ? e.err : -EPROTO;
		}
		if (h.type != want)
			return -EPROTO;
		if ((size_t)n < sizeof(h) + blen)
			return -EPROTO;
		if (blen)
			memcpy(body, dp->ctl + sizeof(h), blen);
		return 0;
	}
}

int ibmc__dp_open(const char *path, const char *node, uint32_t qkey,
		  struct ibmc_dp **out)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ibmc_dp_hello hello = { .qkey = qkey };
	struct ibmc_dp *dp;
	int sz = SOCK_BUF, snd = SEND_BUF, ret;

	if (!path)
		path = getenv("IBMCAST_SIM_DATAPLANE");
	if (!path || !node || strlen(path) >= sizeof(a.sun_path) ||
	    strlen(node) >= sizeof(hello.node) || !*node)
		return -EINVAL;
	dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	strcpy(a.sun_path, path);
	strcpy(hello.node, node);
	dp->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (dp->fd < 0) {
		ret = -errno;
		free(dp);
		return ret;
	}
	setsockopt(dp->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(dp->fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd));
	if (connect(dp->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		ret = -errno;
		goto err;
	}
	dp->self.mtu = IBMC_DP_MAX_PAYLOAD;
	ret = send_msg(dp, IBMC_DP_HELLO, &hello, sizeof(hello), NULL, 0);
	if (!ret)
		ret = await(dp, IBMC_DP_HELLO_OK, &dp->self, sizeof(dp->self));
	if (ret)
		goto err;
	/* Modeled time starts at this machine's monotonic time: endpoints
	 * opened later never start behind queues earlier ones left in the
	 * model (modeled time runs far slower than this machine's). */
	dp->clock_ns = ibmc__now_ns();
	dp->o_s_ns = dp->self.o_s_ns;
	dp->o_r_ns = dp->self.o_r_ns;
	*out = dp;
	return 0;
err:
	close(dp->fd);
	free(dp);
	return ret;
}

void ibmc__dp_close(struct ibmc_dp *dp)
{
	struct stash *s, *n;

	if (!dp)
		return;
	for (s = dp->head; s; s = n) {
		n = s->next;
		free(s);
	}
	free(dp->cur);
	close(dp->fd);
	free(dp);
}

const struct ibmc_dp_hello_ok *ibmc__dp_self(const struct ibmc_dp *dp)
{
	return &dp->self;
}

int ibmc__dp_fd(const struct ibmc_dp *dp)
{
	return dp->fd;
}

unsigned long ibmc__dp_errors(const struct ibmc_dp *dp)
{
	return dp->errors;
}

uint64_t ibmc__dp_clock(const struct ibmc_dp *dp)
{
	return dp->clock_ns;
}

void ibmc__dp_advance(struct ibmc_dp *dp, uint64_t ns)
{
	dp->clock_ns += ns;
}

void ibmc__dp_take(struct ibmc_dp *dp, uint64_t arrival_ns)
{
	/* Waiting for it, the CPU idles until it is there; then it pays
	 * its receive overhead. */
	if (arrival_ns > dp->clock_ns)
		dp->clock_ns = arrival_ns;
	dp->clock_ns += dp->o_r_ns;
}

void ibmc__dp_set_unmodeled(struct ibmc_dp *dp, bool on, uint64_t at_ns)
{
	dp->unmodeled = on;
	dp->unmodeled_at = on ? at_ns : 0;
}

/* A send's modeled time, and the clock after it unless it is unmodeled
 * (then the data plane charges no queue for it either). */
static uint64_t send_time(const struct ibmc_dp *dp, uint32_t *flags)
{
	*flags = dp->unmodeled ? IBMC_DP_SEND_UNMODELED : 0;
	if (dp->unmodeled && dp->unmodeled_at)
		return dp->unmodeled_at;
	return dp->clock_ns + dp->o_s_ns;
}

static void sent(struct ibmc_dp *dp, uint64_t t_ns)
{
	if (!dp->unmodeled)
		dp->clock_ns = t_ns;
}

static int mcast(struct ibmc_dp *dp, uint16_t type, const uint8_t mgid[16],
		 uint16_t mlid)
{
	struct ibmc_dp_mcast m = { .mlid = mlid };
	int ret;

	memcpy(m.mgid, mgid, 16);
	ret = send_msg(dp, type, &m, sizeof(m), NULL, 0);
	return ret ? ret : await(dp, IBMC_DP_OK, NULL, 0);
}

int ibmc__dp_attach(struct ibmc_dp *dp, const uint8_t mgid[16], uint16_t mlid)
{
	return mcast(dp, IBMC_DP_ATTACH, mgid, mlid);
}

int ibmc__dp_detach(struct ibmc_dp *dp, const uint8_t mgid[16], uint16_t mlid)
{
	return mcast(dp, IBMC_DP_DETACH, mgid, mlid);
}

int ibmc__dp_join(struct ibmc_dp *dp, const struct ibmc_dp_join *j,
		  struct ibmc_dp_join_ok *ok)
{
	int ret = send_msg(dp, IBMC_DP_JOIN, j, sizeof(*j), NULL, 0);

	return ret ? ret : await(dp, IBMC_DP_JOIN_OK, ok, sizeof(*ok));
}

int ibmc__dp_leave(struct ibmc_dp *dp, const struct ibmc_dp_join *j)
{
	int ret = send_msg(dp, IBMC_DP_LEAVE, j, sizeof(*j), NULL, 0);

	return ret ? ret : await(dp, IBMC_DP_OK, NULL, 0);
}

int ibmc__dp_send_uc(struct ibmc_dp *dp, uint16_t dlid, uint32_t dqpn,
		     uint32_t qkey, const struct iovec *iov, int iovcnt)
{
	struct ibmc_dp_send_uc s = { .dlid = dlid, .dqpn = dqpn,
				     .qkey = qkey };
	int ret;

	s.t_ns = send_time(dp, &s.flags);
	ret = send_msg(dp, IBMC_DP_SEND_UC, &s, sizeof(s), iov, iovcnt);
	if (!ret)
		sent(dp, s.t_ns);
	return ret;
}

int ibmc__dp_send_mc(struct ibmc_dp *dp, const uint8_t mgid[16],
		     uint16_t mlid, uint32_t qkey, const struct iovec *iov,
		     int iovcnt)
{
	struct ibmc_dp_send_mc s = { .mlid = mlid, .qkey = qkey };
	int ret;

	uint32_t flags;

	memcpy(s.mgid, mgid, 16);
	s.t_ns = send_time(dp, &flags);
	s.flags = (uint16_t)flags;
	ret = send_msg(dp, IBMC_DP_SEND_MC, &s, sizeof(s), iov, iovcnt);
	if (!ret)
		sent(dp, s.t_ns);
	return ret;
}

/* A RECV in buf (n bytes) into the caller's view; -EAGAIN if not one. */
static int view(struct ibmc_dp *dp, const uint8_t *buf, size_t n,
		struct ibmc_dp_recv *hdr, const void **data, size_t *len)
{
	struct ibmc_dp_hdr h;

	if (n < sizeof(h))
		return -EAGAIN;
	memcpy(&h, buf, sizeof(h));
	if (h.type == IBMC_DP_ERROR) {
		dp->errors++;
		return -EAGAIN;
	}
	if (h.type != IBMC_DP_RECV || n < sizeof(h) + sizeof(*hdr) ||
	    h.len != n - sizeof(h) - sizeof(*hdr))
		return -EAGAIN;
	memcpy(hdr, buf + sizeof(h), sizeof(*hdr));
	*data = buf + sizeof(h) + sizeof(*hdr);
	*len = h.len;
	/* The clock moves only when the user takes the packet
	 * (ibmc__dp_take): a duplicate or a late copy costs nothing. */
	dp->o_s_ns = hdr->o_s_ns;
	dp->o_r_ns = hdr->o_r_ns;
	return 0;
}

int ibmc__dp_recv(struct ibmc_dp *dp, struct ibmc_dp_recv *hdr,
		  const void **data, size_t *len, int timeout_ms)
{
	int64_t end = timeout_ms > 0 ? ibmc__now_ms() + timeout_ms : 0;
	ssize_t n;
	int left;

	free(dp->cur);
	dp->cur = NULL;
	while (dp->head) {
		dp->cur = dp->head;
		dp->head = dp->cur->next;
		if (!dp->head)
			dp->tail = NULL;
		dp->nstash--;
		if (!view(dp, dp->cur->data, dp->cur->len, hdr, data, len))
			return 0;
		free(dp->cur);
		dp->cur = NULL;
	}
	for (;;) {
		left = timeout_ms;
		if (timeout_ms > 0) {
			left = (int)(end - ibmc__now_ms());
			if (left <= 0)
				left = 0;
		}
		n = read_msg(dp, dp->buf, left);
		if (n < 0)
			return (int)n;
		if (!view(dp, dp->buf, (size_t)n, hdr, data, len))
			return 0;
		if (timeout_ms > 0 && ibmc__now_ms() >= end)
			return -ETIMEDOUT;
	}
}
