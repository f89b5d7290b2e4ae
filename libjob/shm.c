/* SPDX-License-Identifier: BSD-3-Clause */
/* A node's shared-memory segment per communicator (see shm.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "libjob/comm.h"
#include "libjob/shm.h"
#include "libjob/topo.h"

/* The smallest segment: flags plus a few small calls' data, so that a
 * run of small collectives never grows it. */
#define SHM_MIN_DATA (64 * 1024)

static size_t data_off(int nlocal)
{
	size_t n = sizeof(struct ibmc__shm_hdr) +
		   sizeof(struct ibmc__shm_flags) * (size_t)nlocal;

	return (n + 63) & ~(size_t)63;
}

struct ibmc__shm *ibmc__shm_get(struct ibmc_comm *c)
{
	if (!c->shm)
		c->shm = calloc(1, sizeof(*c->shm));
	return c->shm;
}

static void unmap(struct ibmc__shm *s)
{
	if (s->hdr)
		munmap(s->hdr, (size_t)s->hdr->size);
	s->hdr = NULL;
	s->data = NULL;
	s->data_size = 0;
}

static void mapped(struct ibmc__shm *s, void *p, uint32_t stamp)
{
	s->hdr = p;
	s->data = (unsigned char *)p + s->hdr->data_off;
	s->data_size = (size_t)(s->hdr->size - s->hdr->data_off);
	s->first_stamp = stamp;
}

static int fail(struct ibmc_comm *c, struct ibmc__shm *s, const char *what,
		int err)
{
	ibmc_log(IBMC_LOG_ERROR,
		 "libibmcast: rank %d: communicator %08x: shared memory %s: %s failed: %s",
		 c->rank, c->id, s->name, what, strerror(err));
	return -err;
}

/* The leader's new segment: created, sized, initialized, announced. */
static int create(struct ibmc_comm *c, struct ibmc__shm *s, size_t need,
		  size_t old, int nlocal, uint32_t stamp)
{
	size_t off = data_off(nlocal), data = need;
	struct ibmc__shm_hdr *h;
	void *p;
	int fd, err;

	/* Grow by doubling at least, so a slowly growing size does not
	 * make a segment per call. */
	if (data < 2 * old)
		data = 2 * old;
	if (data < SHM_MIN_DATA)
		data = SHM_MIN_DATA;
	fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0)
		return fail(c, s, "shm_open", errno);
	s->created = 1;
	if (ftruncate(fd, (off_t)(off + data))) {
		err = errno;
		close(fd);
		shm_unlink(s->name);
		return fail(c, s, "ftruncate", err);
	}
	p = mmap(NULL, off + data, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	err = errno;
	close(fd);
	if (p == MAP_FAILED) {
		shm_unlink(s->name);
		return fail(c, s, "mmap", err);
	}
	h = p;
	h->nlocal = (uint32_t)nlocal;
	h->size = off + data;
	h->data_off = off;
	atomic_store(&h->attached, 1);
	atomic_store_explicit(&h->ready, 1, memory_order_release);
	mapped(s, p, stamp);
	if (nlocal == 1)
		shm_unlink(s->name);	/* nobody else will map it */
	return 0;
}

/* A local rank maps the leader's segment once it is there and ready. */
static int attach(struct ibmc_comm *c, struct ibmc__shm *s, size_t need,
		  int nlocal, uint32_t stamp)
{
	struct stat st;
	void *p;
	int fd, err;

	if (!s->hdr) {
		fd = shm_open(s->name, O_RDWR, 0);
		if (fd < 0)
			return errno == ENOENT ? IBMC_INPROGRESS :
			       fail(c, s, "shm_open", errno);
		/* Created but not sized yet: look again. */
		if (fstat(fd, &st) || (size_t)st.st_size < data_off(nlocal) +
		    need) {
			close(fd);
			return IBMC_INPROGRESS;
		}
		p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, 0);
		err = errno;
		close(fd);
		if (p == MAP_FAILED)
			return fail(c, s, "mmap", err);
		s->hdr = p;
		/* The header's size is only valid once ready: keep the
		 * mapped length until then. */
		s->data_size = (size_t)st.st_size;
	}
	if (!atomic_load_explicit(&s->hdr->ready, memory_order_acquire))
		return IBMC_INPROGRESS;
	if (s->hdr->size != s->data_size || s->hdr->nlocal != (uint32_t)nlocal) {
		ibmc_log(IBMC_LOG_ERROR,
			 "libibmcast: rank %d: communicator %08x: shared memory %s is not the one this node's leader made for %d ranks",
			 c->rank, c->id, s->name, nlocal);
		return -EPROTO;
	}
	mapped(s, s->hdr, stamp);
	/* The last to map it removes the name: from now on a crash of any
	 * of them leaves nothing behind. */
	if (atomic_fetch_add(&s->hdr->attached, 1) + 1 == (uint32_t)nlocal)
		shm_unlink(s->name);
	return 0;
}

