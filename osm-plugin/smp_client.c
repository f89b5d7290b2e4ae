/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin's side of the SMP reader: owns the ibmcast-smpd child, speaks
 * smp_wire.h to it, and never waits on it longer than the caller allows. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "osm-plugin/smp_client.h"

#define SMPD_FD		3
/* The reader tries each SMP this many times (smpd.c SMP_TRIES). */
#define SMPD_TRIES	3
/* How long stop() lets the reader exit on EOF before killing it. */
#define STOP_GRACE_MS	200

extern char **environ;

struct ibmc_smp_client {
	char *path;
	pid_t pid;		/* 0 when no child */
	pid_t dying;		/* dropped reader not yet reaped, or 0 */
	int fd;			/* -1 when no child */
	uint32_t seq;
	struct ibmc_smp_request_msg req;
	struct ibmc_smp_reply_msg rep;
};

/* Reap the child, waiting at most wait_ms (< 0: until it is gone). */
static bool reap(pid_t pid, int wait_ms)
{
	int64_t end = ibmc__now_ms() + (wait_ms > 0 ? wait_ms : 0);
	struct timespec nap = { 0, 2 * 1000 * 1000 };
	pid_t r;

	for (;;) {
		r = waitpid(pid, NULL, wait_ms < 0 ? 0 : WNOHANG);
		/* ECHILD: someone else reaped it (or SIGCHLD is ignored). */
		if (r == pid || (r < 0 && errno != EINTR))
			return true;
		if (r == 0 && ibmc__now_ms() >= end)
			return false;
		if (r == 0)
			nanosleep(&nap, NULL);
	}
}

/* Forget the reader: close its socket (EOF) and ask it to leave with
 * SIGTERM, without waiting, so a failing call stays within its budget. The
 * next call or stop() reaps it. Under ibsim a reader that exits by itself
 * frees its client slot; SIGKILL would leak it. */
static void drop_child(struct ibmc_smp_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->pid > 0)
		kill(c->pid, SIGTERM);
	c->dying = c->pid;
	c->pid = 0;
}

/* Reap a dropped reader; one still there after its grace is killed. */
static void reap_dying(struct ibmc_smp_client *c, int grace_ms)
{
	if (c->dying <= 0)
		return;
	if (!reap(c->dying, grace_ms)) {
		kill(c->dying, SIGKILL);
		reap(c->dying, -1);
	}
	c->dying = 0;
}

static int spawn(struct ibmc_smp_client *c)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	char *argv[] = { c->path, NULL };
	int sv[2], ret, fd;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	/* dup2 onto the same number would leave FD_CLOEXEC set on older
	 * libcs; keep the child's end off fd 3 so dup2 always clears it. */
	if (sv[1] == SMPD_FD) {
		fd = fcntl(sv[1], F_DUPFD_CLOEXEC, SMPD_FD + 1);
		if (fd < 0) {
			ret = -errno;
			goto err_sock;
		}
		close(sv[1]);
		sv[1] = fd;
	}

	ret = -posix_spawn_file_actions_init(&fa);
	if (ret)
		goto err_sock;
	ret = -posix_spawn_file_actions_adddup2(&fa, sv[1], SMPD_FD);
	if (ret)
		goto err_fa;
	ret = -posix_spawnattr_init(&attr);
	if (ret)
		goto err_fa;
	/* OpenSM's threads block signals and may ignore some; the reader
	 * must start with a clean slate so SIGKILL/SIGTERM/EPIPE behave. */
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGHUP);
	sigaddset(&dfl, SIGCHLD);
	ret = -posix_spawnattr_setsigmask(&attr, &none);
	if (!ret)
		ret = -posix_spawnattr_setsigdefault(&attr, &dfl);
	if (!ret)
		ret = -posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
						POSIX_SPAWN_SETSIGDEF);
	if (ret)
		goto err_attr;

	ret = -posix_spawn(&c->pid, c->path, &fa, &attr, argv, environ);
	if (ret) {
		c->pid = 0;
		goto err_attr;
	}
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	c->fd = sv[0];
	return 0;

err_attr:
	posix_spawnattr_destroy(&attr);
err_fa:
	posix_spawn_file_actions_destroy(&fa);
err_sock:
	close(sv[0]);
	close(sv[1]);
	return ret;
}

int ibmc__smp_client_start(const char *smpd_path,
			   struct ibmc_smp_client **out)
{
	struct ibmc_smp_client *c;
	int ret;

