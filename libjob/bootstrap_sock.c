/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_sock.c - the bootstrap of programs started by ibmcast-run(1):
 * a Unix socket to its rendezvous server, one allgather round per call
 * (wire format in bootstrap_wire.h).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/parse.h"
#include "ibmcast/ibmcast.h"
#include "libjob/bootstrap.h"
#include "libjob/bootstrap_wire.h"

struct sock_bs {
	int fd;
	int rank, size;
};

static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* -EPIPE at EOF: the launcher went away (it kills us soon, or died). */
static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	while (len) {
		n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A decimal int in [lo, hi] from the environment: 0, -ENOENT, -EINVAL. */
static int env_int(const char *name, long lo, long hi, int *out)
{
	const char *s = getenv(name);
	long v;

	if (!s || !*s)
		return -ENOENT;
	if (ibmc__parse_long(s, 10, lo, hi, &v)) {
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: %s='%s' is not a number "
			 "in %ld..%ld", name, s, lo, hi);
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

int ibmc__bootstrap_sock_allgather(void *arg, const void *in, void *out,
				   size_t len)
{
	struct sock_bs *s = arg;
	struct ibmc_bs_round r;
	struct ibmc_bs_result res;
	int rc;

	if (len > IBMC_BS_MAX_BLOCK ||
	    (uint64_t)len * (uint64_t)s->size > IBMC_BS_MAX_TOTAL)
		return -E2BIG;
	r.len = (uint32_t)len;
	rc = write_full(s->fd, &r, sizeof(r));
	if (!rc && len)
		rc = write_full(s->fd, in, len);
	if (!rc)
		rc = read_full(s->fd, &res, sizeof(res));
	if (rc) {
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: rank %d: rendezvous "
			 "socket: %s", s->rank, strerror(-rc));
		return rc;
	}
	if (res.status) {
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: rank %d: the launcher "
			 "refused the allgather: %s", s->rank,
			 strerror(res.status < 0 ? -res.status : EPROTO));
		return res.status < 0 ? res.status : -EPROTO;
	}
	if (res.len != len)
		return -EPROTO;
	return len ? read_full(s->fd, out, len * (size_t)s->size) : 0;
}

int ibmc_bootstrap_sock(ibmc_bootstrap_t *bs)
{
	const char *where = getenv("IBMCAST_BOOTSTRAP");
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct ibmc_bs_hello h;
	struct sock_bs *s;
	int32_t status;
	int rank, size, rc;

	if (!bs)
		return -EINVAL;
	memset(bs, 0, sizeof(*bs));
	if (!where || !*where)
		return -ENOENT;
	rc = env_int("IBMCAST_SIZE", 1, IBMC_BS_MAX_RANKS, &size);
	if (!rc)
		rc = env_int("IBMCAST_RANK", 0, size - 1, &rank);
	if (rc == -ENOENT)
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: IBMCAST_BOOTSTRAP is set "
			 "but IBMCAST_RANK or IBMCAST_SIZE is not");
	if (rc)
		return rc == -ENOENT ? -EINVAL : rc;
	if (strncmp(where, "unix:", 5) == 0)
		where += 5;
	if (!*where || strlen(where) >= sizeof(sun.sun_path)) {
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: IBMCAST_BOOTSTRAP='%s' is "
			 "not unix:/path", getenv("IBMCAST_BOOTSTRAP"));
		return -EINVAL;
	}
	strcpy(sun.sun_path, where);

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->rank = rank;
	s->size = size;
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		rc = -errno;
		goto err_free;
	}
	if (connect(s->fd, (struct sockaddr *)&sun, sizeof(sun))) {
		rc = -errno;
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: rank %d: cannot connect "
			 "to the launcher at %s: %s", rank, where,
			 strerror(-rc));
		goto err_close;
	}
	h.magic = IBMC_BS_MAGIC;
	h.version = IBMC_BS_VERSION;
	h.rank = rank;
	h.size = size;
	rc = write_full(s->fd, &h, sizeof(h));
	if (!rc)
		rc = read_full(s->fd, &status, sizeof(status));
	if (!rc && status)
		rc = status < 0 ? status : -EPROTO;
	if (rc) {
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: rank %d of %d: the "
			 "launcher at %s refused us: %s", rank, size, where,
			 strerror(-rc));
		goto err_close;
	}
	bs->rank = rank;
	bs->size = size;
	bs->allgather = ibmc__bootstrap_sock_allgather;
	bs->arg = s;
	return 0;

err_close:
	close(s->fd);
err_free:
	free(s);
	return rc;
}

void ibmc_bootstrap_sock_fini(ibmc_bootstrap_t *bs)
{
	struct sock_bs *s;

	if (!bs || bs->allgather != ibmc__bootstrap_sock_allgather)
		return;
	s = bs->arg;
	if (s) {
		close(s->fd);
		free(s);
	}
	memset(bs, 0, sizeof(*bs));
}
