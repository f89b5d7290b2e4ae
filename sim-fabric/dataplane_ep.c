/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_ep.c - endpoints: one SOCK_SEQPACKET connection per UD QP.
 * Parses and checks every message (a bad one gets ERROR and is counted),
 * and delivers packets without ever blocking: what the socket cannot take
 * waits in a bounded queue, beyond it the packet is dropped as a UD packet
 * finding no receive WQE would be, and a packet that waited in it longer
 * than the packet lifetime is dropped as a switch drops it. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "sim-fabric/dataplane.h"

#define MSGS_PER_WAKE 64
/* What the kernel holds toward an endpoint is beyond the packet lifetime's
 * reach, so it is kept shallow (the kernel doubles it: some 100 packets of
 * 4 KiB); the rest waits in ep's queue, where it ages. */
#define SOCK_BUF (256 << 10)

int dp_ep_accept(struct dataplane *dp)
{
	struct dp_ep *ep;
	int fd, sz = SOCK_BUF;

	fd = accept4(dp->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		close(fd);
		return -ENOMEM;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	ep->fd = fd;
	ep->hca = -1;
	ep->id = ++dp->next_ep_id;
	ep->next = dp->eps;
	dp->eps = ep;
	dp->nep++;
	return 0;
}

static void kill_ep(struct dataplane *dp, struct dp_ep *ep)
{
	(void)dp;
	ep->dead = true;
}

/* Drop the packets at the head of ep's queue that waited past the packet
 * lifetime. A packet the switches hold for seconds would arrive long after
 * its sender gave up on it, and everything behind it later still: IB bounds
 * that wait instead (a switch drops a packet past its head-of-queue
 * lifetime, about 1 s by OpenSM's default head_of_queue_lifetime 0x12).
 * Control answers are the daemon's own and are never dropped. */
static void expire(struct dataplane *dp, struct dp_ep *ep, uint64_t now)
{
	struct dp_qmsg **pp = &ep->qhead, *m, *kept = NULL;

	if (!dp->lifetime_ns)
		return;
	while ((m = *pp) && now - m->queued_ns > dp->lifetime_ns) {
		if (!m->ep) {
			kept = m;
			pp = &m->next;
			continue;
		}
		*pp = m->next;
		ep->qbytes -= m->len;
		ep->expired++;
		dp->drops[DP_DROP_LIFETIME]++;
		free(m);
	}
	if (!*pp)
		ep->qtail = kept;
}

/* Hand m to the socket, or queue it; takes m. */
static void put_msg(struct dataplane *dp, struct dp_ep *ep, struct dp_qmsg *m,
		    bool ctl)
{
	uint64_t now;
	ssize_t n;
	bool recv_msg = !ctl;

	if (ep->dead) {
		free(m);
		return;
	}
	if (!ep->qhead) {
		n = send(ep->fd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n >= 0) {
			if (recv_msg) {
				ep->rx_pkts++;
				ep->rx_bytes += m->len;
			}
			free(m);
			return;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
			kill_ep(dp, ep);
			free(m);
			return;
		}
	}
	now = ibmc__now_ns();
	expire(dp, ep, now);
	if (!ctl && ep->qbytes + m->len > dp->rq_bytes) {
		ep->rq_overflow++;
		dp->drops[DP_DROP_RQ_OVERFLOW]++;
		free(m);
		return;
	}
	m->next = NULL;
	m->queued_ns = now;
	/* ep doubles as "this is a packet" for the counters at flush */
	m->ep = recv_msg ? ep : NULL;
	if (ep->qtail)
		ep->qtail->next = m;
	else
		ep->qhead = m;
	ep->qtail = m;
	ep->qbytes += m->len;
}

void dp_ep_flush(struct dataplane *dp, struct dp_ep *ep)
{
	struct dp_qmsg *m;
	ssize_t n;

	expire(dp, ep, ibmc__now_ns());
	while ((m = ep->qhead) && !ep->dead) {
		n = send(ep->fd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != ENOBUFS)
				kill_ep(dp, ep);
			return;
		}
		if (m->ep) {
			ep->rx_pkts++;
			ep->rx_bytes += m->len;
		}
		ep->qhead = m->next;
		if (!ep->qhead)
			ep->qtail = NULL;
		ep->qbytes -= m->len;
		free(m);
	}
}

