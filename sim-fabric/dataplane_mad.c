/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_mad.c - SMPs and SA MADs from the daemon's one umad port,
 * asynchronously: a window of requests in flight, retries on timeout.
 *
 * Under umad2sim the umad fd is not a real file: poll() on it together
 * with sockets would wait on it alone. So the main loop never polls it;
 * dp_mad_progress() drains it with zero-timeout reads instead, and the
 * loop wakes every millisecond while requests are under way. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include "common/clock.h"
#include "sim-fabric/dataplane.h"

#define MAD_TRIES 3
/* The SA answers an MCMemberRecord Set or Delete only once it holds
 * OpenSM's lock, which a sweep keeps while it computes and writes the
 * multicast tables: on a loaded host (the plugin under a sanitizer, other
 * fabrics beside) longer than three SMP timeouts. A leave that times out
 * leaves the port a member, so SA requests wait at least this long per
 * try, as libjob's own SA client on hardware does (sa_join_umad.c). */
#define SA_TIMEOUT_MS 1000
/* umad2sim copies whole simulator packets into receive buffers.
 * The MAD lands at struct ib_user_mad's data, 64 bytes in, where this
 * libibumad's umad_size() says 56: the buffer is sized by the struct, or a
 * receive of the full length would end 8 bytes past it. */
#define UMAD_ROOM 1024

struct dp_mad {
	int fd, smi_agent, sa_agent;
	int timeout_ms, window;
	void *umad;
	uint32_t tid;
	struct dp_mad_req *queue, *queue_tail;	/* not sent yet */
	struct dp_mad_req *inflight;
	int ninflight;
	unsigned long sent, errors;
};

int dp_mad_open(struct dp_mad **out, int timeout_ms, int window)
{
	struct dp_mad *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->timeout_ms = timeout_ms;
	m->window = window;
	m->umad = calloc(1, sizeof(struct ib_user_mad) + UMAD_ROOM);
	if (!m->umad)
		goto err;
	if (umad_init() < 0)
		goto err;
	m->fd = umad_open_port(NULL, 0);
	if (m->fd < 0)
		goto err;
	m->smi_agent = umad_register(m->fd, IB_SMI_CLASS, 1, 0, NULL);
	m->sa_agent = umad_register(m->fd, IB_SA_CLASS, 2, 0, NULL);
	if (m->smi_agent < 0 || m->sa_agent < 0) {
		umad_close_port(m->fd);
		goto err;
	}
	m->tid = (uint32_t)random();
	*out = m;
	return 0;
err:
	free(m->umad);
	free(m);
	return -EIO;
}

static void free_list(struct dp_mad_req *r, int status)
{
	struct dp_mad_req *n;

	for (; r; r = n) {
		n = r->next;
		if (status && r->done)
			r->done(r->arg, status, NULL);
		free(r);
	}
}

void dp_mad_close(struct dp_mad *m)
{
	if (!m)
		return;
	free_list(m->queue, 0);
	free_list(m->inflight, 0);
	umad_close_port(m->fd);
	free(m->umad);
	free(m);
}

int dp_mad_submit(struct dp_mad *m, const struct dp_mad_req *r)
{
	struct dp_mad_req *c = malloc(sizeof(*c));

	if (!c)
		return -ENOMEM;
	*c = *r;
	c->tries = 0;
	c->next = NULL;
	if (m->queue_tail)
		m->queue_tail->next = c;
	else
		m->queue = c;
	m->queue_tail = c;
	return 0;
}

