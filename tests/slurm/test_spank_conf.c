/* SPDX-License-Identifier: BSD-3-Clause */
/* The SPANK plugin's plugstack.conf parser and IBMCAST_GROUPS formatting:
 * every argument accepted, every mistake refused naming the argument. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "spank/conf.h"
#include "spank/groups.h"
#include "tests/tap.h"

static int parse(const char *a0, const char *a1, const char *a2,
		 struct spank_conf *c, char *err)
{
	char *av[3] = { (char *)a0, (char *)a1, (char *)a2 };
	int ac = a2 ? 3 : a1 ? 2 : a0 ? 1 : 0;

	err[0] = '\0';
	return spank_conf_parse(ac, av, c, err, 512);
}

int main(void)
{
	struct spank_conf c;
	char err[512], *text;
	unsigned n, g;
	json_t *job;

	tap_plan(22);

	tap_ok(parse("server=tcp:sm1:7000", NULL, NULL, &c, err) == 0,
	   "server alone parses");
	tap_ok(c.groups == 8 && c.max_groups == 64 && c.timeout_s == 30 &&
	   c.lease_s == 3600 && !c.required, "defaults");
	tap_ok(!strcmp(c.task_server, "tcp:sm1:7000"), "task_server defaults "
	   "to server");
	tap_ok(!strcmp(c.statedir, "/run/ibmcast"), "statedir default");
	tap_ok(spank_conf_groups(&c, "64", &g) == 0 && g == 64, "64 groups ok");
	tap_ok(spank_conf_groups(&c, "65", &g) != 0, "65 groups above max");
	tap_ok(spank_conf_groups(&c, "0", &g) != 0, "0 groups refused");
	tap_ok(spank_conf_groups(&c, "4x", &g) != 0, "4x refused");
	spank_conf_free(&c);

	tap_ok(parse("server=unix:/run/s", "groups=4", "required=1", &c, err) ==
	   0 && c.groups == 4 && c.required, "groups and required");
	spank_conf_free(&c);
	tap_ok(parse("server=tcp:a:1", "timeout=5", "lease=60", &c, err) == 0 &&
	   c.timeout_s == 5 && c.lease_s == 60, "timeout and lease");
	spank_conf_free(&c);

	tap_ok(parse("groups=4", NULL, NULL, &c, err) != 0 &&
	   strstr(err, "server"), "server is required: %s", err);
	tap_ok(parse("server=tcp:a:1", "bogus=1", NULL, &c, err) != 0 &&
	   strstr(err, "'bogus=1'"), "unknown key named: %s", err);
	tap_ok(parse("server=tcp:a:1", "groups=abc", NULL, &c, err) != 0 &&
	   strstr(err, "'groups=abc'"), "bad number named: %s", err);
	tap_ok(parse("server=tcp:a:1", "required=yes", NULL, &c, err) != 0 &&
	   strstr(err, "'required=yes'"), "required=yes refused: %s", err);
	tap_ok(parse("server=nowhere", NULL, NULL, &c, err) != 0 &&
	   strstr(err, "'server=nowhere'"), "bad address named: %s", err);
	tap_ok(parse("server=tcp:a:1", "statedir=rel", NULL, &c, err) != 0 &&
	   strstr(err, "statedir=rel"), "relative statedir refused: %s", err);
	tap_ok(parse("server=tcp:a:1", "groups=9", "max_groups=8", &c, err) != 0 &&
	   strstr(err, "max_groups"), "groups above max_groups: %s", err);
	tap_ok(parse("server=tcp:a:1", "noequals", NULL, &c, err) != 0 &&
	   strstr(err, "'noequals'"), "no '=' refused: %s", err);

	job = json_pack("{s:s, s:s, s:[{s:s, s:s, s:i}, {s:s, s:s, s:i}]}",
			"qkey", "0x1bca0040", "pkey", "0xffff", "groups",
			"mgid", "ff12:1bca:ffff::40:0:0", "mlid", "0xc001",
			"mtu", 4, "mgid", "ff12:1bca:ffff:0:0:40:0:1", "mlid",
			"0xc002", "mtu", 5);
	tap_ok(spank_groups_format(job, &text, &n, err, sizeof(err)) == 0 &&
	   n == 2, "two groups formatted");
	tap_is_str(text, "ff12:1bca:ffff:0000:0000:0040:0000:0000/0xc001/"
	       "0x1bca0040/0xffff/2048 ff12:1bca:ffff:0000:0000:0040:0000:"
	       "0001/0xc002/0x1bca0040/0xffff/4096", "IBMCAST_GROUPS text");
	free(text);
	json_object_set_new(job, "qkey", json_string("bogus"));
	tap_ok(spank_groups_format(job, &text, &n, err, sizeof(err)) != 0 &&
	   strstr(err, "qkey"), "bad qkey refused: %s", err);
	json_decref(job);
	tap_ok(spank_mtu_bytes(1) == 256 && spank_mtu_bytes(6) == 0, "MTU enum");
	return tap_done();
}
