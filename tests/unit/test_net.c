/* SPDX-License-Identifier: BSD-3-Clause */
/* Addresses, line framing over a socketpair, listen/connect on a Unix
 * socket and on 127.0.0.1, and every timeout the protocol relies on. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/net.h"
#include "tests/tap.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void addr_ok(const char *s, int is_unix, const char *a,
		    const char *port, const char *fmt)
{
	struct ibmc_addr ad;
	char buf[400];
	int rc = ibmc__addr_parse(s, &ad);

	ibmc__addr_format(&ad, buf, sizeof(buf));
	if (!tap_ok(!rc && ad.is_unix == is_unix &&
		    !strcmp(is_unix ? ad.path : ad.host, a) &&
		    (is_unix || !strcmp(ad.port, port)) && !strcmp(buf, fmt),
		    "parse address %s", s))
		tap_diag("  rc %d formatted \"%s\"", rc, buf);
}

static void addr_bad(const char *s)
{
	struct ibmc_addr ad;

	tap_is_int(ibmc__addr_parse(s, &ad), -EINVAL, "refuse address \"%s\"",
		   s);
}

static void test_addrs(void)
{
	char longpath[200];

	addr_ok("unix:/run/ibmcast.sock", 1, "/run/ibmcast.sock", NULL,
		"unix:/run/ibmcast.sock");
	addr_ok("/tmp/x.sock", 1, "/tmp/x.sock", NULL, "unix:/tmp/x.sock");
	addr_ok("tcp:sm1:7070", 0, "sm1", "7070", "tcp:sm1:7070");
	addr_ok("127.0.0.1:1", 0, "127.0.0.1", "1", "tcp:127.0.0.1:1");
	addr_ok("[::1]:65535", 0, "::1", "65535", "tcp:[::1]:65535");
	addr_ok("tcp:[fe80::1]:0", 0, "fe80::1", "0", "tcp:[fe80::1]:0");
	addr_bad("");
	addr_bad("unix:");
	addr_bad("sm1");
	addr_bad("sm1:");
	addr_bad(":7070");
	addr_bad("sm1:65536");
	addr_bad("sm1:70x");
	addr_bad("sm1:-1");
	addr_bad("::1:7070");
	addr_bad("[::1]7070");
	addr_bad("[::1:7070");
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	addr_bad(longpath);
}

static void put(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		abort();
}

static void test_linebuf(void)
{
	struct ibmc_linebuf lb;
	char *line, big[40];
	size_t len;
	long n;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	ibmc__linebuf_init(&lb, 32);

	put(sv[1], "{\"op\":");
	n = ibmc__linebuf_fill(&lb, sv[0]);
	tap_is_int(n, 6, "fill reads a partial line");
	tap_ok(!ibmc__linebuf_next(&lb, &len), "no line yet");
	put(sv[1], "\"status\"}\r\nab");
	ibmc__linebuf_fill(&lb, sv[0]);
	line = ibmc__linebuf_next(&lb, &len);
	tap_is_str(line, "{\"op\":\"status\"}", "line split across reads, "
		   "CR dropped");
	tap_is_int(len, 15, "... its length");
	tap_ok(!ibmc__linebuf_next(&lb, &len), "rest is incomplete");
	put(sv[1], "c\n\nd\n");
	ibmc__linebuf_fill(&lb, sv[0]);
	line = ibmc__linebuf_next(&lb, &len);
	tap_is_str(line, "abc", "line from the tail of a read");
	line = ibmc__linebuf_next(&lb, &len);
	tap_ok(line && !*line && !len, "empty line");
	line = ibmc__linebuf_next(&lb, &len);
	tap_is_str(line, "d", "several lines from one read");
	tap_ok(!ibmc__linebuf_next(&lb, &len), "buffer drained");

	/* 31 bytes + newline = max: accepted. */
	memset(big, 'x', 31);
	big[31] = '\n';
	big[32] = '\0';
	put(sv[1], big);
	while ((n = ibmc__linebuf_fill(&lb, sv[0])) > 0 &&
	       !(line = ibmc__linebuf_next(&lb, &len)))
		;
	tap_ok(n > 0 && line && len == 31, "line of exactly max bytes");

	/* 32 bytes without a newline: refused. */
	big[31] = 'x';
	put(sv[1], big);
	put(sv[1], "y\n");
	while ((n = ibmc__linebuf_fill(&lb, sv[0])) > 0 &&
	       !ibmc__linebuf_next(&lb, &len))
		;
	tap_is_int(n, -EMSGSIZE, "line over max gives -EMSGSIZE");
	ibmc__linebuf_free(&lb);

	/* EOF and non-blocking reads, on a fresh pair. */
	close(sv[0]);
	close(sv[1]);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	ibmc__linebuf_init(&lb, 64);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	n = ibmc__linebuf_fill(&lb, sv[0]);
	tap_is_int(n, -EAGAIN, "nothing to read: -EAGAIN");
	close(sv[1]);
	n = ibmc__linebuf_fill(&lb, sv[0]);
	tap_is_int(n, 0, "EOF: 0");
	ibmc__linebuf_free(&lb);
	ibmc__linebuf_free(&lb);
	close(sv[0]);
}

