/* SPDX-License-Identifier: BSD-3-Clause */
/* LD_PRELOAD shim for clients of the simulated fabric: a request MAD that
 * never gets a response comes back through umad_recv() with status
 * ETIMEDOUT, as the kernel's MAD layer does and umad2sim does not.
 *
 * Without it a MAD that ibsim forwards to a client which never answers (an
 * SMInfo Get to a busy standby OpenSM) stays outstanding forever, and
 * OpenSM's state manager waits for it forever. Load it before
 * libumad2sim.so; it calls libibumad's own functions for everything. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/umad.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#include "common/clock.h"
#include "common/parse.h"

/* OpenSM keeps up to 1000 requests in flight; room for a few more users. */
#define MAX_PENDING	2048
/* Responses arriving after their request timed out, still recognised. */
#define MAX_EXPIRED	64
/* Longest single wait in the real umad_recv(), so that a deadline passing
 * while we wait is noticed soon. */
#define SLICE_MS	100
#define FLOOR_MS	1000
/* The kernel hands back only the common MAD header of a timed-out send. */
#define MAD_HDR		24
#define UMAD_HDR	sizeof(struct ib_user_mad)
#define LOG_BURST	10
#define LOG_WINDOW_MS	60000

struct key {
	int fd;
	uint8_t mgmt_class;
	uint32_t tid;		/* low half: umad2sim rewrites the high one */
};

struct pending {
	struct key k;
	int used;
	int64_t deadline;	/* CLOCK_MONOTONIC, ms */
	int64_t waited;		/* ms, for the log */
	unsigned char buf[UMAD_HDR + MAD_HDR];	/* header + MAD header */
};

static int (*real_send)(int, int, void *, int, int, int);
static int (*real_recv)(int, void *, int *, int);
static int (*real_poll)(int, int);
static int (*real_close)(int);
static int64_t floor_ms = FLOOR_MS;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending table[MAX_PENDING];
static int high;			/* slots [high, MAX) are all free */
static struct key expired[MAX_EXPIRED];
static int expired_next;
static int64_t log_window;
static int log_count, log_dropped;

static void init(void)
{
	const char *s = getenv("IBMCAST_UMAD_TIMEOUT_FLOOR_MS");
	long v;
	int i;

	for (i = 0; i < MAX_EXPIRED; i++)
		expired[i].fd = -1;
	real_send = (int (*)(int, int, void *, int, int, int))
		dlsym(RTLD_NEXT, "umad_send");
	real_recv = (int (*)(int, void *, int *, int))
		dlsym(RTLD_NEXT, "umad_recv");
	real_poll = (int (*)(int, int))dlsym(RTLD_NEXT, "umad_poll");
	real_close = (int (*)(int))dlsym(RTLD_NEXT, "umad_close_port");
	if (s && *s) {
		if (!ibmc__parse_long(s, 10, 0, 3600000, &v))
			floor_ms = v;
		else
			fprintf(stderr, "ibmcast-umadtimeout: "
				"IBMCAST_UMAD_TIMEOUT_FLOOR_MS='%s' is not a "
				"number of ms; using %d\n", s, FLOOR_MS);
	}
}

/* We are only ever loaded next to libibumad; without it the caller could
 * not have called us. Fail like a broken port rather than crash. */
static int ready(void)
{
	pthread_once(&once, init);
	return real_send && real_recv;
}

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint16_t get_be16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* As the kernel's ib_response_mad(): what answers a request. */
static int is_response(const unsigned char *mad)
{
	return (mad[3] & 0x80) || mad[3] == 0x07 ||	/* TrapRepress */
	       (mad[1] == 0x05 && (get_be32(mad + 20) & 1));	/* BM */
}

static struct key key_of(int fd, const unsigned char *mad)
{
	struct key k = { .fd = fd, .mgmt_class = mad[1],
			 .tid = get_be32(mad + 12) };
	return k;
}

static int same(const struct key *a, const struct key *b)
{
	return a->fd == b->fd && a->mgmt_class == b->mgmt_class &&
	       a->tid == b->tid;
}

