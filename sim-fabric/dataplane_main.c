/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmcast-dataplane: the simulated fabric's data plane daemon (options,
 * start-up, the poll loop), and "ibmcast-dataplane ctl", a client of its
 * control socket for the launcher and the tests. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/parse.h"
#include "sim-fabric/dataplane.h"

#define UMAD_DRAIN_MS 10

static struct dataplane *the_dp;

static void on_signal(int sig)
{
	(void)sig;
	if (the_dp)
		the_dp->stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ibmcast-dataplane --socket PATH --ctl PATH [--mft-ms N]\n"
		"           [--lft-ms N] [--topo-ms N] [--idle-ms N]\n"
		"           [--smp-timeout-ms N] [--rq-bytes N]\n"
		"           [--lifetime-ms N] [--rt-priority N] [--seed N]\n"
		"           [--model NAME]\n"
		"       ibmcast-dataplane ctl --ctl PATH counters [--all] | reset |\n"
		"           status | clear | set KEY=VAL... | json REQUEST\n");
}

/*
 * The switches this daemon stands for are hardware: they never wait for a
 * host's CPU. Under a normal time share they did, on an oversubscribed
 * host: Open MPI ranks that spin in sched_yield while idle took both CPUs
 * of a 2-core machine from every other session for 10-30 s at a time
 * (perf: two ranks in ompi_comm_nextcid, 88% of all samples; the data
 * plane, OpenSM and a 10 Hz ticker got none), the packets in flight
 * stopped, and live ranks were taken for dead. So while endpoints are
 * connected the daemon runs real-time; it only ever runs then on packets
 * the hosts sent, and the kernel's real-time throttling
 * (sched_rt_runtime_us) leaves the rest of the machine its share even so.
 * With no endpoint it only reads tables, and stays time-shared: real-time
 * table passes over a 700-node fabric under a sanitizer kept ibsim and
 * OpenSM from the CPU. Without the privilege (not root, no CAP_SYS_NICE)
 * it always runs time-shared and says so.
 */
static void sched_probe(struct dataplane *dp, char *what, size_t len)
{
	struct sched_param rr = { .sched_priority = dp->rt_prio }, other = { 0 };

	if (!dp->rt_prio) {
		snprintf(what, len, "time-shared (--rt-priority 0)");
		return;
	}
	if (sched_setscheduler(0, SCHED_RR, &rr)) {
		snprintf(what, len, "time-shared (SCHED_RR priority %d: %s)",
			 dp->rt_prio, strerror(errno));
		dp->rt_prio = 0;
		return;
	}
	sched_setscheduler(0, SCHED_OTHER, &other);
	snprintf(what, len, "real-time (SCHED_RR priority %d) while endpoints "
		 "are connected", dp->rt_prio);
}

static void sched_follow(struct dataplane *dp)
{
	struct sched_param rr = { .sched_priority = dp->rt_prio }, other = { 0 };
	bool want = dp->rt_prio && dp->nep > 0;

	if (want == dp->rt_on)
		return;
	if (!sched_setscheduler(0, want ? SCHED_RR : SCHED_OTHER,
				want ? &rr : &other))
		dp->rt_on = want;
}

static int listen_unix(const char *path, int type)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, 128) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static long num_opt(const char *s, const char *what, long lo, long hi)
{
	long v;

	if (ibmc__parse_long(s, 0, lo, hi, &v)) {
		fprintf(stderr, "ibmcast-dataplane: bad %s '%s' (%ld..%ld)\n",
			what, s, lo, hi);
		exit(2);
	}
	return v;
}

