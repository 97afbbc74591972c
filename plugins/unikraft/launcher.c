/* labtui-qemu: launch, find, measure and end labtui's QEMU instances on a host.
 *
 * Every instance labtui starts itself has a state directory holding qemu.pid
 * (written by QEMU's -pidfile), console.log (the serial console), qmp.sock,
 * labels.json and name: the exact -name value QEMU was started with, which
 * always begins with "labtui,,".  A process is only ever treated as an
 * instance when the pid in qemu.pid is alive AND its /proc/PID/cmdline carries
 * "-name" followed by that value, so a reused pid or a QEMU someone else
 * started is never touched.  Instances started through kraft are named by the
 * handle kraft:UID:PID, UID being the machine id kraft gives QEMU as -name.
 *
 *   launch --dir DIR --wait ready|exit [--ready REGEX] [--timeout S] [--ports P,P...] -- QEMU ARGV...
 *       ready  PID  WALL_NS  BOOT_NS  PORTS    (PORTS: GUEST=HOST,... or -)
 *       exit   PID  WALL_NS  BOOT_NS  STATUS
 *       error  REASON
 *   kraft-run --wait ready|exit [--ready REGEX] [--timeout S] -- KRAFT RUN ARGV...
 *       ready  PID  UID  WALL_NS  BOOT_NS  CONSOLE
 *       exit   PID  UID  WALL_NS  BOOT_NS  STATUS  CONSOLE
 *       error  REASON
 *   ps ROOT [SESSION]        vm  DIR  PID  STATE  RSS_BYTES  START_EPOCH_S  NAME  (PID 0: no process)
 *   mem HANDLE...            mem HANDLE BYTES | gone HANDLE | refused HANDLE REASON
 *   kill [--qmp] [--grace S] DIR...  killed DIR | gone DIR | refused DIR REASON | failed DIR REASON
 *       --qmp first asks each instance to quit through QMP, then waits up to
 *       the grace period before SIGKILL.  A DIR is reported killed only once
 *       its QEMU no longer exists (reaped, not merely exited).
 *   kraft-rm [--force] [--grace S] UID -- KRAFT RM ARGV...
 *       removed UID KRAFT_STATUS LEFT | failed UID REASON
 *       Pins every qemu-system process whose -name is UID (a kraft machine
 *       id), runs kraft rm, gives the pinned QEMU up to the grace period to
 *       end, then SIGKILLs what is left of the machine (LEFT of them) and
 *       waits until every one is gone.  --force SIGKILLs before kraft rm.
 *
 * QEMU runs with the state directory as its working directory and binds its
 * QMP socket there by the relative name qmp.sock, so a long runtime directory
 * never hits the 108-byte limit of a unix socket path.
 *
 * Forwarded ports: QEMU is started with hostfwd=tcp:127.0.0.1:0-:GUEST, so the
 * kernel picks a free host port while QEMU binds it (no window in which two
 * instances can pick the same port); launch then asks QMP "info usernet"
 * which host port each guest port got.
 *
 * BOOT_NS is CLOCK_MONOTONIC from just before QEMU (or kraft) is started to
 * the console marker (ready) or to QEMU's exit (exit); WALL_NS is
 * CLOCK_REALTIME then.  kraft-run makes itself a child subreaper, so the QEMU
 * that kraft daemonizes becomes its child: that is how it knows which QEMU
 * belongs to this kraft run, and how it observes that QEMU's exit status.
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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_NS 1000000L
#define CONSOLE_MAX (1 << 20)
#define CMDLINE_MAX 65536
/* How long a killed QEMU may take to disappear (be reaped by its parent). */
#define GONE_NS 10000000000LL
#define MAX_PORTS 32
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

/* State letter, parent and start time (clock ticks after boot) of pid; 0 when there is no such process. */
static int proc_stat(int pid, char *state, int *ppid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	int i;
	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')) || !p[1] || !p[2])
		return 0;
	p += 2; /* field 3, the state */
	*state = *p;
	*ppid = atoi(p + 2);
	for (i = 0; i < 19 && p; i++) /* on to field 22, the start time */
		if ((p = strchr(p, ' ')))
			p++;
	*start = p ? strtoull(p, NULL, 10) : 0;
	return 1;
}