void dp_ep_deliver_msg(struct dataplane *dp, struct dp_ep *ep,
		       struct dp_qmsg *m)
{
	struct dp_qmsg *h = ep->held;

	put_msg(dp, ep, m, false);
	if (h && h != m) {
		ep->held = NULL;
		put_msg(dp, ep, h, false);
	}
}

void dp_ep_put(struct dataplane *dp, struct dp_ep *ep, const void *hdr,
	       size_t hlen, const void *pl, size_t plen, bool ctl)
{
	struct dp_qmsg *m = malloc(sizeof(*m) + hlen + plen);

	if (!m)
		return;
	m->len = hlen + plen;
	memcpy(m->data, hdr, hlen);
	if (plen)
		memcpy(m->data + hlen, pl, plen);
	put_msg(dp, ep, m, ctl);
}

void dp_ep_reply(struct dataplane *dp, struct dp_ep *ep, uint16_t type,
		 const void *body, size_t blen)
{
	uint8_t buf[sizeof(struct ibmc_dp_hdr) + 256];
	struct ibmc_dp_hdr h = { .type = type, .version = IBMC_DP_VERSION };

	memcpy(buf, &h, sizeof(h));
	if (blen)
		memcpy(buf + sizeof(h), body, blen);
	dp_ep_put(dp, ep, buf, sizeof(h) + blen, NULL, 0, true);
}

void dp_ep_error(struct dataplane *dp, struct dp_ep *ep, int err,
		 const char *msg)
{
	struct ibmc_dp_error e = { .err = err };

	snprintf(e.msg, sizeof(e.msg), "%s", msg);
	ep->errors++;
	dp_ep_reply(dp, ep, IBMC_DP_ERROR, &e, sizeof(e));
}

static void bad(struct dataplane *dp, struct dp_ep *ep, int err,
		const char *msg)
{
	dp->bad_msgs++;
	ibmc_log(IBMC_LOG_INFO, "dataplane: endpoint %s/%u: %s",
		 ep->hello ? ep->node : "?", ep->qpn, msg);
	dp_ep_error(dp, ep, err, msg);
}

static void hello(struct dataplane *dp, struct dp_ep *ep,
		  const struct ibmc_dp_hello *h)
{
	struct ibmc_dp_hello_ok ok = { 0 };
	const struct fm_node *n;
	uint64_t v;
	int hca, i;

	if (ep->hello)
		return bad(dp, ep, -EALREADY, "HELLO twice");
	if (!memchr(h->node, '\0', sizeof(h->node)) || !h->node[0])
		return bad(dp, ep, -EINVAL, "HELLO: node name not terminated");
	hca = fm_find_hca(&dp->fm, h->node);
	if (hca == -2)
		return bad(dp, ep, -ENOTUNIQ, "HELLO: node name not unique");
	if (hca < 0)
		return bad(dp, ep, -ENOENT, "HELLO: no HCA of that name");
	n = &dp->fm.node[hca];
	ep->hello = true;
	ep->hca = hca;
	ep->qkey = h->qkey;
	snprintf(ep->node, sizeof(ep->node), "%s", h->node);
	ep->qpn = dp->next_qpn[hca]++;
	ep->hnext = dp->hca_eps[hca];
	dp->hca_eps[hca] = ep;
	ok.lid = n->lid;
	ok.sm_lid = n->sm_lid;
	ok.qpn = ep->qpn;
	ok.mtu = n->mtu;
	ok.o_s_ns = dp->model.o_s_ns;
	ok.o_r_ns = dp->model.o_r_ns;
	v = dp->fm.subnet_prefix;
	for (i = 0; i < 8; i++)
		ok.port_gid[i] = (uint8_t)(v >> (56 - 8 * i));
	v = n->port_guid;
	for (i = 0; i < 8; i++)
		ok.port_gid[8 + i] = (uint8_t)(v >> (56 - 8 * i));
	dp_ep_reply(dp, ep, IBMC_DP_HELLO_OK, &ok, sizeof(ok));
}