/* Called with lock held. */
static struct pending *find(const struct key *k)
{
	int i;

	for (i = 0; i < high; i++)
		if (table[i].used && same(&table[i].k, k))
			return &table[i];
	return NULL;
}

static void forget(struct pending *p)
{
	p->used = 0;
	while (high > 0 && !table[high - 1].used)
		high--;
}

/* Formats one log line into out if the rate limit lets it through; the
 * caller writes it after dropping the lock. Called with lock held. */
static int log_line(char *out, size_t len, int64_t now, const char *what,
		    const unsigned char *mad, uint16_t lid, int64_t ms)
{
	int n = 0;

	if (now - log_window >= LOG_WINDOW_MS) {
		if (log_dropped)
			n = snprintf(out, len, "ibmcast-umadtimeout[%d]: %d "
				     "more not shown\n", (int)getpid(),
				     log_dropped);
		log_window = now;
		log_count = 0;
		log_dropped = 0;
	}
	if (log_count >= LOG_BURST) {
		log_dropped++;
		return n;
	}
	log_count++;
	n += snprintf(out + n, len - (size_t)n, "ibmcast-umadtimeout[%d]: %s: "
		      "class 0x%02x method 0x%02x attr 0x%04x mod 0x%08x "
		      "tid 0x%08" PRIx32 "%08" PRIx32 " %s %u after %" PRId64
		      " ms\n", (int)getpid(), what, mad[1], mad[3],
		      get_be16(mad + 16), get_be32(mad + 20),
		      get_be32(mad + 8), get_be32(mad + 12),
		      mad[1] == 0x81 ? "dr hops" : "lid",
		      mad[1] == 0x81 ? mad[7] : lid, ms);
	return n;
}

static void log_write(const char *s, int n)
{
	ssize_t w;

	if (n <= 0)
		return;
	do {
		w = write(STDERR_FILENO, s, (size_t)n);
	} while (w < 0 && errno == EINTR);
}

static void track(int fd, const void *umad, int length, int timeout_ms,
		  int retries)
{
	const unsigned char *mad = (const unsigned char *)umad + UMAD_HDR;
	struct key k = key_of(fd, mad);
	struct pending *p;
	int64_t tmo = timeout_ms > floor_ms ? timeout_ms : floor_ms;
	int i;

	if (retries < 0)
		retries = 0;
	pthread_mutex_lock(&lock);
	/* A resend of the same TID replaces its earlier send: one response
	 * answers both. */
	p = find(&k);
	for (i = 0; !p && i < MAX_PENDING; i++)
		if (!table[i].used)
			p = &table[i];
	if (p) {
		p->k = k;
		p->used = 1;
		p->waited = tmo * (retries + 1);
		p->deadline = ibmc__now_ms() + p->waited;
		memcpy(p->buf, umad, UMAD_HDR);
		memset(p->buf + UMAD_HDR, 0, MAD_HDR);
		memcpy(p->buf + UMAD_HDR, mad,
		       length < MAD_HDR ? (size_t)length : MAD_HDR);
		if (p - table >= high)
			high = (int)(p - table) + 1;
	}
	/* Full: that send is not tracked, as without us. */
	pthread_mutex_unlock(&lock);
}

static void untrack(int fd, const void *umad)
{
	struct key k = key_of(fd, (const unsigned char *)umad + UMAD_HDR);
	struct pending *p;

	pthread_mutex_lock(&lock);
	p = find(&k);
	if (p)
		forget(p);
	pthread_mutex_unlock(&lock);
}

int umad_send(int fd, int agentid, void *umad, int length, int timeout_ms,
	      int retries)
{
	const unsigned char *mad;
	int tracked = 0, ret;

	if (!ready()) {
		errno = ENOSYS;
		return -EIO;
	}
	mad = (const unsigned char *)umad + UMAD_HDR;
	/* Track before sending: the response may beat us back here. */
	if (umad && timeout_ms > 0 && length >= MAD_HDR &&
	    !is_response(mad)) {
		track(fd, umad, length, timeout_ms, retries);
		tracked = 1;
	}
	ret = real_send(fd, agentid, umad, length, timeout_ms, retries);
	if (ret < 0 && tracked) {
		int e = errno;

		untrack(fd, umad);
		errno = e;
	}
	return ret;
}

