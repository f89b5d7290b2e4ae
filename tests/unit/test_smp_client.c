/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmc__smp_read_mft against a running ibsim + OpenSM: MFT blocks read
 * through ibmcast-smpd must equal what `ibroute -M` read. Driven by
 * tests/integration/mft_readback.sh; skips when no ibsim is running. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/mad.h>

#include "osm-plugin/smp_client.h"
#include "tests/tap.h"

#define MAX_ENTRIES 4096

/* One nonzero (switch, MLID, position) mask that ibroute printed. */
struct entry {
	uint16_t lid, mlid;
	uint8_t position;
	uint16_t mask;
};

static struct entry ent[MAX_ENTRIES];
static int nent;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int add_bit(unsigned int lid, unsigned int mlid, unsigned int port)
{
	int i;

	for (i = 0; i < nent; i++)
		if (ent[i].lid == lid && ent[i].mlid == mlid &&
		    ent[i].position == port / 16)
			break;
	if (i == nent) {
		if (nent == MAX_ENTRIES)
			return -ENOSPC;
		ent[nent].lid = (uint16_t)lid;
		ent[nent].mlid = (uint16_t)mlid;
		ent[nent].position = (uint8_t)(port / 16);
		ent[nent].mask = 0;
		nent++;
	}
	ent[i].mask |= (uint16_t)(1u << (port % 16));
	return 0;
}

/* `ibroute -M LID`: a header naming "Lid N", a "Ports:" ruler whose
 * digits sit two columns apart, then "0xMLID" rows with an 'x' under
 * every port in the mask. */
static int parse_dump(const char *path)
{
	char line[1024], *p;
	unsigned int lid = 0, mlid, port;
	size_t col0 = 0, len;
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, "switch Lid ");
		if (p) {
			lid = (unsigned int)strtoul(p + 11, NULL, 0);
			continue;
		}
		p = strstr(line, "Ports: ");
		if (p) {
			col0 = (size_t)(p - line) + 7;
			continue;
		}
		if (strncmp(line, "0x", 2) || sscanf(line, "%x", &mlid) != 1)
			continue;
		if (!lid || !col0)
			goto bad;
		len = strlen(line);
		for (port = 0; col0 + 2 * port < len; port++)
			if (line[col0 + 2 * port] == 'x' &&
			    add_bit(lid, mlid, port))
				goto bad;
	}
	fclose(f);
	return 0;
bad:
	fclose(f);
	return -EINVAL;
}

static uint16_t expected(uint16_t lid, uint16_t mlid, uint8_t pos)
{
	int i;

	for (i = 0; i < nent; i++)
		if (ent[i].lid == lid && ent[i].mlid == mlid &&
		    ent[i].position == pos)
			return ent[i].mask;
	return 0;
}

/* Every (switch, block, position) that ibroute showed anything for. */
static size_t make_queries(struct ibmc_smp_query *q, size_t max)
{
	size_t n = 0, j;
	int i;

	for (i = 0; i < nent; i++) {
		struct ibmc_smp_query x = {
			.lid = ent[i].lid,
			.block = (uint16_t)((ent[i].mlid - 0xc000) / 32),
			.position = ent[i].position,
		};

		for (j = 0; j < n; j++)
			if (q[j].lid == x.lid && q[j].block == x.block &&
			    q[j].position == x.position)
				break;
		if (j == n && n < max)
			q[n++] = x;
	}
	return n;
}

static int compare(const struct ibmc_smp_result *r,
		   const struct ibmc_smp_query *q, size_t n)
{
	size_t i, j, bad = 0;

	for (i = 0; i < n; i++) {
		if (r[i].status) {
			tap_diag("lid %u block %u pos %u: status %d", q[i].lid,
				 q[i].block, q[i].position, r[i].status);
			bad++;
			continue;
		}
		for (j = 0; j < 32; j++) {
			uint16_t mlid = (uint16_t)(0xc000 + 32 * q[i].block +
						   j);
			uint16_t want = expected(q[i].lid, mlid,
						 q[i].position);

			if (r[i].masks[j] != want) {
				tap_diag("lid %u mlid 0x%04x pos %u: got "
					 "0x%04x, ibroute 0x%04x", q[i].lid,
					 mlid, q[i].position, r[i].masks[j],
					 want);
				bad++;
			}
		}
	}
	return (int)bad;
}

/* The reader's pid, found as our only child, to kill it behind the
 * client's back. */
static pid_t child_pid(void)
{
	char path[64];
	FILE *f;
	long pid = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children",
		 (int)getpid());
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

/* Test fixture, not a product feature: join port GUIDs to an MGID by
 * proxy through the SA so that OpenSM programs real MFTs to compare. */
