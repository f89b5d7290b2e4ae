/* SPDX-License-Identifier: BSD-3-Clause */
/* The control server's event loop. Every socket is non-blocking; limits on
 * connections, line length, time to send a request and unread replies keep
 * slow or hostile clients from holding anything for long. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/log.h"
#include "common/net.h"
#include "common/proto.h"
#include "ops.h"
#include "state.h"
#include "server.h"

#define MAX_OUT (2U * IBMC_PROTO_MAX_REPLY) /* unread bytes before we drop */
#define MAX_BAD_LINES 16           /* consecutive errors before we drop */

struct client {
	int fd;
	bool is_tcp;
	bool have_cred;
	uid_t uid;
	struct ibmc_linebuf in;
	char *out;
	size_t out_len, out_off;
	uint64_t since_ns; /* idle or partial-line timer start */
	bool parked;
	struct ibmc_wait wait;
	bool closing;      /* close once out is flushed */
	unsigned bad;
};

struct ibmc_server {
	struct ibmc_plugin *p;
	pthread_t thread;
	int wake_fd;
	int unix_fd, tcp_fd;
	char unix_path[108];
	struct client **cl;
	unsigned ncl;
	struct pollfd *pfd;
};

void ibmc__server_wake(struct ibmc_server *s)
{
	uint64_t one = 1;

	/* A failed write means the counter is saturated: a wake-up is
	 * pending anyway. */
	if (s && s->wake_fd >= 0)
		(void)!write(s->wake_fd, &one, sizeof(one));
}

static void client_free(struct client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	ibmc__linebuf_free(&c->in);
	free(c->out);
	free(c);
}

static void queue_reply(struct ibmc_server *s, struct client *c, json_t *r)
{
	char *line;
	size_t len;

	if (!r)
		r = ibmc__reply_error(IBMC_ERR_INTERNAL, "out of memory");
	line = r ? ibmc__json_line(r) : NULL;
	json_decref(r);
	if (!line) {
		c->closing = true;
		return;
	}
	len = strlen(line);
	if (c->out_len - c->out_off + len > MAX_OUT) {
		ibmc_log(IBMC_LOG_WARN, "client fd %d does not read its "
			 "replies; closing", c->fd);
		free(line);
		c->fd >= 0 ? shutdown(c->fd, SHUT_RDWR) : 0;
		c->closing = true;
		c->out_len = c->out_off = 0;
		return;
	}
	if (c->out_off == c->out_len) {
		free(c->out);
		c->out = line;
		c->out_len = len;
		c->out_off = 0;
	} else {
		char *n = realloc(c->out, c->out_len + len);

		if (!n) {
			free(line);
			c->closing = true;
			return;
		}
		memcpy(n + c->out_len, line, len);
		free(line);
		c->out = n;
		c->out_len += len;
	}
	(void)s;
}

static void count(struct ibmc_server *s, bool error)
{
	pthread_mutex_lock(&s->p->reg.lock);
	s->p->reg.counters.requests++;
	if (error)
		s->p->reg.counters.errors++;
	pthread_mutex_unlock(&s->p->reg.lock);
}

static void reply_error(struct ibmc_server *s, struct client *c,
			enum ibmc_err e, const char *detail)
{
	count(s, true);
	queue_reply(s, c, ibmc__reply_error(e, "%s", detail));
	if (++c->bad >= MAX_BAD_LINES) {
		ibmc_log(IBMC_LOG_WARN, "client fd %d: %u bad requests in a "
			 "row; closing", c->fd, c->bad);
		c->closing = true;
	}
}

