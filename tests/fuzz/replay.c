/* SPDX-License-Identifier: BSD-3-Clause */
/* Replays a fuzz corpus through a target's LLVMFuzzerTestOneInput without
 * libFuzzer (any C compiler, any sanitizer): one TAP line per input, each
 * run in its own child so that a crash names its file and the rest run.
 *
 * Usage: replay_<target> [DIR-OR-FILE...]; by default the directory
 * $top_srcdir/tests/fuzz/corpus/<target>. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "tests/tap.h"

#ifndef FUZZ_TARGET
#error "FUZZ_TARGET must name the corpus directory (request, hostlist)"
#endif

/* Generous: a 65536-name expansion under ASan takes well under a second. */
#define INPUT_TIMEOUT_S 60

/* Exactly size bytes, so that a read past the end is caught by ASan as
 * it would be under libFuzzer. */
static int run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	FILE *f;

	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st)) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return 1;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) !=
			    (size_t)st.st_size) {
		fprintf(stderr, "replay: %s: short read\n", path);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)st.st_size);
	free(buf);
	return 0;
}

static void replay(const char *path, const char *label)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		tap_ok(0, "%s: fork: %s", label, strerror(errno));
		return;
	}
	if (!pid) {
		alarm(INPUT_TIMEOUT_S);
		/* exit(), not _exit(): LeakSanitizer checks at exit. */
		exit(run_file(path));
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		tap_ok(!WEXITSTATUS(status), "%s%s", label,
		       WEXITSTATUS(status) ? " (failed, see the log)" : "");
	else
		tap_ok(0, "%s (killed by signal %d%s)", label,
		       WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? ": timed out" : "");
}

static int skip_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Count (run == 0) or replay every input under path. */
static int walk(const char *path, int run)
{
	struct dirent **ents;
	struct stat st;
	char sub[4096], label[4096];
	const char *base;
	int i, n, total = 0;

	if (stat(path, &st)) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	if (!S_ISDIR(st.st_mode)) {
		if (run) {
			base = strrchr(path, '/');
			replay(path, base ? base + 1 : path);
		}
		return 1;
	}
	n = scandir(path, &ents, skip_dot, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	for (i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", path, ents[i]->d_name);
		if (!stat(sub, &st) && S_ISREG(st.st_mode)) {
			if (run) {
				snprintf(label, sizeof(label), "%s/%s",
					 FUZZ_TARGET, ents[i]->d_name);
				replay(sub, label);
			}
			total++;
		}
		free(ents[i]);
	}
	free(ents);
	return total;
}

int main(int argc, char **argv)
{
	const char *srcdir = getenv("top_srcdir");
	char dflt[4096];
	char *dflt_argv[] = { dflt };
	char **paths = argv + 1;
	int npaths = argc - 1, i, total = 0;

	if (!npaths) {
		snprintf(dflt, sizeof(dflt), "%s/tests/fuzz/corpus/%s",
			 srcdir ? srcdir : ".", FUZZ_TARGET);
		paths = dflt_argv;
		npaths = 1;
	}
	for (i = 0; i < npaths; i++)
		total += walk(paths[i], 0);
	if (!total) {
		/* A lost corpus is a failure, not a reason to skip. */
		tap_plan(1);
		tap_ok(0, "inputs under %s", paths[0]);
		return tap_done();
	}
	tap_plan(total);
	for (i = 0; i < npaths; i++)
		walk(paths[i], 1);
	return tap_done();
}
