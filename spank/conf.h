/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin's plugstack.conf arguments, parsed in every context so that a
 * mistake is reported wherever the plugin is loaded. */
#ifndef IBMCAST_SPANK_CONF_H
#define IBMCAST_SPANK_CONF_H

#include <stdbool.h>
#include <stddef.h>

#define SPANK_DEFAULT_GROUPS 8
#define SPANK_DEFAULT_MAX_GROUPS 64
#define SPANK_DEFAULT_TIMEOUT_S 30
#define SPANK_DEFAULT_LEASE_S 3600
#define SPANK_DEFAULT_STATEDIR "/run/ibmcast"

struct spank_conf {
	char *server;        /* control server address, as in common/net.h */
	char *task_server;   /* the address exported to tasks (default server) */
	char *munge_socket;  /* NULL: MUNGE's default socket */
	char *statedir;      /* node-local markers of the job's pools */
	unsigned groups;     /* --ibmcast without a value */
	unsigned max_groups; /* largest --ibmcast=N accepted */
	unsigned timeout_s;  /* bound on waiting for readiness */
	unsigned lease_s;    /* reservation lease; renewed while steps run */
	bool required;       /* no ready pool: fail the step instead */
};

/* Parse argv (plugstack.conf arguments, "key=value"). Returns 0, or
 * -EINVAL with err naming the argument and the cause, or -ENOMEM. conf is
 * filled with defaults first and must be freed with spank_conf_free. */
int spank_conf_parse(int argc, char **argv, struct spank_conf *conf,
		     char *err, size_t err_len);
void spank_conf_free(struct spank_conf *conf);

/* Parse a group count ("8") against conf's maximum. 0 or -EINVAL. */
int spank_conf_groups(const struct spank_conf *conf, const char *s,
		      unsigned *groups);

#endif