static int join(int argc, char **argv)
{
	int classes[] = { IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS };
	struct ibmad_port *port;
	ib_portid_t sm = { 0 };
	ib_sa_call_t sa = { 0 };
	uint8_t mgid[16], rec[IB_SA_DATA_SIZE], gid[16];
	uint64_t guid;
	int i, b;

	if (argc < 4 || inet_pton(AF_INET6, argv[2], mgid) != 1) {
		fprintf(stderr, "usage: --join MGID PORTGUID...\n");
		return 2;
	}
	port = mad_rpc_open_port(NULL, 0, classes, 3);
	if (!port || ib_resolve_smlid_via(&sm, 1000, port) < 0) {
		fprintf(stderr, "cannot reach the SM\n");
		return 2;
	}
	for (i = 3; i < argc; i++) {
		guid = strtoull(argv[i], NULL, 0);
		memset(rec, 0, sizeof(rec));
		memset(gid, 0, sizeof(gid));
		gid[0] = 0xfe;
		gid[1] = 0x80;
		for (b = 0; b < 8; b++)
			gid[8 + b] = (uint8_t)(guid >> (56 - 8 * b));
		mad_encode_field(rec, IB_SA_MCM_MGID_F, mgid);
		mad_encode_field(rec, IB_SA_MCM_PORTGID_F, gid);
		mad_set_field(rec, 0, IB_SA_MCM_QKEY_F, 0x0b1b);
		mad_set_field(rec, 0, IB_SA_MCM_PKEY_F, 0xffff);
		mad_set_field(rec, 0, IB_SA_MCM_JOIN_STATE_F, 1);
		/* MGID PortGID QKey TClass PKey SL FlowLabel JoinState */
		sa.mask = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 6 | 1 << 7 |
			  1 << 12 | 1 << 13 | 1 << 16;
		sa.attrid = IB_SA_ATTR_MCRECORD;
		sa.method = IB_MAD_METHOD_SET;
		sa.trid = 0;
		if (!sa_rpc_call(port, rec, &sm, &sa, 1000)) {
			fprintf(stderr, "join of 0x%" PRIx64 " failed\n", guid);
			mad_rpc_close_port(port);
			return 1;
		}
		printf("0x%04x\n", mad_get_field(rec, 0, IB_SA_MCM_MLID_F));
	}
	mad_rpc_close_port(port);
	return 0;
}

int main(int argc, char **argv)
{
	static struct ibmc_smp_query q[1200];
	static struct ibmc_smp_result r[1200];
	struct ibmc_smp_client *c = NULL;
	const char *smpd;
	size_t n, i, big;
	double t0, t1;
	pid_t pid;
	int ret;

	if (!getenv("IBSIM_SOCKNAME"))
		tap_skip_all("needs a running ibsim (run via "
			     "tests/integration/mft_readback.sh)");
	if (argc > 1 && !strcmp(argv[1], "--join"))
		return join(argc, argv);
	if (argc < 3)
		tap_skip_all("needs SMPD_PATH and ibroute -M dumps "
			     "(run via tests/integration/mft_readback.sh)");
	smpd = argv[1];
	for (i = 2; i < (size_t)argc; i++)
		if (parse_dump(argv[i])) {
			printf("Bail out! cannot parse %s\n", argv[i]);
			return 1;
		}
	n = make_queries(q, 64);

	tap_plan(9);
	tap_ok(n > 0, "ibroute dumps name %zu nonzero MFT blocks", n);
	ret = ibmc__smp_client_start(smpd, &c);
	tap_is_int(ret, 0, "reader starts");
	if (ret)
		return tap_done();

	ret = ibmc__smp_read_mft(c, r, q, n, 2000);
	tap_is_int(ret, 0, "read %zu blocks", n);
	tap_is_int(compare(r, q, n), 0, "blocks equal ibroute's");

	/* More than one batch: the same blocks over and over. */
	big = sizeof(q) / sizeof(q[0]);
	for (i = n; i < big; i++)
		q[i] = q[i % n];
	t0 = now_ms();
	ret = ibmc__smp_read_mft(c, r, q, big, 5000);
	t1 = now_ms();
	tap_ok(!ret && !compare(r, q, big), "%zu blocks in %d batches",
	       big, (int)((big + IBMC_SMP_MAX_QUERIES - 1) /
			  IBMC_SMP_MAX_QUERIES));
	tap_diag("%zu SMPs in %.2f ms: %.1f SMPs/ms", big, t1 - t0,
		 big / (t1 - t0));
	t0 = now_ms();
	ret = ibmc__smp_read_mft(c, r, q, 100, 2000);
	t1 = now_ms();
	tap_diag("100 SMPs in %.2f ms", t1 - t0);

	/* No switch answers at an unassigned LID: the reader itself gives up
	 * after its tries and says so (ret 0, status -1), within the budget,
	 * so the client never has to time it out and kill it (which would
	 * return -ETIMEDOUT and change its pid). The budget is generous, so
	 * that a loaded machine cannot turn this into a race; how long it
	 * took is only reported. */
	q[0].lid = 0xbfff;
	pid = child_pid();
	t0 = now_ms();
	ret = ibmc__smp_read_mft(c, r, q, 1, 3000);
	t1 = now_ms();
	tap_ok(!ret && r[0].status == -1 && pid > 0 && child_pid() == pid,
	       "unanswered SMP: the reader reports it failed after its "
	       "tries, not timed out and replaced (ret %d, status %d)",
	       ret, r[0].status);
	tap_diag("unanswered SMP reported after %.0f ms (budget 3000)",
		 t1 - t0);
	make_queries(q, 64);

	/* A reader that died behind our back is replaced on the next call.
	 * SIGTERM, not SIGKILL: ibsim never frees a killed client's slot. */
	pid = child_pid();
	tap_ok(pid > 0 && !kill(pid, SIGTERM), "killed reader %d", (int)pid);
	usleep(100 * 1000);
	ret = ibmc__smp_read_mft(c, r, q, n, 2000);
	if (ret) /* the call that found it dead may fail; the next not */
		ret = ibmc__smp_read_mft(c, r, q, n, 2000);
	tap_ok(!ret && !compare(r, q, n), "respawned reader answers");

	ibmc__smp_client_stop(c);
	ibmc__smp_client_stop(NULL);
	tap_ok(child_pid() == 0, "stop leaves no child");
	return tap_done();
}