static void attach(struct dataplane *dp, struct dp_ep *ep,
		   const struct ibmc_dp_mcast *a, bool on)
{
	struct dp_mlid *m;
	int i;

	if (a->mgid[0] != 0xff || a->mlid < FM_MLID_BASE || a->mlid == 0xffff)
		return bad(dp, ep, -EINVAL, "ATTACH/DETACH: not a multicast "
			   "MGID and MLID");
	for (i = 0; i < ep->natt; i++)
		if (!memcmp(ep->att[i].mgid, a->mgid, 16))
			break;
	if (on) {
		if (i == ep->natt) {
			if (ep->natt == ep->att_cap) {
				int cap = ep->att_cap * 2 + 4;
				struct dp_attach *na = realloc(ep->att,
					sizeof(*na) * (size_t)cap);

				if (!na)
					return dp_ep_error(dp, ep, -ENOMEM,
							   "out of memory");
				ep->att = na;
				ep->att_cap = cap;
			}
			m = dp_mlid_get(dp, a->mlid, true);
			if (!m)
				return dp_ep_error(dp, ep, -ENOMEM,
						   "out of memory");
			m->attached++;
			memcpy(ep->att[i].mgid, a->mgid, 16);
			ep->att[i].mlid = a->mlid;
			ep->natt++;
		}
	} else {
		if (i == ep->natt)
			return dp_ep_error(dp, ep, -ENOENT,
					   "DETACH: not attached");
		m = dp_mlid_get(dp, ep->att[i].mlid, false);
		if (m && m->attached > 0)
			m->attached--;
		ep->att[i] = ep->att[--ep->natt];
	}
	dp_ep_reply(dp, ep, IBMC_DP_OK, NULL, 0);
}

static size_t body_size(uint16_t type)
{
	switch (type) {
	case IBMC_DP_HELLO: return sizeof(struct ibmc_dp_hello);
	case IBMC_DP_ATTACH:
	case IBMC_DP_DETACH: return sizeof(struct ibmc_dp_mcast);
	case IBMC_DP_SEND_UC: return sizeof(struct ibmc_dp_send_uc);
	case IBMC_DP_SEND_MC: return sizeof(struct ibmc_dp_send_mc);
	case IBMC_DP_JOIN:
	case IBMC_DP_LEAVE: return sizeof(struct ibmc_dp_join);
	default: return 0;
	}
}

static void one_msg(struct dataplane *dp, struct dp_ep *ep, const uint8_t *buf,
		    size_t n)
{
	struct ibmc_dp_hdr h;
	const uint8_t *body = buf + sizeof(h);
	size_t bs;
	uint32_t mtu;

	if (n < sizeof(h))
		return bad(dp, ep, -EBADMSG, "message shorter than a header");
	memcpy(&h, buf, sizeof(h));
	if (h.version != IBMC_DP_VERSION)
		return bad(dp, ep, -EPROTO, "unknown protocol version");
	bs = body_size(h.type);
	if (!bs)
		return bad(dp, ep, -EBADMSG, "unknown message type");
	if (n < sizeof(h) + bs || h.len != n - sizeof(h) - bs)
		return bad(dp, ep, -EBADMSG, "length does not match the type");
	if (h.type != IBMC_DP_SEND_UC && h.type != IBMC_DP_SEND_MC && h.len)
		return bad(dp, ep, -EBADMSG, "payload on a control message");
	if (h.type == IBMC_DP_HELLO)
		return hello(dp, ep, (const void *)body);
	if (!ep->hello)
		return bad(dp, ep, -EPROTO, "HELLO must come first");
	mtu = dp->fm.node[ep->hca].mtu;
	switch (h.type) {
	case IBMC_DP_ATTACH:
	case IBMC_DP_DETACH: {
		struct ibmc_dp_mcast a;

		memcpy(&a, body, sizeof(a));
		return attach(dp, ep, &a, h.type == IBMC_DP_ATTACH);
	}
	case IBMC_DP_SEND_UC:
	case IBMC_DP_SEND_MC:
		if (h.len > mtu || h.len > IBMC_DP_MAX_PAYLOAD)
			return bad(dp, ep, -EMSGSIZE, "payload over the MTU");
		ep->tx_pkts++;
		ep->tx_bytes += h.len;
		if (h.type == IBMC_DP_SEND_UC) {
			struct ibmc_dp_send_uc s;

			memcpy(&s, body, sizeof(s));
			dp_forward_uc(dp, ep, &s, body + bs, h.len);
		} else {
			struct ibmc_dp_send_mc s;

			memcpy(&s, body, sizeof(s));
			if (s.mgid[0] != 0xff || s.mlid < FM_MLID_BASE)
				return bad(dp, ep, -EINVAL, "SEND_MC: not a "
					   "multicast MGID and MLID");
			dp_forward_mc(dp, ep, &s, body + bs, h.len);
		}
		return;
	case IBMC_DP_JOIN:
	case IBMC_DP_LEAVE: {
		struct ibmc_dp_join j;

		memcpy(&j, body, sizeof(j));
		return dp_sa_join(dp, ep, &j, h.type == IBMC_DP_LEAVE);
	}
	}
}