static int send_one(struct dp_mad *m, struct dp_mad_req *r)
{
	ib_rpc_t rpc = { 0 };
	ib_portid_t dst = { 0 };
	int sa = r->mgmt_class == IB_SA_CLASS;
	int timeout = sa && m->timeout_ms < SA_TIMEOUT_MS ? SA_TIMEOUT_MS :
							      m->timeout_ms;

	memset(m->umad, 0, sizeof(struct ib_user_mad) + UMAD_ROOM);
	rpc.mgtclass = r->mgmt_class;
	rpc.method = r->method;
	rpc.attr.id = r->attr_id;
	rpc.attr.mod = r->attr_mod;
	rpc.timeout = (unsigned)timeout;
	if (sa) {
		rpc.datasz = IB_SA_DATA_SIZE;
		rpc.dataoffs = IB_SA_DATA_OFFS;
		rpc.mask = r->comp_mask;
		dst.qp = 1;
		dst.qkey = IB_DEFAULT_QP1_QKEY;
	} else {
		rpc.datasz = IB_SMP_DATA_SIZE;
		rpc.dataoffs = IB_SMP_DATA_OFFS;
	}
	m->tid++;
	if (!m->tid)
		m->tid = 1;
	r->tid = m->tid;
	rpc.trid = r->tid;
	dst.lid = r->dlid;
	if (mad_build_pkt(m->umad, &rpc, &dst, NULL, r->data) < 0)
		return -EINVAL;
	if (umad_send(m->fd, sa ? m->sa_agent : m->smi_agent, m->umad,
		      IB_MAD_SIZE, timeout, 0) < 0)
		return -EIO;
	m->sent++;
	r->tries++;
	r->deadline = ibmc__now_ns() + (uint64_t)timeout * 1000000ull;
	return 0;
}

static void unlink_inflight(struct dp_mad *m, struct dp_mad_req *r)
{
	struct dp_mad_req **pp;

	for (pp = &m->inflight; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			m->ninflight--;
			return;
		}
}

static void take(struct dp_mad *m)
{
	uint8_t *mad = umad_get_mad(m->umad);
	uint32_t tid = (uint32_t)mad_get_field64(mad, 0, IB_MAD_TRID_F);
	struct dp_mad_req *r;
	int st;

	if (!mad_get_field(mad, 0, IB_MAD_RESPONSE_F))
		return;
	for (r = m->inflight; r && r->tid != tid; r = r->next)
		;
	if (!r)
		return;
	if (umad_status(m->umad)) {
		r->deadline = 0;	/* retry at once */
		return;
	}
	unlink_inflight(m, r);
	st = (int)mad_get_field(mad, 0, IB_MAD_STATUS_F);
	if (st)
		m->errors++;
	if (r->done)
		r->done(r->arg, st ? -EREMOTEIO : 0, mad);
	free(r);
}

int dp_mad_progress(struct dp_mad *m)
{
	struct dp_mad_req *r, *n;
	uint64_t now;
	int len, k;

	/* Answers first: each frees a slot of the window. */
	for (k = 0; k < 256; k++) {
		len = UMAD_ROOM;
		if (umad_recv(m->fd, m->umad, &len, 0) < 0)
			break;
		take(m);
	}
	now = ibmc__now_ns();
	for (r = m->inflight; r; r = n) {
		n = r->next;
		if (r->deadline > now)
			continue;
		if (r->tries < MAD_TRIES && !send_one(m, r))
			continue;
		unlink_inflight(m, r);
		m->errors++;
		if (r->done)
			r->done(r->arg, -ETIMEDOUT, NULL);
		free(r);
	}
	while (m->queue && m->ninflight < m->window) {
		r = m->queue;
		m->queue = r->next;
		if (!m->queue)
			m->queue_tail = NULL;
		r->next = NULL;
		if (send_one(m, r)) {
			m->errors++;
			if (r->done)
				r->done(r->arg, -EIO, NULL);
			free(r);
			continue;
		}
		r->next = m->inflight;
		m->inflight = r;
		m->ninflight++;
	}
	return m->ninflight + (m->queue ? 1 : 0);
}

unsigned long dp_mad_count(struct dp_mad *m, unsigned long *errors)
{
	*errors = m->errors;
	return m->sent;
}