static int setup(struct dataplane *dp, const char *model)
{
	int ret, tries;

	for (tries = 0;; tries++) {
		ret = fm_discover(&dp->fm);
		if (!ret)
			break;
		if (tries >= 20) {
			fprintf(stderr, "ibmcast-dataplane: fabric discovery "
				"failed: %s\n", strerror(-ret));
			return ret;
		}
		usleep(500000);
	}
	fprintf(stderr, "ibmcast-dataplane: discovered %d nodes, %d link "
		"directions, LIDs up to %u\n", dp->fm.nnode, dp->fm.nlink,
		dp->fm.max_lid);
	/* After discovery: libibnetdisc's own umad port is closed by now,
	 * and umad2sim routes answers by class to the last registration. */
	ret = dp_mad_open(&dp->mad, dp->smp_timeout_ms, 32);
	if (ret) {
		fprintf(stderr, "ibmcast-dataplane: cannot open a umad port\n");
		return ret;
	}
	dp->lc = calloc((size_t)dp->fm.nlink + 1, sizeof(*dp->lc));
	dp->faults.link_loss = calloc((size_t)dp->fm.nlink + 1,
				      sizeof(double));
	dp->hca_eps = calloc((size_t)dp->fm.nnode, sizeof(*dp->hca_eps));
	dp->next_qpn = calloc((size_t)dp->fm.nnode, sizeof(*dp->next_qpn));
	if (!dp->lc || !dp->faults.link_loss || !dp->hca_eps ||
	    !dp->next_qpn || dp_tables_init(dp) || dp_topo_init(dp))
		return -ENOMEM;
	ret = dp_model_init(dp, model);
	if (ret) {
		fprintf(stderr, "ibmcast-dataplane: --model %s: %s (presets: "
			"%s)\n", model, ret == -ENOENT ? "no such preset" :
			strerror(-ret), dp_model_presets());
		return ret;
	}
	for (ret = 0; ret < dp->fm.nnode; ret++)
		dp->next_qpn[ret] = 0x100;
	/* The first LFT pass before any endpoint can send. */
	dp_tables_tick(dp, ibmc__now_ns());
	while (dp->lft_inflight && !dp->stop) {
		usleep(1000);
		dp_mad_progress(dp->mad);
	}
	return 0;
}

static void loop(struct dataplane *dp)
{
	struct pollfd *pfd = NULL;
	struct dp_ctl_client *c;
	struct dp_ep *ep, **eps = NULL;
	int cap = 0, n, i, nctl, tmo;
	uint64_t now, next;

	while (!dp->stop) {
		int want = 2 + dp->nep;

		for (c = dp->ctls; c; c = dp_ctl_next(c))
			want++;
		if (want > cap) {
			cap = want * 2;
			free(pfd);
			free(eps);
			pfd = calloc((size_t)cap, sizeof(*pfd));
			eps = calloc((size_t)cap, sizeof(*eps));
			if (!pfd || !eps) {
				fprintf(stderr, "ibmcast-dataplane: out of "
					"memory\n");
				break;
			}
		}
		n = 0;
		pfd[n++] = (struct pollfd){ .fd = dp->listen_fd,
					    .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = dp->ctl_fd, .events = POLLIN };
		for (ep = dp->eps; ep; ep = ep->next) {
			eps[n] = ep;
			pfd[n++] = (struct pollfd){ .fd = ep->fd,
				.events = (short)(POLLIN |
					(ep->qhead ? POLLOUT : 0)) };
		}
		nctl = n;
		for (c = dp->ctls; c; c = dp_ctl_next(c))
			pfd[n++] = (struct pollfd){ .fd = dp_ctl_fd(c),
						    .events = POLLIN };
		now = ibmc__now_ns();
		next = dp_tables_next_ns(dp);
		if (dp_delay_next_ns(dp) < next)
			next = dp_delay_next_ns(dp);
		/* At least every UMAD_DRAIN_MS: ibsim answers for every
		 * client from one loop and spins on a client whose socket is
		 * full, so what comes for this port is taken in promptly even
		 * while no request of ours is under way. */
		tmo = next <= now ? 0 : next - now >= UMAD_DRAIN_MS * 1000000ull ?
			UMAD_DRAIN_MS : (int)((next - now + 999999) / 1000000);
		if (poll(pfd, (nfds_t)n, tmo) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN)
			while (!dp_ep_accept(dp))
				;
		if (pfd[1].revents & POLLIN)
			while (!dp_ctl_accept(dp))
				;
		for (i = 2; i < nctl; i++) {
			if (pfd[i].revents & POLLOUT)
				dp_ep_flush(dp, eps[i]);
			if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
				dp_ep_input(dp, eps[i]);
		}
		/* Control clients in poll order: the list has not changed
		 * since the array was built (accepts prepend). */
		i = nctl;
		for (c = dp->ctls; c && i < n; c = dp_ctl_next(c)) {
			if (dp_ctl_fd(c) != pfd[i].fd)
				continue;
			if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
				dp_ctl_input(dp, c);
			i++;
		}
		now = ibmc__now_ns();
		dp_tables_tick(dp, now);	/* drains the umad port too */
		dp_topo_tick(dp, now);
		dp_delay_tick(dp, now);
		dp_ep_reap(dp);
		dp_ctl_reap(dp);
		sched_follow(dp);
	}
	free(pfd);
	free(eps);
}

