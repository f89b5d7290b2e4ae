/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibmcast-run - start the ranks of a job on the simulated fabric without
 * Slurm: places ranks on nodes of a hostlist, exports IBMCAST_RANK/SIZE/
 * NODE/BOOTSTRAP (and, with --job, the job's groups as the SPANK plugin
 * would), serves the rendezvous allgather of ibmc_bootstrap_sock(), and
 * turns the first failing rank into the exit status.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/client.h"
#include "common/clock.h"
#include "common/hostlist.h"
#include "common/net.h"
#include "common/parse.h"
#include "libjob/bootstrap_wire.h"

#define EXIT_LAUNCH 1	/* ibmcast-run itself failed */
#define EXIT_TIMEOUT 124	/* --timeout ran out, as timeout(1) */
#define EXIT_USAGE 64
#define MAX_RANKS 4096
#define MAX_NODES 65536
#define KILL_GRACE_MS 2000	/* SIGTERM, then SIGKILL after this */
#define WRITE_TIMEOUT_MS 30000	/* a rank that does not read its result */

static const char *prog = "ibmcast-run";
static int verbose;

struct opts {
	int nranks;
	const char *nodes;
	int per_node;		/* 0: by distribution */
	bool cyclic;
	const char *job;
	int wait_ms;
	int timeout_s;		/* 0: none */
	bool keep_going;	/* a failed rank does not stop the others */
	const char *server;
	const char *munge_socket;
	char **argv;
};

struct rank {
	pid_t pid;
	int node;		/* index into the hostlist */
	bool exited;
	int status;		/* waitpid status */
	/* rendezvous connection */
	int fd;
	bool hello;		/* hello read and answered */
	bool closed;		/* connected once, now gone */
	bool in_round;		/* its block for the current round is here */
	unsigned char hdr[sizeof(struct ibmc_bs_hello)];
	size_t hdr_got;
	uint32_t len;		/* block length of the current round */
	unsigned char *block;
	size_t block_got;
};

/* Connections accepted but not yet identified by their hello. */
struct pending {
	int fd;
	unsigned char hdr[sizeof(struct ibmc_bs_hello)];
	size_t got;
};

static struct rank *ranks;
static int nranks;
static struct pending *pend;
static size_t npend;
static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t got_signal;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s -n NRANKS --nodes HOSTLIST [OPTIONS] [--] PROGRAM [ARGS...]\n"
		"\n"
		"Starts NRANKS copies of PROGRAM as the ranks of one job on the simulated\n"
		"fabric, each told its rank and node through IBMCAST_RANK, IBMCAST_SIZE,\n"
		"IBMCAST_NODE and IBMCAST_BOOTSTRAP (see ibmcast-run(1)).\n"
		"\n"
		"  -n, --nranks N        number of ranks (1..%d)\n"
		"  -N, --nodes HOSTLIST  nodes to place them on (e.g. 'node[1-8]')\n"
		"  -k, --per-node K      K consecutive ranks per node (uses the first\n"
		"                        ceil(N/K) nodes)\n"
		"  -d, --distribution block|cyclic\n"
		"                        without --per-node: block (default) gives each\n"
		"                        node a contiguous run of ranks, as evenly as\n"
		"                        possible; cyclic deals them round robin\n"
		"  -j, --job JOB         export the job's IBMCAST_JOB/STATE/GROUPS/NGROUPS\n"
		"                        from the control server's wait reply\n"
		"  -w, --wait-ms MS      bound of that wait (default 30000)\n"
		"  -s, --server ADDR     control server (default $IBMCAST_SERVER)\n"
		"  -m, --munge-socket P  MUNGE socket for a TCP server\n"
		"                        (default $IBMCAST_MUNGE_SOCKET)\n"
		"  -t, --timeout S       kill every rank after S seconds (exit 124)\n"
		"  -K, --keep-going      a rank that fails or dies does not stop the\n"
		"                        others (they see it as a dead member)\n"
		"  -v, --verbose         say where each rank runs\n"
		"  -h, --help\n"
		"\n"
		"Exit status: 0 when every rank exited 0; else that of the first rank\n"
		"that failed (128+signal when killed), which stderr names; 124 on\n"
		"--timeout; 1 when the launch itself failed; 64 on bad usage.\n",
		prog, MAX_RANKS);
}

