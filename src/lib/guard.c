/* SPDX-License-Identifier: MIT */
/* The guardian of the embedded mode: a private `strata record` that outlives a crash of the program. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/log.h"
#include "common/mono.h"
#include "lib/guard.h"

/*
 * Why a process of its own (docs/record.md, "The embedded mode"): a
 * program that records through STRATA_OUTPUT and is killed (SIGKILL,
 * SIGSEGV, Ctrl-C) must still leave everything it committed in the trace,
 * with no setup. Rings in shared memory survive the program only if
 * another process holds them; the session daemon of `strata record`
 * already holds rings, drains them, salvages those of dead processes and
 * takes fork and exec children. So STRATA_OUTPUT starts one, private to
 * this program and its descendants, instead of a consumer thread.
 *
 * The program must not see it: it is not its child (the program's
 * waitpid(-1) and SIGCHLD stay its own), not in its process group or
 * session (Ctrl-C and the terminal's hangup reach the program only), and
 * holds none of its file descriptors but stderr. Hence two raw clones: an
 * intermediate with no exit signal, reaped with __WCLONE (which a plain
 * waitpid never sees), that makes the guardian and exits at once, so that
 * the guardian is reparented to init (or the nearest subreaper). Between
 * the clones and execve only async-signal-safe system calls run: the
 * program may have threads holding any lock.
 */

/* The strata tool: `env` (STRATA_TOOL), else beside this library (the
 * build tree's src/cli/strata, or an installation's ../bin/strata), else
 * where it was to be installed. */
static int find_tool(const char *env, char *out, size_t n)
{
	Dl_info di;

	if (env && *env) {
		snprintf(out, n, "%s", env);
		return access(out, X_OK) ? -ENOENT : 0;
	}
	if (dladdr((void *)find_tool, &di) && di.dli_fname) {
		static const char *const rel[] = {"cli/strata", "../bin/strata",
						  "../../bin/strata"};
		const char *slash = strrchr(di.dli_fname, '/');
		int dlen = slash ? (int)(slash - di.dli_fname) : 1;
		const char *dir = slash ? di.dli_fname : ".";
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(out, n, "%.*s/%s", dlen, dir, rel[i]);
			if (!access(out, X_OK))
				return 0;
		}
	}
	snprintf(out, n, "%s", STRATA_INSTALL_BINDIR "/strata");
	return access(out, X_OK) ? -ENOENT : 0;
}

/*
 * The guardian's environment: the program's, less what would trace the
 * guardian itself. A preload that links libstrata.so (libstrata-locks.so)
 * brings a second libstrata into the tool, whose constructor, seeing
 * STRATA_OUTPUT, would start a guardian of its own, and so on: a chain.
 * Made before the clones (it allocates); NULL without memory.
 */
static char **guardian_env(void)
{
	static const char *const drop[] = {
		"LD_PRELOAD=", "STRATA_OUTPUT=", "STRATA_SESSION=",
		"STRATA_GUARDED=", "STRATA_KTRACE_DIR=",
	};
	size_t n = 0, k = 0;

	while (environ && environ[n])
		n++;
	char **env = malloc((n + 1) * sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t d = 0;
		while (d < sizeof(drop) / sizeof(drop[0]) &&
		       strncmp(environ[i], drop[d], strlen(drop[d])))
			d++;
		if (d == sizeof(drop) / sizeof(drop[0]))
			env[k++] = environ[i];
	}
	env[k] = NULL;
	return env;
}

/* The guardian, between the second clone and execve. */
static __attribute__((noreturn)) void guardian(const char *tool, char *const argv[],
					       char *const envp[], int wfd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	setsid();
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
	}
	/* stderr stays: it says so there if the program died */
	if (wfd != 3) {
		dup2(wfd, 3);
		wfd = 3;
	}
	fcntl(wfd, F_SETFD, 0);
	syscall(SYS_close_range, 4, ~0U, 0);
	/* no signal mask or handler of the program's */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (chdir("/") < 0) {
		/* the paths given are absolute */
	}
	execve(tool, argv, envp);
	/* Say why on the pipe ("!errno"), or the program's line would only
	 * say that the guardian ended without a word. */
	char msg[16], *end = msg + sizeof(msg), *q = end;
	unsigned e = (unsigned)errno;
	*--q = '\n';
	do
		*--q = (char)('0' + e % 10);
	while ((e /= 10) && q > msg + 1);
	*--q = '!';
	if (write(wfd, q, (size_t)(end - q)) < 0) {
		/* nobody to tell */
	}
	_exit(127);
}

