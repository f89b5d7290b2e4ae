/* SPDX-License-Identifier: BSD-3-Clause */
/* Stream-socket plumbing for the control protocol: address parsing,
 * listening, connecting and writing under a deadline, and line framing
 * that never holds more than one maximum-length line. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/net.h"
#include "common/parse.h"

/* Milliseconds left before deadline (-1: none), for poll(). */
static int left_ms(int64_t deadline)
{
	int64_t d;

	if (deadline < 0)
		return -1;
	d = deadline - ibmc__now_ms();
	if (d <= 0)
		return 0;
	return d > INT32_MAX ? INT32_MAX : (int)d;
}

static int64_t deadline_after(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : ibmc__now_ms() + timeout_ms;
}

/* --- addresses -------------------------------------------------------- */

static int parse_port(const char *s, char port[16])
{
	unsigned long v;

	if (ibmc__parse_ulong(s, 10, 0, 65535, &v))
		return -EINVAL;
	snprintf(port, 16, "%lu", v);
	return 0;
}

int ibmc__addr_parse(const char *s, struct ibmc_addr *a)
{
	const char *colon, *host;
	size_t hlen;

	memset(a, 0, sizeof(*a));
	if (!s || !*s)
		return -EINVAL;
	if (!strncmp(s, "unix:", 5) || s[0] == '/') {
		const char *path = s[0] == '/' ? s : s + 5;

		if (!*path || strlen(path) >= sizeof(a->path))
			return -EINVAL;
		a->is_unix = true;
		strcpy(a->path, path);
		return 0;
	}
	if (!strncmp(s, "tcp:", 4))
		s += 4;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		host = s + 1;
		hlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		host = s;
		hlen = (size_t)(colon - s);
		/* A bare IPv6 address is ambiguous without brackets. */
		if (memchr(host, ':', hlen))
			return -EINVAL;
	}
	if (!hlen || hlen >= sizeof(a->host))
		return -EINVAL;
	if (parse_port(colon + 1, a->port))
		return -EINVAL;
	memcpy(a->host, host, hlen);
	a->host[hlen] = '\0';
	return 0;
}

void ibmc__addr_format(const struct ibmc_addr *a, char *buf, size_t len)
{
	if (a->is_unix)
		snprintf(buf, len, "unix:%s", a->path);
	else if (strchr(a->host, ':'))
		snprintf(buf, len, "tcp:[%s]:%s", a->host, a->port);
	else
		snprintf(buf, len, "tcp:%s:%s", a->host, a->port);
}

static int gai_errno(int rc)
{
	switch (rc) {
	case EAI_SYSTEM:
		return errno ? -errno : -EIO;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_AGAIN:
		return -EAGAIN;
	default:
		/* Name does not resolve or is not usable for TCP. */
		return -EHOSTUNREACH;
	}
}

static int unix_sockaddr(const struct ibmc_addr *a, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(a->path) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	strcpy(sun->sun_path, a->path);
	return 0;
}

/* --- listening -------------------------------------------------------- */

/* Remove path if it is a socket nobody listens on any more; a live one is
 * -EADDRINUSE, anything that is not a socket is left alone (-EEXIST). */
static int unlink_stale(const struct sockaddr_un *sun)
{
	struct stat st;
	int fd, rc;

	if (lstat(sun->sun_path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (!rc)
		return -EADDRINUSE;
	if (unlink(sun->sun_path) && errno != ENOENT)
		return -errno;
	return 0;
}

static int listen_unix(const struct ibmc_addr *a, int backlog)
{
	struct sockaddr_un sun;
	int fd, rc;

	rc = unix_sockaddr(a, &sun);
	if (rc)
		return rc;
	rc = unlink_stale(&sun);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)))
		goto err;
	/* Anyone may connect; each request is judged by SO_PEERCRED. */
	if (chmod(sun.sun_path, 0666) || listen(fd, backlog)) {
		rc = -errno;
		unlink(sun.sun_path);
		close(fd);
		return rc;
	}
	return fd;
err:
	rc = -errno;
	close(fd);
	return rc;
}

