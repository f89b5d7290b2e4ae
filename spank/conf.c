/* SPDX-License-Identifier: BSD-3-Clause */
/* plugstack.conf arguments: every key known, every value checked; an
 * unknown key or a bad value is an error that names the argument. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/net.h"
#include "common/parse.h"
#include "common/proto.h"
#include "spank/conf.h"

static int parse_uint(const char *s, unsigned min, unsigned max,
		      unsigned *out)
{
	unsigned long v;

	if (ibmc__parse_ulong(s, 10, min, max, &v))
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int set_str(char **field, const char *value)
{
	char *s = strdup(value);

	if (!s)
		return -ENOMEM;
	free(*field);
	*field = s;
	return 0;
}

struct uint_key {
	const char *key;
	size_t off;
	unsigned min, max;
};

static const struct uint_key uint_keys[] = {
	{ "groups", offsetof(struct spank_conf, groups), 1,
	  IBMC_PROTO_MAX_GROUPS },
	{ "max_groups", offsetof(struct spank_conf, max_groups), 1,
	  IBMC_PROTO_MAX_GROUPS },
	{ "timeout", offsetof(struct spank_conf, timeout_s), 0,
	  IBMC_PROTO_MAX_WAIT_MS / 1000 },
	{ "lease", offsetof(struct spank_conf, lease_s), 30,
	  IBMC_PROTO_MAX_LEASE_S },
};

static int check_addr(const char *arg, const char *value, char *err,
		      size_t err_len)
{
	struct ibmc_addr a;

	if (ibmc__addr_parse(value, &a) == 0)
		return 0;
	snprintf(err, err_len, "argument '%s': expected an address "
		 "tcp:HOST:PORT or unix:/PATH", arg);
	return -EINVAL;
}

static int parse_one(const char *arg, struct spank_conf *c, char *err,
		     size_t err_len)
{
	const char *eq = strchr(arg, '=');
	const char *v;
	size_t klen, i;
	unsigned u;

	if (!eq || eq == arg) {
		snprintf(err, err_len, "argument '%s': expected key=value",
			 arg);
		return -EINVAL;
	}
	klen = (size_t)(eq - arg);
	v = eq + 1;
	for (i = 0; i < sizeof(uint_keys) / sizeof(uint_keys[0]); i++) {
		const struct uint_key *k = &uint_keys[i];

		if (strlen(k->key) != klen || strncmp(arg, k->key, klen))
			continue;
		if (parse_uint(v, k->min, k->max, &u)) {
			snprintf(err, err_len, "argument '%s': expected an "
				 "integer in %u..%u", arg, k->min, k->max);
			return -EINVAL;
		}
		*(unsigned *)((char *)c + k->off) = u;
		return 0;
	}
#define KEY(name) (klen == strlen(name) && !strncmp(arg, name, klen))
	if (KEY("server") || KEY("task_server")) {
		if (check_addr(arg, v, err, err_len))
			return -EINVAL;
		return set_str(KEY("server") ? &c->server : &c->task_server,
			       v);
	}
	if (KEY("munge_socket") || KEY("statedir")) {
		if (v[0] != '/') {
			snprintf(err, err_len, "argument '%s': expected an "
				 "absolute path", arg);
			return -EINVAL;
		}
		return set_str(KEY("statedir") ? &c->statedir :
			       &c->munge_socket, v);
	}
	if (KEY("required")) {
		if (strcmp(v, "0") && strcmp(v, "1")) {
			snprintf(err, err_len, "argument '%s': expected 0 or 1",
				 arg);
			return -EINVAL;
		}
		c->required = v[0] == '1';
		return 0;
	}
#undef KEY
	snprintf(err, err_len, "unknown argument '%s' (known: server, "
		 "task_server, groups, max_groups, timeout, lease, required, "
		 "munge_socket, statedir)", arg);
	return -EINVAL;
}

int spank_conf_parse(int argc, char **argv, struct spank_conf *conf,
		     char *err, size_t err_len)
{
	int i, rc;

	memset(conf, 0, sizeof(*conf));
	conf->groups = SPANK_DEFAULT_GROUPS;
	conf->max_groups = SPANK_DEFAULT_MAX_GROUPS;
	conf->timeout_s = SPANK_DEFAULT_TIMEOUT_S;
	conf->lease_s = SPANK_DEFAULT_LEASE_S;
	if (set_str(&conf->statedir, SPANK_DEFAULT_STATEDIR))
		return -ENOMEM;
	for (i = 0; i < argc; i++) {
		rc = parse_one(argv[i], conf, err, err_len);
		if (rc)
			goto fail;
	}
	rc = -EINVAL;
	if (!conf->server) {
		snprintf(err, err_len, "argument 'server=ADDR' is required");
		goto fail;
	}
	if (conf->groups > conf->max_groups) {
		snprintf(err, err_len, "argument 'groups=%u' exceeds "
			 "max_groups=%u", conf->groups, conf->max_groups);
		goto fail;
	}
	if (!conf->task_server && set_str(&conf->task_server, conf->server)) {
		rc = -ENOMEM;
		goto fail;
	}
	return 0;
fail:
	spank_conf_free(conf);
	return rc;
}

void spank_conf_free(struct spank_conf *conf)
{
	free(conf->server);
	free(conf->task_server);
	free(conf->munge_socket);
	free(conf->statedir);
	memset(conf, 0, sizeof(*conf));
}

int spank_conf_groups(const struct spank_conf *conf, const char *s,
		      unsigned *groups)
{
	return parse_uint(s, 1, conf->max_groups, groups);
}
