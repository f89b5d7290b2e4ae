/* SPDX-License-Identifier: BSD-3-Clause */
/* Stream-socket plumbing for the control protocol: server addresses,
 * listening and connecting with timeouts, bounded line reading and
 * complete writes. */
#ifndef IBMCAST_COMMON_NET_H
#define IBMCAST_COMMON_NET_H

#include <stdbool.h>
#include <stddef.h>

/* Address forms: "unix:/path", "/path" (Unix socket), "tcp:HOST:PORT",
 * "HOST:PORT", "[v6addr]:PORT". */
struct ibmc_addr {
	bool is_unix;
	char path[108];
	char host[256];
	char port[16];
};

int ibmc__addr_parse(const char *s, struct ibmc_addr *a); /* 0/-EINVAL */
/* Human form for messages: "unix:/path" or "tcp:host:port". */
void ibmc__addr_format(const struct ibmc_addr *a, char *buf, size_t len);

/* Listening socket, non-blocking and close-on-exec. A Unix path is
 * unlinked first if it is a stale socket and made mode 0666 (access is
 * decided per request by SO_PEERCRED). TCP sets SO_REUSEADDR; port "0"
 * binds an ephemeral port. Returns fd or -errno. */
int ibmc__listen(const struct ibmc_addr *a, int backlog);
/* The port a TCP listener is bound to, or -errno. */
int ibmc__bound_port(int fd);

/* Blocking connect bounded by timeout_ms (< 0: no bound). Returns a
 * blocking, close-on-exec fd or -errno (-ETIMEDOUT). */
int ibmc__connect(const struct ibmc_addr *a, int timeout_ms);

/* Write everything, waiting with poll() on EAGAIN up to timeout_ms in all
 * (< 0: no bound). 0 or -errno. */
int ibmc__write_all(int fd, const void *buf, size_t len, int timeout_ms);

/* Accumulates bytes from a socket and hands out complete lines. */
struct ibmc_linebuf {
	char *buf;
	size_t len;  /* bytes held */
	size_t cap;
	size_t max;  /* longest line accepted, newline included */
	size_t scan; /* bytes already searched for '\n' */
};

void ibmc__linebuf_init(struct ibmc_linebuf *lb, size_t max);
void ibmc__linebuf_free(struct ibmc_linebuf *lb);
/* One read(2) into the buffer: bytes read (> 0), 0 at EOF, -EAGAIN,
 * -EMSGSIZE when max bytes are held with no newline, or -errno. */
long ibmc__linebuf_fill(struct ibmc_linebuf *lb, int fd);
/* Next complete line, NUL-terminated without its '\n' (a '\r' before it
 * is dropped), or NULL. Valid until the next call on lb. */
char *ibmc__linebuf_next(struct ibmc_linebuf *lb, size_t *len);

/* Read one line (blocking fd) bounded by timeout_ms and max bytes; the
 * caller frees *line. 0, -ETIMEDOUT, -EMSGSIZE, -ECONNRESET at EOF
 * before a newline, or -errno. */
int ibmc__read_line(int fd, size_t max, int timeout_ms, char **line);

#endif