/* One request line: authenticate, decode, dispatch. */
static void handle_line(struct ibmc_server *s, struct client *c, char *line,
			size_t len)
{
	struct ibmc_plugin *p = s->p;
	struct ibmc_request req;
	enum ibmc_err err = IBMC_ERR_BAD_REQUEST;
	char detail[256];
	json_error_t jerr;
	json_t *obj, *cred, *reply;
	char *payload = NULL;
	uid_t uid = c->uid;
	bool parked;
	int ret;

	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!obj || !json_is_object(obj)) {
		snprintf(detail, sizeof(detail), "invalid JSON: %s",
			 obj ? "a request must be an object" : jerr.text);
		json_decref(obj);
		reply_error(s, c, IBMC_ERR_BAD_REQUEST, detail);
		return;
	}
	cred = json_object_get(obj, "munge");
	if (cred) {
		gid_t gid;

		if (!json_is_string(cred) || json_object_size(obj) != 1) {
			json_decref(obj);
			reply_error(s, c, IBMC_ERR_BAD_REQUEST,
				    "munge: expected {\"munge\":\"<credential>"
				    "\"} and nothing else");
			return;
		}
		ret = ibmc__munge_unwrap(json_string_value(cred),
					 p->opt.munge_socket, &payload, &uid,
					 &gid, detail, sizeof(detail));
		json_decref(obj);
		obj = NULL;
		if (ret) {
			ibmc_log(IBMC_LOG_WARN,
				 "client fd %d: MUNGE credential refused: %s",
				 c->fd, detail);
			reply_error(s, c,
				    ret == -EACCES ? IBMC_ERR_UNAUTHORIZED
						   : IBMC_ERR_INTERNAL,
				    detail);
			return;
		}
		ret = ibmc__request_parse(payload, strlen(payload), &req, &err,
					  detail, sizeof(detail));
		free(payload);
	} else if (!c->have_cred) {
		json_decref(obj);
		reply_error(s, c, IBMC_ERR_UNAUTHORIZED,
			    "requests over TCP must be wrapped in a MUNGE "
			    "credential: {\"munge\":\"...\"}");
		return;
	} else {
		ret = ibmc__request_from_json(obj, &req, &err, detail,
					      sizeof(detail));
		json_decref(obj);
	}
	if (ret) {
		reply_error(s, c, err, detail);
		return;
	}
	reply = ibmc__op_dispatch(p, &req, uid, &c->wait, &parked);
	ibmc__request_clear(&req);
	if (parked) {
		c->parked = true;
		count(s, false);
		return;
	}
	{
		json_t *ok = json_object_get(reply, "ok");

		count(s, !json_is_true(ok));
		if (json_is_true(ok))
			c->bad = 0;
	}
	queue_reply(s, c, reply);
}

/* Handle every complete line already buffered, stopping at a wait that
 * must block: the lines behind it are answered after it, in order. */
static unsigned process_lines(struct ibmc_server *s, struct client *c)
{
	unsigned handled = 0;
	char *line;
	size_t len;

	while (!c->parked && !c->closing &&
	       (line = ibmc__linebuf_next(&c->in, &len))) {
		handle_line(s, c, line, len);
		handled++;
	}
	return handled;
}

static void read_client(struct ibmc_server *s, struct client *c)
{
	bool had_partial = c->in.len > 0;
	long n;

	n = ibmc__linebuf_fill(&c->in, c->fd);
	if (n == -EAGAIN)
		return;
	if (n == -EMSGSIZE) {
		count(s, true);
		queue_reply(s, c,
			    ibmc__reply_error(IBMC_ERR_BAD_REQUEST,
					      "request line exceeds %u bytes",
					      IBMC_PROTO_MAX_LINE));
		c->closing = true;
		return;
	}
	if (n <= 0 && n != -ENOBUFS) {
		c->closing = true;
		c->out_len = c->out_off = 0; /* nobody to read it */
		return;
	}
	/* The clock runs from the first byte of a request, so a client
	 * trickling bytes cannot hold its connection open for ever. */
	if (process_lines(s, c) || !had_partial)
		c->since_ns = ibmc__now_ns();
}

static void write_client(struct client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			c->closing = true;
			c->out_len = c->out_off = 0;
			return;
		}
		c->out_off += (size_t)n;
	}
}

static void accept_clients(struct ibmc_server *s, int lfd, bool is_tcp)
{
	while (s->ncl < s->p->opt.max_clients) {
		struct client *c;
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		gid_t gid;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				ibmc_log(IBMC_LOG_WARN, "accept: %s",
					 strerror(errno));
			return;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			return;
		}
		c->fd = fd;
		c->is_tcp = is_tcp;
		c->since_ns = ibmc__now_ns();
		ibmc__linebuf_init(&c->in, IBMC_PROTO_MAX_LINE);
		if (!is_tcp && !ibmc__peer_cred(fd, &c->uid, &gid))
			c->have_cred = true;
		s->cl[s->ncl++] = c;
	}
}

static void drop_client(struct ibmc_server *s, unsigned i)
{
	client_free(s->cl[i]);
	s->cl[i] = s->cl[--s->ncl];
}

/* Parked waits whose job changed or whose time ran out. */
static void check_waits(struct ibmc_server *s, uint64_t now)
{
	for (unsigned i = 0; i < s->ncl; i++) {
		struct client *c = s->cl[i];
		json_t *reply;

		if (!c->parked)
			continue;
		reply = ibmc__op_wait_check(s->p, &c->wait, now);
		if (!reply)
			continue;
		c->parked = false;
		c->since_ns = now;
		queue_reply(s, c, reply);
		process_lines(s, c);
		write_client(c);
	}
}

