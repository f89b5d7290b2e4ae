/* SPDX-License-Identifier: BSD-3-Clause */
/* Peer credentials on a Unix socketpair, and MUNGE wrap/unwrap against a
 * private munged started (and always stopped) by this test. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/client.h"
#include "common/net.h"
#include "common/proto.h"
#include "tests/tap.h"

static char dir[] = "/tmp/ibmc-test-auth.XXXXXX";
static char sock[256];
static pid_t munged_pid = -1;

static const char *find_prog(const char *name)
{
	static const char *const dirs[] = { "/usr/sbin", "/usr/bin",
					    "/sbin", "/usr/local/sbin",
					    "/usr/local/bin" };
	static char path[256];
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		if (!access(path, X_OK))
			return path;
	}
	return NULL;
}

static void path_in(char *buf, size_t len, const char *file)
{
	snprintf(buf, len, "%s/%s", dir, file);
}

/* Runs at every exit, so munged never outlives the test. */
static void cleanup(void)
{
	static const char *const files[] = {
		"munge.key", "munge.sock", "munge.sock.lock", "munged.pid",
		"munged.log", "munged.seed", "munged.stderr",
	};
	char p[300];
	size_t i;

	if (munged_pid > 0) {
		kill(munged_pid, SIGTERM);
		waitpid(munged_pid, NULL, 0);
		munged_pid = -1;
	}
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		path_in(p, sizeof(p), files[i]);
		unlink(p);
	}
	rmdir(dir);
}

