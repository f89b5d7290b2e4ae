/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin's settings, parsed from opensm.conf's event_plugin_options
 * ("key=value key=value ..."). An unknown key is an error. */
#ifndef IBMCAST_OSM_OPTIONS_H
#define IBMCAST_OSM_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct ibmc_options {
	char *unix_path;     /* control socket on the SM node */
	char *tcp;           /* "HOST:PORT" for compute nodes, NULL = off */
	char *addr_file;     /* written with the bound addresses, or NULL */
	char *munge_socket;  /* NULL = libmunge's default */
	char *slurm_user;    /* privileged besides root */
	uid_t slurm_uid;     /* resolved at parse time; -1 if unknown */
	char *state_path;    /* reservations survive an SM restart */
	char *smpd_path;     /* the SMP reader helper */
	char *peer;          /* the other SM's plugin, mirrored while standby */
	unsigned default_groups;
	unsigned max_groups; /* per job */
	unsigned max_jobs;
	unsigned max_nodes;  /* per job, bounds hostlist expansion */
	unsigned default_lease_s;
	unsigned max_lease_s;
	unsigned max_clients;
	unsigned request_timeout_ms; /* a partial line older than this closes */
	unsigned build_timeout_s;    /* building longer than this = failed */
	bool readback;
	unsigned poll_us;
	unsigned verify_ms;  /* re-check ready groups at least this often */
	int log_level;
};

/* Defaults, then the options string (may be NULL). 0 or -EINVAL with a
 * message naming the offending key in err. */
int ibmc__options_parse(const char *str, struct ibmc_options *o, char *err,
			size_t err_len);
void ibmc__options_free(struct ibmc_options *o);

#endif
