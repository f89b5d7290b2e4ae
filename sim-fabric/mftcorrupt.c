/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmcast-mftcorrupt: a test fixture that writes a wrong MFT entry into one
 * switch over SMP (run under the simulated fabric's preload, as
 * ibmcast-mftwatch is), so that tests can see what readback makes of a
 * switch whose table does not hold what OpenSM wrote, or wipe a group's
 * entries so that only a new SM's writes can bring them back. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mad.h>

#define MLID_BASE	0xc000u
#define SMP_TIMEOUT_MS	1000

enum { EXIT_DONE = 0, EXIT_NOT_WRITTEN = 1, EXIT_ERR = 2 };

static void usage(void)
{
	fprintf(stderr,
		"usage: ibmcast-mftcorrupt --lid LID --mlid MLID\n"
		"           {--clear-port P | --set-port P |"
		" --mask M [--position N] | --wipe}\n"
		"Writes the port mask of MLID in the MFT of the switch at LID:\n"
		"clears or sets port P's bit, writes mask M at position N\n"
		"(ports 16N..16N+15, default 0), or (--wipe) clears the MLID\n"
		"at every position of the switch. Prints the old and new masks\n"
		"as JSON; exit 0 written and read back, 1 read back different,\n"
		"2 error.\n");
	exit(EXIT_ERR);
}

static unsigned long num(const char *s, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v > max) {
		fprintf(stderr, "ibmcast-mftcorrupt: bad %s '%s'\n", what, s);
		usage();
	}
	return v;
}

static uint16_t get_mask(const uint8_t *blk, unsigned slot)
{
	return (uint16_t)(blk[2 * slot] << 8 | blk[2 * slot + 1]);
}

static void put_mask(uint8_t *blk, unsigned slot, uint16_t m)
{
	blk[2 * slot] = (uint8_t)(m >> 8);
	blk[2 * slot + 1] = (uint8_t)m;
}

/* Reads, changes and writes back MLID's mask at one position, reads it
 * again, and prints it as one JSON object. Returns an exit status. */
static int write_one(struct ibmad_port *mp, ib_portid_t *dst, int how,
		     unsigned long mlid, unsigned long pos, unsigned long port,
		     unsigned long mask, bool last)
{
	uint8_t blk[IB_SMP_DATA_SIZE], back[IB_SMP_DATA_SIZE];
	unsigned slot = (unsigned)((mlid - MLID_BASE) % 32);
	unsigned block = (unsigned)((mlid - MLID_BASE) / 32);
	uint32_t mod = (uint32_t)pos << 28 | block;
	uint16_t old, want;

	if (!smp_query_via(blk, dst, IB_ATTR_MULTICASTFORWTBL, mod,
			   SMP_TIMEOUT_MS, mp)) {
		fprintf(stderr, "ibmcast-mftcorrupt: switch LID %d did not "
			"answer the MFT read (block %u, position %lu)\n",
			dst->lid, block, pos);
		return EXIT_ERR;
	}
	old = get_mask(blk, slot);
	if (how == 'c')
		want = (uint16_t)(old & ~(1u << (port % 16)));
	else if (how == 's')
		want = (uint16_t)(old | 1u << (port % 16));
	else
		want = (uint16_t)mask;
	put_mask(blk, slot, want);
	if (!smp_set_via(blk, dst, IB_ATTR_MULTICASTFORWTBL, mod,
			 SMP_TIMEOUT_MS, mp)) {
		fprintf(stderr, "ibmcast-mftcorrupt: switch LID %d did not "
			"answer the MFT write\n", dst->lid);
		return EXIT_ERR;
	}
	if (!smp_query_via(back, dst, IB_ATTR_MULTICASTFORWTBL, mod,
			   SMP_TIMEOUT_MS, mp)) {
		fprintf(stderr, "ibmcast-mftcorrupt: switch LID %d did not "
			"answer the MFT read after the write\n", dst->lid);
		return EXIT_ERR;
	}
	printf("{\"position\":%lu,\"old\":\"0x%04x\",\"new\":\"0x%04x\","
	       "\"read_back\":\"0x%04x\"}%s", pos, old, want,
	       get_mask(back, slot), last ? "" : ",");
	return get_mask(back, slot) == want ? EXIT_DONE : EXIT_NOT_WRITTEN;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "lid", required_argument, NULL, 'l' },
		{ "mlid", required_argument, NULL, 'm' },
		{ "clear-port", required_argument, NULL, 'c' },
		{ "set-port", required_argument, NULL, 's' },
		{ "mask", required_argument, NULL, 'k' },
		{ "position", required_argument, NULL, 'p' },
		{ "wipe", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int classes[] = { IB_SMI_CLASS, IB_SMI_DIRECT_CLASS };
	unsigned long lid = 0, mlid = 0, port = 0, mask = 0, pos = 0, last;
	int how = 0, o, ret = EXIT_ERR;
	bool have_pos = false;
	struct ibmad_port *mp;
	ib_portid_t dst = { 0 };

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'l': lid = num(optarg, "LID", 0xbfff); break;
		case 'm': mlid = num(optarg, "MLID", 0xffff); break;
		case 'c':
		case 's':
			if (how)
				usage();
			how = o;
			port = num(optarg, "port", 254);
			break;
		case 'k':
			if (how)
				usage();
			how = o;
			mask = num(optarg, "mask", 0xffff);
			break;
		case 'p':
			pos = num(optarg, "position", 15);
			have_pos = true;
			break;
		case 'w':
			if (how)
				usage();
			how = o;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !lid || mlid < MLID_BASE || !how ||
	    (have_pos && how != 'k'))
		usage();
	if (how == 'c' || how == 's')
		pos = port / 16;

	mp = mad_rpc_open_port(NULL, 0, classes, 2);
	if (!mp) {
		fprintf(stderr, "ibmcast-mftcorrupt: cannot open a umad port\n");
		return EXIT_ERR;
	}
	dst.lid = (int)lid;
	if (how == 'w') {
		uint8_t ni[IB_SMP_DATA_SIZE];

		if (!smp_query_via(ni, &dst, IB_ATTR_NODE_INFO, 0,
				   SMP_TIMEOUT_MS, mp)) {
			fprintf(stderr, "ibmcast-mftcorrupt: switch LID %lu did "
				"not answer NodeInfo\n", lid);
			goto out;
		}
		last = mad_get_field(ni, 0, IB_NODE_NPORTS_F) / 16;
		pos = 0;
		mask = 0;
	} else {
		last = pos;
	}
	ret = EXIT_DONE;
	printf("{\"lid\":%lu,\"mlid\":\"0x%04lx\",\"positions\":[", lid,
	       mlid);
	for (; pos <= last && ret != EXIT_ERR; pos++) {
		int r = write_one(mp, &dst, how, mlid, pos, port, mask,
				  pos == last);

		if (r > ret)
			ret = r;
	}
	printf("]}\n");
out:
	mad_rpc_close_port(mp);
	return ret;
}
