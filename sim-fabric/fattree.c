/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmcast-fattree: write a 1-, 2- or 3-level fat tree in the ibnetdiscover
 * format ibsim reads, with HCA NodeDescriptions equal to Slurm node names
 * and dedicated SM HCAs, the first of which is the file's first record. */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"

/* IB port numbers are 8 bits and 255 is reserved; ibsim accepts 1..255. */
#define MAX_SWITCH_PORTS 254
/* Unicast LIDs run to 0xBFFF; stay well below so switches fit too. */
#define MAX_HOSTS 20000
#define MAX_SM_HOSTS 16
#define DEFAULT_RADIX 36

enum node_type { NODE_HCA, NODE_SWITCH };

struct peer {
	int node;	/* index into fabric.nodes, -1 when the port is free */
	int port;
};

struct node {
	enum node_type type;
	char id[32];	/* ibsim node id, e.g. "S-leaf1" */
	char desc[32];	/* NodeDescription, e.g. "leaf1" */
	int nports;
	struct peer *peers;	/* peers[0] unused: port numbers start at 1 */
};

struct fabric {
	struct node *nodes;
	int nnodes;
	int cap;
	long nlinks;
};

struct opts {
	long hosts;
	int levels;
	int radix;
	int sm_hosts;
	const char *out;
};

static const char *prog = "ibmcast-fattree";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s --hosts N [--levels 1|2|3] [--radix R] [--sm-hosts K] [-o FILE]\n"
		"Write an ibnetdiscover-format fat tree for ibsim.\n"
		"\n"
		"  -n, --hosts N      compute HCAs node1..nodeN (1..%d)\n"
		"  -l, --levels L     switch levels, 1 (one switch), 2 (leaf/spine) or\n"
		"                     3 (leaf/agg/core) [2]\n"
		"  -r, --radix R      leaf switch ports, even, 4..%d [%d]\n"
		"  -s, --sm-hosts K   SM HCAs ibmcast-sm1..K, 1..%d [1]\n"
		"  -o, --output FILE  write to FILE instead of standard output\n"
		"  -h, --help         show this help\n",
		prog, MAX_HOSTS, MAX_SWITCH_PORTS, DEFAULT_RADIX, MAX_SM_HOSTS);
}