	if (!smpd_path || !out)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->path = strdup(smpd_path);
	if (!c->path) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = spawn(c);
	if (ret)
		goto err_path;
	*out = c;
	return 0;

err_path:
	free(c->path);
err_free:
	free(c);
	return ret;
}

/* Send one batch and wait for its reply until deadline (ms, monotonic). */
static int one_batch(struct ibmc_smp_client *c, struct ibmc_smp_result *res,
		     const struct ibmc_smp_query *q, size_t n,
		     uint32_t smp_tmo, int64_t deadline)
{
	size_t len = sizeof(c->req.hdr) + n * sizeof(c->req.q[0]), i;
	ssize_t got;
	int64_t left;
	int ret;

	c->req.hdr.magic = IBMC_SMP_MAGIC;
	c->req.hdr.seq = ++c->seq;
	c->req.hdr.count = (uint32_t)n;
	c->req.hdr.timeout_ms = smp_tmo;
	memcpy(c->req.q, q, n * sizeof(*q));
	do {
		got = send(c->fd, &c->req, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (got < 0 && errno == EINTR);
	if (got < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	if ((size_t)got != len)
		return -EIO;

	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };

		left = deadline - ibmc__now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		ret = poll(&p, 1, (int)left);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		if (!ret)
			return -ETIMEDOUT;
		got = recv(c->fd, &c->rep, sizeof(c->rep),
			   MSG_DONTWAIT | MSG_TRUNC);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return -errno;
		if (!got)
			return -EPIPE;	/* the reader exited */
		if ((size_t)got < sizeof(c->rep.hdr) ||
		    c->rep.hdr.magic != IBMC_SMP_MAGIC)
			return -EPROTO;
		/* Only a killed and respawned reader could owe an older
		 * reply, but skipping one costs nothing. */
		if (c->rep.hdr.seq != c->seq)
			continue;
		break;
	}
	if (c->rep.hdr.count != n || (size_t)got != sizeof(c->rep.hdr) +
	    n * sizeof(c->rep.r[0]))
		return -EPROTO;
	for (i = 0; i < n; i++) {
		const struct ibmc_smp_result *r = &c->rep.r[i];

		if (r->lid != q[i].lid || r->block != q[i].block ||
		    r->position != q[i].position)
			return -EPROTO;
		res[i] = *r;
	}
	return 0;
}

/* A reader that is gone without our noticing: reap it and forget it. */
static void check_alive(struct ibmc_smp_client *c)
{
	if (c->pid > 0 && waitpid(c->pid, NULL, WNOHANG) == c->pid) {
		c->pid = 0;
		drop_child(c);
	}
}

int ibmc__smp_read_mft(struct ibmc_smp_client *c,
		       struct ibmc_smp_result *res,
		       const struct ibmc_smp_query *q, size_t n,
		       int timeout_ms)
{
	size_t batches, done, k;
	int64_t deadline;
	uint32_t smp_tmo;
	int ret;

	if (!c || (n && (!res || !q)) || timeout_ms <= 0)
		return -EINVAL;
	if (!n)
		return 0;
	deadline = ibmc__now_ms() + timeout_ms;
	/* A reader dropped by an earlier call had that call's interval to
	 * exit; do not spend this call's budget on it. */
	reap_dying(c, 0);
	check_alive(c);
	if (c->pid <= 0) {
		ret = spawn(c);
		if (ret)
			return ret == -ENOENT || ret == -EACCES ? ret : -EPIPE;
	}

	/* Give every batch room for all its tries within the budget; the
	 * deadline still bounds the whole call. */
	batches = (n + IBMC_SMP_MAX_QUERIES - 1) / IBMC_SMP_MAX_QUERIES;
	smp_tmo = (uint32_t)timeout_ms / (uint32_t)(batches * SMPD_TRIES + 1);
	if (!smp_tmo)
		smp_tmo = 1;

	for (done = 0; done < n; done += k) {
		k = n - done;
		if (k > IBMC_SMP_MAX_QUERIES)
			k = IBMC_SMP_MAX_QUERIES;
		ret = one_batch(c, res + done, q + done, k, smp_tmo, deadline);
		if (ret) {
			/* The reader's state is unknown now (a reply may
			 * still be coming): start over with a fresh one. */
			drop_child(c);
			return ret;
		}
	}
	return 0;
}

void ibmc__smp_client_stop(struct ibmc_smp_client *c)
{
	if (!c)
		return;
	/* EOF makes the reader exit; give it a moment, then insist. */
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->pid > 0 && reap(c->pid, STOP_GRACE_MS))
		c->pid = 0;
	drop_child(c);
	reap_dying(c, STOP_GRACE_MS);
	free(c->path);
	free(c);
}