static void test_read_line(void)
{
	char *line = NULL, big[100];
	double t0, dt;
	int sv[2], rc;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	put(sv[1], "one\r\ntwo\nthr");
	rc = ibmc__read_line(sv[0], 64, 1000, &line);
	tap_ok(!rc && line && !strcmp(line, "one"), "read_line: first line");
	free(line);
	rc = ibmc__read_line(sv[0], 64, 1000, &line);
	tap_ok(!rc && line && !strcmp(line, "two"),
	       "read_line: second line was left in the socket");
	free(line);

	t0 = now_ms();
	rc = ibmc__read_line(sv[0], 64, 100, &line);
	dt = now_ms() - t0;
	tap_is_int(rc, -ETIMEDOUT, "read_line: incomplete line times out");
	tap_ok(dt >= 90 && dt < 2000, "... after about 100 ms (%.0f)", dt);
	tap_ok(!line, "... no line returned");

	memset(big, 'z', sizeof(big));
	put(sv[1], "\n");
	rc = ibmc__read_line(sv[0], 64, 1000, &line);
	free(line);
	if (write(sv[1], big, sizeof(big)) != sizeof(big))
		abort();
	rc = ibmc__read_line(sv[0], 64, 1000, &line);
	tap_is_int(rc, -EMSGSIZE, "read_line: over max gives -EMSGSIZE");

	put(sv[1], "\npartial");
	rc = ibmc__read_line(sv[0], 1000, 1000, &line);
	free(line);
	close(sv[1]);
	rc = ibmc__read_line(sv[0], 1000, 1000, &line);
	tap_is_int(rc, -ECONNRESET, "read_line: EOF mid-line");
	close(sv[0]);

	/* Pipes cannot peek; the byte-wise path still frames lines. */
	if (pipe(sv))
		abort();
	put(sv[1], "p1\np2\n");
	rc = ibmc__read_line(sv[0], 64, 1000, &line);
	tap_ok(!rc && !strcmp(line, "p1"), "read_line on a pipe");
	free(line);
	rc = ibmc__read_line(sv[0], 64, 1000, &line);
	tap_ok(!rc && !strcmp(line, "p2"), "... second line");
	free(line);
	close(sv[0]);
	close(sv[1]);
}

