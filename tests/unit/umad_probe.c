/* SPDX-License-Identifier: BSD-3-Clause */
/* Helper of tests/integration/umad_timeout.sh, run attached to a simulated
 * fabric. "silent" plays an SM that never answers; "get" sends one LID
 * routed SMP Get and reports what umad_recv() gave back, one line of
 * key=value, for the script to judge. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/umad.h>

#define MAD_SIZE	256
#define SMP_CLASS_LID	0x01

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static int open_port(int *fd, int *agent)
{
	*fd = umad_open_port(NULL, 0);
	if (*fd < 0) {
		fprintf(stderr, "umad_probe: umad_open_port: %s\n",
			strerror(-*fd));
		return -1;
	}
	*agent = umad_register(*fd, SMP_CLASS_LID, 1, 0, NULL);
	if (*agent < 0) {
		fprintf(stderr, "umad_probe: umad_register: %s\n",
			strerror(-*agent));
		return -1;
	}
	return 0;
}

static void on_term(int sig)
{
	(void)sig;
	/* exit() runs umad2sim's cleanup, which leaves ibsim's client
	 * table; ibsim serves only ten. */
	exit(0);
}

/* Registers for both SMP classes, then claims to be an SM (as opening
 * issm does with the kernel), so ibsim hands it the SMInfo queries meant
 * for an SM; and never reads them. Prints its LID. The order matters:
 * umad2sim crashes on a MAD of a class nobody registered. */
static int silent(void)
{
	char path[256];
	umad_port_t port;
	int fd, agent;

	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	if (open_port(&fd, &agent) < 0 ||
	    umad_register(fd, 0x81, 1, 0, NULL) < 0)
		return 1;
	if (umad_get_issm_path(NULL, 0, path, sizeof(path)) < 0 ||
	    open(path, O_RDWR) < 0) {
		fprintf(stderr, "umad_probe: cannot open issm\n");
		return 1;
	}
	if (umad_get_port(NULL, 0, &port) < 0) {
		fprintf(stderr, "umad_probe: umad_get_port failed\n");
		return 1;
	}
	printf("lid=%u\n", port.base_lid);
	fflush(stdout);
	for (;;)
		pause();
}

/* get LID ATTR TIMEOUT_MS RETRIES WAIT_MS: one SMP Get, then umad_recv
 * until the MAD with our TID comes back or WAIT_MS pass. */
static int get(char **argv)
{
	unsigned lid = (unsigned)strtoul(argv[0], NULL, 0);
	unsigned attr = (unsigned)strtoul(argv[1], NULL, 0);
	int tmo = atoi(argv[2]), retries = atoi(argv[3]);
	int wait = atoi(argv[4]);
	/* A high half that umad2sim will overwrite: only the low half
	 * identifies the transaction. */
	uint32_t tid = (uint32_t)getpid() << 8 | 0x5a;
	unsigned char buf[sizeof(struct ib_user_mad) + MAD_SIZE], *mad;
	struct ib_user_mad *u = (struct ib_user_mad *)buf;
	int64_t t0, end;
	int fd, agent, ret, len;

	if (open_port(&fd, &agent) < 0)
		return 1;
	memset(buf, 0, sizeof(buf));
	umad_set_addr(buf, (int)lid, 0, 0, 0);
	mad = umad_get_mad(buf);
	mad[0] = 1;
	mad[1] = SMP_CLASS_LID;
	mad[2] = 1;
	mad[3] = 0x01;			/* Get */
	put_be32(mad + 8, 0xdeadbeef);
	put_be32(mad + 12, tid);
	mad[16] = (unsigned char)(attr >> 8);
	mad[17] = (unsigned char)attr;
	t0 = now_ms();
	end = t0 + wait;
	ret = umad_send(fd, agent, buf, MAD_SIZE, tmo, retries);
	if (ret < 0) {
		printf("result=send-failed err=%d\n", ret);
		return 0;
	}
	for (;;) {
		int64_t left = end - now_ms();

		if (left <= 0) {
			printf("result=nothing ms=%" PRId64 "\n", now_ms() - t0);
			return 0;
		}
		len = MAD_SIZE;
		ret = umad_recv(fd, buf, &len, (int)left);
		if (ret < 0) {
			printf("result=recv-failed err=%d ms=%" PRId64 "\n",
			       -ret, now_ms() - t0);
			return 0;
		}
		if (get_be32(mad + 12) == tid)
			break;
	}
	printf("result=got agent_ok=%d status=%u method=0x%02x len=%d "
	       "mad_status=0x%04x ms=%" PRId64 "\n", ret == agent, u->status,
	       mad[3], len, (unsigned)(mad[4] << 8 | mad[5]), now_ms() - t0);
	umad_close_port(fd);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (umad_init() < 0) {
		fprintf(stderr, "umad_probe: umad_init failed\n");
		return 1;
	}
	if (argc == 2 && !strcmp(argv[1], "silent"))
		return silent();
	if (argc == 7 && !strcmp(argv[1], "get"))
		return get(argv + 2);
	fprintf(stderr, "usage: umad_probe silent | "
		"umad_probe get LID ATTR TIMEOUT_MS RETRIES WAIT_MS\n");
	return 2;
}