static void on_signal(int sig)
{
	if (munged_pid > 0)
		kill(munged_pid, SIGTERM);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int make_key(const char *key)
{
	const char *mk = find_prog("mungekey");
	char buf[1024];
	int fd, rnd, rc;

	if (mk) {
		pid_t pid = fork();

		if (!pid) {
			execl(mk, "mungekey", "-c", "-k", key, (char *)NULL);
			_exit(127);
		}
		if (pid > 0 && waitpid(pid, &rc, 0) == pid &&
		    WIFEXITED(rc) && !WEXITSTATUS(rc))
			return 0;
	}
	/* No mungekey: 1024 random bytes, owner read-only. */
	rnd = open("/dev/urandom", O_RDONLY);
	fd = open(key, O_CREAT | O_WRONLY | O_TRUNC, 0400);
	rc = rnd >= 0 && fd >= 0 &&
	     read(rnd, buf, sizeof(buf)) == sizeof(buf) &&
	     write(fd, buf, sizeof(buf)) == sizeof(buf);
	if (rnd >= 0)
		close(rnd);
	if (fd >= 0)
		close(fd);
	return rc ? 0 : -1;
}

static int start_munged(const char *munged)
{
	char key[300], pidf[300], log[300], seed[300], errf[300];
	char a_key[320], a_sock[320], a_pid[320], a_log[320], a_seed[320];
	int i;

	path_in(key, sizeof(key), "munge.key");
	path_in(sock, sizeof(sock), "munge.sock");
	path_in(pidf, sizeof(pidf), "munged.pid");
	path_in(log, sizeof(log), "munged.log");
	path_in(seed, sizeof(seed), "munged.seed");
	path_in(errf, sizeof(errf), "munged.stderr");
	if (make_key(key))
		return -1;
	snprintf(a_key, sizeof(a_key), "--key-file=%s", key);
	snprintf(a_sock, sizeof(a_sock), "--socket=%s", sock);
	snprintf(a_pid, sizeof(a_pid), "--pid-file=%s", pidf);
	snprintf(a_log, sizeof(a_log), "--log-file=%s", log);
	snprintf(a_seed, sizeof(a_seed), "--seed-file=%s", seed);

	munged_pid = fork();
	if (munged_pid < 0)
		return -1;
	if (!munged_pid) {
		int fd = open(errf, O_CREAT | O_WRONLY | O_TRUNC, 0600);

		/* Dies with us even if we are killed before cleanup. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execl(munged, "munged", "-F", "--force", a_key, a_sock, a_pid,
		      a_log, a_seed, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 500; i++) {
		struct stat st;

		if (!stat(sock, &st) && S_ISSOCK(st.st_mode))
			return 0;
		if (waitpid(munged_pid, NULL, WNOHANG) == munged_pid) {
			munged_pid = -1;
			return -1;
		}
		usleep(10000);
	}
	return -1;
}

static void test_peer_cred(void)
{
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	int sv[2], p[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	tap_is_int(ibmc__peer_cred(sv[0], &uid, &gid), 0, "peer_cred");
	tap_is_int(uid, getuid(), "... uid is ours");
	tap_is_int(gid, getgid(), "... gid is ours");
	close(sv[0]);
	close(sv[1]);
	if (pipe(p))
		abort();
	tap_is_int(ibmc__peer_cred(p[0], &uid, &gid), -ENOTSOCK,
		   "peer_cred on a pipe: -ENOTSOCK");
	close(p[0]);
	close(p[1]);
}

static void test_munge(void)
{
	const char *req = "{\"op\":\"status\"}";
	char detail[256], *cred = NULL, *payload = NULL, bad[300];
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	int rc;

	rc = ibmc__munge_wrap(req, sock, &cred, detail, sizeof(detail));
	if (!tap_ok(!rc, "munge_wrap"))
		tap_diag("  %s", detail);
	tap_ok(cred && !strncmp(cred, "MUNGE:", 6), "... credential text");
	rc = ibmc__munge_unwrap(cred, sock, &payload, &uid, &gid, detail,
				sizeof(detail));
	tap_is_int(rc, 0, "munge_unwrap");
	tap_is_str(payload, req, "... payload intact");
	tap_ok(uid == getuid() && gid == getgid(), "... uid/gid are ours");
	free(payload);
	payload = NULL;

	rc = ibmc__munge_unwrap(cred, sock, &payload, &uid, &gid, detail,
				sizeof(detail));
	tap_is_int(rc, -EACCES, "replayed credential: -EACCES");
	tap_ok(!payload, "... no payload handed out");
	tap_ok(strstr(detail, "eplay") != NULL, "... detail says why: %s",
	       detail);

	snprintf(bad, sizeof(bad), "%s", cred);
	bad[20] = bad[20] == 'A' ? 'B' : 'A';
	rc = ibmc__munge_unwrap(bad, sock, &payload, &uid, &gid, detail,
				sizeof(detail));
	tap_is_int(rc, -EACCES, "tampered credential: -EACCES (%s)", detail);
	free(payload);
	payload = NULL;
	rc = ibmc__munge_unwrap("not a credential", sock, &payload, &uid,
				&gid, detail, sizeof(detail));
	tap_is_int(rc, -EACCES, "junk credential: -EACCES");
	free(cred);
	cred = NULL;

	/* Empty payloads are legal MUNGE; they decode to "". */
	rc = ibmc__munge_wrap("", sock, &cred, detail, sizeof(detail));
	rc = rc ? rc : ibmc__munge_unwrap(cred, sock, &payload, NULL, NULL,
					  detail, sizeof(detail));
	tap_ok(!rc && payload && !*payload, "empty payload round trip");
	free(cred);
	free(payload);
	cred = payload = NULL;

	/* $IBMCAST_MUNGE_SOCKET stands in for a NULL socket. */
	setenv("IBMCAST_MUNGE_SOCKET", sock, 1);
	rc = ibmc__munge_wrap(req, NULL, &cred, detail, sizeof(detail));
	rc = rc ? rc : ibmc__munge_unwrap(cred, NULL, &payload, NULL, NULL,
					  detail, sizeof(detail));
	tap_ok(!rc && payload && !strcmp(payload, req),
	       "IBMCAST_MUNGE_SOCKET is used when no socket is given");
	free(cred);
	free(payload);
	cred = payload = NULL;
	unsetenv("IBMCAST_MUNGE_SOCKET");

	snprintf(bad, sizeof(bad), "%s/nobody-here.sock", dir);
	rc = ibmc__munge_wrap(req, bad, &cred, detail, sizeof(detail));
	tap_is_int(rc, -ECONNREFUSED, "munged not running: -ECONNREFUSED");
	tap_ok(!cred, "... no credential");
}

/* A peer for ibmc__client_call that reads one line, checks how it was
 * wrapped and answers with what it understood. Not a protocol server:
 * it proves the client frames and authenticates its request. */
struct peer {
	int lfd;
	int tcp;
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	char *line = NULL, *payload = NULL, detail[256];
	const char *text;
	json_t *in = NULL, *out;
	char *reply;
	uid_t uid = 0;
	int fd, i;

	for (i = 0; (fd = accept(p->lfd, NULL, NULL)) < 0 && i < 300; i++)
		usleep(10000);
	if (fd < 0)
		return NULL;
	if (ibmc__read_line(fd, IBMC_PROTO_MAX_LINE, 3000, &line))
		goto out;
	text = line;
	if (p->tcp) {
		in = json_loads(line, 0, NULL);
		text = json_string_value(json_object_get(in, "munge"));
		if (!text || json_object_size(in) != 1 ||
		    ibmc__munge_unwrap(text, sock, &payload, &uid, NULL,
				       detail, sizeof(detail)))
			text = "unwrap failed";
		else
			text = payload;
	}
	out = json_pack("{s:b,s:s,s:b}", "ok", 1, "got", text, "munged",
			p->tcp);
	reply = ibmc__json_line(out);
	ibmc__write_all(fd, reply, strlen(reply), 1000);
	free(reply);
	json_decref(out);
out:
	json_decref(in);
	free(payload);
	free(line);
	close(fd);
	return NULL;
}

static void call_via(const char *listen_spec, int tcp)
{
	struct ibmc_addr a;
	struct peer p = { .tcp = tcp };
	char server[320], detail[256];
	json_t *req, *reply = NULL;
	pthread_t th;
	int rc;

	ibmc__addr_parse(listen_spec, &a);
	p.lfd = ibmc__listen(&a, 4);
	if (tcp)
		snprintf(server, sizeof(server), "tcp:127.0.0.1:%d",
			 ibmc__bound_port(p.lfd));
	else
		snprintf(server, sizeof(server), "%s", listen_spec);
	pthread_create(&th, NULL, peer_main, &p);
	req = json_pack("{s:s,s:i}", "op", "wait", "job", 42);
	rc = ibmc__client_call(server, sock, req, 3000, &reply, detail,
			       sizeof(detail));
	if (!tap_ok(!rc, "client_call over %s", tcp ? "TCP" : "Unix"))
		tap_diag("  %d: %s", rc, detail);
	tap_is_str(json_string_value(json_object_get(reply, "got")),
		   "{\"op\":\"wait\",\"job\":42}",
		   tcp ? "... request arrived inside a MUNGE credential" :
			 "... request arrived as plain JSON");
	pthread_join(th, NULL);
	json_decref(reply);
	json_decref(req);
	close(p.lfd);
}

static void test_client(void)
{
	char spec[300], detail[256];
	json_t *req, *reply = NULL;
	int rc;

	snprintf(spec, sizeof(spec), "unix:%s/ctl.sock", dir);
	call_via(spec, 0);
	snprintf(spec, sizeof(spec), "%s/ctl.sock", dir);
	unlink(spec);
	call_via("tcp:127.0.0.1:0", 1);

	req = json_pack("{s:s}", "op", "status");
	snprintf(spec, sizeof(spec), "unix:%s/none.sock", dir);
	rc = ibmc__client_call(spec, sock, req, 1000, &reply, detail,
			       sizeof(detail));
	tap_is_int(rc, -ENOENT, "client_call to a missing socket");
	tap_ok(strstr(detail, spec) != NULL, "... detail names the address: "
	       "%s", detail);
	rc = ibmc__client_call("bogus", sock, req, 1000, &reply, detail,
			       sizeof(detail));
	tap_is_int(rc, -EINVAL, "client_call to a bad address");
	json_decref(req);
}

int main(void)
{
	const char *found = find_prog("munged");
	char munged[256];

	/* find_prog reuses its buffer; keep our own copy. */
	snprintf(munged, sizeof(munged), "%s", found ? found : "");
	if (!found)
		tap_skip_all("munged not installed");
	if (!mkdtemp(dir))
		tap_skip_all("cannot create a temporary directory");
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGABRT, on_signal);

	tap_plan(25);
	test_peer_cred();
	if (start_munged(munged)) {
		char errf[300], line[256];
		FILE *f;

		tap_ok(0, "start a private munged in %s", dir);
		path_in(errf, sizeof(errf), "munged.stderr");
		f = fopen(errf, "r");
		while (f && fgets(line, sizeof(line), f))
			tap_diag("munged: %s", strtok(line, "\n"));
		if (f)
			fclose(f);
		return tap_done();
	}
	test_munge();
	test_client();
	return tap_done();
}