/* A received MAD: if it ends a pending send, forget that send. Returns 1
 * when it answers a send we already reported timed out: the kernel drops
 * such a late response, and callers (libibnetdisc) treat an unexpected
 * one as an error. */
static int received(int fd, const void *umad, int length)
{
	const unsigned char *mad = (const unsigned char *)umad + UMAD_HDR;
	const struct ib_user_mad *hdr = umad;
	struct key k;
	struct pending *p;
	char msg[512];
	int i, late = 0, n = 0;

	if (length < MAD_HDR)
		return 0;
	/* ibsim bounces a request it cannot deliver with status 110: that
	 * ends the send too. */
	if (!is_response(mad) && !hdr->status)
		return 0;
	k = key_of(fd, mad);
	pthread_mutex_lock(&lock);
	p = find(&k);
	if (p) {
		forget(p);
	} else if (is_response(mad)) {
		for (i = 0; i < MAX_EXPIRED; i++) {
			if (expired[i].fd >= 0 && same(&expired[i], &k)) {
				expired[i].fd = -1;
				late = 1;
				n = log_line(msg, sizeof(msg), ibmc__now_ms(),
					     "dropped a response that came "
					     "after its request timed out",
					     mad, ntohs(hdr->addr.lid), 0);
				break;
			}
		}
	}
	pthread_mutex_unlock(&lock);
	log_write(msg, n);
	return late;
}

/* Moves the first expired send on fd into the caller's buffer as the
 * kernel would return it. Returns its agent id, or -1 when none expired;
 * *next gets the earliest deadline of fd's other sends. */
static int take_expired(int fd, void *umad, int *length, int64_t *next)
{
	struct ib_user_mad *hdr = umad;
	struct pending *p = NULL;
	int64_t now = ibmc__now_ms();
	char msg[512];
	int i, n = 0, agent = -1, cap = *length;

	*next = INT64_MAX;
	pthread_mutex_lock(&lock);
	for (i = 0; i < high; i++) {
		if (!table[i].used || table[i].k.fd != fd)
			continue;
		if (table[i].deadline <= now) {
			p = &table[i];
			break;
		}
		if (table[i].deadline < *next)
			*next = table[i].deadline;
	}
	if (p) {
		memcpy(umad, p->buf, UMAD_HDR);
		memcpy((unsigned char *)umad + UMAD_HDR, p->buf + UMAD_HDR,
		       cap < MAD_HDR ? (size_t)(cap > 0 ? cap : 0) : MAD_HDR);
		hdr->status = ETIMEDOUT;
		*length = MAD_HDR;
		agent = (int)hdr->agent_id;
		n = log_line(msg, sizeof(msg), now,
			     "no response, returning the send with ETIMEDOUT",
			     p->buf + UMAD_HDR, ntohs(hdr->addr.lid),
			     p->waited);
		expired[expired_next] = p->k;
		expired_next = (expired_next + 1) % MAX_EXPIRED;
		forget(p);
	}
	pthread_mutex_unlock(&lock);
	log_write(msg, n);
	return agent;
}