static long parse_num(const char *opt, const char *s, long lo, long hi)
{
	long v;
	int rc = ibmc__parse_long(s, 10, lo, hi, &v);

	if (rc == -ERANGE)
		die("%s: %s is out of range %ld..%ld", opt, s, lo, hi);
	if (rc)
		die("%s: '%s' is not a number", opt, s);
	return v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "hosts", required_argument, NULL, 'n' },
		{ "levels", required_argument, NULL, 'l' },
		{ "radix", required_argument, NULL, 'r' },
		{ "sm-hosts", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	o->hosts = -1;
	o->levels = 2;
	o->radix = DEFAULT_RADIX;
	o->sm_hosts = 1;
	o->out = NULL;

	while ((c = getopt_long(argc, argv, "n:l:r:s:o:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'n':
			o->hosts = parse_num("--hosts", optarg, 1, MAX_HOSTS);
			break;
		case 'l':
			o->levels = parse_num("--levels", optarg, 1, 3);
			break;
		case 'r':
			o->radix = parse_num("--radix", optarg, 4,
					     MAX_SWITCH_PORTS);
			if (o->radix % 2)
				die("--radix: %d is odd; half the ports go down and half up",
				    o->radix);
			break;
		case 's':
			o->sm_hosts = parse_num("--sm-hosts", optarg, 1,
						MAX_SM_HOSTS);
			break;
		case 'o':
			if (!*optarg)
				die("-o: empty file name");
			o->out = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	if (o->hosts < 0)
		die("--hosts N is required (see --help)");
}

static int add_node(struct fabric *f, enum node_type type, int nports,
		    const char *idfmt, const char *descfmt, long num)
{
	struct node *n;
	int i;

	if (f->nnodes == f->cap) {
		int cap = f->cap ? f->cap * 2 : 256;
		struct node *nodes = realloc(f->nodes, cap * sizeof(*nodes));

		if (!nodes)
			die("out of memory for %d nodes", cap);
		f->nodes = nodes;
		f->cap = cap;
	}
	n = &f->nodes[f->nnodes];
	n->type = type;
	n->nports = nports;
	snprintf(n->id, sizeof(n->id), idfmt, num);
	snprintf(n->desc, sizeof(n->desc), descfmt, num);
	n->peers = calloc(nports + 1, sizeof(*n->peers));
	if (!n->peers)
		die("out of memory for node %s", n->id);
	for (i = 0; i <= nports; i++)
		n->peers[i].node = -1;
	return f->nnodes++;
}

/* A port used twice would be a generator bug, never a user error. */
static void link_ports(struct fabric *f, int a, int pa, int b, int pb)
{
	struct node *na = &f->nodes[a], *nb = &f->nodes[b];

	if (pa < 1 || pa > na->nports || pb < 1 || pb > nb->nports ||
	    na->peers[pa].node >= 0 || nb->peers[pb].node >= 0) {
		fprintf(stderr, "%s: internal error linking %s[%d] to %s[%d]\n",
			prog, na->id, pa, nb->id, pb);
		abort();
	}
	na->peers[pa] = (struct peer){ b, pb };
	nb->peers[pb] = (struct peer){ a, pa };
	f->nlinks++;
}

static long div_up(long a, long b)
{
	return (a + b - 1) / b;
}

/*
 * How many upper switches receive the "up" uplinks of each of "lower"
 * switches: the smallest divisor of up that keeps every upper switch within
 * radix ports (parallel links make up the rest, so small trees stay small
 * yet keep full bisection), else one switch per uplink with as many ports as
 * there are lower switches, like a director-class chassis.
 */
static int upper_count(long lower, int up, int radix, int *ports)
{
	int d;

	for (d = 1; d <= up; d++) {
		if (up % d)
			continue;
		if (lower * (up / d) <= radix) {
			*ports = radix;
			return d;
		}
	}
	*ports = lower > radix ? (int)lower : radix;
	return up;
}

struct plan {
	long leaves;
	int half;	/* hosts per leaf and uplinks per leaf */
	int upper;	/* 2 levels: spines; 3 levels: aggs per pod */
	int upper_ports;
	long pods;
	int cores_per_group;
	int core_ports;
};

static void make_plan(const struct opts *o, struct plan *p)
{
	int agg_ports;

	memset(p, 0, sizeof(*p));
	if (o->levels == 1) {
		/* One switch, every port down: the seed's single-switch
		 * testbed, where no multicast tree has more than one hop. */
		if (o->hosts + o->sm_hosts > o->radix)
			die("%ld hosts and %d SM HCAs do not fit one switch of radix %d; use a larger --radix or --levels 2",
			    o->hosts, o->sm_hosts, o->radix);
		p->half = o->radix;
		p->leaves = 1;
		return;
	}
	p->half = o->radix / 2;
	/* The SM HCAs take ports after the last host, so every leaf but the
	 * last holds exactly half hosts in node order. */
	p->leaves = div_up(o->hosts + o->sm_hosts, p->half);

	if (o->levels == 2) {
		p->upper = upper_count(p->leaves, p->half, o->radix,
				       &p->upper_ports);
		if (p->upper_ports > MAX_SWITCH_PORTS)
			die("%ld hosts need %ld leaves, more than a 2-level tree of radix %d can join (spines have at most %d ports); use --levels 3 or a larger --radix",
			    o->hosts, p->leaves, o->radix, MAX_SWITCH_PORTS);
		return;
	}

	/* A pod is up to half leaves fully meshed with its aggs; aggs have
	 * half ports down and half up. */
	p->pods = div_up(p->leaves, p->half);
	p->upper = upper_count(p->leaves < p->half ? p->leaves : p->half,
			       p->half, p->half, &agg_ports);
	p->upper_ports = o->radix;
	p->cores_per_group = upper_count(p->pods, p->half, o->radix,
					 &p->core_ports);
	if (p->core_ports > MAX_SWITCH_PORTS)
		die("%ld hosts need %ld pods, more than a 3-level tree of radix %d can join (cores have at most %d ports); use a larger --radix",
		    o->hosts, p->pods, o->radix, MAX_SWITCH_PORTS);
}

static void build(const struct opts *o, const struct plan *p,
		  struct fabric *f)
{
	long i, nend = o->hosts + o->sm_hosts;
	int half = p->half, radix = o->radix;
	int first_sm, first_leaf, first_upper, first_core = 0, first_host;
	int nupper = 0;

	first_sm = f->nnodes;
	for (i = 0; i < o->sm_hosts; i++)
		add_node(f, NODE_HCA, 1, "H-ibmcast-sm%ld", "ibmcast-sm%ld",
			 i + 1);

	first_leaf = f->nnodes;
	for (i = 0; i < p->leaves; i++)
		add_node(f, NODE_SWITCH, radix, "S-leaf%ld", "leaf%ld", i + 1);

	first_upper = f->nnodes;
	if (o->levels == 2) {
		nupper = p->upper;
		for (i = 0; i < nupper; i++)
			add_node(f, NODE_SWITCH, p->upper_ports, "S-spine%ld",
				 "spine%ld", i + 1);
	} else {
		nupper = p->pods * p->upper;
		for (i = 0; i < nupper; i++)
			add_node(f, NODE_SWITCH, radix, "S-agg%ld", "agg%ld",
				 i + 1);
		first_core = f->nnodes;
		for (i = 0; i < (long)p->upper * p->cores_per_group; i++)
			add_node(f, NODE_SWITCH, p->core_ports, "S-core%ld",
				 "core%ld", i + 1);
	}

	first_host = f->nnodes;
	for (i = 0; i < o->hosts; i++)
		add_node(f, NODE_HCA, 1, "H-node%ld", "node%ld", i + 1);

	/* Endpoint e sits on leaf e / half, port e % half + 1: hosts first in
	 * node order, then the SM HCAs on the ports left free after them. */
	for (i = 0; i < nend; i++) {
		int hca = i < o->hosts ? first_host + i :
					 first_sm + (i - o->hosts);

		link_ports(f, hca, 1, first_leaf + i / half, i % half + 1);
	}
	if (o->levels == 1)
		return;

	/* Leaf uplink j goes to upper switch j % upper; the links a leaf
	 * sends to one upper switch sit on consecutive ports there. */
	for (i = 0; i < p->leaves; i++) {
		int per = half / p->upper;
		long slot = o->levels == 2 ? i : i % half;
		int upbase = o->levels == 2 ? 0 : (int)(i / half) * p->upper;
		int j;

		for (j = 0; j < half; j++)
			link_ports(f, first_leaf + i, half + 1 + j,
				   first_upper + upbase + j % p->upper,
				   slot * per + j / p->upper + 1);
	}
	if (o->levels == 2)
		return;

	/* Agg a of every pod feeds core group a, which therefore reaches
	 * every pod: any leaf reaches any other through any core group. */
	for (i = 0; i < nupper; i++) {
		long pod = i / p->upper;
		int a = i % p->upper;
		int g = p->cores_per_group;
		int per = half / g;
		int j;

		for (j = 0; j < half; j++)
			link_ports(f, first_upper + i, half + 1 + j,
				   first_core + a * g + j % g,
				   pod * per + j / g + 1);
	}
}

static void write_fabric(FILE *out, const struct opts *o,
			 const struct plan *p, const struct fabric *f)
{
	long nsw = 0, nports = 0;
	int i, k;

	for (i = 0; i < f->nnodes; i++) {
		nsw += f->nodes[i].type == NODE_SWITCH;
		nports += f->nodes[i].nports + 1;
	}

	fprintf(out,
		"# ibmcast-fattree --hosts %ld --levels %d --radix %d --sm-hosts %d\n"
		"# nodes %d switches %ld hcas %ld ports %ld links %ld leaves %ld\n"
		"# The first record is the SM's HCA: ibsim's default SM port.\n\n",
		o->hosts, o->levels, o->radix, o->sm_hosts, f->nnodes, nsw,
		f->nnodes - nsw, nports, f->nlinks, p->leaves);

	for (i = 0; i < f->nnodes; i++) {
		const struct node *n = &f->nodes[i];

		fprintf(out, "%s\t%d \"%s\"\t\t# \"%s\"\n",
			n->type == NODE_SWITCH ? "Switch" : "Hca", n->nports,
			n->id, n->desc);
		/* The trailing "lid 0 4xQDR" is what ibsim expects of an
		 * ibnetdiscover dump; without it ibsim warns for every port. */
		for (k = 1; k <= n->nports; k++) {
			const struct peer *pe = &n->peers[k];
			const struct node *r;

			if (pe->node < 0)
				continue;
			r = &f->nodes[pe->node];
			fprintf(out, "[%d]\t\"%s\"[%d]\t\t# \"%s\" lid 0 4xQDR\n",
				k, r->id, pe->port, r->desc);
		}
		fputc('\n', out);
	}
}

int main(int argc, char **argv)
{
	struct fabric f = { 0 };
	struct plan p;
	struct opts o;
	FILE *out = stdout;
	int i;

	parse_args(argc, argv, &o);
	make_plan(&o, &p);
	build(&o, &p, &f);

	if (o.out) {
		out = fopen(o.out, "w");
		if (!out)
			die("cannot open %s for writing: %s", o.out,
			    strerror(errno));
	}
	write_fabric(out, &o, &p, &f);
	if (fflush(out) || ferror(out) || (out != stdout && fclose(out))) {
		int err = errno;

		if (o.out)
			unlink(o.out);
		die("writing %s failed: %s", o.out ? o.out : "standard output",
		    strerror(err));
	}

	for (i = 0; i < f.nnodes; i++)
		free(f.nodes[i].peers);
	free(f.nodes);
	return 0;
}