void dp_ep_input(struct dataplane *dp, struct dp_ep *ep)
{
	static uint8_t buf[IBMC_DP_MSG_MAX + 64];
	ssize_t n;
	int k;

	for (k = 0; k < MSGS_PER_WAKE && !ep->dead; k++) {
		n = recv(ep->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				kill_ep(dp, ep);
			return;
		}
		if (n == 0) {
			kill_ep(dp, ep);
			return;
		}
		if ((size_t)n > IBMC_DP_MSG_MAX) {
			bad(dp, ep, -E2BIG, "message over IBMC_DP_MSG_MAX");
			continue;
		}
		one_msg(dp, ep, buf, (size_t)n);
	}
}

static void free_list(struct dp_qmsg *m)
{
	struct dp_qmsg *n;

	for (; m; m = n) {
		n = m->next;
		free(m);
	}
}

static void free_ep(struct dataplane *dp, struct dp_ep *ep)
{
	struct dp_qmsg **pp, *m;
	struct dp_ep **hp;
	struct dp_mlid *ml;
	int i;

	for (i = 0; i < ep->natt; i++) {
		ml = dp_mlid_get(dp, ep->att[i].mlid, false);
		if (ml && ml->attached > 0)
			ml->attached--;
	}
	if (ep->hca >= 0)
		for (hp = &dp->hca_eps[ep->hca]; *hp; hp = &(*hp)->hnext)
			if (*hp == ep) {
				*hp = ep->hnext;
				break;
			}
	/* Delayed packets for it go nowhere. */
	dp->delay_tail = NULL;
	for (pp = &dp->delay_head; (m = *pp);) {
		if (m->ep == ep) {
			*pp = m->next;
			free(m);
			continue;
		}
		dp->delay_tail = m;
		pp = &m->next;
	}
	dp_sa_forget(dp, ep);
	free_list(ep->qhead);
	free(ep->held);
	free(ep->att);
	close(ep->fd);
	free(ep);
	dp->nep--;
}

void dp_ep_reap(struct dataplane *dp)
{
	struct dp_ep **pp, *ep;

	for (pp = &dp->eps; (ep = *pp);) {
		if (!ep->dead) {
			pp = &ep->next;
			continue;
		}
		*pp = ep->next;
		ibmc_log(IBMC_LOG_INFO, "dataplane: endpoint %s qpn %u gone",
			 ep->hello ? ep->node : "?", ep->qpn);
		free_ep(dp, ep);
	}
}

void dp_ep_free_all(struct dataplane *dp)
{
	struct dp_ep *ep;

	for (ep = dp->eps; ep; ep = ep->next)
		ep->dead = true;
	dp_ep_reap(dp);
}
