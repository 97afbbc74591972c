/* labtui-qemu: launch, find, measure and end labtui's QEMU instances on a host.
 *
 * Every instance has a state directory holding qemu.pid (written by QEMU's
 * -pidfile), console.log (the serial console), qmp.sock, labels.json and
 * name: the exact -name value QEMU was started with, which always begins with
 * "labtui,,".  A process is only ever treated as an instance when the pid in
 * qemu.pid is alive AND its /proc/PID/cmdline carries "-name" followed by that
 * value, so a reused pid or a QEMU someone else started is never touched.
 *
 *   launch --dir DIR --wait ready|exit [--ready REGEX] [--timeout S] -- QEMU ARGV...
 *       ready  PID  WALL_NS  BOOT_NS
 *       exit   PID  WALL_NS  BOOT_NS  STATUS
 *       error  REASON
 *   ps ROOT [SESSION]        vm  DIR  PID  STATE  RSS_BYTES  START_EPOCH_S  NAME  (PID 0: no process)
 *   mem DIR...               mem DIR BYTES | gone DIR | refused DIR REASON
 *   kill [--qmp] [--grace S] DIR...  killed DIR | gone DIR | refused DIR REASON
 *       --qmp first asks each instance to quit through QMP, then waits up to
 *       the grace period before SIGKILL.
 *
 * QEMU runs with the state directory as its working directory and binds its
 * QMP socket there by the relative name qmp.sock, so a long runtime directory
 * never hits the 108-byte limit of a unix socket path.
 *
 * BOOT_NS is CLOCK_MONOTONIC from just before QEMU is started to the console
 * marker (ready) or to QEMU's exit (exit); WALL_NS is CLOCK_REALTIME then.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_NS 1000000L
#define CONSOLE_MAX (1 << 20)
static const char *state_files[] = {"qemu.pid", "qmp.sock", "console.log", "labels.json", "name", NULL};

static long long now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void nap(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

/* Read a whole small file into buf (NUL-terminated); bytes read or -1. */
static ssize_t read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "rb");
	size_t n;
	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (ssize_t)n;
}

/* Alive and not a zombie: a zombie has ended, only its parent can reap it. */
static int alive(int pid)
{
	char path[64], buf[512], *p;
	if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
		return 0;
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof buf) <= 0)
		return 0;
	p = strrchr(buf, ')');
	return !(p && p[1] && p[2] == 'Z');
}

static int read_pid(const char *dir)
{
	char path[8300], buf[32];
	snprintf(path, sizeof path, "%s/qemu.pid", dir);
	if (read_file(path, buf, sizeof buf) <= 0)
		return 0;
	return atoi(buf);
}

/* 1 when pid is alive and was started with "-name" <the dir's name file>;
 * 0 when it is gone; -1 (with *why set) when it is some other process. */
static int owned(const char *dir, int pid, const char **why)
{
	static char cmdline[65536];
	char path[8300], name[1024];
	ssize_t n, i;
	const char *prev = "";
	snprintf(path, sizeof path, "%s/name", dir);
	if (read_file(path, name, sizeof name) <= 0 || strncmp(name, "labtui,,", 8) != 0) {
		*why = "state directory has no labtui name";
		return -1;
	}
	if (!alive(pid))
		return 0;
	snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
	n = read_file(path, cmdline, sizeof cmdline);
	if (n < 0)
		return 0;
	if (n == 0) {
		*why = "process has no command line (zombie or kernel thread)";
		return -1;
	}
	for (i = 0; i < n; i += (ssize_t)strlen(cmdline + i) + 1) {
		if (strcmp(prev, "-name") == 0 && strcmp(cmdline + i, name) == 0)
			return 1;
		prev = cmdline + i;
	}
	*why = "pid belongs to a process without this instance's -name";
	return -1;
}

static long long rss_bytes(int pid, int prefer_pss)
{
	char path[64], buf[8192], *line;
	const char *keys[] = {"Pss:", "VmRSS:"};
	int k;
	for (k = prefer_pss ? 0 : 1; k < 2; k++) {
		snprintf(path, sizeof path, k == 0 ? "/proc/%d/smaps_rollup" : "/proc/%d/status", pid);
		if (read_file(path, buf, sizeof buf) <= 0)
			continue;
		line = strstr(buf, keys[k]);
		if (line)
			return atoll(line + strlen(keys[k])) * 1024LL;
	}
	return -1;
}

static void remove_state(const char *dir)
{
	char path[8300], *slash;
	int i;
	for (i = 0; state_files[i]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, state_files[i]);
		unlink(path);
	}
	rmdir(dir);
	snprintf(path, sizeof path, "%s", dir);
	if ((slash = strrchr(path, '/')) && slash != path) {
		*slash = '\0';
		rmdir(path); /* the session directory, once empty */
	}
}