static int listen_tcp(const struct ibmc_addr *a, int backlog)
{
	struct addrinfo hints = { 0 }, *res, *ai;
	const char *host = a->host;
	int fd = -1, rc, one = 1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (!strcmp(host, "*"))
		host = NULL;
	rc = getaddrinfo(host, a->port, &hints, &res);
	if (rc)
		return gai_errno(rc);
	rc = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family,
			    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
			       sizeof(one)) ||
		    bind(fd, ai->ai_addr, ai->ai_addrlen) ||
		    listen(fd, backlog)) {
			rc = -errno;
			close(fd);
			fd = -1;
			continue;
		}
		break;
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : rc;
}

int ibmc__listen(const struct ibmc_addr *a, int backlog)
{
	return a->is_unix ? listen_unix(a, backlog) : listen_tcp(a, backlog);
}

int ibmc__bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -errno;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -EAFNOSUPPORT;
}

/* --- connecting ------------------------------------------------------- */

static int set_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		return -errno;
	return 0;
}

/* Non-blocking connect finished by poll(), so the deadline holds. */
static int connect_one(int family, const struct sockaddr *sa, socklen_t len,
		       int64_t deadline)
{
	struct pollfd pfd;
	socklen_t elen = sizeof(int);
	int fd, rc, soerr = 0;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (!connect(fd, sa, len))
			goto done;
		rc = -errno;
		if (rc == -EINTR)
			continue;
		/* A Unix listener with a full backlog says EAGAIN instead
		 * of queueing us; retry briefly until the deadline. */
		if (rc == -EAGAIN && family == AF_UNIX) {
			int t = left_ms(deadline);

			if (!t)
				goto timeout;
			poll(NULL, 0, t < 0 || t > 10 ? 10 : t);
			continue;
		}
		if (rc != -EINPROGRESS)
			goto err;
		break;
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	for (;;) {
		rc = poll(&pfd, 1, left_ms(deadline));
		if (rc > 0)
			break;
		if (!rc)
			goto timeout;
		if (errno != EINTR) {
			rc = -errno;
			goto err;
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &elen)) {
		rc = -errno;
		goto err;
	}
	if (soerr) {
		rc = -soerr;
		goto err;
	}
done:
	rc = set_blocking(fd);
	if (rc)
		goto err;
	return fd;
timeout:
	rc = -ETIMEDOUT;
err:
	close(fd);
	return rc;
}