bool guard_running(const char *dir, char *sock, size_t n)
{
	char path[PATH_MAX];
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "%s/" GUARD_SESSION_FILE, dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	struct stat st;
	k = fstat(fd, &st) || st.st_uid != getuid() || !S_ISREG(st.st_mode)
		    ? -1
		    : read(fd, sock, n - 1);
	close(fd);
	if (k <= 0)
		return false;
	sock[k] = 0;
	sock[strcspn(sock, "\n")] = 0;
	/* a socket of ours that takes connections: a guardian lives */
	return sock[0] == '/' && !stat(sock, &st) && S_ISSOCK(st.st_mode) &&
	       st.st_uid == getuid();
}

int guard_spawn(const char *dir, const char *tool_env, char *sock, size_t n)
{
	char tool[PATH_MAX], abs[PATH_MAX];
	int p[2], ret;

	if ((ret = find_tool(tool_env, tool, sizeof(tool)))) {
		if (tool_env && *tool_env)
			slog_detail("no crash protection: STRATA_TOOL=%s is "
				    "not an executable file (name the strata "
				    "tool, or set STRATA_GUARD=0)", tool_env);
		else
			slog_detail("no crash protection: the strata tool was "
				    "not found beside libstrata (set STRATA_TOOL "
				    "to its path, or STRATA_GUARD=0)");
		return ret;
	}
	if (!realpath(dir, abs))
		return -errno;
	/* The guardian runs in "/" (guardian()): a tool named relative to
	 * our directory (STRATA_TOOL=build/src/cli/strata) must be made
	 * absolute here, or its execve fails there. */
	char tool_abs[PATH_MAX];
	if (!realpath(tool, tool_abs))
		return -errno;
	char *const argv[] = {"strata", "record", "--guard", "3", "-o", abs, NULL};
	char **envp = guardian_env();
	if (!envp)
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC) < 0) {
		ret = -errno;
		free(envp);
		return ret;
	}

	/* The intermediate: no exit signal (flags 0), so the program gets
	 * no SIGCHLD and its waitpid(-1) never sees it. */
	long mid = syscall(SYS_clone, 0UL, NULL, NULL, NULL, NULL);
	if (mid < 0) {
		ret = -errno;
		close(p[0]);
		close(p[1]);
		free(envp);
		return ret;
	}
	if (mid == 0) {
		close(p[0]);
		long g = syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, NULL);
		if (g == 0)
			guardian(tool_abs, argv, envp, p[1]);
		syscall(SYS_exit, g < 0 ? 1 : 0);
	}
	free(envp);
	close(p[1]);
	int st;
	while (waitpid((pid_t)mid, &st, __WCLONE) < 0 && errno == EINTR)
		;

	/* The guardian says where its socket is, or nothing if it fails. */
	size_t got = 0;
	uint64_t deadline = mono_ms() + 5000;
	ret = -ETIMEDOUT;
	while (mono_poll_in(p[0], deadline) > 0) {
		ssize_t k = read(p[0], sock + got, n - 1 - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			ret = -ECHILD; /* it ended without saying */
			break;
		}
		got += (size_t)k;
		sock[got] = 0;
		char *nl = strchr(sock, '\n');
		if (nl) {
			*nl = 0;
			ret = 0;
			if (sock[0] == '!') /* its execve failed (guardian()) */
				ret = atoi(sock + 1) > 0 ? -atoi(sock + 1) : -EIO;
			break;
		}
		if (got == n - 1) {
			ret = -ENAMETOOLONG;
			break;
		}
	}
	close(p[0]);
	if (ret)
		slog_detail("no crash protection: the guardian (%s) did not "
			    "start: %s (STRATA_TOOL names the strata tool to "
			    "run; STRATA_GUARD=0 records without it)",
			    tool_abs,
			    ret == -ETIMEDOUT ? "no answer in 5 s"
			    : ret == -ECHILD  ? "it ended without a word"
					      : strerror(-ret));
	return ret;
}
