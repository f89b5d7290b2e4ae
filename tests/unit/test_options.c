/* SPDX-License-Identifier: BSD-3-Clause */
/* The OSM plugin's event_plugin_options parser: defaults, every kind of
 * value, and the refusals that keep a typo from loading a wrong plugin. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "osm-plugin/options.h"
#include "tests/tap.h"

static int parse(const char *s, struct ibmc_options *o, char *err)
{
	err[0] = '\0';
	return ibmc__options_parse(s, o, err, 256);
}

static void refused(const char *s, const char *want_in_err)
{
	struct ibmc_options o;
	char err[256];
	int ret = parse(s, &o, err);

	tap_is_int(ret, -EINVAL, "refused: %s", s);
	tap_ok(strstr(err, want_in_err) != NULL,
	       "message for \"%s\" names \"%s\" (%s)", s, want_in_err, err);
}

int main(void)
{
	struct ibmc_options o;
	char err[256];

	tap_plan(32);

	tap_is_int(parse(NULL, &o, err), 0, "no options: defaults");
	tap_is_str(o.unix_path, "/run/ibmcast/ibmcast.sock", "default socket");
	tap_ok(o.tcp == NULL, "TCP off by default");
	tap_is_int(o.default_groups, 8, "8 groups by default");
	tap_ok(o.readback, "readback on by default");
	tap_is_str(o.slurm_user, "slurm", "Slurm user defaults to slurm");
	ibmc__options_free(&o);

	tap_is_int(parse("unix=/tmp/x.sock tcp=127.0.0.1:0,default_groups=4 "
			 "max_groups=16 readback=0 poll_us=250 "
			 "slurm_user=root log_level=debug",
			 &o, err),
		   0, "spaces and commas both separate options");
	tap_is_str(o.unix_path, "/tmp/x.sock", "unix=");
	tap_is_str(o.tcp, "127.0.0.1:0", "tcp=");
	tap_is_int(o.default_groups, 4, "default_groups=");
	tap_is_int(o.max_groups, 16, "max_groups=");
	tap_ok(!o.readback, "readback=0");
	tap_is_int(o.poll_us, 250, "poll_us=");
	tap_is_int(o.slurm_uid, 0, "slurm_user resolved to its uid");
	ibmc__options_free(&o);

	refused("bogus=1", "unknown option \"bogus\"");
	refused("unix", "not key=value");
	refused("max_groups=0", "max_groups");
	refused("max_groups=12x", "max_groups");
	refused("default_groups=9 max_groups=8", "exceeds max_groups");
	refused("readback=maybe", "readback");
	refused("poll_us=-5", "poll_us");
	refused("log_level=loud", "log_level");
	refused("=3", "not key=value");

	return tap_done();
}