int ibmc__connect(const struct ibmc_addr *a, int timeout_ms)
{
	int64_t deadline = deadline_after(timeout_ms);
	struct addrinfo hints = { 0 }, *res, *ai;
	int rc;

	if (a->is_unix) {
		struct sockaddr_un sun;

		rc = unix_sockaddr(a, &sun);
		if (rc)
			return rc;
		return connect_one(AF_UNIX, (struct sockaddr *)&sun,
				   sizeof(sun), deadline);
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(a->host, a->port, &hints, &res);
	if (rc)
		return gai_errno(rc);
	rc = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		rc = connect_one(ai->ai_family, ai->ai_addr, ai->ai_addrlen,
				 deadline);
		if (rc >= 0 || rc == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	return rc;
}

/* --- writing ---------------------------------------------------------- */

int ibmc__write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	int64_t deadline = deadline_after(timeout_ms);
	const char *p = buf;
	bool sock = true;

	while (len) {
		ssize_t n;

		/* MSG_NOSIGNAL: a vanished peer is EPIPE, not SIGPIPE. */
		if (sock) {
			n = send(fd, p, len, MSG_NOSIGNAL);
			if (n < 0 && errno == ENOTSOCK) {
				sock = false;
				continue;
			}
		} else {
			n = write(fd, p, len);
		}
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			int rc = poll(&pfd, 1, left_ms(deadline));

			if (!rc)
				return -ETIMEDOUT;
			if (rc < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* --- line framing ----------------------------------------------------- */

/* The allocation is two areas: data (bytes read, at most max) and, right
 * after it, room for the line last handed out, so next() can compact the
 * data at once and still keep its line valid until the following call.
 * cap is the whole allocation: 2 * data capacity + 1. */
#define LB_INITIAL 4096

static size_t lb_dcap(const struct ibmc_linebuf *lb)
{
	return lb->cap ? (lb->cap - 1) / 2 : 0;
}

void ibmc__linebuf_init(struct ibmc_linebuf *lb, size_t max)
{
	memset(lb, 0, sizeof(*lb));
	lb->max = max ? max : 1;
}

void ibmc__linebuf_free(struct ibmc_linebuf *lb)
{
	if (!lb)
		return;
	free(lb->buf);
	lb->buf = NULL;
	lb->len = lb->cap = lb->scan = 0;
}

static int lb_grow(struct ibmc_linebuf *lb)
{
	size_t dcap = lb_dcap(lb);
	char *nb;

	dcap = dcap ? dcap * 2 : LB_INITIAL;
	if (dcap > lb->max)
		dcap = lb->max;
	nb = realloc(lb->buf, 2 * dcap + 1);
	if (!nb)
		return -ENOMEM;
	lb->buf = nb;
	lb->cap = 2 * dcap + 1;
	return 0;
}

long ibmc__linebuf_fill(struct ibmc_linebuf *lb, int fd)
{
	size_t dcap = lb_dcap(lb);
	ssize_t n;

	if (lb->len == dcap) {
		if (dcap >= lb->max) {
			/* Full: either a line is too long or the caller has
			 * complete lines to take out first. */
			if (!memchr(lb->buf, '\n', lb->len))
				return -EMSGSIZE;
			return -ENOBUFS;
		}
		if (lb_grow(lb))
			return -ENOMEM;
		dcap = lb_dcap(lb);
	}
	do
		n = read(fd, lb->buf + lb->len, dcap - lb->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	lb->len += (size_t)n;
	if (n > 0 && lb->len >= lb->max &&
	    !memchr(lb->buf + lb->scan, '\n', lb->len - lb->scan))
		return -EMSGSIZE;
	return (long)n;
}

char *ibmc__linebuf_next(struct ibmc_linebuf *lb, size_t *len)
{
	char *nl, *line;
	size_t n;

	if (lb->scan >= lb->len)
		return NULL;
	nl = memchr(lb->buf + lb->scan, '\n', lb->len - lb->scan);
	if (!nl) {
		lb->scan = lb->len;
		return NULL;
	}
	n = (size_t)(nl - lb->buf);
	line = lb->buf + lb_dcap(lb);
	memcpy(line, lb->buf, n);
	if (n && line[n - 1] == '\r')
		n--;
	line[n] = '\0';
	lb->len -= (size_t)(nl - lb->buf) + 1;
	memmove(lb->buf, nl + 1, lb->len);
	lb->scan = 0;
	if (len)
		*len = n;
	return line;
}

/* Bytes available to read, waiting up to the deadline. */
static int wait_readable(int fd, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int rc;

	for (;;) {
		rc = poll(&pfd, 1, left_ms(deadline));
		if (rc > 0)
			return 0;
		if (!rc)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int ibmc__read_line(int fd, size_t max, int timeout_ms, char **line)
{
	int64_t deadline = deadline_after(timeout_ms);
	size_t len = 0, cap = 0;
	char *buf = NULL, *nb;
	bool sock = true;
	int rc;

	*line = NULL;
	for (;;) {
		size_t want;
		ssize_t n;
		char *nl;

		if (len >= max) {
			rc = -EMSGSIZE;
			goto err;
		}
		if (len == cap) {
			cap = cap ? cap * 2 : 512;
			if (cap > max)
				cap = max;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				rc = -ENOMEM;
				goto err;
			}
			buf = nb;
		}
		rc = wait_readable(fd, deadline);
		if (rc)
			goto err;
		/* Peek first and then take only up to the newline, so a
		 * following reply stays in the socket for the next call. */
		want = cap - len;
		if (sock) {
			n = recv(fd, buf + len, want, MSG_PEEK);
			if (n < 0 && errno == ENOTSOCK) {
				sock = false;
				continue;
			}
			if (n > 0) {
				nl = memchr(buf + len, '\n', (size_t)n);
				if (nl)
					want = (size_t)(nl - (buf + len)) + 1;
				else
					want = (size_t)n;
			}
		} else {
			want = 1; /* pipes cannot peek */
		}
		do
			n = read(fd, buf + len, want);
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			rc = -errno;
			goto err;
		}
		if (!n) {
			rc = -ECONNRESET;
			goto err;
		}
		nl = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
		if (nl) {
			len = (size_t)(nl - buf);
			if (len && buf[len - 1] == '\r')
				len--;
			buf[len] = '\0';
			*line = buf;
			return 0;
		}
	}
err:
	free(buf);
	return rc;
}
