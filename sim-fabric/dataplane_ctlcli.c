/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_ctlcli.c - "ibmcast-dataplane ctl": one request to the daemon's
 * control socket, built from the command line, and its JSON reply on
 * stdout (exit 0 when "ok" is true). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

int dp_ctl_main(int argc, char **argv);

static json_t *value(const char *v)
{
	char *end;
	double d;

	d = strtod(v, &end);
	if (*v && !*end)
		return json_real(d);
	return json_string(v);
}

static json_t *build(int argc, char **argv)
{
	json_t *req = json_object(), *ll;
	int i;

	if (!strcmp(argv[0], "json"))
		return argc == 2 ? json_loads(argv[1], 0, NULL) : NULL;
	json_object_set_new(req, "op", json_string(argv[0]));
	for (i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!strcmp(argv[i], "--all")) {
			json_object_set_new(req, "all", json_true());
			continue;
		}
		if (!eq || strcmp(argv[0], "set"))
			goto bad;
		*eq = '\0';
		if (!strncmp(argv[i], "link_loss.", 10)) {
			ll = json_object_get(req, "link_loss");
			if (!ll) {
				ll = json_object();
				json_object_set_new(req, "link_loss", ll);
			}
			json_object_set_new(ll, argv[i] + 10, value(eq + 1));
		} else if (!strcmp(argv[i], "drop_range") ||
			   !strcmp(argv[i], "scope")) {
			json_object_set_new(req, argv[i], json_string(eq + 1));
		} else {
			json_object_set_new(req, argv[i], value(eq + 1));
		}
	}
	return req;
bad:
	fprintf(stderr, "ibmcast-dataplane ctl: unexpected '%s'\n", argv[i]);
	json_decref(req);
	return NULL;
}

int dp_ctl_main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = NULL;
	char *line = NULL, buf[65536];
	size_t len = 0;
	json_t *req, *rep;
	struct pollfd p;
	int fd, i = 1, ok;
	ssize_t n;

	if (argc > 2 && !strcmp(argv[1], "--ctl")) {
		path = argv[2];
		i = 3;
	}
	if (!path)
		path = getenv("IBMCAST_SIM_DATAPLANE_CTL");
	if (!path || i >= argc) {
		fprintf(stderr, "usage: ibmcast-dataplane ctl [--ctl PATH] "
			"counters [--all] | reset | status | clear | "
			"set KEY=VAL... | json REQUEST\n");
		return 2;
	}
	req = build(argc - i, argv + i);
	if (!req)
		return 2;
	line = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!line || strlen(path) >= sizeof(a.sun_path))
		return 2;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "ibmcast-dataplane ctl: %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	if (write(fd, line, strlen(line)) < 0 || write(fd, "\n", 1) < 0) {
		fprintf(stderr, "ibmcast-dataplane ctl: write: %s\n",
			strerror(errno));
		return 1;
	}
	free(line);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	while (len < sizeof(buf) - 1 && !memchr(buf, '\n', len)) {
		if (poll(&p, 1, 10000) <= 0)
			break;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (!memchr(buf, '\n', len)) {
		fprintf(stderr, "ibmcast-dataplane ctl: no answer\n");
		return 1;
	}
	fputs(buf, stdout);
	rep = json_loads(buf, 0, NULL);
	ok = json_is_true(json_object_get(rep, "ok"));
	json_decref(rep);
	return ok ? 0 : 1;
}