/* Alive and not a zombie: a zombie has ended, only its parent can reap it. */
static int alive(int pid)
{
	char state;
	int ppid;
	unsigned long long start;
	return proc_stat(pid, &state, &ppid, &start) && state != 'Z';
}

/* The process pid that started at start no longer exists (reaped; the pid may be reused). */
static int gone(int pid, unsigned long long start)
{
	char state;
	int ppid;
	unsigned long long now_start;
	return !proc_stat(pid, &state, &ppid, &now_start) || now_start != start;
}

/* Wait until pid (started at start) is gone; 1 when it is, 0 at the deadline. */
static int wait_gone(int pid, unsigned long long start, long long deadline)
{
	while (!gone(pid, start)) {
		if (now_ns(CLOCK_MONOTONIC) > deadline)
			return 0;
		nap(POLL_NS);
	}
	return 1;
}

static int read_pid(const char *dir)
{
	char path[8300], buf[32];
	snprintf(path, sizeof path, "%s/qemu.pid", dir);
	if (read_file(path, buf, sizeof buf) <= 0)
		return 0;
	return atoi(buf);
}

/* /proc/PID/cmdline into buf (NUL-separated arguments); its length, 0 when unreadable or empty. */
static ssize_t read_cmdline(int pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
	n = read_file(path, buf, size);
	return n < 0 ? 0 : n;
}

/* The argument following flag in a cmdline of n bytes, or NULL. */
static const char *cmd_arg(const char *cmdline, ssize_t n, const char *flag)
{
	ssize_t i;
	const char *prev = "";
	for (i = 0; i < n; i += (ssize_t)strlen(cmdline + i) + 1) {
		if (strcmp(prev, flag) == 0)
			return cmdline + i;
		prev = cmdline + i;
	}
	return NULL;
}

/* Whether argv[0] of a cmdline is a qemu-system binary. */
static int is_qemu(const char *cmdline)
{
	const char *base = strrchr(cmdline, '/');
	return strncmp(base ? base + 1 : cmdline, "qemu-system", 11) == 0;
}

/* 1 when pid is alive and is a QEMU started with "-name" name; 0 when it is
 * gone; -1 (with *why set) when it is some other process. */
static int owned_by_name(int pid, const char *name, const char **why)
{
	static char cmdline[CMDLINE_MAX];
	ssize_t n;
	const char *value;
	if (!alive(pid))
		return 0;
	n = read_cmdline(pid, cmdline, sizeof cmdline);
	if (n == 0) {
		*why = "process has no command line (zombie or kernel thread)";
		return -1;
	}
	value = cmd_arg(cmdline, n, "-name");
	if (!is_qemu(cmdline) || !value || strcmp(value, name) != 0) {
		*why = "pid belongs to a process without this instance's -name";
		return -1;
	}
	return 1;
}

/* owned_by_name for the QEMU of a state directory (its name file must start with labtui,,). */
static int owned(const char *dir, int pid, const char **why)
{
	char path[8300], name[1024];
	snprintf(path, sizeof path, "%s/name", dir);
	if (read_file(path, name, sizeof name) <= 0 || strncmp(name, "labtui,,", 8) != 0) {
		*why = "state directory has no labtui name";
		return -1;
	}
	return owned_by_name(pid, name, why);
}

/* A kraft machine id as kraft writes it: a 36-character UUID. */
static int valid_uid(const char *uid)
{
	size_t i;
	if (strlen(uid) != 36)
		return 0;
	for (i = 0; i < 36; i++)
		if (!(uid[i] == '-' || (uid[i] >= '0' && uid[i] <= '9') || (uid[i] >= 'a' && uid[i] <= 'f')))
			return 0;
	return 1;
}

