/* SPDX-License-Identifier: BSD-3-Clause */
/* Parsing of event_plugin_options. OpenSM hands every plugin the same
 * string, so our keys are plain and each one is checked. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/parse.h"
#include "options.h"

static int set_str(char **dst, const char *val)
{
	char *s = strdup(val);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

static int set_uint(unsigned *dst, const char *val, unsigned min,
		    unsigned max)
{
	unsigned long v;

	if (ibmc__parse_ulong(val, 10, min, max, &v))
		return -EINVAL;
	*dst = (unsigned)v;
	return 0;
}

static int set_bool(bool *dst, const char *val)
{
	if (!strcmp(val, "1") || !strcmp(val, "yes") || !strcmp(val, "true"))
		*dst = true;
	else if (!strcmp(val, "0") || !strcmp(val, "no") ||
		 !strcmp(val, "false"))
		*dst = false;
	else
		return -EINVAL;
	return 0;
}

static int set_level(int *dst, const char *val)
{
	static const char *const names[] = { "error", "warn", "info",
					     "debug" };

	for (int i = 0; i < 4; i++) {
		if (!strcmp(val, names[i])) {
			*dst = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int defaults(struct ibmc_options *o)
{
	memset(o, 0, sizeof(*o));
	o->slurm_uid = (uid_t)-1;
	o->default_groups = 8;
	o->max_groups = 64;
	o->max_jobs = 1024;
	o->max_nodes = 65536;
	o->default_lease_s = 86400;
	o->max_lease_s = 30 * 86400;
	o->max_clients = 512;
	o->request_timeout_ms = 10000;
	o->build_timeout_s = 120;
	o->readback = true;
	o->poll_us = 500;
	o->verify_ms = 2000;
	o->log_level = IBMC_LOG_INFO;
	if (set_str(&o->unix_path, "/run/ibmcast/ibmcast.sock") ||
	    set_str(&o->slurm_user, "slurm") ||
	    set_str(&o->state_path, "/var/lib/ibmcast/state.json") ||
	    set_str(&o->smpd_path, IBMCAST_LIBEXECDIR "/ibmcast-smpd"))
		return -ENOMEM;
	return 0;
}

static int apply(struct ibmc_options *o, const char *key, const char *val)
{
	if (!strcmp(key, "unix"))
		return set_str(&o->unix_path, val);
	if (!strcmp(key, "tcp"))
		return set_str(&o->tcp, val);
	if (!strcmp(key, "addr_file"))
		return set_str(&o->addr_file, val);
	if (!strcmp(key, "munge_socket"))
		return set_str(&o->munge_socket, val);
	if (!strcmp(key, "slurm_user"))
		return set_str(&o->slurm_user, val);
	if (!strcmp(key, "state"))
		return set_str(&o->state_path, val);
	if (!strcmp(key, "peer"))
		return set_str(&o->peer, val);
	if (!strcmp(key, "smpd"))
		return set_str(&o->smpd_path, val);
	if (!strcmp(key, "default_groups"))
		return set_uint(&o->default_groups, val, 1, 1024);
	if (!strcmp(key, "max_groups"))
		return set_uint(&o->max_groups, val, 1, 1024);
	if (!strcmp(key, "max_jobs"))
		return set_uint(&o->max_jobs, val, 1, 65536);
	if (!strcmp(key, "max_nodes"))
		return set_uint(&o->max_nodes, val, 1, 1 << 20);
	if (!strcmp(key, "default_lease_s"))
		return set_uint(&o->default_lease_s, val, 1, 365 * 86400);
	if (!strcmp(key, "max_lease_s"))
		return set_uint(&o->max_lease_s, val, 1, 365 * 86400);
	if (!strcmp(key, "max_clients"))
		return set_uint(&o->max_clients, val, 1, 65536);
	if (!strcmp(key, "request_timeout_ms"))
		return set_uint(&o->request_timeout_ms, val, 10, 3600000);
	if (!strcmp(key, "build_timeout_s"))
		return set_uint(&o->build_timeout_s, val, 1, 86400);
	if (!strcmp(key, "readback"))
		return set_bool(&o->readback, val);
	if (!strcmp(key, "poll_us"))
		return set_uint(&o->poll_us, val, 50, 1000000);
	if (!strcmp(key, "verify_ms"))
		return set_uint(&o->verify_ms, val, 10, 3600000);
	if (!strcmp(key, "log_level"))
		return set_level(&o->log_level, val);
	return -ENOENT;
}

int ibmc__options_parse(const char *str, struct ibmc_options *o, char *err,
			size_t err_len)
{
	char *copy = NULL, *tok, *save = NULL;
	int ret;

	ret = defaults(o);
	if (ret)
		goto fail;
	if (!str)
		goto resolve;
	copy = strdup(str);
	if (!copy) {
		ret = -ENOMEM;
		goto fail;
	}
	for (tok = strtok_r(copy, " \t,", &save); tok;
	     tok = strtok_r(NULL, " \t,", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || eq == tok) {
			snprintf(err, err_len,
				 "option \"%s\" is not key=value", tok);
			ret = -EINVAL;
			goto fail;
		}
		*eq = '\0';
		ret = apply(o, tok, eq + 1);
		if (ret == -ENOENT) {
			snprintf(err, err_len, "unknown option \"%s\"", tok);
			ret = -EINVAL;
			goto fail;
		}
		if (ret) {
			snprintf(err, err_len, "bad value \"%s\" for %s",
				 eq + 1, tok);
			goto fail;
		}
	}
resolve:
	if (o->default_groups > o->max_groups) {
		snprintf(err, err_len,
			 "default_groups %u exceeds max_groups %u",
			 o->default_groups, o->max_groups);
		ret = -EINVAL;
		goto fail;
	}
	if (o->default_lease_s > o->max_lease_s) {
		snprintf(err, err_len,
			 "default_lease_s %u exceeds max_lease_s %u",
			 o->default_lease_s, o->max_lease_s);
		ret = -EINVAL;
		goto fail;
	}
	/* An unknown Slurm user is not fatal: root stays privileged. */
	if (o->slurm_user && *o->slurm_user) {
		struct passwd *pw = getpwnam(o->slurm_user);

		if (pw)
			o->slurm_uid = pw->pw_uid;
	}
	free(copy);
	return 0;
fail:
	if (ret == -ENOMEM)
		snprintf(err, err_len, "out of memory parsing options");
	free(copy);
	ibmc__options_free(o);
	return ret;
}

void ibmc__options_free(struct ibmc_options *o)
{
	free(o->unix_path);
	free(o->tcp);
	free(o->addr_file);
	free(o->munge_socket);
	free(o->slurm_user);
	free(o->state_path);
	free(o->smpd_path);
	free(o->peer);
	memset(o, 0, sizeof(*o));
}