static void teardown(struct dataplane *dp)
{
	dp_ep_free_all(dp);
	dp_ctl_free_all(dp);
	while (dp->delay_head) {
		struct dp_qmsg *m = dp->delay_head;

		dp->delay_head = m->next;
		free(m);
	}
	dp_mad_close(dp->mad);
	/* dp_mad_close dropped the requests; their contexts remain. */
	dp_sa_free_all(dp);
	dp_tables_free(dp);
	dp_topo_free(dp);
	dp_model_free(dp);
	free(dp->lc);
	free(dp->faults.link_loss);
	free(dp->hca_eps);
	free(dp->next_qpn);
	fm_free(&dp->fm);
}

int dp_ctl_main(int argc, char **argv);

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "ctl", required_argument, NULL, 'c' },
		{ "mft-ms", required_argument, NULL, 'm' },
		{ "lft-ms", required_argument, NULL, 'l' },
		{ "topo-ms", required_argument, NULL, 'T' },
		{ "idle-ms", required_argument, NULL, 'i' },
		{ "smp-timeout-ms", required_argument, NULL, 't' },
		{ "rq-bytes", required_argument, NULL, 'r' },
		{ "lifetime-ms", required_argument, NULL, 'L' },
		{ "rt-priority", required_argument, NULL, 'P' },
		{ "seed", required_argument, NULL, 'S' },
		{ "model", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct dataplane dp = { .mft_ms = 15, .lft_ms = 1000, .topo_ms = 1000,
				.idle_ms = 10000, .smp_timeout_ms = 100,
				.rq_bytes = 16u << 20,
				.lifetime_ns = 1000000000ull, .rt_prio = 1,
				.listen_fd = -1,
				.ctl_fd = -1 };
	const char *sock = NULL, *ctl = NULL, *model = "hdr";
	char sched[96];
	struct sigaction sa = { .sa_handler = on_signal };
	int c, ret = 1;

	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return dp_ctl_main(argc - 1, argv + 1);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'c': ctl = optarg; break;
		case 'm': dp.mft_ms = (int)num_opt(optarg, "--mft-ms", 1,
						    600000); break;
		case 'l': dp.lft_ms = (int)num_opt(optarg, "--lft-ms", 1,
						    600000); break;
		case 'T': dp.topo_ms = (int)num_opt(optarg, "--topo-ms", 1,
						     600000); break;
		case 'i': dp.idle_ms = (int)num_opt(optarg, "--idle-ms", 1,
						     86400000); break;
		case 't': dp.smp_timeout_ms = (int)num_opt(optarg,
					"--smp-timeout-ms", 1, 60000); break;
		case 'r': dp.rq_bytes = (uint64_t)num_opt(optarg, "--rq-bytes",
					4096, 1L << 30); break;
		case 'P': dp.rt_prio = (int)num_opt(optarg, "--rt-priority",
						     0, 99); break;
		case 'L': dp.lifetime_ns = (uint64_t)num_opt(optarg,
				"--lifetime-ms", 0, 3600000) * 1000000ull;
			break;
		case 'S': dp.faults.seed = dp.faults.rng =
			(uint64_t)num_opt(optarg, "--seed", 0, 0x7fffffffffffffffL);
			break;
		case 'M': model = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || !sock || !ctl) {
		usage(stderr);
		return 2;
	}
	the_dp = &dp;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	srandom((unsigned)getpid());

	if (setup(&dp, model))
		goto out;
	dp.listen_fd = listen_unix(sock, SOCK_SEQPACKET);
	dp.ctl_fd = listen_unix(ctl, SOCK_STREAM);
	if (dp.listen_fd < 0 || dp.ctl_fd < 0) {
		fprintf(stderr, "ibmcast-dataplane: cannot listen on %s or "
			"%s: %s\n", sock, ctl, strerror(errno));
		goto out;
	}
	dp.start_ns = ibmc__now_ns();
	sched_probe(&dp, sched, sizeof(sched));
	fprintf(stderr, "ibmcast-dataplane: ready on %s (control %s), MFTs "
		"re-read every %d ms, LFTs every %d ms, port states every %d "
		"ms, timing model %s, %s\n", sock, ctl, dp.mft_ms, dp.lft_ms,
		dp.topo_ms, dp.model.name, sched);
	loop(&dp);
	ret = 0;
	fprintf(stderr, "ibmcast-dataplane: stopping\n");
out:
	if (dp.listen_fd >= 0) {
		close(dp.listen_fd);
		unlink(sock);
	}
	if (dp.ctl_fd >= 0) {
		close(dp.ctl_fd);
		unlink(ctl);
	}
	teardown(&dp);
	return ret;
}