static int cmd_launch(int argc, char **argv)
{
	const char *dir = NULL, *wait = "ready", *ready = NULL;
	double timeout = 60.0;
	regex_t re;
	char path[8300];
	static char console[CONSOLE_MAX + 1];
	long long wall, start, deadline;
	int i, status, pid;
	pid_t child;

	for (i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (i + 1 >= argc)
			break;
		if (!strcmp(argv[i], "--dir"))
			dir = argv[++i];
		else if (!strcmp(argv[i], "--wait"))
			wait = argv[++i];
		else if (!strcmp(argv[i], "--ready"))
			ready = argv[++i];
		else if (!strcmp(argv[i], "--timeout"))
			timeout = atof(argv[++i]);
		else
			break;
	}
	if (!dir || i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) {
		fprintf(stderr, "usage: launch --dir DIR --wait ready|exit [--ready REGEX] [--timeout S] -- QEMU...\n");
		return 2;
	}
	if (ready && *ready && regcomp(&re, ready, REG_EXTENDED | REG_NEWLINE | REG_NOSUB) != 0) {
		printf("error\tbad ready regex\n");
		return 1;
	}
	argv += i + 1;
	wall = now_ns(CLOCK_REALTIME);
	start = now_ns(CLOCK_MONOTONIC);
	deadline = start + (long long)(timeout * 1e9);
	child = fork();
	if (child < 0) {
		printf("error\tfork: %s\n", strerror(errno));
		return 1;
	}
	if (child == 0) {
		setsid();
		if (chdir(dir) < 0) {
			fprintf(stderr, "%s: %s\n", dir, strerror(errno));
			_exit(127);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (!strcmp(wait, "exit")) {
		while (waitpid(child, &status, WNOHANG) == 0) {
			if (now_ns(CLOCK_MONOTONIC) > deadline) {
				kill(child, SIGKILL);
				waitpid(child, &status, 0);
				printf("error\tno exit within %g s\n", timeout);
				return 1;
			}
			nap(POLL_NS);
		}
		if (!WIFEXITED(status)) {
			printf("error\tqemu killed by signal %d\n", WTERMSIG(status));
			return 1;
		}
		printf("exit\t%d\t%lld\t%lld\t%d\n", child, wall, now_ns(CLOCK_MONOTONIC) - start, WEXITSTATUS(status));
		return 0;
	}
	/* ready: QEMU -daemonize returns once the daemon is set up */
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("error\tqemu failed to start (status %d)\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return 1;
	}
	pid = read_pid(dir);
	if (pid <= 0) {
		printf("error\tqemu wrote no pidfile\n");
		return 1;
	}
	snprintf(path, sizeof path, "%s/console.log", dir);
	for (;;) {
		if (!ready || !*ready || (read_file(path, console, sizeof console) > 0 && regexec(&re, console, 0, NULL, 0) == 0))
			break;
		if (!alive(pid)) {
			printf("error\tqemu exited before the console showed %s\n", ready);
			return 1;
		}
		if (now_ns(CLOCK_MONOTONIC) > deadline) {
			kill(pid, SIGKILL);
			printf("error\tconsole did not show %s within %g s\n", ready, timeout);
			return 1;
		}
		nap(POLL_NS);
	}
	printf("ready\t%d\t%lld\t%lld\n", pid, wall, now_ns(CLOCK_MONOTONIC) - start);
	return 0;
}

static int cmd_ps(int argc, char **argv)
{
	char sessdir[4096], dir[8192], path[8300], statline[4096], name[1024], *p;
	DIR *root, *sess;
	struct dirent *s, *e;
	struct stat st;
	const char *why;
	int pid, state;
	long long start;

	if (argc < 1)
		return 2;
	root = opendir(argv[0]);
	if (!root)
		return 0; /* nothing started here yet */
	while ((s = readdir(root))) {
		if (s->d_name[0] == '.' || (argc > 1 && strcmp(s->d_name, argv[1]) != 0))
			continue;
		snprintf(sessdir, sizeof sessdir, "%s/%s", argv[0], s->d_name);
		if (!(sess = opendir(sessdir)))
			continue;
		while ((e = readdir(sess))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(dir, sizeof dir, "%s/%s", sessdir, e->d_name);
			snprintf(path, sizeof path, "%s/labels.json", dir);
			if (stat(path, &st) < 0)
				continue;
			pid = read_pid(dir);
			state = owned(dir, pid, &why);
			if (state < 0 && alive(pid)) {
				fprintf(stderr, "%s: %s\n", dir, why);
				pid = 0;
			} else if (state <= 0) {
				pid = 0;
			}
			start = st.st_mtime;
			snprintf(path, sizeof path, "%s/name", dir);
			if (read_file(path, name, sizeof name) <= 0 || strchr(name, '\t') || strchr(name, '\n'))
				continue;
			snprintf(path, sizeof path, "/proc/%d/stat", pid);
			p = pid && read_file(path, statline, sizeof statline) > 0 ? strrchr(statline, ')') : NULL;
			printf("vm\t%s\t%d\t%c\t%lld\t%lld\t%s\n", dir, pid, p ? p[2] : '-', pid ? rss_bytes(pid, 0) : 0, start, name);
		}
		closedir(sess);
	}
	closedir(root);
	return 0;
}

static int cmd_mem(int argc, char **argv)
{
	const char *why;
	int i, pid, state;
	for (i = 0; i < argc; i++) {
		pid = read_pid(argv[i]);
		state = owned(argv[i], pid, &why);
		if (state < 0)
			printf("refused\t%s\t%s\n", argv[i], why);
		else if (state == 0)
			printf("gone\t%s\n", argv[i]);
		else
			printf("mem\t%s\t%lld\n", argv[i], rss_bytes(pid, 1));
	}
	return 0;
}

/* Read one line of at most size bytes from fd; 0 on EOF or error. */
static int read_line(int fd, char *buf, size_t size)
{
	size_t n = 0;
	while (n + 1 < size && read(fd, buf + n, 1) == 1)
		if (buf[n++] == '\n')
			break;
	buf[n] = '\0';
	return n > 0;
}

/* Ask the QEMU of dir to quit through its QMP socket (dir/qmp.sock). */
static void qmp_quit(const char *dir)
{
	static const char *commands[] = {"{\"execute\": \"qmp_capabilities\"}\r\n", "{\"execute\": \"quit\"}\r\n"};
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval tv = {2, 0};
	char line[4096];
	int fd, cwd, i;

	cwd = open(".", O_RDONLY | O_DIRECTORY);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || cwd < 0 || chdir(dir) < 0)
		goto out;
	strcpy(addr.sun_path, "qmp.sock");
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || !read_line(fd, line, sizeof line))
		goto out; /* no greeting: the kill that follows ends it */
	for (i = 0; i < 2; i++) {
		if (write(fd, commands[i], strlen(commands[i])) < 0)
			break;
		do {
			if (!read_line(fd, line, sizeof line))
				goto out; /* quit may close before replying */
		} while (strstr(line, "\"event\""));
	}
out:
	if (fd >= 0)
		close(fd);
	if (cwd >= 0) {
		if (fchdir(cwd) < 0)
			perror("fchdir");
		close(cwd);
	}
}

