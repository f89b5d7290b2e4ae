/* SPDX-License-Identifier: BSD-3-Clause */
/* Node-local marker files (see marker.h), written atomically (temporary
 * file, then rename) so a reader never sees half a note. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/parse.h"
#include "spank/marker.h"
#include "spank/pool.h"

static int node_dir(const char *statedir, const char *node, char *buf,
		    size_t len)
{
	if (!node[0] || strchr(node, '/') || node[0] == '.')
		return -EINVAL;
	if ((size_t)snprintf(buf, len, "%s/%s", statedir, node) >= len)
		return -ENAMETOOLONG;
	/* Both levels; an existing directory is fine. */
	if (mkdir(statedir, 0755) && errno != EEXIST)
		return -errno;
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int put(const char *statedir, const char *node, const char *name,
	       const char *text)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd, rc;

	rc = node_dir(statedir, node, dir, sizeof(dir));
	if (rc)
		return rc;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
		    sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.%ld", dir, name,
			     (long)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = write(fd, text, len) == (ssize_t)len ? 0 : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

static void drop(const char *statedir, const char *node, const char *name)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s/%s", statedir, node,
			     name) < sizeof(path))
		unlink(path);
}

int spank_marker_put_job(const char *statedir, const char *node,
			 uint32_t job, const struct spank_jobwide *jw)
{
	char name[32], text[sizeof(jw->nodes) + 64];

	snprintf(name, sizeof(name), "job.%u", job);
	snprintf(text, sizeof(text), "groups=%u\nnodes=%s\n", jw->groups,
		 jw->nodes);
	return put(statedir, node, name, text);
}

int spank_marker_get_job(const char *statedir, const char *node,
			 uint32_t job, struct spank_jobwide *jw)
{
	char path[PATH_MAX], line[sizeof(jw->nodes) + 16];
	int have = 0;
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s/job.%u", statedir,
			     node, job) >= sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(jw, 0, sizeof(*jw));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "groups=%u", &jw->groups) == 1)
			have |= 1;
		else if (!strncmp(line, "nodes=", 6) && line[6]) {
			size_t l = strlen(line + 6);

			if (l >= sizeof(jw->nodes))
				continue;
			memcpy(jw->nodes, line + 6, l + 1);
			have |= 2;
		}
	}
	fclose(f);
	return have == 3 && jw->groups ? 0 : -EINVAL;
}

void spank_marker_drop_job(const char *statedir, const char *node,
			   uint32_t job)
{
	char name[32];

	snprintf(name, sizeof(name), "job.%u", job);
	drop(statedir, node, name);
}

int spank_marker_put_pool(const char *statedir, const char *node,
			  uint32_t id)
{
	char name[32];

	snprintf(name, sizeof(name), "pool.%u", id);
	return put(statedir, node, name, "");
}

void spank_marker_drop_pool(const char *statedir, const char *node,
			    uint32_t id)
{
	char name[32];

	snprintf(name, sizeof(name), "pool.%u", id);
	drop(statedir, node, name);
}

void spank_marker_each_pool(const char *statedir, const char *node,
			    uint32_t job, void (*fn)(uint32_t id, void *arg),
			    void *arg)
{
	char path[PATH_MAX];
	struct dirent *d;
	unsigned long id;
	DIR *dir;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", statedir, node) >=
	    sizeof(path))
		return;
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "pool.", 5))
			continue;
		if (ibmc__parse_ulong(d->d_name + 5, 10, 0, 0xffffffffUL,
				      &id) ||
		    !(id & SPANK_STEP_POOL_BIT) ||
		    ((id & ~SPANK_STEP_POOL_BIT) >> 5) != job)
			continue;
		fn((uint32_t)id, arg);
	}
	closedir(dir);
}
