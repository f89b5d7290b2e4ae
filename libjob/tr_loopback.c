/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loopback transport: an in-process hub where several contexts (one
 * per rank, each in its own thread) exchange datagrams as UD QPs would:
 * unreliable, bounded receive queues, multicast to the slots attached to an
 * MGID (never back to the sender). Faults are injected per datagram from a
 * seeded generator (loss, duplication, reordering, broken multicast), so
 * protocol tests are reproducible up to thread scheduling.
 *
 * IBMCAST_LOOPBACK_MTU sets the datagram limit (default 4096 bytes).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "libjob/transport.h"

#define LB_QUEUE_MAX 8192	/* like a receive queue: full means lost */
#define LB_GROUPS 64
#define LB_MAGIC 0x4c42		/* "LB" */

struct lb_pkt {
	struct lb_pkt *next;
	size_t len;
	int is_mcast;
	unsigned char data[];
};

struct lb_slot {
	int open;
	struct lb_pkt *head, *tail, *held, *last;
	int count;
	int attached[LB_GROUPS];
	uint8_t mgid[LB_GROUPS][16];
	pthread_cond_t cv;
};

struct lb_hub {
	struct lb_hub *next;
	char name[64];
	int size, refs;
	struct lb_slot *slots;
	struct ibmc_loopback_faults f;
	uint64_t rng;
	pthread_mutex_t mu;
};

struct ibmc_tr {
	struct lb_hub *hub;
	int slot;
	size_t mtu;
};

static struct lb_hub *hubs;
static pthread_mutex_t reg = PTHREAD_MUTEX_INITIALIZER;

/* splitmix64: small, seedable, good enough for fault dice. */
static uint32_t dice(struct lb_hub *h)
{
	uint64_t z = (h->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)((z ^ (z >> 31)) % 1000000u);
}

/* Called with reg held. */
static struct lb_hub *hub_get(const char *name)
{
	struct lb_hub *h;

	for (h = hubs; h; h = h->next)
		if (!strcmp(h->name, name))
			return h;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->rng = 1;
	pthread_mutex_init(&h->mu, NULL);
	h->next = hubs;
	hubs = h;
	return h;
}