static int next_timeout_ms(struct ibmc_server *s, uint64_t now)
{
	uint64_t soonest = now + 1000000000ULL; /* lease checks */
	uint64_t idle = (uint64_t)s->p->opt.request_timeout_ms * 1000000ULL;

	for (unsigned i = 0; i < s->ncl; i++) {
		struct client *c = s->cl[i];
		uint64_t t = c->parked ? c->wait.deadline_ns
				       : c->since_ns + idle;

		if (t < soonest)
			soonest = t;
	}
	return soonest <= now ? 0 : (int)((soonest - now) / 1000000ULL) + 1;
}

static void *server_main(void *arg)
{
	struct ibmc_server *s = arg;
	struct ibmc_plugin *p = s->p;
	uint64_t next_lease_check = 0;

	while (!atomic_load(&p->stopping)) {
		unsigned nfd = 0, base;
		uint64_t now = ibmc__now_ns();
		int n;

		s->pfd[nfd++] = (struct pollfd){ s->wake_fd, POLLIN, 0 };
		if (s->ncl < p->opt.max_clients) {
			if (s->unix_fd >= 0)
				s->pfd[nfd++] =
					(struct pollfd){ s->unix_fd, POLLIN, 0 };
			if (s->tcp_fd >= 0)
				s->pfd[nfd++] =
					(struct pollfd){ s->tcp_fd, POLLIN, 0 };
		}
		base = nfd;
		for (unsigned i = 0; i < s->ncl; i++) {
			struct client *c = s->cl[i];
			short ev = c->parked || c->closing ? 0 : POLLIN;

			if (c->out_off < c->out_len)
				ev |= POLLOUT;
			s->pfd[nfd++] = (struct pollfd){ c->fd, ev, 0 };
		}
		n = poll(s->pfd, nfd, next_timeout_ms(s, now));
		if (n < 0 && errno != EINTR) {
			ibmc_log(IBMC_LOG_ERROR, "poll: %s", strerror(errno));
			usleep(100000);
			continue;
		}
		now = ibmc__now_ns();

		for (unsigned k = base; k < nfd; k++) {
			struct client *c = s->cl[k - base];
			short re = s->pfd[k].revents;

			if (re & POLLIN)
				read_client(s, c);
			else if (re & (POLLHUP | POLLERR | POLLNVAL)) {
				c->closing = true;
				c->parked = false;
				c->out_len = c->out_off = 0;
			}
			if (c->out_off < c->out_len)
				write_client(c);
		}
		if (s->pfd[0].revents & POLLIN) {
			uint64_t v;

			/* Non-blocking: a failure means nothing pending. */
			(void)!read(s->wake_fd, &v, sizeof(v));
		}
		/* Reservations from the state file (or mirrored from the
		 * master while we were standby) get their groups once this
		 * SM is master and the subnet is up. */
		ibmc__state_mirror_peer(p, now);
		if (ibmc__state_restore_pending(p))
			now = ibmc__now_ns();
		check_waits(s, now);
		if (now >= next_lease_check) {
			ibmc__op_expire_leases(p, now);
			next_lease_check = now + 1000000000ULL;
		}
		/* Time limits, then drop the closed. Walk backwards because
		 * drop_client moves the last client into the hole. */
		for (unsigned i = s->ncl; i-- > 0;) {
			struct client *c = s->cl[i];
			uint64_t idle = (uint64_t)p->opt.request_timeout_ms *
					1000000ULL;
			/* read_client stamps since_ns after now was taken: an
			 * unsigned now - since_ns would wrap and close every
			 * client that was just answered. */
			uint64_t age = now > c->since_ns ? now - c->since_ns : 0;

			if (!c->parked && !c->closing && age >= idle) {
				if (c->in.len) {
					count(s, true);
					queue_reply(s, c, ibmc__reply_error(
						IBMC_ERR_BAD_REQUEST,
						"request not completed within "
						"%u ms", p->opt.request_timeout_ms));
					write_client(c);
				}
				c->closing = true;
			}
			if (c->closing && c->out_off >= c->out_len)
				drop_client(s, i);
			else if (c->closing && age >= 2 * idle)
				drop_client(s, i); /* never read its reply */
		}
		/* Accept last, so fresh clients get a full first poll. */
		for (unsigned k = 1; k < base; k++)
			if (s->pfd[k].revents & POLLIN)
				accept_clients(s, s->pfd[k].fd,
					       s->pfd[k].fd == s->tcp_fd);
	}
	return NULL;
}