static int num_arg(const char *what, const char *s, long lo, long hi,
		   int *out)
{
	long v;

	if (ibmc__parse_long(s, 10, lo, hi, &v)) {
		say("%s: '%s' is not a number in %ld..%ld", what, s, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "nranks", required_argument, NULL, 'n' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "per-node", required_argument, NULL, 'k' },
		{ "distribution", required_argument, NULL, 'd' },
		{ "job", required_argument, NULL, 'j' },
		{ "wait-ms", required_argument, NULL, 'w' },
		{ "server", required_argument, NULL, 's' },
		{ "munge-socket", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "keep-going", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, dummy;

	o->wait_ms = 30000;
	o->server = getenv("IBMCAST_SERVER");
	o->munge_socket = getenv("IBMCAST_MUNGE_SOCKET");
	/* '+': options end at the program, whose own options are its own. */
	while ((c = getopt_long(argc, argv, "+n:N:k:d:j:w:s:m:t:vKh", lo,
				NULL)) != -1) {
		switch (c) {
		case 'n':
			if (num_arg("--nranks", optarg, 1, MAX_RANKS,
				    &o->nranks))
				return -1;
			break;
		case 'N':
			o->nodes = optarg;
			break;
		case 'k':
			if (num_arg("--per-node", optarg, 1, MAX_RANKS,
				    &o->per_node))
				return -1;
			break;
		case 'd':
			if (!strcmp(optarg, "cyclic")) {
				o->cyclic = true;
			} else if (strcmp(optarg, "block")) {
				say("--distribution: '%s' is neither block nor "
				    "cyclic", optarg);
				return -1;
			}
			break;
		case 'j':
			/* the control protocol's job range */
			if (num_arg("--job", optarg, 1, INT32_MAX, &dummy))
				return -1;
			o->job = optarg;
			break;
		case 'w':
			if (num_arg("--wait-ms", optarg, 0, 3600000,
				    &o->wait_ms))
				return -1;
			break;
		case 's':
			o->server = optarg;
			break;
		case 'm':
			o->munge_socket = optarg;
			break;
		case 'K':
			o->keep_going = true;
			break;
		case 't':
			if (num_arg("--timeout", optarg, 1, 86400,
				    &o->timeout_s))
				return -1;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (!o->nranks || !o->nodes || optind >= argc) {
		say("%s", !o->nranks ? "-n NRANKS is required" :
			  !o->nodes ? "--nodes HOSTLIST is required" :
				      "no program to run");
		usage(stderr);
		return -1;
	}
	if (o->per_node && o->cyclic) {
		say("--per-node and --distribution cyclic exclude each other");
		return -1;
	}
	o->argv = argv + optind;
	return 0;
}

/* Rank r's node index, for nn nodes. */
static int place(const struct opts *o, int r, int nn)
{
	int q, extra;

	if (o->per_node)
		return r / o->per_node;
	if (o->cyclic)
		return r % nn;
	/* block: the first (n % nn) nodes take one rank more */
	q = o->nranks / nn;
	extra = o->nranks % nn;
	if (r < extra * (q + 1))
		return r / (q + 1);
	return extra + (r - extra * (q + 1)) / q;
}

/* ---- the job's groups, as the SPANK plugin exports them ---------------- */

static unsigned mtu_bytes(json_int_t ib)
{
	/* IBA MTU encoding: 1 = 256 bytes ... 5 = 4096 bytes */
	return ib >= 1 && ib <= 5 ? 128u << ib : 0;
}

static const char *jstr(const json_t *o, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : def;
}

/* Fills IBMCAST_STATE/REASON/GROUPS/NGROUPS in the launcher's environment
 * (the ranks inherit it). Never fails the launch: a job without multicast
 * still runs, as under Slurm; the state says why. */
static int export_job(const struct opts *o)
{
	char detail[512], *groups = NULL, *p;
	const char *state = "unavailable", *reason = NULL;
	json_t *req, *reply = NULL, *job, *g;
	char reasonbuf[600];
	size_t i, n = 0, cap;
	int rc;

	setenv("IBMCAST_JOB", o->job, 1);
	if (!o->server || !*o->server) {
		reason = "IBMCAST_SERVER is not set and --server not given";
		goto out;
	}
	req = json_pack("{s:s,s:I,s:I}", "op", "wait", "job",
			(json_int_t)strtoll(o->job, NULL, 10), "timeout_ms",
			(json_int_t)o->wait_ms);
	if (!req) {
		say("out of memory");
		return -1;
	}
	rc = ibmc__client_call(o->server, o->munge_socket, req,
			       o->wait_ms + 10000, &reply, detail,
			       sizeof(detail));
	json_decref(req);
	if (rc) {
		snprintf(reasonbuf, sizeof(reasonbuf), "wait: %s", detail);
		reason = reasonbuf;
		goto out;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		snprintf(reasonbuf, sizeof(reasonbuf), "wait: %s: %s",
			 jstr(reply, "error", "error"),
			 jstr(reply, "detail", "(no detail)"));
		reason = reasonbuf;
		goto out;
	}
	job = json_object_get(reply, "job");
	state = jstr(job, "state", "?");
	if (!strcmp(state, "failed")) {
		reason = jstr(job, "reason", "the SM reported the job failed");
		goto out;
	}
	if (strcmp(state, "ready")) {
		snprintf(reasonbuf, sizeof(reasonbuf), "job is %s after "
			 "waiting %d ms", state, o->wait_ms);
		reason = reasonbuf;
		state = json_is_true(json_object_get(reply, "timed_out")) ?
			"timeout" : "unavailable";
		goto out;
	}
	n = json_array_size(json_object_get(job, "groups"));
	cap = n * 96 + 1;
	groups = calloc(1, cap);
	if (!groups) {
		say("out of memory");
		json_decref(reply);
		return -1;
	}
	p = groups;
	json_array_foreach(json_object_get(job, "groups"), i, g) {
		size_t left = cap - (size_t)(p - groups);
		int w = snprintf(p, left, "%s%s/%s/%s/%s/%u", i ? " " : "",
				 jstr(g, "mgid", "?"), jstr(g, "mlid", "?"),
				 jstr(job, "qkey", "?"),
				 jstr(job, "pkey", "0xffff"),
				 mtu_bytes(json_integer_value(
					 json_object_get(g, "mtu"))));

		if (w < 0 || (size_t)w >= left) {
			/* a malformed reply: the library says why */
			*p = '\0';
			break;
		}
		p += w;
	}
out:
	setenv("IBMCAST_STATE", state, 1);
	if (reason) {
		setenv("IBMCAST_REASON", reason, 1);
		say("job %s: multicast %s: %s", o->job, state, reason);
	} else {
		unsetenv("IBMCAST_REASON");
	}
	if (groups) {
		char num[16];

		snprintf(num, sizeof(num), "%zu", n);
		setenv("IBMCAST_NGROUPS", num, 1);
		setenv("IBMCAST_GROUPS", groups, 1);
		if (verbose)
			say("job %s: %zu groups: %s", o->job, n, groups);
	} else {
		setenv("IBMCAST_NGROUPS", "0", 1);
		setenv("IBMCAST_GROUPS", "", 1);
	}
	free(groups);
	json_decref(reply);
	return 0;
}

static void fail_round(int32_t why);

/* ---- ranks ---------------------------------------------------------------- */

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (sig != SIGCHLD)
		got_signal = sig;
	if (write(sig_pipe[1], &c, 1) < 0) {
		/* full pipe: a wake-up is already pending */
	}
	errno = saved;
}

static int setup_signals(void)
{
	struct sigaction sa;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static pid_t spawn(const struct opts *o, int r, const char *node,
		   const char *bootstrap)
{
	char num[16];
	pid_t pid;

	pid = fork();
	if (pid != 0)
		return pid;
	/* the child: its own process group, so that killing a rank kills
	 * whatever it started too */
	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	snprintf(num, sizeof(num), "%d", r);
	setenv("IBMCAST_RANK", num, 1);
	snprintf(num, sizeof(num), "%d", o->nranks);
	setenv("IBMCAST_SIZE", num, 1);
	setenv("IBMCAST_NODE", node, 1);
	setenv("IBMCAST_BOOTSTRAP", bootstrap, 1);
	execvp(o->argv[0], o->argv);
	fprintf(stderr, "%s: rank %d: cannot run %s: %s\n", prog, r,
		o->argv[0], strerror(errno));
	_exit(127);
}

static void kill_ranks(int sig)
{
	int r;

	for (r = 0; r < nranks; r++)
		if (ranks[r].pid > 0 && !ranks[r].exited)
			kill(-ranks[r].pid, sig);
}

static int live_ranks(void)
{
	int r, n = 0;

	for (r = 0; r < nranks; r++)
		n += ranks[r].pid > 0 && !ranks[r].exited;
	return n;
}

static bool failed_status(int st)
{
	return !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/* Reaps what exited; returns the rank of the first failure found, or -1. */
static int reap(void)
{
	int r, st, failed = -1;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (r = 0; r < nranks; r++)
			if (ranks[r].pid == pid)
				break;
		if (r == nranks)
			continue;
		ranks[r].exited = true;
		ranks[r].status = st;
		/* One that never connected cannot join a round any more. */
		if (ranks[r].fd < 0 && !ranks[r].closed) {
			ranks[r].closed = true;
			fail_round(-EPIPE);
		}
		if (verbose > 1)
			say("rank %d (pid %d) ended", r, (int)pid);
		if (failed < 0 && failed_status(st))
			failed = r;
	}
	return failed;
}

/* ---- the rendezvous server -------------------------------------------- */

static int round_no;

static void conn_drop(struct rank *rk)
{
	if (rk->fd >= 0)
		close(rk->fd);
	rk->fd = -1;
	rk->closed = true;
	rk->in_round = false;
	free(rk->block);
	rk->block = NULL;
}

static int send_status(int fd, int32_t status)
{
	struct ibmc_bs_result res = { .status = status, .len = 0 };

	return ibmc__write_all(fd, &res, sizeof(res), WRITE_TIMEOUT_MS);
}

/* Answers -EPIPE to every rank waiting in the current round when it can
 * never complete because a rank left. */
static void fail_round(int32_t why)
{
	int r;

	for (r = 0; r < nranks; r++) {
		struct rank *rk = &ranks[r];

		if (rk->fd < 0 || !rk->in_round)
			continue;
		if (send_status(rk->fd, why))
			conn_drop(rk);
		rk->in_round = false;
		rk->hdr_got = 0;
		free(rk->block);
		rk->block = NULL;
		rk->block_got = 0;
	}
}

static bool someone_left(void)
{
	int r;

	for (r = 0; r < nranks; r++)
		if (ranks[r].closed)
			return true;
	return false;
}

/* Completes the round when every rank's block is in. */
static void try_round(void)
{
	unsigned char *all;
	uint32_t len;
	int r;

	for (r = 0; r < nranks; r++)
		if (ranks[r].fd < 0 || !ranks[r].in_round)
			return;
	len = ranks[0].len;
	for (r = 1; r < nranks; r++)
		if (ranks[r].len != len)
			break;
	if (r < nranks) {
		say("allgather round %d: rank 0 gave %u bytes, rank %d %u",
		    round_no, len, r, ranks[r].len);
		fail_round(-EINVAL);
		return;
	}
	all = malloc((size_t)len * (size_t)nranks + 1);
	if (!all) {
		fail_round(-ENOMEM);
		return;
	}
	for (r = 0; r < nranks; r++)
		memcpy(all + (size_t)r * len, ranks[r].block, len);
	for (r = 0; r < nranks; r++) {
		struct rank *rk = &ranks[r];
		struct ibmc_bs_result res = { .status = 0, .len = len };

		if (ibmc__write_all(rk->fd, &res, sizeof(res),
				    WRITE_TIMEOUT_MS) ||
		    ibmc__write_all(rk->fd, all, (size_t)len * nranks,
				    WRITE_TIMEOUT_MS)) {
			say("rank %d: cannot send the allgather result",
			    r);
			conn_drop(rk);
			continue;
		}
		rk->in_round = false;
		rk->hdr_got = 0;
		free(rk->block);
		rk->block = NULL;
		rk->block_got = 0;
	}
	free(all);
	if (verbose > 1)
		say("allgather round %d done (%u bytes per rank)", round_no,
		    len);
	round_no++;
}

/* Reads what rank r's connection holds: a round header, then its block. */
static void conn_read(struct rank *rk)
{
	struct ibmc_bs_round rh;
	ssize_t n;

	for (;;) {
		if (rk->in_round)
			return; /* nothing more until the round completes */
		if (rk->hdr_got < sizeof(rh)) {
			n = read(rk->fd, rk->hdr + rk->hdr_got,
				 sizeof(rh) - rk->hdr_got);
		} else {
			n = read(rk->fd, rk->block + rk->block_got,
				 rk->len - rk->block_got);
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			conn_drop(rk);
			fail_round(-EPIPE);
			return;
		}
		if (rk->hdr_got < sizeof(rh)) {
			rk->hdr_got += (size_t)n;
			if (rk->hdr_got < sizeof(rh))
				continue;
			memcpy(&rh, rk->hdr, sizeof(rh));
			if (rh.len > IBMC_BS_MAX_BLOCK ||
			    (uint64_t)rh.len * nranks > IBMC_BS_MAX_TOTAL) {
				send_status(rk->fd, -E2BIG);
				conn_drop(rk);
				fail_round(-EPIPE);
				return;
			}
			rk->len = rh.len;
			rk->block_got = 0;
			rk->block = malloc(rh.len + 1);
			if (!rk->block) {
				conn_drop(rk);
				fail_round(-EPIPE);
				return;
			}
		} else {
			rk->block_got += (size_t)n;
		}
		if (rk->block_got == rk->len) {
			rk->in_round = true;
			if (someone_left())
				fail_round(-EPIPE);
			else
				try_round();
		}
	}
}

/* A new connection's hello: which rank it is. */
static void pending_read(size_t i)
{
	struct pending *p = &pend[i];
	struct ibmc_bs_hello h;
	int32_t status = 0;
	ssize_t n;

	n = read(p->fd, p->hdr + p->got, sizeof(h) - p->got);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		p->got += (size_t)n;
		if (p->got < sizeof(h))
			return;
		memcpy(&h, p->hdr, sizeof(h));
		if (h.magic != IBMC_BS_MAGIC || h.version != IBMC_BS_VERSION)
			status = -EPROTO;
		else if (h.size != nranks || h.rank < 0 || h.rank >= nranks)
			status = -EINVAL;
		else if (ranks[h.rank].fd >= 0 || ranks[h.rank].closed)
			status = -EADDRINUSE;
		if (status)
			say("refused a rendezvous connection (rank %d of %d): "
			    "%s", h.rank, h.size, strerror(-status));
		if (ibmc__write_all(p->fd, &status, sizeof(status),
				    WRITE_TIMEOUT_MS) == 0 && !status) {
			ranks[h.rank].fd = p->fd;
			p->fd = -1;
		}
	}
	if (p->fd >= 0)
		close(p->fd);
	pend[i] = pend[--npend];
}

static void accept_all(int lfd)
{
	struct pending *np;
	int fd;

	while ((fd = accept4(lfd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (npend >= (size_t)nranks * 2 + 8) {
			close(fd); /* not ours: ranks connect once each */
			continue;
		}
		np = realloc(pend, (npend + 1) * sizeof(*pend));
		if (!np) {
			close(fd);
			continue;
		}
		pend = np;
		pend[npend].fd = fd;
		pend[npend].got = 0;
		npend++;
	}
}

/* ---- main loop ---------------------------------------------------------- */

static void describe(int r, int st, const char *node)
{
	if (WIFEXITED(st))
		say("rank %d (node %s, pid %d) exited with status %d", r, node,
		    (int)ranks[r].pid, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		say("rank %d (node %s, pid %d) was killed by signal %d (%s)",
		    r, node, (int)ranks[r].pid, WTERMSIG(st),
		    strsignal(WTERMSIG(st)));
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return EXIT_LAUNCH;
}

static int run(const struct opts *o, struct ibmc_hostlist *hl, int lfd,
	       const char *bootstrap)
{
	int64_t deadline = o->timeout_s ? ibmc__now_ms() + o->timeout_s *
						       1000LL : -1;
	int64_t kill_at = -1;
	int failed = -1, r, rc = 0, timeout, n;
	bool timed_out = false, killing = false;
	struct pollfd *pfd;
	size_t i, nfd, npend0;

	pfd = calloc((size_t)nranks * 3 + 8, sizeof(*pfd));
	if (!pfd) {
		say("out of memory");
		return EXIT_LAUNCH;
	}
	for (r = 0; r < nranks; r++) {
		const char *node = hl->names[ranks[r].node];

		if (verbose)
			say("rank %d on %s", r, node);
		ranks[r].pid = spawn(o, r, node, bootstrap);
		if (ranks[r].pid < 0) {
			say("rank %d: fork: %s", r, strerror(errno));
			ranks[r].pid = 0;
			rc = EXIT_LAUNCH;
			killing = true;
			kill_ranks(SIGTERM);
			kill_at = ibmc__now_ms() + KILL_GRACE_MS;
			break;
		}
	}

	while (live_ranks()) {
		r = reap();
		if (r >= 0 && failed < 0 && !killing && o->keep_going) {
			failed = r;
			describe(r, ranks[r].status, hl->names[ranks[r].node]);
			say("--keep-going: the other ranks go on");
		} else if (r >= 0 && failed < 0 && !killing) {
			failed = r;
			describe(r, ranks[r].status, hl->names[ranks[r].node]);
			say("stopping the other ranks");
			killing = true;
			kill_ranks(SIGTERM);
			kill_at = ibmc__now_ms() + KILL_GRACE_MS;
		}
		if (!live_ranks())
			break;
		if (got_signal && !killing) {
			say("got signal %d: stopping the ranks", got_signal);
			rc = 128 + got_signal;
			killing = true;
			kill_ranks(SIGTERM);
			kill_at = ibmc__now_ms() + KILL_GRACE_MS;
		}
		if (deadline >= 0 && !killing && ibmc__now_ms() >= deadline) {
			say("--timeout %d s ran out: stopping the ranks",
			    o->timeout_s);
			timed_out = true;
			killing = true;
			kill_ranks(SIGTERM);
			kill_at = ibmc__now_ms() + KILL_GRACE_MS;
		}
		if (kill_at >= 0 && ibmc__now_ms() >= kill_at) {
			kill_ranks(SIGKILL);
			kill_at = -1;
		}

		nfd = 0;
		npend0 = npend;
		pfd[nfd++] = (struct pollfd){ .fd = sig_pipe[0],
					      .events = POLLIN };
		pfd[nfd++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < npend; i++)
			pfd[nfd++] = (struct pollfd){ .fd = pend[i].fd,
						      .events = POLLIN };
		for (r = 0; r < nranks; r++)
			pfd[nfd++] = (struct pollfd){
				.fd = ranks[r].in_round ? -1 : ranks[r].fd,
				.events = POLLIN
			};
		timeout = 1000;
		if (kill_at >= 0)
			timeout = 100;
		if (deadline >= 0 && !killing) {
			int64_t left = deadline - ibmc__now_ms();

			if (left < timeout)
				timeout = left < 0 ? 0 : (int)left;
		}
		n = poll(pfd, nfd, timeout);
		if (n < 0 && errno != EINTR) {
			say("poll: %s", strerror(errno));
			break;
		}
		if (n <= 0)
			continue;
		if (pfd[0].revents) {
			char buf[64];

			while (read(sig_pipe[0], buf, sizeof(buf)) > 0)
				;
		}
		if (pfd[1].revents)
			accept_all(lfd);
		/* Connections: pending ones by fd (pend[] shrinks as hellos
		 * complete), then the ranks' (in rank order after them). */
		for (i = 2; i < 2 + npend0; i++) {
			size_t k;

			if (!pfd[i].revents)
				continue;
			for (k = 0; k < npend; k++)
				if (pend[k].fd == pfd[i].fd) {
					pending_read(k);
					break;
				}
		}
		for (r = 0; r < nranks; r++) {
			i = 2 + npend0 + (size_t)r;
			if (pfd[i].revents && ranks[r].fd >= 0 &&
			    ranks[r].fd == pfd[i].fd)
				conn_read(&ranks[r]);
		}
	}
	reap();
	free(pfd);

	if (timed_out)
		return EXIT_TIMEOUT;
	if (failed >= 0)
		return status_code(ranks[failed].status) ?: EXIT_LAUNCH;
	if (rc)
		return rc;
	/* killed by our own SIGTERM after a failure is not a failure of its
	 * own; otherwise any failure counts */
	for (r = 0; r < nranks; r++)
		if (ranks[r].pid > 0 && failed_status(ranks[r].status)) {
			describe(r, ranks[r].status, hl->names[ranks[r].node]);
			return status_code(ranks[r].status) ?: EXIT_LAUNCH;
		}
	return 0;
}

int main(int argc, char **argv)
{
	struct ibmc_hostlist hl = { 0 };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/ibmcast-run.XXXXXX", bootstrap[sizeof(sun.sun_path) + 8];
	struct opts o;
	int lfd = -1, rc, r, need;
	const char *tmp;
	char *tmpl = NULL;

	memset(&o, 0, sizeof(o));
	if (parse_args(argc, argv, &o))
		return EXIT_USAGE;
	rc = ibmc__hostlist_expand(o.nodes, MAX_NODES, &hl);
	if (rc) {
		say("--nodes '%s': %s", o.nodes, rc == -EINVAL ?
			"not a hostlist" : strerror(-rc));
		return EXIT_USAGE;
	}
	need = o.per_node ? (o.nranks + o.per_node - 1) / o.per_node : 1;
	if ((size_t)need > hl.count) {
		say("%d ranks at %d per node need %d nodes; '%s' has %zu",
		    o.nranks, o.per_node, need, o.nodes, hl.count);
		ibmc__hostlist_free(&hl);
		return EXIT_USAGE;
	}
	nranks = o.nranks;
	ranks = calloc((size_t)nranks, sizeof(*ranks));
	if (!ranks) {
		say("out of memory");
		return EXIT_LAUNCH;
	}
	for (r = 0; r < nranks; r++) {
		ranks[r].fd = -1;
		ranks[r].node = place(&o, r,
				      (int)(hl.count < (size_t)nranks ?
						    hl.count : (size_t)nranks));
	}
	if (o.job && export_job(&o)) {
		rc = EXIT_LAUNCH;
		goto out;
	}

	/* The rendezvous socket lives in a private directory. */
	tmp = getenv("TMPDIR");
	if (tmp && *tmp && strlen(tmp) < sizeof(sun.sun_path) - 40) {
		if (asprintf(&tmpl, "%s/ibmcast-run.XXXXXX", tmp) < 0)
			tmpl = NULL;
	}
	if (!mkdtemp(tmpl ? tmpl : dir)) {
		say("cannot create a directory for the rendezvous socket: %s",
		    strerror(errno));
		rc = EXIT_LAUNCH;
		goto out;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/bootstrap.sock",
		 tmpl ? tmpl : dir);
	snprintf(bootstrap, sizeof(bootstrap), "unix:%s", sun.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(lfd, nranks + 16)) {
		say("rendezvous socket %s: %s", sun.sun_path, strerror(errno));
		rc = EXIT_LAUNCH;
		goto out_dir;
	}
	if (setup_signals()) {
		say("signal pipe: %s", strerror(errno));
		rc = EXIT_LAUNCH;
		goto out_dir;
	}
	rc = run(&o, &hl, lfd, bootstrap);

out_dir:
	if (lfd >= 0)
		close(lfd);
	unlink(sun.sun_path);
	rmdir(tmpl ? tmpl : dir);
out:
	for (r = 0; r < nranks; r++)
		if (ranks[r].fd >= 0)
			conn_drop(&ranks[r]);
	while (npend)
		close(pend[--npend].fd);
	free(pend);
	free(ranks);
	free(tmpl);
	ibmc__hostlist_free(&hl);
	return rc;
}