static void hub_put(struct lb_hub *h)
{
	struct lb_hub **pp;
	int i;

	if (--h->refs > 0)
		return;
	for (pp = &hubs; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	for (i = 0; i < h->size; i++)
		pthread_cond_destroy(&h->slots[i].cv);
	pthread_mutex_destroy(&h->mu);
	free(h->slots);
	free(h);
}

int ibmc__loopback_set_faults(const char *hub,
			      const struct ibmc_loopback_faults *f)
{
	struct lb_hub *h;

	if (!hub || !f)
		return -EINVAL;
	pthread_mutex_lock(&reg);
	h = hub_get(hub);
	if (h) {
		pthread_mutex_lock(&h->mu);
		h->f = *f;
		h->rng = f->seed ? f->seed : 1;
		pthread_mutex_unlock(&h->mu);
	}
	pthread_mutex_unlock(&reg);
	return h ? 0 : -ENOMEM;
}

static void free_list(struct lb_pkt *p)
{
	struct lb_pkt *n;

	for (; p; p = n) {
		n = p->next;
		free(p);
	}
}

static int lb_open(const struct ibmc_tr_config *cfg, struct ibmc_tr **out)
{
	const char *m = getenv("IBMCAST_LOOPBACK_MTU");
	struct ibmc_tr *tr;
	struct lb_hub *h;
	pthread_condattr_t ca;
	int i, rc = 0;

	if (!cfg->hub || cfg->size < 1 || cfg->rank < 0 ||
	    cfg->rank >= cfg->size)
		return -EINVAL;
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	tr->mtu = m && *m ? strtoul(m, NULL, 10) : 4096;
	if (tr->mtu < 128 || tr->mtu > 65536) {
		free(tr);
		return -EINVAL;
	}
	pthread_mutex_lock(&reg);
	h = hub_get(cfg->hub);
	if (!h) {
		rc = -ENOMEM;
		goto out;
	}
	if (!h->slots) {
		h->slots = calloc((size_t)cfg->size, sizeof(*h->slots));
		if (!h->slots) {
			rc = -ENOMEM;
			goto out;
		}
		h->size = cfg->size;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		for (i = 0; i < h->size; i++)
			pthread_cond_init(&h->slots[i].cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (h->size != cfg->size) {
		rc = -EINVAL;
		goto out;
	}
	pthread_mutex_lock(&h->mu);
	if (h->slots[cfg->rank].open)
		rc = -EADDRINUSE;
	else
		h->slots[cfg->rank].open = 1;
	pthread_mutex_unlock(&h->mu);
	if (!rc) {
		h->refs++;
		tr->hub = h;
		tr->slot = cfg->rank;
	}
out:
	if (rc && h && !h->refs) {
		h->refs = 1;
		hub_put(h);
	}
	pthread_mutex_unlock(&reg);
	if (rc)
		free(tr);
	else
		*out = tr;
	return rc;
}

static void lb_close(struct ibmc_tr *tr)
{
	struct lb_slot *s;

	if (!tr)
		return;
	pthread_mutex_lock(&reg);
	pthread_mutex_lock(&tr->hub->mu);
	s = &tr->hub->slots[tr->slot];
	free_list(s->head);
	free(s->held);
	free(s->last);
	s->head = s->tail = s->held = s->last = NULL;
	s->count = 0;
	s->open = 0;
	memset(s->attached, 0, sizeof(s->attached));
	pthread_mutex_unlock(&tr->hub->mu);
	hub_put(tr->hub);
	pthread_mutex_unlock(&reg);
	free(tr);
}

static int lb_local_addr(struct ibmc_tr *tr, struct ibmc_tr_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->bytes[0] = LB_MAGIC >> 8;
	a->bytes[1] = LB_MAGIC & 0xff;
	memcpy(a->bytes + 2, &tr->slot, sizeof(tr->slot));
	return 0;
}

static size_t lb_mtu(struct ibmc_tr *tr)
{
	return tr->mtu;
}

static int lb_peer_add(struct ibmc_tr *tr, const struct ibmc_tr_addr *a)
{
	int slot;

	if (a->bytes[0] != LB_MAGIC >> 8 || a->bytes[1] != (LB_MAGIC & 0xff))
		return -EINVAL;
	memcpy(&slot, a->bytes + 2, sizeof(slot));
	if (slot < 0 || slot >= tr->hub->size)
		return -EINVAL;
	return slot;
}

static void push(struct lb_slot *s, struct lb_pkt *p)
{
	if (s->count >= LB_QUEUE_MAX) {
		free(p);
		return;
	}
	p->next = NULL;
	if (s->tail)
		s->tail->next = p;
	else
		s->head = p;
	s->tail = p;
	s->count++;
}

/* One datagram to one slot, through the fault dice. Hub lock held. */
static void deliver(struct lb_hub *h, int dst, const struct lb_pkt *src)
{
	struct lb_slot *s = &h->slots[dst];
	struct lb_pkt *p;
	int copies = 1, i;

	if (!s->open)
		return;
	if (src->is_mcast && h->f.mcast_broken)
		return;
	if (h->f.loss_ppm && dice(h) < h->f.loss_ppm)
		return;
	if (h->f.dup_ppm && dice(h) < h->f.dup_ppm)
		copies = 2;
	for (i = 0; i < copies; i++) {
		p = malloc(sizeof(*p) + src->len);
		if (!p)
			return;
		memcpy(p, src, sizeof(*p) + src->len);
		if (!s->held && h->f.reorder_ppm &&
		    dice(h) < h->f.reorder_ppm) {
			s->held = p;	/* goes after the next one */
			continue;
		}
		push(s, p);
		if (s->held) {
			push(s, s->held);
			s->held = NULL;
		}
	}
	/* Broadcast: the progress thread may wait beside a receiver. */
	pthread_cond_broadcast(&s->cv);
}

static struct lb_pkt *gather(struct ibmc_tr *tr, const struct iovec *iov,
			     int iovcnt, int is_mcast)
{
	struct lb_pkt *p;
	size_t len = 0, off = 0;
	int i;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > tr->mtu)
		return NULL;
	p = malloc(sizeof(*p) + len);
	if (!p)
		return NULL;
	p->len = len;
	p->is_mcast = is_mcast;
	for (i = 0; i < iovcnt; i++) {
		memcpy(p->data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return p;
}

static int lb_send(struct ibmc_tr *tr, int peer, const struct iovec *iov,
		   int iovcnt)
{
	struct lb_pkt *p;

	if (peer < 0 || peer >= tr->hub->size)
		return -EINVAL;
	p = gather(tr, iov, iovcnt, 0);
	if (!p)
		return -EMSGSIZE;
	pthread_mutex_lock(&tr->hub->mu);
	deliver(tr->hub, peer, p);
	pthread_mutex_unlock(&tr->hub->mu);
	free(p);
	return 0;
}

static int lb_mcast_supported(struct ibmc_tr *tr)
{
	return 0;
}

static int lb_mcast_attach(struct ibmc_tr *tr, const struct ibmc_tr_group *g)
{
	struct lb_slot *s;
	int i, rc = -ENOSPC;

	pthread_mutex_lock(&tr->hub->mu);
	s = &tr->hub->slots[tr->slot];
	for (i = 0; i < LB_GROUPS; i++)
		if (!s->attached[i]) {
			s->attached[i] = 1;
			memcpy(s->mgid[i], g->mgid, 16);
			rc = i;
			break;
		}
	pthread_mutex_unlock(&tr->hub->mu);
	return rc;
}

static int lb_mcast_detach(struct ibmc_tr *tr, int group)
{
	if (group < 0 || group >= LB_GROUPS)
		return -EINVAL;
	pthread_mutex_lock(&tr->hub->mu);
	tr->hub->slots[tr->slot].attached[group] = 0;
	pthread_mutex_unlock(&tr->hub->mu);
	return 0;
}

static int lb_mcast_send(struct ibmc_tr *tr, int group,
			 const struct iovec *iov, int iovcnt)
{
	struct lb_hub *h = tr->hub;
	struct lb_pkt *p;
	const uint8_t *mgid;
	int d, i;

	if (group < 0 || group >= LB_GROUPS)
		return -EINVAL;
	p = gather(tr, iov, iovcnt, 1);
	if (!p)
		return -EMSGSIZE;
	pthread_mutex_lock(&h->mu);
	if (!h->slots[tr->slot].attached[group]) {
		pthread_mutex_unlock(&h->mu);
		free(p);
		return -EINVAL;
	}
	mgid = h->slots[tr->slot].mgid[group];
	for (d = 0; d < h->size; d++) {
		if (d == tr->slot)
			continue;
		for (i = 0; i < LB_GROUPS; i++)
			if (h->slots[d].attached[i] &&
			    !memcmp(h->slots[d].mgid[i], mgid, 16)) {
				deliver(h, d, p);
				break;
			}
	}
	pthread_mutex_unlock(&h->mu);
	free(p);
	return 0;
}

static int lb_recv(struct ibmc_tr *tr, struct ibmc_tr_pkt *pkt,
		   int timeout_ms)
{
	struct lb_slot *s;
	struct timespec ts = ibmc__deadline_ts(CLOCK_MONOTONIC, timeout_ms);
	int rc = 0;

	pthread_mutex_lock(&tr->hub->mu);
	s = &tr->hub->slots[tr->slot];
	free(s->last);
	s->last = NULL;
	while (!s->head && !rc) {
		if (!timeout_ms)
			rc = ETIMEDOUT;
		else if (timeout_ms < 0)
			rc = pthread_cond_wait(&s->cv, &tr->hub->mu);
		else
			rc = pthread_cond_timedwait(&s->cv, &tr->hub->mu, &ts);
	}
	if (s->head) {
		struct lb_pkt *p = s->head;

		s->head = p->next;
		if (!s->head)
			s->tail = NULL;
		s->count--;
		s->last = p;
		pkt->data = p->data;
		pkt->len = p->len;
		pkt->is_mcast = p->is_mcast;
		rc = 0;
	}
	pthread_mutex_unlock(&tr->hub->mu);
	return rc ? -ETIMEDOUT : 0;
}

static int lb_wait(struct ibmc_tr *tr, int timeout_ms)
{
	struct lb_slot *s;
	struct timespec ts = ibmc__deadline_ts(CLOCK_MONOTONIC, timeout_ms);
	int rc = 0;

	pthread_mutex_lock(&tr->hub->mu);
	s = &tr->hub->slots[tr->slot];
	while (!s->head && !rc && timeout_ms > 0)
		rc = pthread_cond_timedwait(&s->cv, &tr->hub->mu, &ts);
	rc = s->head ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&tr->hub->mu);
	return rc;
}

const struct ibmc_tr_ops ibmc__tr_loopback_ops = {
	.name = "loopback",
	.open = lb_open,
	.close = lb_close,
	.local_addr = lb_local_addr,
	.mtu = lb_mtu,
	.peer_add = lb_peer_add,
	.send = lb_send,
	.mcast_supported = lb_mcast_supported,
	.mcast_attach = lb_mcast_attach,
	.mcast_detach = lb_mcast_detach,
	.mcast_send = lb_mcast_send,
	.recv = lb_recv,
	.wait = lb_wait,
};