static void test_write_all(void)
{
	size_t n = 8 << 20;
	char *buf = calloc(1, n);
	double t0, dt;
	int sv[2], rc;

	if (!buf || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	rc = ibmc__write_all(sv[1], "hello\n", 6, 1000);
	tap_is_int(rc, 0, "write_all");
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	t0 = now_ms();
	rc = ibmc__write_all(sv[1], buf, n, 100);
	dt = now_ms() - t0;
	tap_is_int(rc, -ETIMEDOUT, "write_all to a reader that never reads "
		   "times out");
	tap_ok(dt >= 90 && dt < 2000, "... after about 100 ms (%.0f)", dt);
	close(sv[0]);
	rc = ibmc__write_all(sv[1], "x", 1, 100);
	tap_is_int(rc, -EPIPE, "write_all to a closed peer: -EPIPE, "
		   "no SIGPIPE");
	close(sv[1]);
	free(buf);
}

/* Connect, accept, send a line each way. */
static int exchange(const struct ibmc_addr *a, int lfd)
{
	char *line = NULL;
	int cfd, sfd, ok = 0, tries;

	cfd = ibmc__connect(a, 1000);
	if (cfd < 0) {
		tap_diag("connect: %s", strerror(-cfd));
		return 0;
	}
	for (tries = 0; (sfd = accept(lfd, NULL, NULL)) < 0 && tries < 100;
	     tries++)
		usleep(10000);
	if (sfd < 0)
		goto out;
	if (ibmc__write_all(cfd, "ping\n", 5, 1000) ||
	    ibmc__read_line(sfd, 64, 1000, &line) || strcmp(line, "ping"))
		goto out;
	free(line);
	line = NULL;
	if (ibmc__write_all(sfd, "pong\n", 5, 1000) ||
	    ibmc__read_line(cfd, 64, 1000, &line) || strcmp(line, "pong"))
		goto out;
	ok = !(fcntl(cfd, F_GETFL) & O_NONBLOCK) &&
	     (fcntl(cfd, F_GETFD) & FD_CLOEXEC);
out:
	free(line);
	if (sfd >= 0)
		close(sfd);
	close(cfd);
	return ok;
}

static void test_unix(void)
{
	char dir[] = "/tmp/ibmc-test-net.XXXXXX", path[200], spec[220];
	struct ibmc_addr a;
	struct stat st;
	int lfd, fd, i, rc, timed_out = 0;
	int held[16];

	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/ctl.sock", dir);
	snprintf(spec, sizeof(spec), "unix:%s", path);
	ibmc__addr_parse(spec, &a);

	lfd = ibmc__listen(&a, 16);
	tap_ok(lfd >= 0, "listen on %s", spec);
	tap_ok(!stat(path, &st) && (st.st_mode & 0777) == 0666,
	       "... socket is mode 0666");
	tap_ok(fcntl(lfd, F_GETFL) & O_NONBLOCK, "... listener non-blocking");
	tap_ok(exchange(&a, lfd), "unix: connect, accept, line each way");
	tap_is_int(ibmc__bound_port(lfd), -EAFNOSUPPORT,
		   "bound_port of a Unix socket");
	tap_is_int(ibmc__listen(&a, 16), -EADDRINUSE,
		   "a live socket is not replaced");
	close(lfd);
	fd = ibmc__connect(&a, 1000);
	tap_is_int(fd, -ECONNREFUSED, "connect to a stale socket: refused");
	lfd = ibmc__listen(&a, 16);
	tap_ok(lfd >= 0, "a stale socket is replaced");
	close(lfd);
	unlink(path);

	fd = ibmc__connect(&a, 1000);
	tap_is_int(fd, -ENOENT, "connect to a missing socket: -ENOENT");

	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	tap_is_int(ibmc__listen(&a, 16), -EEXIST,
		   "a regular file in the way is left alone");
	unlink(path);

	/* A listener that never accepts: once its backlog is full, a
	 * connect must give up at its deadline, not hang. */
	lfd = ibmc__listen(&a, 0);
	for (i = 0; i < 16; i++) {
		held[i] = ibmc__connect(&a, 100);
		if (held[i] == -ETIMEDOUT) {
			timed_out = 1;
			break;
		}
	}
	tap_ok(timed_out, "connect to a full backlog times out");
	while (--i >= 0)
		if (held[i] >= 0)
			close(held[i]);
	close(lfd);
	unlink(path);

	/* Listener dir removed at the end; listen_unix fails cleanly on a
	 * missing directory. */
	snprintf(spec, sizeof(spec), "unix:%s/missing/ctl.sock", dir);
	ibmc__addr_parse(spec, &a);
	rc = ibmc__listen(&a, 4);
	tap_is_int(rc, -ENOENT, "listen in a missing directory: -ENOENT");
	rmdir(dir);
}

static void test_tcp(void)
{
	struct ibmc_addr a;
	char spec[64];
	int lfd, port, fd;

	ibmc__addr_parse("tcp:127.0.0.1:0", &a);
	lfd = ibmc__listen(&a, 16);
	tap_ok(lfd >= 0, "listen on tcp:127.0.0.1:0");
	port = ibmc__bound_port(lfd);
	tap_ok(port > 0, "... bound to port %d", port);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", port);
	ibmc__addr_parse(spec, &a);
	tap_ok(exchange(&a, lfd), "tcp: connect, accept, line each way");
	close(lfd);
	fd = ibmc__connect(&a, 1000);
	tap_is_int(fd, -ECONNREFUSED, "tcp: connect to a closed port");
	if (fd >= 0)
		close(fd);

	ibmc__addr_parse("tcp:no-such-host.invalid:7070", &a);
	fd = ibmc__connect(&a, 1000);
	tap_ok(fd < 0, "tcp: unresolvable host fails (%s)",
	       fd < 0 ? strerror(-fd) : "connected?");
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	signal(SIGPIPE, SIG_DFL);
	tap_plan(61);
	test_addrs();
	test_linebuf();
	test_read_line();
	test_write_all();
	test_unix();
	test_tcp();
	return tap_done();
}