int ibmc__shm_ensure(struct ibmc_comm *c, size_t need, uint32_t stamp)
{
	const struct ibmc__topo *t = ibmc__comm_topo(c);
	struct ibmc__shm *s = ibmc__shm_get(c);
	size_t old;
	int rc;

	if (!t || !s)
		return -ENOMEM;
	if (s->hdr && !s->pending && s->data_size >= need)
		return 0;
	if (!s->pending) {
		old = s->data_size;
		unmap(s);
		s->gen++;
		s->created = 0;
		snprintf(s->name, sizeof(s->name),
			 "/ibmcast-%u-%08x-%08x-%08x-%u", (unsigned)getuid(),
			 c->ctx->job_key, c->id,
			 c->ctx->node[c->members[t->leaders[t->my_node]]],
			 s->gen);
		if (t->local_rank == 0)
			return create(c, s, need, old, t->local_size, stamp);
		s->pending = 1;
	}
	rc = attach(c, s, need, t->local_size, stamp);
	if (rc <= 0) {
		s->pending = 0;
		if (rc < 0 && s->hdr && !s->data) {
			munmap(s->hdr, s->data_size);
			s->hdr = NULL;
			s->data_size = 0;
		}
	}
	return rc;
}

void ibmc__shm_abandon(struct ibmc__shm *s)
{
	if (s && (s->created || s->pending || s->hdr))
		shm_unlink(s->name);
}

void ibmc__shm_free(struct ibmc__shm *s)
{
	if (!s)
		return;
	if (s->pending && s->hdr) {
		munmap(s->hdr, s->data_size);
		s->hdr = NULL;
	}
	if (s->hdr && atomic_load(&s->hdr->attached) < s->hdr->nlocal)
		shm_unlink(s->name);	/* some local rank never came */
	unmap(s);
	free(s);
}

/* Whether local rank i's written (which 0) or copied (1) flag reached
 * stamp. */
static int flag_reached(const struct ibmc__shm *s, int i, int which,
			uint32_t stamp)
{
	uint32_t f = atomic_load_explicit(which ? &s->hdr->flag[i].copied :
					  &s->hdr->flag[i].written,
					  memory_order_acquire);

	return ibmc__stamp_reached(f, stamp);
}

static int count(const struct ibmc__shm *s, int nlocal, int which,
		 uint32_t stamp)
{
	int i, n = 0;

	for (i = 0; i < nlocal; i++)
		n += flag_reached(s, i, which, stamp);
	return n;
}

int ibmc__shm_call_begin(struct ibmc__shm_call *k, struct ibmc_comm *c)
{
	memset(k, 0, sizeof(*k));
	k->shm = ibmc__shm_get(c);
	if (!k->shm)
		return -ENOMEM;
	/* 0 is every flag's value in a new segment: never a call's. */
	k->stamp = ++k->shm->stamp;
	if (!k->stamp)
		k->stamp = ++k->shm->stamp;
	ibmc__shm_moved(k);
	return 0;
}

void ibmc__shm_moved(struct ibmc__shm_call *k)
{
	k->moved_ms = ibmc__now_ms();
}

int ibmc__shm_take(struct ibmc__shm_call *k, struct ibmc_comm *c,
		   size_t need)
{
	int rc;

	k->wait = IBMC__SHM_WAIT_NONE;	/* its own earlier call */
	rc = ibmc__shm_my_turn(k);
	if (rc)
		return rc;
	rc = ibmc__shm_ensure(c, need, k->stamp);
	if (rc == IBMC_INPROGRESS)
		k->wait = IBMC__SHM_WAIT_LEADER;
	return rc;
}