static int write_addr_file(struct ibmc_server *s)
{
	const struct ibmc_options *o = &s->p->opt;
	char tmp[4200];
	FILE *f;
	int ret = 0;

	if (!o->addr_file)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", o->addr_file);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (s->unix_fd >= 0)
		fprintf(f, "IBMCAST_SERVER=unix:%s\n", o->unix_path);
	if (s->tcp_fd >= 0) {
		struct ibmc_addr a;

		if (!ibmc__addr_parse(o->tcp, &a))
			fprintf(f, "IBMCAST_SERVER_TCP=tcp:%s:%d\n",
				strcmp(a.host, "0.0.0.0") ? a.host
							  : "127.0.0.1",
				ibmc__bound_port(s->tcp_fd));
	}
	if (fclose(f))
		ret = -errno;
	if (!ret && rename(tmp, o->addr_file))
		ret = -errno;
	return ret;
}

static int open_listeners(struct ibmc_server *s)
{
	const struct ibmc_options *o = &s->p->opt;
	/* At job start every node of a large job connects at once; a short
	 * backlog turns that burst into seconds of SYN retransmits. */
	int backlog = o->max_clients > 128 ? (int)o->max_clients : 128;
	struct ibmc_addr a;
	char where[300];
	int fd;

	if (o->unix_path && *o->unix_path) {
		memset(&a, 0, sizeof(a));
		a.is_unix = true;
		if (strlen(o->unix_path) >= sizeof(a.path)) {
			ibmc_log(IBMC_LOG_ERROR, "unix=%s: path too long",
				 o->unix_path);
			return -ENAMETOOLONG;
		}
		strcpy(a.path, o->unix_path);
		fd = ibmc__listen(&a, backlog);
		if (fd < 0) {
			ibmc_log(IBMC_LOG_ERROR, "cannot listen on unix:%s: %s",
				 o->unix_path, strerror(-fd));
			return fd;
		}
		s->unix_fd = fd;
		strcpy(s->unix_path, a.path);
	}
	if (o->tcp && *o->tcp) {
		if (ibmc__addr_parse(o->tcp, &a) || a.is_unix) {
			ibmc_log(IBMC_LOG_ERROR, "tcp=%s: expected HOST:PORT",
				 o->tcp);
			return -EINVAL;
		}
		fd = ibmc__listen(&a, backlog);
		if (fd < 0) {
			ibmc__addr_format(&a, where, sizeof(where));
			ibmc_log(IBMC_LOG_ERROR, "cannot listen on %s: %s",
				 where, strerror(-fd));
			return fd;
		}
		s->tcp_fd = fd;
	}
	if (s->unix_fd < 0 && s->tcp_fd < 0) {
		ibmc_log(IBMC_LOG_ERROR, "neither unix= nor tcp= is set");
		return -EINVAL;
	}
	return 0;
}

static void server_free(struct ibmc_server *s)
{
	for (unsigned i = 0; i < s->ncl; i++)
		client_free(s->cl[i]);
	free(s->cl);
	free(s->pfd);
	if (s->unix_fd >= 0) {
		close(s->unix_fd);
		unlink(s->unix_path);
	}
	if (s->tcp_fd >= 0)
		close(s->tcp_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	free(s);
}

int ibmc__server_start(struct ibmc_plugin *p, struct ibmc_server **out)
{
	struct ibmc_server *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->p = p;
	s->unix_fd = s->tcp_fd = -1;
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->cl = calloc(p->opt.max_clients, sizeof(*s->cl));
	s->pfd = calloc(p->opt.max_clients + 3, sizeof(*s->pfd));
	if (s->wake_fd < 0 || !s->cl || !s->pfd) {
		ret = s->wake_fd < 0 ? -errno : -ENOMEM;
		goto err;
	}
	ret = open_listeners(s);
	if (ret)
		goto err;
	ret = write_addr_file(s);
	if (ret) {
		ibmc_log(IBMC_LOG_ERROR, "cannot write addr_file %s: %s",
			 p->opt.addr_file, strerror(-ret));
		goto err;
	}
	ret = pthread_create(&s->thread, NULL, server_main, s);
	if (ret) {
		ret = -ret;
		goto err;
	}
	*out = s;
	return 0;
err:
	server_free(s);
	return ret;
}

void ibmc__server_stop(struct ibmc_server *s)
{
	if (!s)
		return;
	ibmc__server_wake(s);
	pthread_join(s->thread, NULL);
	server_free(s);
}