static int has_expired(int fd, int64_t *next)
{
	int64_t now = ibmc__now_ms();
	int i, found = 0;

	*next = INT64_MAX;
	pthread_mutex_lock(&lock);
	for (i = 0; i < high && !found; i++) {
		if (!table[i].used || table[i].k.fd != fd)
			continue;
		if (table[i].deadline <= now)
			found = 1;
		else if (table[i].deadline < *next)
			*next = table[i].deadline;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

/* How long the next real wait may be: a slice, no later than the caller's
 * end (-1: none) nor the next deadline. 0 when the caller's time is up. */
static int slice(int64_t end, int64_t next)
{
	int64_t now = ibmc__now_ms(), s = SLICE_MS;

	if (end >= 0 && end - now < s)
		s = end - now;
	if (next != INT64_MAX && next - now < s)
		s = next - now;
	if (end >= 0 && s <= 0)
		return 0;
	return s < 1 ? 1 : (int)s;
}

/* The sanitizer suite exempts umad2sim's read() from the interceptors'
 * checks (tests/asan.supp: it copies a whole user MAD out of its own
 * shorter packet buffer), which would also hide a caller's receive buffer
 * shorter than the length it gives. So that is checked here, in
 * instrumented code, with the caller on the stack. Only memory the
 * sanitizer knows is checked: heap blocks and instrumented callers'
 * stacks. */
static void check_recv_buffer(void *umad, int cap)
{
#ifdef __SANITIZE_ADDRESS__
	size_t n = sizeof(struct ib_user_mad) + (size_t)(cap > 0 ? cap : 0);
	void *bad = __asan_region_is_poisoned(umad, n);

	if (bad) {
		fprintf(stderr, "libibmcast_umadtimeout: umad_recv() into %p "
			"with length %d: byte %zu of the %zu it may write is "
			"outside the buffer\n", umad, cap,
			(size_t)((char *)bad - (char *)umad), n);
		__sanitizer_print_stack_trace();
		abort();
	}
#else
	(void)umad;
	(void)cap;
#endif
}

int umad_recv(int fd, void *umad, int *length, int timeout_ms)
{
	int64_t end = timeout_ms < 0 ? -1 : ibmc__now_ms() + timeout_ms, next;
	int cap, ret, agent, wait;

	if (!ready()) {
		errno = ENOSYS;
		return -EIO;
	}
	if (!umad || !length)
		return real_recv(fd, umad, length, timeout_ms);
	cap = *length;
	check_recv_buffer(umad, cap);
	for (;;) {
		agent = take_expired(fd, umad, length, &next);
		if (agent >= 0) {
			errno = 0;
			return agent;
		}
		wait = timeout_ms ? slice(end, next) : 0;
		if (timeout_ms && !wait) {
			errno = ETIMEDOUT;
			return -ETIMEDOUT;
		}
		*length = cap;
		ret = real_recv(fd, umad, length, wait);
		if (ret >= 0) {
			if (received(fd, umad, *length))
				continue;
			return ret;
		}
		/* Our slice ended, not the caller's wait; umad2sim may also
		 * wake us for a MAD another reader took. */
		if (timeout_ms && (ret == -ETIMEDOUT || ret == -EWOULDBLOCK))
			continue;
		return ret;
	}
}

/* Nothing we know of calls it with umad2sim, but a caller polling before
 * umad_recv(.., 0) must see a timed-out send as readable too. */
int umad_poll(int fd, int timeout_ms)
{
	int64_t end = timeout_ms < 0 ? -1 : ibmc__now_ms() + timeout_ms, next;
	int ret, wait;

	if (!ready() || !real_poll) {
		errno = ENOSYS;
		return -EIO;
	}
	for (;;) {
		if (has_expired(fd, &next))
			return 0;
		wait = timeout_ms ? slice(end, next) : 0;
		if (timeout_ms && !wait)
			return -ETIMEDOUT;
		ret = real_poll(fd, wait);
		if (ret == -ETIMEDOUT && timeout_ms)
			continue;
		return ret;
	}
}

/* The kernel forgets a closed port's sends; so do we. */
int umad_close_port(int fd)
{
	int i;

	if (!ready() || !real_close) {
		errno = ENOSYS;
		return -EIO;
	}
	pthread_mutex_lock(&lock);
	for (i = 0; i < high; i++)
		if (table[i].used && table[i].k.fd == fd)
			table[i].used = 0;
	while (high > 0 && !table[high - 1].used)
		high--;
	for (i = 0; i < MAX_EXPIRED; i++)
		if (expired[i].fd == fd)
			expired[i].fd = -1;
	pthread_mutex_unlock(&lock);
	return real_close(fd);
}