static int cmd_kill(int argc, char **argv)
{
	double grace = 0;
	int use_qmp = 0;
	const char *why;
	int i, pid, state, rc = 0;
	long long deadline;

	if (argc >= 1 && !strcmp(argv[0], "--qmp")) {
		use_qmp = 1;
		argc--;
		argv++;
	}
	if (argc >= 2 && !strcmp(argv[0], "--grace")) {
		grace = atof(argv[1]);
		argc -= 2;
		argv += 2;
	}
	for (i = 0; use_qmp && i < argc; i++)
		if (owned(argv[i], read_pid(argv[i]), &why) == 1)
			qmp_quit(argv[i]);
	deadline = now_ns(CLOCK_MONOTONIC) + (long long)(grace * 1e9);
	for (i = 0; i < argc; i++) {
		pid = read_pid(argv[i]);
		state = owned(argv[i], pid, &why);
		if (state < 0 && alive(pid)) {
			printf("refused\t%s\t%s\n", argv[i], why);
			rc = 1;
			continue;
		}
		if (state == 1) {
			while (alive(pid) && now_ns(CLOCK_MONOTONIC) < deadline)
				nap(POLL_NS); /* the orderly stop (QMP) had its chance */
			kill(pid, SIGKILL);
			while (alive(pid) && now_ns(CLOCK_MONOTONIC) < deadline + 5000000000LL)
				nap(POLL_NS); /* reaped by init: wait until it is really gone */
		}
		remove_state(argv[i]);
		printf("%s\t%s\n", state == 1 ? "killed" : "gone", argv[i]);
	}
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "launch"))
		return cmd_launch(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "ps"))
		return cmd_ps(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "mem"))
		return cmd_mem(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "kill"))
		return cmd_kill(argc - 2, argv + 2);
	fprintf(stderr, "usage: labtui-qemu launch|ps|mem|kill ...\n");
	return 2;
}