/* Ownership of a handle: a state directory, or kraft:UID:PID. */
static int owned_handle(const char *handle, int *pid, const char **why)
{
	char uid[64];
	const char *colon;
	if (strncmp(handle, "kraft:", 6) != 0) {
		*pid = read_pid(handle);
		return owned(handle, *pid, why);
	}
	colon = strchr(handle + 6, ':');
	if (!colon || colon - (handle + 6) >= (long)sizeof uid) {
		*why = "bad kraft handle";
		return -1;
	}
	snprintf(uid, sizeof uid, "%.*s", (int)(colon - (handle + 6)), handle + 6);
	*pid = atoi(colon + 1);
	if (!valid_uid(uid)) {
		*why = "bad kraft machine id";
		return -1;
	}
	return owned_by_name(*pid, uid, why);
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

/* Send one QMP command and read its reply into reply, skipping events
 * (which start with "timestamp"); 1 when the command returned. */
static int qmp_execute(int fd, const char *command, char *reply, size_t size)
{
	if (dprintf(fd, "%s\r\n", command) < 0)
		return 0;
	do {
		if (!read_line(fd, reply, size))
			return 0; /* quit may close before replying */
	} while (strncmp(reply, "{\"timestamp\"", 12) == 0);
	return strncmp(reply, "{\"return\"", 9) == 0;
}

/* Connect to dir/qmp.sock and leave capabilities negotiation; the fd or -1. */
static int qmp_open(const char *dir)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval tv = {2, 0};
	char line[4096];
	int fd = -1, cwd;

	cwd = open(".", O_RDONLY | O_DIRECTORY);
	if (cwd < 0)
		return -1;
	if (chdir(dir) == 0 && (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
		strcpy(addr.sun_path, "qmp.sock");
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fchdir(cwd) < 0)
		perror("fchdir");
	close(cwd);
	if (fd >= 0 && (!read_line(fd, line, sizeof line) ||
			!qmp_execute(fd, "{\"execute\": \"qmp_capabilities\"}", line, sizeof line))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Ask the QEMU of dir to quit through its QMP socket (dir/qmp.sock). */
static void qmp_quit(const char *dir)
{
	char line[4096];
	int fd = qmp_open(dir);
	if (fd < 0)
		return; /* no QMP: the kill that follows ends it */
	qmp_execute(fd, "{\"execute\": \"quit\"}", line, sizeof line);
	close(fd);
}

/* The host port of each guest port, from QMP "info usernet"; NULL or what went wrong. */
static const char *query_ports(const char *dir, const int *guest, int n, int *host)
{
	static char reply[CMDLINE_MAX];
	char source[64], dest[64];
	const char *p;
	int fd, i, ok, sock, sport, dport;

	for (i = 0; i < n; i++)
		host[i] = 0;
	if ((fd = qmp_open(dir)) < 0)
		return "cannot connect to QMP";
	ok = qmp_execute(fd, "{\"execute\": \"human-monitor-command\", \"arguments\": {\"command-line\": \"info usernet\"}}",
			 reply, sizeof reply);
	close(fd);
	if (!ok)
		return "QMP info usernet failed";
	for (p = reply; (p = strstr(p, "TCP[HOST_FORWARD]")); p++) {
		if (sscanf(p + 17, "%d %63s %d %63s %d", &sock, source, &sport, dest, &dport) != 5)
			continue;
		if (strcmp(source, "127.0.0.1") != 0)
			return "a forwarded port is not bound to 127.0.0.1";
		for (i = 0; i < n; i++)
			if (guest[i] == dport)
				host[i] = sport;
	}
	for (i = 0; i < n; i++)
		if (host[i] <= 0)
			return "info usernet lists no host port for a forwarded guest port";
	return NULL;
}

/* Options shared by launch and kraft-run; the index of "--" or -1. */
static int parse_options(int argc, char **argv, const char **dir, const char **wait, const char **ready,
			 double *timeout, const char **ports)
{
	int i;
	for (i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (i + 1 >= argc)
			return -1;
		if (!strcmp(argv[i], "--dir") && dir)
			*dir = argv[++i];
		else if (!strcmp(argv[i], "--wait"))
			*wait = argv[++i];
		else if (!strcmp(argv[i], "--ready"))
			*ready = argv[++i];
		else if (!strcmp(argv[i], "--timeout"))
			*timeout = atof(argv[++i]);
		else if (!strcmp(argv[i], "--ports") && ports)
			*ports = argv[++i];
		else
			return -1;
	}
	return i < argc && i + 1 < argc ? i : -1;
}

/* Poll console for the ready regex until it matches (1), the process is no longer alive (0) or the deadline (-1).
 * child: the process is ours to reap (waitpid tells its exit), else alive() does. */
static int wait_marker(const char *console_path, regex_t *re, int pid, int child, long long deadline)
{
	static char console[CONSOLE_MAX + 1];
	int status;
	ssize_t n, i;
	for (;;) {
		n = read_file(console_path, console, sizeof console);
		for (i = 0; i < n; i++) /* a guest may write NUL bytes: regexec would stop at the first */
			if (console[i] == '\0')
				console[i] = '\n';
		if (n > 0 && regexec(re, console, 0, NULL, 0) == 0)
			return 1;
		if (child ? waitpid(pid, &status, WNOHANG) != 0 : !alive(pid))
			return 0;
		if (now_ns(CLOCK_MONOTONIC) > deadline)
			return -1;
		nap(POLL_NS);
	}
}

static int cmd_launch(int argc, char **argv)
{
	const char *dir = NULL, *wait = "ready", *ready = NULL, *ports = NULL, *why;
	double timeout = 60.0;
	regex_t re;
	char path[8300], *end;
	long long wall, start, deadline, boot;
	int i, status, pid, found, guest[MAX_PORTS], host[MAX_PORTS], nports = 0;
	pid_t child;

	i = parse_options(argc, argv, &dir, &wait, &ready, &timeout, &ports);
	if (i < 0 || !dir) {
		fprintf(stderr, "usage: launch --dir DIR --wait ready|exit [--ready REGEX] [--timeout S] "
				"[--ports P,...] -- QEMU...\n");
		return 2;
	}
	for (end = (char *)ports; end && *end && nports < MAX_PORTS; end += *end == ',') {
		guest[nports] = (int)strtol(end, &end, 10);
		if (guest[nports++] <= 0 || (*end && *end != ',')) {
			fprintf(stderr, "launch: --ports takes guest ports separated by commas\n");
			return 2;
		}
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
	found = ready && *ready ? wait_marker(path, &re, pid, 0, deadline) : 1;
	boot = now_ns(CLOCK_MONOTONIC) - start;
	if (found == 0) {
		printf("error\tqemu exited before the console showed %s\n", ready);
		return 1;
	}
	if (found < 0) {
		kill(pid, SIGKILL);
		printf("error\tconsole did not show %s within %g s\n", ready, timeout);
		return 1;
	}
	if (nports && (why = query_ports(dir, guest, nports, host))) {
		printf("error\tforwarded ports: %s\n", why);
		return 1;
	}
	printf("ready\t%d\t%lld\t%lld\t", pid, wall, boot);
	for (i = 0; i < nports; i++)
		printf("%s%d=%d", i ? "," : "", guest[i], host[i]);
	printf("%s\n", nports ? "" : "-");
	return 0;
}

/* The live qemu-system processes whose parent is us (adopted as subreaper);
 * how many, up to max.  Adopted children that already ended (QEMU's
 * -daemonize forks twice) are reaped. */
static int adopted_qemus(int *pids, int max)
{
	char path[300], buf[1024], *open_paren;
	DIR *proc = opendir("/proc");
	struct dirent *e;
	int n = 0, pid, ppid, status;
	char state;
	unsigned long long start;
	if (!proc)
		return 0;
	while ((e = readdir(proc)) && n < max) {
		pid = atoi(e->d_name);
		if (pid <= 0 || !proc_stat(pid, &state, &ppid, &start) || ppid != getpid())
			continue;
		if (state == 'Z') {
			waitpid(pid, &status, WNOHANG);
			continue;
		}
		snprintf(path, sizeof path, "/proc/%d/stat", pid);
		if (read_file(path, buf, sizeof buf) > 0 && (open_paren = strchr(buf, '(')) &&
		    strncmp(open_paren + 1, "qemu-system", 11) == 0)
			pids[n++] = pid;
	}
	closedir(proc);
	return n;
}

static void kill_children(const int *pids, int n)
{
	int i, status;
	for (i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
	}
}

static int cmd_kraft_run(int argc, char **argv)
{
	const char *wait = "ready", *ready = NULL, *uid, *serial;
	static char cmdline[CMDLINE_MAX];
	double timeout = 60.0;
	regex_t re;
	long long wall, start, deadline, boot;
	int i, status, qemus[8], n, found;
	ssize_t len;
	pid_t kraft;

	i = parse_options(argc, argv, NULL, &wait, &ready, &timeout, NULL);
	if (i < 0) {
		fprintf(stderr, "usage: kraft-run --wait ready|exit [--ready REGEX] [--timeout S] -- KRAFT RUN...\n");
		return 2;
	}
	if (ready && *ready && regcomp(&re, ready, REG_EXTENDED | REG_NEWLINE | REG_NOSUB) != 0) {
		printf("error\tbad ready regex\n");
		return 1;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		printf("error\tPR_SET_CHILD_SUBREAPER: %s\n", strerror(errno));
		return 1;
	}
	argv += i + 1;
	wall = now_ns(CLOCK_REALTIME);
	start = now_ns(CLOCK_MONOTONIC);
	deadline = start + (long long)(timeout * 1e9);
	kraft = fork();
	if (kraft < 0) {
		printf("error\tfork: %s\n", strerror(errno));
		return 1;
	}
	if (kraft == 0) {
		dup2(2, 1); /* kraft's own output (the machine name) is not our protocol */
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(kraft, &status, WNOHANG) == 0) {
		if (now_ns(CLOCK_MONOTONIC) > deadline) {
			kill(kraft, SIGKILL);
			waitpid(kraft, &status, 0);
			kill_children(qemus, adopted_qemus(qemus, 8));
			printf("error\tkraft run did not return within %g s\n", timeout);
			return 1;
		}
		nap(POLL_NS);
	}
	n = adopted_qemus(qemus, 8);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n != 1) {
		kill_children(qemus, n);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			printf("error\tkraft run exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		else
			printf("error\tkraft run left %d QEMU processes, expected one\n", n);
		return 1;
	}
	len = read_cmdline(qemus[0], cmdline, sizeof cmdline);
	uid = cmd_arg(cmdline, len, "-name");
	serial = cmd_arg(cmdline, len, "-serial");
	if (!uid || !valid_uid(uid) || !serial || strncmp(serial, "file:", 5) != 0 || strchr(serial, '\t')) {
		kill_children(qemus, 1);
		printf("error\tkraft's QEMU has no machine id in -name or no -serial file:PATH\n");
		return 1;
	}
	serial += 5;
	if (!strcmp(wait, "exit")) {
		while ((found = waitpid(qemus[0], &status, WNOHANG)) == 0) {
			if (now_ns(CLOCK_MONOTONIC) > deadline) {
				kill_children(qemus, 1);
				printf("error\tno exit within %g s\n", timeout);
				return 1;
			}
			nap(POLL_NS);
		}
		if (found < 0 || !WIFEXITED(status)) {
			printf("error\tqemu killed by signal %d\n", found < 0 ? 0 : WTERMSIG(status));
			return 1;
		}
		printf("exit\t%d\t%s\t%lld\t%lld\t%d\t%s\n", qemus[0], uid, wall, now_ns(CLOCK_MONOTONIC) - start,
		       WEXITSTATUS(status), serial);
		return 0;
	}
	found = ready && *ready ? wait_marker(serial, &re, qemus[0], 1, deadline) : 1;
	boot = now_ns(CLOCK_MONOTONIC) - start;
	if (found <= 0) {
		if (found < 0)
			kill_children(qemus, 1);
		printf("error\t%s %s\n", found < 0 ? "console did not show" : "qemu exited before the console showed", ready);
		return 1;
	}
	printf("ready\t%d\t%s\t%lld\t%lld\t%s\n", qemus[0], uid, wall, boot, serial);
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
		state = owned_handle(argv[i], &pid, &why);
		if (state < 0)
			printf("refused\t%s\t%s\n", argv[i], why);
		else if (state == 0)
			printf("gone\t%s\n", argv[i]);
		else
			printf("mem\t%s\t%lld\n", argv[i], rss_bytes(pid, 1));
	}
	return 0;
}

/* A QEMU to end, pinned once its ownership was checked: a pidfd (where the
 * kernel has them) signals exactly that process even if its pid is reused, and
 * the start time tells when the pid no longer names it. */
struct victim {
	int pid, pidfd;
	unsigned long long start;
};

static int pidfd_open_pid(int pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

/* Pin pid: a pidfd opened before the ownership check, and its start time; 0 when it is gone. */
static int pin(struct victim *v, int pid, int pidfd)
{
	char letter;
	int ppid;
	v->pid = pid;
	v->pidfd = pidfd;
	if (proc_stat(pid, &letter, &ppid, &v->start))
		return 1;
	if (pidfd >= 0)
		close(pidfd);
	return 0;
}

static void send_kill(struct victim *v)
{
#ifdef SYS_pidfd_send_signal
	if (v->pidfd >= 0) {
		syscall(SYS_pidfd_send_signal, v->pidfd, SIGKILL, NULL, 0);
		return;
	}
#endif
	if (!gone(v->pid, v->start))
		kill(v->pid, SIGKILL);
}

/* SIGKILL every victim, then wait (at most GONE_NS) until each is gone (reaped);
 * failures[i] is NULL or why victim i is not gone.  A killed QEMU is reaped by
 * its parent (init, after -daemonize), which some inits do only periodically. */
static void kill_all(struct victim *victims, int n, const char **failures)
{
	long long deadline;
	int i;
	for (i = 0; i < n; i++)
		send_kill(&victims[i]);
	deadline = now_ns(CLOCK_MONOTONIC) + GONE_NS;
	for (i = 0; i < n; i++) {
		failures[i] = NULL;
		if (!wait_gone(victims[i].pid, victims[i].start, deadline))
			failures[i] = alive(victims[i].pid) ? "qemu still runs after SIGKILL"
							    : "qemu ended but its parent has not reaped it";
		if (victims[i].pidfd >= 0)
			close(victims[i].pidfd);
		victims[i].pidfd = -1;
	}
}

static int cmd_kill(int argc, char **argv)
{
	static struct victim victims[1024];
	static int states[1024], index[1024];
	static const char *whys[1024], *failures[1024];
	double grace = 0;
	int use_qmp = 0;
	int i, n = 0, pid, pidfd, rc = 0;
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
	if (argc > 1024)
		return 2;
	/* Check and pin every instance first: once QEMU quits its command line is gone. */
	for (i = 0; i < argc; i++) {
		pid = read_pid(argv[i]);
		pidfd = alive(pid) ? pidfd_open_pid(pid) : -1;
		states[i] = owned(argv[i], pid, &whys[i]);
		if (states[i] == 1 && pin(&victims[n], pid, pidfd)) {
			index[i] = n++;
			continue;
		}
		if (states[i] == 1)
			states[i] = 0; /* it ended meanwhile (pin closed the pidfd) */
		else if (pidfd >= 0)
			close(pidfd);
		if (states[i] < 0 && !alive(pid))
			states[i] = 0; /* a stale pidfile: nothing to refuse */
	}
	for (i = 0; use_qmp && i < argc; i++)
		if (states[i] == 1)
			qmp_quit(argv[i]);
	deadline = now_ns(CLOCK_MONOTONIC) + (long long)(grace * 1e9);
	for (i = 0; i < n; i++)
		while (alive(victims[i].pid) && now_ns(CLOCK_MONOTONIC) < deadline)
			nap(POLL_NS); /* the orderly stop (QMP) had its chance */
	kill_all(victims, n, failures);
	for (i = 0; i < argc; i++) {
		if (states[i] < 0) {
			printf("refused\t%s\t%s\n", argv[i], whys[i]);
			rc = 1;
		} else if (states[i] == 1 && failures[index[i]]) {
			printf("failed\t%s\tpid %d: %s\n", argv[i], victims[index[i]].pid, failures[index[i]]);
			rc = 1; /* the state directory stays, so a later cleanup finds it */
		} else {
			remove_state(argv[i]);
			printf("%s\t%s\n", states[i] == 1 ? "killed" : "gone", argv[i]);
		}
	}
	return rc;
}

/* Pin every live qemu-system process whose -name is uid (skipping pins[0..n)); the new count. */
static int pin_machine(const char *uid, struct victim *pins, int n, int max)
{
	static char cmdline[CMDLINE_MAX];
	const char *name;
	struct dirent *e;
	DIR *proc;
	ssize_t len;
	int pid, pidfd, i, known;

	if (!(proc = opendir("/proc")))
		return n;
	while ((e = readdir(proc)) && n < max) {
		if ((pid = atoi(e->d_name)) <= 0 || !alive(pid))
			continue;
		for (known = 0, i = 0; i < n; i++)
			known |= pins[i].pid == pid && !gone(pid, pins[i].start);
		if (known)
			continue;
		pidfd = pidfd_open_pid(pid);
		len = read_cmdline(pid, cmdline, sizeof cmdline);
		name = len && is_qemu(cmdline) ? cmd_arg(cmdline, len, "-name") : NULL;
		if (name && !strcmp(name, uid) && pin(&pins[n], pid, pidfd))
			n++;
		else if (pidfd >= 0)
			close(pidfd);
	}
	closedir(proc);
	return n;
}

static int cmd_kraft_rm(int argc, char **argv)
{
	struct victim pins[16];
	const char *failures[16], *uid;
	double grace = 2.0;
	int force = 0, n, before, i, status, left = 0;
	long long deadline;
	pid_t kraft;

	for (; argc > 0 && argv[0][0] == '-' && strcmp(argv[0], "--") != 0; argc--, argv++) {
		if (!strcmp(argv[0], "--force"))
			force = 1;
		else if (!strcmp(argv[0], "--grace") && argc > 1)
			grace = atof((argc--, ++argv)[0]);
		else
			break;
	}
	if (argc < 3 || strcmp(argv[1], "--") != 0 || !valid_uid(argv[0])) {
		fprintf(stderr, "usage: kraft-rm [--force] [--grace S] MACHINE_ID -- KRAFT RM ARGV...\n");
		return 2;
	}
	uid = argv[0];
	/* Pin the machine's QEMU before kraft removes it: once it quits, its command line is gone. */
	n = pin_machine(uid, pins, 0, 16);
	if (force)
		kill_all(pins, n, failures);
	kraft = fork();
	if (kraft < 0) {
		printf("failed\t%s\tfork: %s\n", uid, strerror(errno));
		return 1;
	}
	if (kraft == 0) {
		dup2(2, 1);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "%s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	waitpid(kraft, &status, 0);
	if (!force) {
		deadline = now_ns(CLOCK_MONOTONIC) + (long long)(grace * 1e9);
		for (i = 0; i < n; i++)
			while (alive(pins[i].pid) && now_ns(CLOCK_MONOTONIC) < deadline)
				nap(POLL_NS);
	}
	/* What is left of the machine is SIGKILLed, and every QEMU of it waited for until reaped. */
	if (force)
		n = 0; /* those were killed and released above */
	for (i = 0; i < n; i++)
		left += alive(pins[i].pid);
	before = n;
	n = pin_machine(uid, pins, n, 16);
	left += n - before;
	kill_all(pins, n, failures);
	for (i = 0; i < n; i++)
		if (failures[i]) {
			printf("failed\t%s\tpid %d: %s\n", uid, pins[i].pid, failures[i]);
			return 1;
		}
	printf("removed\t%s\t%d\t%d\n", uid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), left);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "launch"))
		return cmd_launch(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "kraft-run"))
		return cmd_kraft_run(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "ps"))
		return cmd_ps(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "mem"))
		return cmd_mem(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "kill"))
		return cmd_kill(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "kraft-rm"))
		return cmd_kraft_rm(argc - 2, argv + 2);
	fprintf(stderr, "usage: labtui-qemu launch|kraft-run|ps|mem|kill|kraft-rm ...\n");
	return 2;
}