int ibmc__shm_leader_word(struct ibmc__shm_call *k, int64_t *beat,
			  uint32_t *steps)
{
	struct ibmc__shm_hdr *h = k->shm->hdr;
	uint64_t w;
	int64_t b;

	/* Its caller wants more from the leader until it ends the call. */
	k->wait = IBMC__SHM_WAIT_LEADER;
	w = atomic_load_explicit(&h->failed, memory_order_acquire);
	if ((uint32_t)(w >> 32) == k->stamp && (uint32_t)w) {
		k->wait = IBMC__SHM_WAIT_NONE;
		return -(int)(uint32_t)w;
	}
	b = atomic_load_explicit(&h->beat, memory_order_relaxed);
	if (b != *beat) {
		*beat = b;
		ibmc__shm_moved(k);
	}
	w = atomic_load_explicit(&h->steps, memory_order_acquire);
	if ((uint32_t)(w >> 32) != k->stamp)
		return 0;
	*steps = (uint32_t)w;
	return 1;
}

int ibmc__shm_my_turn(struct ibmc__shm_call *k)
{
	/* Stamps skip 0: the call before stamp 1 is numbered 0xffffffff,
	 * except the very first (finished is 0 then). */
	uint32_t prev = k->stamp - 1;

	if (k->shm->finished == prev ||
	    (prev == 0 && k->shm->finished == UINT32_MAX))
		return 0;
	ibmc__shm_moved(k);
	return IBMC_INPROGRESS;
}

void ibmc__shm_call_end(struct ibmc__shm_call *k)
{
	k->wait = IBMC__SHM_WAIT_NONE;
	if (k->shm && ibmc__stamp_reached(k->stamp, k->shm->finished))
		k->shm->finished = k->stamp;
}

/* The call now waits for flag which of one local rank (local >= 0) or
 * of all of them to reach stamp. */
static void waiting(struct ibmc__shm_call *k, int local, int which,
		    uint32_t stamp)
{
	k->wait = local >= 0 ? IBMC__SHM_WAIT_ONE : IBMC__SHM_WAIT_FLAGS;
	k->wait_local = local;
	k->wait_which = which;
	k->wait_stamp = stamp;
}

int ibmc__shm_wait_all(struct ibmc__shm_call *k, int nlocal, int which,
		       uint32_t stamp)
{
	int n = count(k->shm, nlocal, which, stamp);

	if (n != k->nseen) {
		k->nseen = n;
		ibmc__shm_moved(k);
	}
	if (n < nlocal) {
		waiting(k, -1, which, stamp);
		return IBMC_INPROGRESS;
	}
	k->nseen = 0;
	k->wait = IBMC__SHM_WAIT_NONE;
	return 0;
}

int ibmc__shm_wait_one(struct ibmc__shm_call *k, int local, int which,
		       uint32_t stamp)
{
	if (!flag_reached(k->shm, local, which, stamp)) {
		waiting(k, local, which, stamp);
		return IBMC_INPROGRESS;
	}
	k->wait = IBMC__SHM_WAIT_NONE;
	return 0;
}

int ibmc__shm_wait_free(struct ibmc__shm_call *k, int nlocal)
{
	if (k->stamp == k->shm->first_stamp)
		return 0;
	return ibmc__shm_wait_all(k, nlocal, 1, k->stamp - 1);
}

int ibmc__shm_waits_for(const struct ibmc__shm_call *k, struct ibmc_comm *c,
			int *ranks, int max)
{
	const struct ibmc__topo *tp = ibmc__comm_topo(c);
	const int *local;
	int i, n = 0;

	if (!tp || !k->shm || max < 1)
		return 0;
	local = tp->ranks + tp->first[tp->my_node];	/* leader first */
	switch (k->wait) {
	case IBMC__SHM_WAIT_LEADER:
		if (tp->local_rank)
			ranks[n++] = local[0];
		break;
	case IBMC__SHM_WAIT_ONE:
		if (k->shm->hdr && k->wait_local != tp->local_rank &&
		    !flag_reached(k->shm, k->wait_local, k->wait_which,
				  k->wait_stamp))
			ranks[n++] = local[k->wait_local];
		break;
	case IBMC__SHM_WAIT_FLAGS:
		for (i = 0; k->shm->hdr && i < tp->local_size && n < max; i++)
			if (i != tp->local_rank &&
			    !flag_reached(k->shm, i, k->wait_which,
					  k->wait_stamp))
				ranks[n++] = local[i];
		break;
	}
	return n;
}

int ibmc__shm_stale(const struct ibmc__shm_call *k, int timeout_ms)
{
	return timeout_ms && ibmc__now_ms() - k->moved_ms > timeout_ms;
}
