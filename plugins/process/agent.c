/*
 * labtui-agent: starts, finds, measures and ends labtui instances on a host.
 *
 * labtui's process backend copies this file to each host, compiles it there
 * and runs it through the host's command channel, so one backend works on the
 * local machine and over SSH alike.  An instance is a process tree started by
 * `spawn`; its labels travel in its environment (LABTUI_SESSION, LABTUI_ROLE,
 * LABTUI_INSTANCE), which every descendant inherits, so the tree can be found
 * again after labtui itself crashed.
 *
 * Every result is one tab-separated line on stdout; diagnostics go to stderr.
 *
 *   spawn --session S --role R --instance ID [--instance ID2 ...]
 *         [--cpus LIST] [--wait ready|exit] [--isolate auto|none]
 *         [--timeout SECONDS] [--stdout FILE [--stderr-too] | --log-dir DIR] [--start-at WALL_NS] [--init]
 *         [--cpu-weight 1-10000] [--cpu-cap CPUS] -- PROGRAM [ARGS...]
 *       instance  ID  PID  WALL_NS  BOOT_NS  ISOLATION            (--wait ready)
 *       exit      ID  PID  WALL_NS  BOOT_NS  EXIT_CODE  ISOLATION (--wait exit)
 *       error     ID  REASON
 *     One instance per --instance, started in order; the first failure ends
 *     the batch.  --wait exit takes a single instance and reaps it.
 *     WALL_NS is CLOCK_REALTIME just before the fork; BOOT_NS is CLOCK_MONOTONIC
 *     from just before the fork to the exec (ready) or to the observed exit.
 *     ISOLATION is e.g. "pidns+ipcns+utsns,cgroup-v2", or "none".  The
 *     cgroup is the v2 one where the host mounts v2 (at CGROUP_V2_ROOT, or
 *     beside v1 controllers at CGROUP_V2_HYBRID_ROOT), and the instance is
 *     created in it (clone3 CLONE_INTO_CGROUP), so BOOT_NS carries no RCU
 *     grace period of a cgroup move; else the v1 pids controller's, joined
 *     by writing cgroup.procs (see fork_into_cgroup).
 *     --stdout sends the instance's stdout to FILE (created 0600, truncated)
 *     instead of /dev/null; it takes a single --instance.  --stderr-too sends
 *     its stderr to that FILE as well, as one stream (real tools such as
 *     lmbench print their results on stderr).  --log-dir sends each
 *     instance's stdout and stderr to DIR/ID.log instead (DIR created as by
 *     mkdir -p, the file 0600 and truncated, opened before WALL_NS so that
 *     BOOT_NS does not count it): the log `labtui` shows; kill --log-dir
 *     removes it.  --init runs the program as the
 *     child of a reaping PID 1 instead of as PID 1 (see run_under_init).
 *     --start-at makes
 *     the instance wait until CLOCK_REALTIME reaches WALL_NS before exec, so
 *     instances spawned by separate calls start together (BOOT_NS includes
 *     the wait).  --cpu-weight (cgroup v2's cpu.weight scale, 100 is the
 *     default) and --cpu-cap (in CPUs, 0.25 is a quarter of one) go to the
 *     instance's cgroup: cpu.weight/cpu.max on v2 (the cpu controller enabled
 *     for the labtui subtree), else cpu.shares/cpu.cfs_quota_us under the v1
 *     cpu controller; a weight alone falls back to the nice value of the
 *     nearest CFS weight.  Without a usable controller a cap is an error
 *     before any instance starts.
 *
 *   ps [--session S]
 *       proc  PID  SESSION  ROLE  INSTANCE  STATE  RSS_BYTES  START_EPOCH_S  COMM
 *     One line per instance root: a labelled process whose parent does not
 *     carry the same session and instance.
 *
 *   kill [--grace SECONDS] [--force] [--session S] [--log-dir DIR] PID:INSTANCE...
 *       killed|gone  PID  INSTANCE
 *       refused|failed  PID  INSTANCE  REASON
 *     A process is touched only while its environment carries
 *     LABTUI_INSTANCE=INSTANCE.  SIGTERM, up to --grace seconds (default 2),
 *     then SIGKILL for whatever is left of the tree; --force skips SIGTERM.
 *     With --session, the cgroup of an instance whose root is already gone is
 *     emptied and removed too.  With --log-dir, the log spawn --log-dir kept of
 *     each instance that ended or was gone is removed, and DIR once empty.  PID 0 names no process: the spawn of INSTANCE
 *     was cut short before it reported a pid (its instance may not have
 *     exec'd, so it carries no labels yet); with --session its cgroup is
 *     emptied and removed, and nothing else is touched ("gone 0 INSTANCE").
 *
 *   mem PID:INSTANCE...
 *       mem  PID  INSTANCE  BYTES  CPU_NS
 *       gone|refused  PID  INSTANCE  [REASON]
 *     BYTES is Pss (else RSS) summed over the tree.  CPU_NS is the CPU time
 *     the instance used so far: its v2 cgroup's cpu.stat usage_usec (every
 *     process it ever held), else utime+stime+cutime+cstime of /proc/PID/stat
 *     summed over its live processes (what they and the children they reaped
 *     used), in ns.
 *
 *   exec [--timeout SECONDS] PID:INSTANCE -- PROGRAM [ARGS...]
 *     Runs PROGRAM inside a running instance, as `docker exec` does: in the
 *     namespaces spawn gave the instance (setns on /proc/PID/ns/pid, ipc,
 *     uts), in its cgroups, with its CPU affinity, nice value and labels, in
 *     a session of its own with stdin on /dev/null.  The process also carries
 *     LABTUI_EXEC=TOKEN (ps does not take it for a second instance root while
 *     the instance has processes of its own) and dies with the agent
 *     (PR_SET_PDEATHSIG).  Its stdout and stderr are relayed to the agent's.
 *     When it exits, or at --timeout (default 60), what is left of it (its
 *     process group, every process carrying its token) is SIGKILLed, and one
 *     record closes stderr, after a newline of its own so that it never
 *     joins the program's last line:
 *       labtui-agent-exec  exit     CODE  DURATION_NS
 *       labtui-agent-exec  timeout  SECONDS  DURATION_NS
 *       labtui-agent-exec  error    REASON     (gone, refused, could not start)
 *     CODE is the exit code, or 128 + the signal that ended it; DURATION_NS
 *     is CLOCK_MONOTONIC from just before the fork to the observed exit.
 *     Nothing else is written: stdout is the program's alone.
 *
 * Exit status: 0 all done (exec: the program ran, whatever its code), 1
 * something failed or was refused, 2 bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Where the cgroup hierarchies live; overridable at build time for testing. */
#ifndef CGROUP_V2_ROOT
#define CGROUP_V2_ROOT "/sys/fs/cgroup"
#endif
/* Where a hybrid host (v1 controllers, plus a v2 hierarchy without them) mounts v2. */
#ifndef CGROUP_V2_HYBRID_ROOT
#define CGROUP_V2_HYBRID_ROOT CGROUP_V2_ROOT "/unified"
#endif
#ifndef CGROUP_V1_PIDS_ROOT
#define CGROUP_V1_PIDS_ROOT "/sys/fs/cgroup/pids"
#endif
#ifndef CGROUP_V1_CPU_ROOT
#define CGROUP_V1_CPU_ROOT "/sys/fs/cgroup/cpu"
#endif
#define CGROUP_SUBTREE "labtui"
#define SAFE_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."

#define LABEL_MAX 256
#define FILE_MAX (64 * 1024) /* environ, cgroup.procs and friends */
#define POLL_MS 2
#define KILL_WAIT_MS 5000
#define CFS_PERIOD_US 100000

enum cgroup_kind { CG_NONE, CG_V1_PIDS, CG_V2, CG_V1_CPU };
/* How spawn applies --cpu-weight and --cpu-cap. */
enum cpu_control { CPU_NONE, CPU_V2, CPU_V1, CPU_NICE, CPU_MISSING };

struct labels {
    char session[LABEL_MAX];
    char role[LABEL_MAX];
    char instance[LABEL_MAX];
    char exec[64]; /* LABTUI_EXEC: the token of the exec that started this process, if any */
};

/* ------------------------------------------------------------------ util */

__attribute__((format(printf, 1, 2))) static void warn_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("labtui-agent: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

__attribute__((noreturn, format(printf, 1, 2))) static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("labtui-agent: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nusage: labtui-agent spawn|ps|kill|mem|exec ... (see agent.c)\n", stderr);
    va_end(ap);
    exit(2);
}

static int64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Read up to size-1 bytes of path into buf and NUL-terminate it.
 * Returns the length, or -1 with errno set. */
static ssize_t read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len < size - 1) {
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n < 0 ? -1 : 0;
}

static int make_dir(const char *path)
{
    return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* mkdir -p: every missing directory of path (0700: the logs are the user's alone). */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* DIR/ID.log: where --log-dir sends an instance's stdout and stderr; -1 for an ID that is not a file name. */
static int log_path(const char *dir, const char *instance, char *out, size_t size)
{
    if (strchr(instance, '/') || !strcmp(instance, ".") || !strcmp(instance, "..")) {
        errno = EINVAL;
        return -1;
    }
    return snprintf(out, size, "%s/%s.log", dir, instance) < (int)size ? 0 : -1;
}

/* Labels and names are printed in tab-separated records: keep them on one field. */
static const char *field(const char *text)
{
    static char buf[8][LABEL_MAX];
    static int next;
    char *out = buf[next++ % 8];
    snprintf(out, LABEL_MAX, "%s", text);
    for (char *p = out; *p; p++)
        if (*p == '\t' || *p == '\n')
            *p = ' ';
    return out;
}

/* --------------------------------------------------------------- /proc */

struct proc_stat {
    pid_t pid, ppid, pgid;
    char state;
    unsigned long long start_ticks;
    unsigned long long cpu_ticks; /* utime+stime+cutime+cstime */
    long rss_pages;
    char comm[64];
};

static int is_dead(char state)
{
    return state == 'Z' || state == 'X' || state == 'x';
}

/* Read /proc/PID/stat; -1 when the process is gone. */
static int read_stat(pid_t pid, struct proc_stat *st)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (read_file(path, buf, sizeof buf) < 0)
        return -1;
    /* comm may hold spaces and parentheses: it ends at the last ')'. */
    char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
    if (!open_paren || !close_paren || close_paren < open_paren)
        return -1;
    size_t len = (size_t)(close_paren - open_paren - 1);
    if (len >= sizeof st->comm)
        len = sizeof st->comm - 1;
    memcpy(st->comm, open_paren + 1, len);
    st->comm[len] = '\0';
    int ppid, pgid;
    unsigned long long utime, stime, cutime, cstime;
    /* Fields 3-5 (state ppid pgrp), skip 6-13, 14-17 utime stime cutime cstime, skip 18-21,
     * 22 starttime, skip 23, 24 rss. */
    if (sscanf(close_paren + 2,
               "%c %d %d %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu %llu %llu %*s %*s %*s %*s %llu %*s %ld",
               &st->state, &ppid, &pgid, &utime, &stime, &cutime, &cstime, &st->start_ticks,
               &st->rss_pages) != 9)
        return -1;
    st->cpu_ticks = utime + stime + cutime + cstime;
    st->pid = pid;
    st->ppid = ppid;
    st->pgid = pgid;
    return 0;
}

static void copy_label(const char *entry, const char *prefix, char *dst)
{
    size_t len = strlen(prefix);
    if (strncmp(entry, prefix, len) == 0)
        snprintf(dst, LABEL_MAX, "%s", entry + len);
}

/* Read the LABTUI_* labels from /proc/PID/environ.
 * Returns 1 if the process carries an instance label, 0 if not, -1 (errno set)
 * if the environment cannot be read -- a zombie has none left. */
static int read_labels(pid_t pid, struct labels *out)
{
    static char env[FILE_MAX];
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    ssize_t len = read_file(path, env, sizeof env);
    if (len < 0)
        return -1;
    memset(out, 0, sizeof *out);
    for (const char *p = env; p < env + len; p += strlen(p) + 1) {
        copy_label(p, "LABTUI_SESSION=", out->session);
        copy_label(p, "LABTUI_ROLE=", out->role);
        copy_label(p, "LABTUI_INSTANCE=", out->instance);
        if (strncmp(p, "LABTUI_EXEC=", 12) == 0)
            snprintf(out->exec, sizeof out->exec, "%s", p + 12);
    }
    return out->instance[0] != '\0';
}

static int same_instance(const struct labels *a, const struct labels *b)
{
    return strcmp(a->instance, b->instance) == 0 && strcmp(a->session, b->session) == 0;
}

struct proc {
    struct proc_stat st;
    struct labels labels;
};

struct proc_table {
    struct proc *items;
    size_t len;
};

static int compare_pid(const void *a, const void *b)
{
    pid_t x = ((const struct proc *)a)->st.pid, y = ((const struct proc *)b)->st.pid;
    return (x > y) - (x < y);
}

/* Every labelled process on the host except this agent, sorted by pid. */
static struct proc_table scan_labelled(void)
{
    struct proc_table table = {NULL, 0};
    size_t cap = 0;
    DIR *dir = opendir("/proc");
    if (!dir) {
        warn_msg("cannot list /proc: %s", strerror(errno));
        exit(1);
    }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        pid_t pid = (pid_t)atoi(entry->d_name);
        struct proc proc;
        if (pid <= 0 || pid == getpid())
            continue;
        /* Environment first, then stat: a process that dies in between shows as Z. */
        if (read_labels(pid, &proc.labels) != 1 || read_stat(pid, &proc.st) < 0)
            continue;
        if (table.len == cap) {
            cap = cap ? cap * 2 : 256;
            table.items = realloc(table.items, cap * sizeof *table.items);
            if (!table.items) {
                warn_msg("out of memory scanning /proc");
                exit(1);
            }
        }
        table.items[table.len++] = proc;
    }
    closedir(dir);
    if (table.len)
        qsort(table.items, table.len, sizeof *table.items, compare_pid);
    return table;
}

static const struct proc *find_proc(const struct proc_table *table, pid_t pid)
{
    struct proc key;
    key.st.pid = pid;
    if (!table->len)
        return NULL;
    return bsearch(&key, table->items, table->len, sizeof key, compare_pid);
}

/* Whether the instance has a process that no exec started. */
static int has_own_process(const struct proc_table *table, const struct labels *labels)
{
    for (size_t i = 0; i < table->len; i++)
        if (!table->items[i].labels.exec[0] && same_instance(&table->items[i].labels, labels))
            return 1;
    return 0;
}

/* An instance root is the topmost process of its instance: its parent does
 * not carry the same labels (children inherit the environment).  An exec'd
 * process (its parent is an agent) counts only once the instance has no
 * process of its own left. */
static int is_root(const struct proc_table *table, const struct proc *proc)
{
    const struct proc *parent = find_proc(table, proc->st.ppid);
    if (parent && same_instance(&parent->labels, &proc->labels))
        return 0;
    return !proc->labels.exec[0] || !has_own_process(table, &proc->labels);
}

/* Memory charged to one process: Pss when smaps_rollup is readable, else RSS. */
static long long process_memory(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    if (read_file(path, buf, sizeof buf) > 0) {
        const char *pss = strstr(buf, "\nPss:");
        if (pss)
            return atoll(pss + 5) * 1024;
    }
    struct proc_stat st;
    if (read_stat(pid, &st) < 0)
        return 0;
    return (long long)st.rss_pages * sysconf(_SC_PAGESIZE);
}

/* ------------------------------------------------------------- cgroups */

/* The v2 (unified) hierarchy: CGROUP_V2_ROOT on a v2 host, CGROUP_V2_HYBRID_ROOT on a
 * hybrid one; NULL when the host mounts none. */
static const char *v2_root(void)
{
    static const char *root;
    static int looked;
    if (!looked) {
        looked = 1;
        if (access(CGROUP_V2_ROOT "/cgroup.controllers", F_OK) == 0)
            root = CGROUP_V2_ROOT;
        else if (access(CGROUP_V2_HYBRID_ROOT "/cgroup.controllers", F_OK) == 0)
            root = CGROUP_V2_HYBRID_ROOT;
    }
    return root;
}

static const char *cgroup_root(enum cgroup_kind kind)
{
    if (kind == CG_V2)
        return v2_root() ? v2_root() : CGROUP_V2_ROOT;
    return kind == CG_V1_CPU ? CGROUP_V1_CPU_ROOT : CGROUP_V1_PIDS_ROOT;
}

static const char *cgroup_label(enum cgroup_kind kind)
{
    return kind == CG_V2 ? "cgroup-v2" : "cgroup-v1-pids";
}

/* The hierarchy spawn uses: the unified (v2) one when the host mounts it,
 * alone or beside v1 controllers (hybrid), else the v1 pids controller;
 * CG_NONE when neither is writable.  v2 comes first even on a hybrid host
 * because only there can a process be created inside its cgroup
 * (clone3 CLONE_INTO_CGROUP): moving one in afterwards waits for an RCU
 * grace period (see spawn_into_cgroup). */
static enum cgroup_kind choose_cgroup(void)
{
    char subtree[PATH_MAX];
    snprintf(subtree, sizeof subtree, "%s/" CGROUP_SUBTREE, cgroup_root(CG_V2));
    if (v2_root() && make_dir(subtree) == 0)
        return CG_V2;
    if (access(CGROUP_V1_PIDS_ROOT "/cgroup.procs", F_OK) == 0 &&
        make_dir(CGROUP_V1_PIDS_ROOT "/" CGROUP_SUBTREE) == 0)
        return CG_V1_PIDS;
    return CG_NONE;
}

/* <root>/labtui/<session>.<instance>, with anything unusual replaced by '_'. */
static void cgroup_dir_for(enum cgroup_kind kind, const struct labels *labels, char *out, size_t size)
{
    int prefix = snprintf(out, size, "%s/%s/", cgroup_root(kind), CGROUP_SUBTREE);
    snprintf(out + prefix, size - (size_t)prefix, "%s.%s", labels->session, labels->instance);
    for (char *p = out + prefix; *p; p++)
        if (!strchr(SAFE_NAME_CHARS, *p))
            *p = '_';
}

static int has_controller(const char *list, size_t len, const char *name)
{
    size_t name_len = strlen(name);
    for (const char *p = list; p < list + len;) {
        const char *comma = memchr(p, ',', (size_t)(list + len - p));
        size_t item = comma ? (size_t)(comma - p) : (size_t)(list + len - p);
        if (item == name_len && strncmp(p, name, name_len) == 0)
            return 1;
        p += item + 1;
    }
    return 0;
}

/* The labtui cgroup pid lives in, from /proc/PID/cgroup ("id:controllers:path"). */
static enum cgroup_kind find_cgroup(pid_t pid, char *dir, size_t size)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    if (read_file(path, buf, sizeof buf) < 0)
        return CG_NONE;
    static const char ours[] = "/" CGROUP_SUBTREE "/";
    int unified = v2_root() != NULL;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char *controllers = strchr(line, ':');
        char *cgpath = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!cgpath || strncmp(cgpath + 1, ours, sizeof ours - 1) != 0)
            continue;
        size_t list_len = (size_t)(cgpath - controllers - 1);
        enum cgroup_kind kind = CG_NONE;
        if (list_len == 0 && unified)
            kind = CG_V2;
        else if (has_controller(controllers + 1, list_len, "pids"))
            kind = CG_V1_PIDS;
        if (kind != CG_NONE) {
            snprintf(dir, size, "%s%s", cgroup_root(kind), cgpath + 1);
            return kind;
        }
    }
    return CG_NONE;
}

/* Call fn(pid, arg) for each process in the cgroup; returns how many there were. */
static int for_each_cgroup_pid(const char *dir, void (*fn)(pid_t, void *), void *arg)
{
    static char buf[FILE_MAX];
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    if (read_file(path, buf, sizeof buf) < 0)
        return 0;
    int count = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        count++;
        if (fn)
            fn((pid_t)atoi(line), arg);
    }
    return count;
}

static void send_signal(pid_t pid, void *sig)
{
    kill(pid, *(int *)sig);
}

/* What mem reports of an instance: bytes of memory and clock ticks of CPU time. */
struct usage {
    long long memory;
    unsigned long long cpu_ticks;
};

static void add_usage(pid_t pid, void *total)
{
    struct usage *usage = total;
    struct proc_stat st;
    usage->memory += process_memory(pid);
    if (read_stat(pid, &st) == 0)
        usage->cpu_ticks += st.cpu_ticks;
}

/* usage_usec of a v2 cgroup's cpu.stat, in ns; -1 when it cannot be read. */
static long long cgroup_cpu_ns(const char *dir)
{
    char path[PATH_MAX], buf[1024];
    snprintf(path, sizeof path, "%s/cpu.stat", dir);
    if (read_file(path, buf, sizeof buf) <= 0 || strncmp(buf, "usage_usec ", 11) != 0)
        return -1;
    return atoll(buf + 11) * 1000;
}

/* Signal every process in the cgroup; SIGKILL on v2 uses cgroup.kill. */
static void signal_cgroup(enum cgroup_kind kind, const char *dir, int sig)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.kill", dir);
    if (kind == CG_V2 && sig == SIGKILL && write_file(path, "1") == 0)
        return;
    for_each_cgroup_pid(dir, send_signal, &sig);
}

/* Move the calling process into the cgroup at dir; its children follow. */
static int join_cgroup(const char *dir)
{
    char path[PATH_MAX], self[32];
    if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int)sizeof path)
        return -1;
    snprintf(self, sizeof self, "%d", (int)getpid());
    return write_file(path, self);
}

/* The fields of clone3's struct clone_args up to cgroup (CLONE_ARGS_SIZE_VER2),
 * spelt out so that the agent builds against headers older than Linux 5.7. */
struct clone3_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
        cgroup;
};
#ifndef SYS_clone3
#define SYS_clone3 435 /* the same number on every architecture */
#endif
#define CLONE_INTO_CGROUP_FLAG 0x200000000ULL

/* Fork a child that starts life in the v2 cgroup whose directory dir_fd is
 * open on (clone3 with CLONE_INTO_CGROUP, Linux 5.7).  Returns as fork()
 * does; -1 when that cannot be done here, and the caller forks and joins.
 *
 * Why: moving a process into a cgroup (writing cgroup.procs) takes the
 * cgroup_threadgroup_rwsem for writing, whose rcu_sync_enter waits for a
 * whole RCU grace period unless another move ended less than a grace period
 * ago.  With HZ=250 that is 5-20 ms, or nearly nothing right after any other
 * cgroup move on the host (a batch of background instances, a container
 * start): a boot time of either ~1 ms or 8-25 ms.  Created inside its cgroup,
 * the process takes that rwsem only for reading, as every fork does.
 *
 * The child runs on a copy of our stack, as after fork, but glibc's record of
 * its thread id still holds ours: it must not use pthread functions, raise()
 * or abort() (the middle process does not; the fork() it makes resets the
 * record for the instance). */
static pid_t fork_into_cgroup(int dir_fd)
{
    static int unsupported;
    if (dir_fd < 0 || unsupported)
        return -1;
    struct clone3_args args;
    memset(&args, 0, sizeof args);
    args.flags = CLONE_INTO_CGROUP_FLAG;
    args.exit_signal = SIGCHLD;
    args.cgroup = (uint64_t)dir_fd;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    /* ENOSYS: no clone3 (or a seccomp filter refusing it); E2BIG, EINVAL: a
     * kernel before 5.7, without the cgroup field or the flag. */
    if (pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL || errno == EPERM))
        unsupported = 1;
    return (pid_t)pid;
}

/* Remove an ended instance's cgroup, SIGKILLing anything still in it
 * (zombies do not count: they have left cgroup.procs). */
static void remove_cgroup(enum cgroup_kind kind, const char *dir)
{
    for (int waited = 0; rmdir(dir) < 0; waited += POLL_MS) {
        if (errno == ENOENT)
            return;
        if (errno != EBUSY || waited >= KILL_WAIT_MS) {
            warn_msg("cannot remove cgroup %s: %s", dir, strerror(errno));
            return;
        }
        signal_cgroup(kind, dir, SIGKILL);
        sleep_ms(POLL_MS);
    }
}

/* An instance's v1 cpu cgroup lives beside its pids one: remove it once the instance ended. */
static void remove_cpu_cgroup(const struct labels *labels)
{
    char dir[PATH_MAX];
    cgroup_dir_for(CG_V1_CPU, labels, dir, sizeof dir);
    if (access(dir, F_OK) == 0)
        remove_cgroup(CG_V1_CPU, dir);
}

/* ----------------------------------------------------------- cpu control */

/* CFS weights of nice -20..19 (the kernel's sched_prio_to_weight). */
static const int nice_weights[40] = {
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
    9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
    1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
    110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
};

/* The nice value whose CFS weight is nearest (by ratio) to weight on the cpu.weight scale. */
static int nice_for_weight(int weight)
{
    double target = weight * 1024.0 / 100.0, best = 0;
    int nice = 0;
    for (int i = 0; i < 40; i++) {
        double ratio = nice_weights[i] > target ? nice_weights[i] / target : target / nice_weights[i];
        if (i == 0 || ratio < best) {
            best = ratio;
            nice = i - 20;
        }
    }
    return nice;
}

/* Whether the space-separated list (cgroup.controllers) holds word. */
static int has_word(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\n' || p[len] == '\0'))
            return 1;
    return 0;
}

/* How --cpu-weight/--cpu-cap can be applied here: the v2 cpu controller for
 * the labtui subtree (enabled on the way), else the v1 cpu controller, else
 * (a weight alone) nice; CPU_MISSING when a cap cannot be applied. */
static enum cpu_control choose_cpu_control(int weight, double cap, enum cgroup_kind cgroup)
{
    char controllers[256], available[PATH_MAX], enable[PATH_MAX];
    if (!weight && cap <= 0)
        return CPU_NONE;
    snprintf(available, sizeof available, "%s/" CGROUP_SUBTREE "/cgroup.controllers", cgroup_root(CG_V2));
    snprintf(enable, sizeof enable, "%s/" CGROUP_SUBTREE "/cgroup.subtree_control", cgroup_root(CG_V2));
    if (cgroup == CG_V2 && read_file(available, controllers, sizeof controllers) >= 0 &&
        has_word(controllers, "cpu") && write_file(enable, "+cpu") == 0)
        return CPU_V2;
    if (access(CGROUP_V1_CPU_ROOT "/cpu.shares", F_OK) == 0 && make_dir(CGROUP_V1_CPU_ROOT "/" CGROUP_SUBTREE) == 0)
        return CPU_V1;
    return cap > 0 ? CPU_MISSING : CPU_NICE;
}

/* Write "value" to dir/name; on failure describe it in reason. */
static int write_setting(const char *dir, const char *name, const char *value, char *reason, size_t size)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (write_file(path, value) == 0)
        return 0;
    snprintf(reason, size, "cannot write %s to %s: %s", value, path, strerror(errno));
    return -1;
}

/* Give one instance its weight and cap before it starts: in its v2 cgroup
 * (cgroup_dir), or in a v1 cpu cgroup made for it (its path left in cpu_dir,
 * for the middle process to join).  Nice is applied by the middle process. */
static int apply_cpu_control(enum cpu_control mode, int weight, double cap, const struct labels *labels,
                             const char *cgroup_dir, char *cpu_dir, size_t cpu_dir_size, char *reason, size_t size)
{
    char value[64];
    long long quota = (long long)(cap * CFS_PERIOD_US + 0.5);
    cpu_dir[0] = '\0';
    if (mode == CPU_V2) {
        if (!*cgroup_dir) {
            snprintf(reason, size, "no cgroup for the instance, so no cpu.weight or cpu.max");
            return -1;
        }
        snprintf(value, sizeof value, "%d", weight);
        if (weight && write_setting(cgroup_dir, "cpu.weight", value, reason, size) < 0)
            return -1;
        snprintf(value, sizeof value, "%lld %d", quota, CFS_PERIOD_US);
        return cap > 0 ? write_setting(cgroup_dir, "cpu.max", value, reason, size) : 0;
    }
    if (mode != CPU_V1)
        return 0;
    cgroup_dir_for(CG_V1_CPU, labels, cpu_dir, cpu_dir_size);
    if (make_dir(cpu_dir) < 0) {
        snprintf(reason, size, "cannot create cgroup %s: %s", cpu_dir, strerror(errno));
        cpu_dir[0] = '\0';
        return -1;
    }
    int shares = (weight * 1024 + 50) / 100; /* the cpu.weight scale on cpu.shares': 100 -> 1024 */
    snprintf(value, sizeof value, "%d", shares < 2 ? 2 : shares);
    if (weight && write_setting(cpu_dir, "cpu.shares", value, reason, size) < 0)
        return -1;
    snprintf(value, sizeof value, "%d", CFS_PERIOD_US);
    if (cap > 0 && write_setting(cpu_dir, "cpu.cfs_period_us", value, reason, size) < 0)
        return -1;
    snprintf(value, sizeof value, "%lld", quota);
    return cap > 0 ? write_setting(cpu_dir, "cpu.cfs_quota_us", value, reason, size) : 0;
}

/* --------------------------------------------------------------- pidfd */

/* pidfds pin a process, so a pid that is reused after we checked its labels
 * is never signalled.  Kernels before 5.3 lack them: fall back to kill(). */
static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static int signal_pidfd(int pidfd, pid_t pid, int sig)
{
#ifdef SYS_pidfd_send_signal
    if (pidfd >= 0)
        return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#else
    (void)pidfd;
#endif
    return kill(pid, sig);
}

/* --------------------------------------------------------------- targets */

enum target_status { PENDING, ENDED, GONE, REFUSED, FAILED };

/* One PID:INSTANCE argument of kill or mem, and what we learnt about it. */
struct target {
    pid_t pid;
    const char *instance;
    struct labels labels;
    int pidfd;
    int group_leader;
    enum cgroup_kind cgroup;
    char cgroup_dir[PATH_MAX];
    enum target_status status;
    char reason[LABEL_MAX + 64];
};

static void parse_target(const char *arg, struct target *t)
{
    char *end;
    const char *colon = strchr(arg, ':');
    long pid = strtol(arg, &end, 10);
    if (!colon || end != colon || pid < 0 || pid > INT_MAX || !colon[1])
        usage_error("expected PID:INSTANCE, got %s", arg);
    memset(t, 0, sizeof *t);
    t->pid = (pid_t)pid;
    t->instance = colon + 1;
    t->pidfd = -1;
}

/* A target may be touched only while it runs and carries LABTUI_INSTANCE. */
static void verify_target(struct target *t)
{
    struct proc_stat st;
    if (t->pid == 0) { /* 0:INSTANCE, no root known: never signalled (kill(0) would hit our own group) */
        t->status = GONE;
        return;
    }
    t->pidfd = open_pidfd(t->pid);
    if ((t->pidfd < 0 && errno == ESRCH) || read_stat(t->pid, &st) < 0 || is_dead(st.state)) {
        t->status = GONE;
        return;
    }
    int labelled = read_labels(t->pid, &t->labels);
    if (labelled < 0 && errno == ESRCH) {
        t->status = GONE;
    } else if (labelled < 0) {
        t->status = REFUSED;
        snprintf(t->reason, sizeof t->reason, "cannot read /proc/%d/environ: %s", (int)t->pid,
                 strerror(errno));
    } else if (!labelled || strcmp(t->labels.instance, t->instance) != 0) {
        t->status = REFUSED;
        snprintf(t->reason, sizeof t->reason, "pid %d does not carry LABTUI_INSTANCE=%s", (int)t->pid,
                 field(t->instance));
    } else if (signal_pidfd(t->pidfd, t->pid, 0) < 0) {
        t->status = GONE; /* exited while we read it: the environment may be a newcomer's */
    } else {
        t->status = PENDING;
        t->group_leader = st.pgid == t->pid;
        t->cgroup = find_cgroup(t->pid, t->cgroup_dir, sizeof t->cgroup_dir);
    }
}

/* The root still exists (a zombie counts: it holds its pid and group id). */
static int root_exists(const struct target *t)
{
    return signal_pidfd(t->pidfd, t->pid, 0) == 0;
}

static int root_running(const struct target *t)
{
    struct proc_stat st;
    return root_exists(t) && read_stat(t->pid, &st) == 0 && !is_dead(st.state);
}

/* Signal the whole instance: its cgroup, its process group and its root. */
static void signal_instance(const struct target *t, int sig)
{
    if (t->cgroup != CG_NONE)
        signal_cgroup(t->cgroup, t->cgroup_dir, sig);
    if (!root_exists(t))
        return;
    if (t->group_leader)
        kill(-t->pid, sig);
    signal_pidfd(t->pidfd, t->pid, sig);
}

static int instance_ended(const struct target *t)
{
    if (root_running(t))
        return 0;
    return t->cgroup == CG_NONE || for_each_cgroup_pid(t->cgroup_dir, NULL, NULL) == 0;
}

/* Poll until every pending target ended or timeout_ms passed; returns how many are left. */
static int wait_ended(struct target *targets, int n, int timeout_ms)
{
    for (int waited = 0;; waited += POLL_MS) {
        int left = 0;
        for (int i = 0; i < n; i++) {
            if (targets[i].status == PENDING && instance_ended(&targets[i]))
                targets[i].status = ENDED;
            left += targets[i].status == PENDING;
        }
        if (!left || waited >= timeout_ms)
            return left;
        sleep_ms(POLL_MS);
    }
}

/* Descendants outside any cgroup may have left the root's process group:
 * find them by their labels and SIGKILL them, checking each through a pidfd. */
static void kill_labelled_strays(const struct target *targets, int n)
{
    int needed = 0;
    for (int i = 0; i < n; i++)
        needed |= (targets[i].status == PENDING || targets[i].status == ENDED) && targets[i].cgroup == CG_NONE;
    if (!needed)
        return;
    struct proc_table table = scan_labelled();
    for (size_t p = 0; p < table.len; p++) {
        const struct proc *proc = &table.items[p];
        for (int i = 0; i < n; i++) {
            const struct target *t = &targets[i];
            if (t->cgroup != CG_NONE || !(t->status == PENDING || t->status == ENDED) ||
                !same_instance(&t->labels, &proc->labels))
                continue;
            struct labels now;
            int pidfd = open_pidfd(proc->st.pid);
            if (read_labels(proc->st.pid, &now) == 1 && same_instance(&now, &t->labels))
                signal_pidfd(pidfd, proc->st.pid, SIGKILL);
            if (pidfd >= 0)
                close(pidfd);
        }
    }
    free(table.items);
}

/* The root is gone, but with --session its cgroup can still be found by name:
 * end what is left in it (orphans of the root) and remove it. */
static void clean_named_cgroups(const char *session, const char *instance)
{
    struct labels labels;
    memset(&labels, 0, sizeof labels);
    snprintf(labels.session, LABEL_MAX, "%s", session);
    snprintf(labels.instance, LABEL_MAX, "%s", instance);
    enum cgroup_kind kinds[] = {CG_V2, CG_V1_PIDS, CG_V1_CPU};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char dir[PATH_MAX];
        cgroup_dir_for(kinds[k], &labels, dir, sizeof dir);
        if (access(dir, F_OK) == 0)
            remove_cgroup(kinds[k], dir);
    }
}

static void print_target(const struct target *t, const char *verb)
{
    if (t->status == REFUSED || t->status == FAILED)
        printf("%s\t%d\t%s\t%s\n", t->status == REFUSED ? "refused" : "failed", (int)t->pid,
               field(t->instance), t->reason);
    else
        printf("%s\t%d\t%s\n", t->status == GONE ? "gone" : verb, (int)t->pid, field(t->instance));
}

/* ------------------------------------------------------------------ kill */

static int cmd_kill(int argc, char **argv)
{
    static const struct option options[] = {
        {"grace", required_argument, NULL, 'g'},
        {"force", no_argument, NULL, 'f'},
        {"session", required_argument, NULL, 's'},
        {"log-dir", required_argument, NULL, 'L'},
        {NULL, 0, NULL, 0},
    };
    double grace_s = 2.0;
    int force = 0, opt;
    const char *session = NULL, *log_dir = NULL;
    while ((opt = getopt_long(argc, argv, "+", options, NULL)) != -1) {
        if (opt == 'g')
            grace_s = atof(optarg);
        else if (opt == 'f')
            force = 1;
        else if (opt == 's')
            session = optarg;
        else if (opt == 'L')
            log_dir = optarg;
        else
            usage_error("kill: unknown option");
    }
    int n = argc - optind;
    struct target *targets = calloc((size_t)(n > 0 ? n : 1), sizeof *targets);
    if (!targets)
        usage_error("kill: out of memory");
    for (int i = 0; i < n; i++) {
        parse_target(argv[optind + i], &targets[i]);
        verify_target(&targets[i]);
    }
    if (!force) {
        for (int i = 0; i < n; i++)
            if (targets[i].status == PENDING)
                signal_instance(&targets[i], SIGTERM);
        wait_ended(targets, n, (int)(grace_s * 1000));
    }
    /* Whatever is left of each tree -- the root if it ignored SIGTERM,
     * children that outlived it -- gets SIGKILL. */
    for (int i = 0; i < n; i++)
        if (targets[i].status == PENDING || targets[i].status == ENDED)
            signal_instance(&targets[i], SIGKILL);
    kill_labelled_strays(targets, n);
    wait_ended(targets, n, KILL_WAIT_MS);

    int status = 0;
    for (int i = 0; i < n; i++) {
        struct target *t = &targets[i];
        if (t->status == PENDING) {
            t->status = FAILED;
            snprintf(t->reason, sizeof t->reason, "still running %d ms after SIGKILL", KILL_WAIT_MS);
        }
        if (t->cgroup != CG_NONE && t->status == ENDED)
            remove_cgroup(t->cgroup, t->cgroup_dir);
        if (t->status == ENDED)
            remove_cpu_cgroup(&t->labels);
        if (t->status == GONE && session)
            clean_named_cgroups(session, t->instance);
        if (log_dir && (t->status == ENDED || t->status == GONE)) {
            char path[PATH_MAX];
            if (log_path(log_dir, t->instance, path, sizeof path) == 0)
                unlink(path);
        }
        status |= t->status == REFUSED || t->status == FAILED;
        print_target(t, "killed");
        if (t->pidfd >= 0)
            close(t->pidfd);
    }
    if (log_dir)
        rmdir(log_dir); /* only once empty: the session's other instances keep theirs */
    free(targets);
    return status;
}

/* ------------------------------------------------------------------- mem */

/* Print the mem record of a live instance: its memory and CPU time summed over its cgroup, else its tree. */
static void print_usage(const struct target *t, const struct proc_table *table)
{
    struct usage total = {0, 0};
    if (t->cgroup != CG_NONE) {
        for_each_cgroup_pid(t->cgroup_dir, add_usage, &total);
    } else {
        for (size_t i = 0; i < table->len; i++) {
            if (same_instance(&table->items[i].labels, &t->labels)) {
                total.memory += process_memory(table->items[i].st.pid);
                total.cpu_ticks += table->items[i].st.cpu_ticks;
            }
        }
    }
    long long cpu_ns = t->cgroup == CG_V2 ? cgroup_cpu_ns(t->cgroup_dir) : -1;
    if (cpu_ns < 0) {
        unsigned long long hz = (unsigned long long)sysconf(_SC_CLK_TCK);
        cpu_ns = (long long)(total.cpu_ticks / hz * 1000000000ULL + total.cpu_ticks % hz * 1000000000ULL / hz);
    }
    printf("mem\t%d\t%s\t%lld\t%lld\n", (int)t->pid, field(t->instance), total.memory, cpu_ns);
}

static int cmd_mem(int argc, char **argv)
{
    int n = argc - 1, status = 0, need_scan = 0;
    struct target *targets = calloc((size_t)(n > 0 ? n : 1), sizeof *targets);
    if (!targets)
        usage_error("mem: out of memory");
    for (int i = 0; i < n; i++) {
        parse_target(argv[i + 1], &targets[i]);
        verify_target(&targets[i]);
        need_scan |= targets[i].status == PENDING && targets[i].cgroup == CG_NONE;
    }
    struct proc_table table = need_scan ? scan_labelled() : (struct proc_table){NULL, 0};
    for (int i = 0; i < n; i++) {
        struct target *t = &targets[i];
        if (t->status == PENDING)
            print_usage(t, &table);
        else
            print_target(t, "mem");
        status |= t->status == REFUSED;
        if (t->pidfd >= 0)
            close(t->pidfd);
    }
    free(table.items);
    free(targets);
    return status;
}

/* -------------------------------------------------------------------- ps */

/* /proc/PID/stat counts start time in clock ticks since boot (CLOCK_BOOTTIME):
 * the epoch of boot is now on the wall clock minus the time since boot. */
static double boot_epoch(void)
{
    return (double)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_BOOTTIME)) / 1e9;
}

static int cmd_ps(int argc, char **argv)
{
    static const struct option options[] = {
        {"session", required_argument, NULL, 's'},
        {NULL, 0, NULL, 0},
    };
    const char *session = NULL;
    int opt;
    while ((opt = getopt_long(argc, argv, "+", options, NULL)) != -1) {
        if (opt != 's')
            usage_error("ps: unknown option");
        session = optarg;
    }
    struct proc_table table = scan_labelled();
    double booted = boot_epoch();
    double ticks = (double)sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < table.len; i++) {
        const struct proc *p = &table.items[i];
        if ((session && strcmp(p->labels.session, session) != 0) || !is_root(&table, p))
            continue;
        printf("proc\t%d\t%s\t%s\t%s\t%c\t%lld\t%.2f\t%s\n", (int)p->st.pid, field(p->labels.session),
               field(p->labels.role), field(p->labels.instance), p->st.state,
               (long long)p->st.rss_pages * page, booted + (double)p->st.start_ticks / ticks,
               field(p->st.comm));
    }
    free(table.items);
    return 0;
}

/* ----------------------------------------------------------------- spawn */

struct spawn_options {
    struct labels labels; /* instance filled per instance */
    const char **instances;
    int n_instances;
    cpu_set_t cpus;
    int pin;
    int wait_exit;
    int isolate;
    double timeout_s;
    const char *stdout_path; /* NULL: /dev/null */
    int stderr_too;          /* stderr to stdout_path as well */
    const char *log_dir;     /* NULL: no log; else stdout and stderr to log_dir/ID.log */
    int log_fd;              /* that log, opened by spawn_one for one instance; -1: none */
    int init;                /* PID 1 reaps, the program is its child */
    int64_t start_at_ns;     /* CLOCK_REALTIME to exec at; 0: at once */
    int cpu_weight;          /* cpu.weight scale, 1-10000; 0: none */
    double cpu_cap;          /* CPUs; 0: none */
    enum cpu_control cpu_control;
    char **program;
};

/* The namespaces spawn gives an instance, and exec joins. */
#define INSTANCE_NAMESPACES (CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS)
static const struct {
    int flag;
    const char *name; /* in /proc/PID/ns */
} instance_namespaces[] = {{CLONE_NEWIPC, "ipc"}, {CLONE_NEWUTS, "uts"}, {CLONE_NEWPID, "pid"}};

/* What the children tell the agent through the CLOEXEC status pipe. */
enum { REPORT_STARTED = 1, REPORT_FAILED };
struct report {
    int kind;
    pid_t pid;              /* STARTED: the instance, in the agent's pid namespace */
    int namespaces;         /* STARTED: pid/ipc/uts namespaces were created */
    enum cgroup_kind cgroup; /* STARTED: the cgroup the instance was put in */
    int err;                /* FAILED: errno of the step that failed */
    char step[32];          /* FAILED: which step */
};

__attribute__((noreturn)) static void report_failure(int fd, const char *step, int err)
{
    struct report r = {.kind = REPORT_FAILED, .err = err};
    snprintf(r.step, sizeof r.step, "%s", step);
    if (write(fd, &r, sizeof r) < 0)
        _exit(126);
    _exit(127);
}

/* Parse a CPU list such as "0", "0-3" or "0,2,4-5". */
static int parse_cpus(const char *text, cpu_set_t *set)
{
    CPU_ZERO(set);
    for (const char *p = text; *p;) {
        char *end;
        long first = strtol(p, &end, 10), last = first;
        if (end == p || first < 0)
            return -1;
        if (*end == '-') {
            p = end + 1;
            last = strtol(p, &end, 10);
            if (end == p || last < first)
                return -1;
        }
        if (last >= CPU_SETSIZE)
            return -1;
        for (long cpu = first; cpu <= last; cpu++)
            CPU_SET((int)cpu, set);
        if (*end && *end != ',')
            return -1;
        p = *end ? end + 1 : end;
    }
    return CPU_COUNT(set) ? 0 : -1;
}

/* Unblock every signal and give each its default action, as a fresh program expects. */
static void default_signals(void)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
}

/* --init: the instance's PID 1 stays a reaper, as an init does, and the program
 * runs as its child.  As PID 1 of a pid namespace a program gets no default
 * action for signals sent to it and inherits every orphan: real tools that
 * rely on either misbehave (lmbench's harness ran lat_syscall 50x longer and
 * lat_proc fork printed nothing).  Exits with the program's status (128 + the
 * signal that ended it).  Never returns. */
__attribute__((noreturn)) static void reap_until(pid_t child);

__attribute__((noreturn)) static void run_under_init(char **program, int status_fd)
{
    pid_t child = fork();
    if (child < 0)
        report_failure(status_fd, "fork", errno);
    if (child == 0) {
        execvp(program[0], program);
        report_failure(status_fd, "exec", errno);
    }
    close(status_fd); /* the child's copy reports its exec, closing on success */
    /* The reaper is this binary exec'd again (`reap CHILD`, same pid, same child): /proc/PID/environ shows
     * the environment a process was exec'd with, and the labels were set after this one's exec, so `kill`
     * would refuse the instance as not carrying them.  Reaps in place if that exec fails. */
    char pid_text[24];
    snprintf(pid_text, sizeof pid_text, "%d", (int)child);
    char *reaper[] = {"labtui-agent", "reap", pid_text, NULL};
    execv("/proc/self/exe", reaper);
    reap_until(child);
}

/* Reap every child (an init inherits the namespace's orphans) until `child` ends; exit with its status. */
__attribute__((noreturn)) static void reap_until(pid_t child)
{
    int status = 0;
    for (;;) {
        pid_t pid = waitpid(-1, &status, 0);
        if (pid == child)
            break;
        if (pid < 0 && errno != EINTR)
            _exit(127);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* The instance itself: its own session, labels in the environment, stdio on
 * /dev/null, default signal handling, then exec.  Never returns. */
__attribute__((noreturn)) static void run_instance(const struct spawn_options *o, const struct labels *labels,
                                                  int status_fd)
{
    default_signals();
    if (setsid() < 0)
        report_failure(status_fd, "setsid", errno);
    if (setenv("LABTUI_SESSION", labels->session, 1) < 0 || setenv("LABTUI_ROLE", labels->role, 1) < 0 ||
        setenv("LABTUI_INSTANCE", labels->instance, 1) < 0)
        report_failure(status_fd, "setenv", errno);
    int null = open("/dev/null", O_RDWR);
    if (null < 0)
        report_failure(status_fd, "open /dev/null", errno);
    for (int fd = 0; fd <= 2; fd++)
        if (dup2(null, fd) < 0)
            report_failure(status_fd, "dup2", errno);
    if (null > 2)
        close(null);
    if (o->stdout_path) {
        int out = open(o->stdout_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
        if (out < 0)
            report_failure(status_fd, "open --stdout", errno);
        if (dup2(out, 1) < 0 || (o->stderr_too && dup2(out, 2) < 0))
            report_failure(status_fd, "dup2", errno);
        close(out);
    }
    if (o->log_fd >= 0) {
        if (dup2(o->log_fd, 1) < 0 || dup2(o->log_fd, 2) < 0)
            report_failure(status_fd, "dup2 log", errno);
        close(o->log_fd);
    }
    if (o->start_at_ns > 0) {
        struct timespec at = {(time_t)(o->start_at_ns / 1000000000), (long)(o->start_at_ns % 1000000000)};
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR)
            ;
    }
    if (o->init)
        run_under_init(o->program, status_fd);
    execvp(o->program[0], o->program);
    report_failure(status_fd, "exec", errno);
}

/* The middle process: joins the cgroup (unless it was created in it), pins,
 * creates the namespaces, forks the instance (PID 1 of the new pid namespace)
 * and exits, so the instance is reparented away from the agent.  Never returns. */
__attribute__((noreturn)) static void run_middle(const struct spawn_options *o, const struct labels *labels,
                                                enum cgroup_kind cgroup, const char *cgroup_dir, int in_cgroup,
                                                const char *cpu_dir, int status_fd)
{
    struct report r = {.kind = REPORT_STARTED, .cgroup = CG_NONE};
    if (cgroup != CG_NONE && (in_cgroup || join_cgroup(cgroup_dir) == 0))
        r.cgroup = cgroup;
    if (*cpu_dir && join_cgroup(cpu_dir) < 0)
        report_failure(status_fd, "join cpu cgroup", errno);
    if (o->cpu_control == CPU_NICE && setpriority(PRIO_PROCESS, 0, nice_for_weight(o->cpu_weight)) < 0)
        report_failure(status_fd, "setpriority", errno);
    if (o->pin && sched_setaffinity(0, sizeof o->cpus, &o->cpus) < 0)
        report_failure(status_fd, "sched_setaffinity", errno);
    if (o->isolate) {
        if (unshare(INSTANCE_NAMESPACES) == 0)
            r.namespaces = 1;
        else if (errno != EPERM && errno != EINVAL)
            report_failure(status_fd, "unshare", errno);
    }
    pid_t child = fork();
    if (child < 0)
        report_failure(status_fd, "fork", errno);
    if (child == 0)
        run_instance(o, labels, status_fd);
    r.pid = child;
    if (write(status_fd, &r, sizeof r) < 0)
        _exit(126);
    _exit(0);
}

static void describe_isolation(const struct report *r, char *out, size_t size)
{
    snprintf(out, size, "%s%s%s", r->namespaces ? "pidns+ipcns+utsns" : "",
             r->namespaces && r->cgroup != CG_NONE ? "," : "",
             r->cgroup != CG_NONE ? cgroup_label(r->cgroup) : "");
    if (!*out)
        snprintf(out, size, "none");
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* Wait for the instance (reparented to us: we are its subreaper) to exit,
 * SIGKILLing it after timeout_s.  The exit is observed without reaping, so
 * the zombie still pins its pid and group while leftovers are killed. */
static int wait_for_exit(struct target *t, double timeout_s, int64_t *exited_ns, int *exit_code)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: waitid returns EINTR */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval timer = {{0, 0}, {(time_t)timeout_s, (suseconds_t)((timeout_s - (time_t)timeout_s) * 1e6)}};
    setitimer(ITIMER_REAL, &timer, NULL);
    siginfo_t info;
    int timed_out = 0;
    while (waitid(P_PID, (id_t)t->pid, &info, WEXITED | WNOWAIT) < 0) {
        if (errno != EINTR)
            return -1;
        timed_out = 1;
        signal_instance(t, SIGKILL);
    }
    *exited_ns = clock_ns(CLOCK_MONOTONIC);
    timer.it_value.tv_sec = timer.it_value.tv_usec = 0;
    setitimer(ITIMER_REAL, &timer, NULL);
    signal_instance(t, SIGKILL); /* leftovers of the tree */
    int status;
    waitpid(t->pid, &status, 0);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (t->cgroup != CG_NONE)
        remove_cgroup(t->cgroup, t->cgroup_dir);
    remove_cpu_cgroup(&t->labels);
    return timed_out ? -1 : 0;
}

/* Read the children's reports until both have closed the pipe (the instance
 * by exec'ing); fills started/failed. */
static void collect_reports(int fd, struct report *started, struct report *failed)
{
    struct report r;
    ssize_t n;
    while ((n = read(fd, &r, sizeof r)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof r)
            break;
        *(r.kind == REPORT_STARTED ? started : failed) = r;
    }
}

/* Start one instance and print its record; 0 on success, -1 after an error record. */
static int spawn_one(const struct spawn_options *options, const char *id, enum cgroup_kind cgroup)
{
    struct spawn_options instance_options = *options;
    const struct spawn_options *o = &instance_options;
    struct labels labels = o->labels;
    snprintf(labels.instance, LABEL_MAX, "%s", id);
    if (o->log_dir) {
        char path[PATH_MAX] = "";
        if (log_path(o->log_dir, id, path, sizeof path) == 0)
            instance_options.log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (instance_options.log_fd < 0) {
            printf("error\t%s\topen log in %s: %s\n", field(id), field(o->log_dir), strerror(errno));
            return -1;
        }
    }
    char cgroup_dir[PATH_MAX] = "";
    if (cgroup != CG_NONE) {
        cgroup_dir_for(cgroup, &labels, cgroup_dir, sizeof cgroup_dir);
        if (make_dir(cgroup_dir) < 0) {
            warn_msg("cannot create cgroup %s: %s", cgroup_dir, strerror(errno));
            cgroup = CG_NONE;
        }
    }
    char cpu_dir[PATH_MAX], cpu_reason[PATH_MAX + 128];
    if (apply_cpu_control(o->cpu_control, o->cpu_weight, o->cpu_cap, &labels, cgroup != CG_NONE ? cgroup_dir : "",
                          cpu_dir, sizeof cpu_dir, cpu_reason, sizeof cpu_reason) < 0) {
        printf("error\t%s\t%s\n", field(id), cpu_reason);
        remove_cpu_cgroup(&labels);
        if (cgroup != CG_NONE)
            remove_cgroup(cgroup, cgroup_dir);
        return -1;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        printf("error\t%s\tpipe: %s\n", field(id), strerror(errno));
        if (o->log_fd >= 0)
            close(o->log_fd);
        return -1;
    }
    int cgroup_fd = cgroup == CG_V2 ? open(cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    int64_t wall = clock_ns(CLOCK_REALTIME), start = clock_ns(CLOCK_MONOTONIC);
    pid_t middle = fork_into_cgroup(cgroup_fd);
    int in_cgroup = middle >= 0;
    if (middle < 0)
        middle = fork();
    if (middle == 0) {
        close(fds[0]);
        run_middle(o, &labels, cgroup, cgroup_dir, in_cgroup, cpu_dir, fds[1]);
    }
    if (cgroup_fd >= 0)
        close(cgroup_fd);
    if (o->log_fd >= 0)
        close(o->log_fd);
    close(fds[1]);
    struct report started = {0}, failed = {0};
    if (middle > 0)
        collect_reports(fds[0], &started, &failed);
    int64_t ready = clock_ns(CLOCK_MONOTONIC);
    close(fds[0]);
    if (middle > 0)
        waitpid(middle, NULL, 0);

    struct target t;
    memset(&t, 0, sizeof t);
    t.pid = started.pid;
    t.pidfd = -1;
    t.labels = labels;
    t.cgroup = started.cgroup;
    t.group_leader = 1;
    snprintf(t.cgroup_dir, sizeof t.cgroup_dir, "%s", cgroup_dir);
    if (middle < 0 || failed.kind || !started.kind) {
        int err = middle < 0 ? errno : failed.err;
        const char *step = middle < 0 ? "fork" : failed.kind ? failed.step : "setup";
        char reason[PATH_MAX];
        if (strcmp(step, "exec") == 0)
            snprintf(reason, sizeof reason, "cannot run %s: %s", field(o->program[0]), strerror(err));
        else
            snprintf(reason, sizeof reason, "%s failed: %s", step, strerror(err));
        printf("error\t%s\t%s\n", field(id), reason);
        warn_msg("instance %s: %s", id, reason);
        if (started.kind && o->wait_exit)
            waitpid(started.pid, NULL, 0);
        if (cgroup != CG_NONE)
            remove_cgroup(cgroup, cgroup_dir);
        remove_cpu_cgroup(&labels);
        return -1;
    }
    char isolation[64];
    describe_isolation(&started, isolation, sizeof isolation);
    if (!o->wait_exit) {
        printf("instance\t%s\t%d\t%lld\t%lld\t%s\n", field(id), (int)started.pid, (long long)wall,
               (long long)(ready - start), isolation);
        return 0;
    }
    int64_t exited;
    int code;
    if (wait_for_exit(&t, o->timeout_s, &exited, &code) < 0) {
        printf("error\t%s\tdid not exit within %g s; killed\n", field(id), o->timeout_s);
        return -1;
    }
    printf("exit\t%s\t%d\t%lld\t%lld\t%d\t%s\n", field(id), (int)started.pid, (long long)wall,
           (long long)(exited - start), code, isolation);
    return 0;
}

static const char *checked_label(const char *value, const char *what)
{
    if (!*value || strlen(value) >= LABEL_MAX || strpbrk(value, "\t\n"))
        usage_error("spawn: --%s must have 1-%d characters, without tabs or newlines", what, LABEL_MAX - 1);
    return value;
}

static int parse_weight(const char *text)
{
    char *end;
    long weight = strtol(text, &end, 10);
    if (end == text || *end || weight < 1 || weight > 10000)
        usage_error("spawn: --cpu-weight takes an integer from 1 to 10000, not %s", text);
    return (int)weight;
}

static double parse_cap(const char *text)
{
    char *end;
    double cap = strtod(text, &end);
    if (end == text || *end || !(cap >= 0.01 && cap <= CPU_SETSIZE))
        usage_error("spawn: --cpu-cap takes a number of CPUs from 0.01, not %s", text);
    return cap;
}

static void parse_spawn(int argc, char **argv, struct spawn_options *o)
{
    static const struct option options[] = {
        {"session", required_argument, NULL, 's'}, {"role", required_argument, NULL, 'r'},
        {"instance", required_argument, NULL, 'i'}, {"cpus", required_argument, NULL, 'c'},
        {"wait", required_argument, NULL, 'w'},    {"isolate", required_argument, NULL, 'I'},
        {"timeout", required_argument, NULL, 't'}, {"stdout", required_argument, NULL, 'o'},
        {"start-at", required_argument, NULL, 'S'}, {"cpu-weight", required_argument, NULL, 'W'},
        {"cpu-cap", required_argument, NULL, 'C'},  {"stderr-too", no_argument, NULL, 'E'},
        {"init", no_argument, NULL, 'N'},          {"log-dir", required_argument, NULL, 'L'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    memset(o, 0, sizeof *o);
    o->log_fd = -1;
    o->isolate = 1;
    o->timeout_s = 60.0;
    o->instances = calloc((size_t)argc, sizeof *o->instances);
    while ((opt = getopt_long(argc, argv, "+", options, NULL)) != -1) {
        switch (opt) {
        case 's': snprintf(o->labels.session, LABEL_MAX, "%s", checked_label(optarg, "session")); break;
        case 'r': snprintf(o->labels.role, LABEL_MAX, "%s", checked_label(optarg, "role")); break;
        case 'i': o->instances[o->n_instances++] = checked_label(optarg, "instance"); break;
        case 'c':
            if (parse_cpus(optarg, &o->cpus) < 0)
                usage_error("spawn: bad --cpus list %s", optarg);
            o->pin = 1;
            break;
        case 'w':
            if (strcmp(optarg, "exit") != 0 && strcmp(optarg, "ready") != 0)
                usage_error("spawn: --wait takes exit or ready, not %s", optarg);
            o->wait_exit = strcmp(optarg, "exit") == 0;
            break;
        case 'I':
            if (strcmp(optarg, "auto") != 0 && strcmp(optarg, "none") != 0)
                usage_error("spawn: --isolate takes auto or none, not %s", optarg);
            o->isolate = strcmp(optarg, "auto") == 0;
            break;
        case 't': o->timeout_s = atof(optarg); break;
        case 'o': o->stdout_path = optarg; break;
        case 'E': o->stderr_too = 1; break;
        case 'L': o->log_dir = optarg; break;
        case 'N': o->init = 1; break;
        case 'S': o->start_at_ns = strtoll(optarg, NULL, 10); break;
        case 'W': o->cpu_weight = parse_weight(optarg); break;
        case 'C': o->cpu_cap = parse_cap(optarg); break;
        default: usage_error("spawn: unknown option");
        }
    }
    o->program = argv + optind;
    if (!o->labels.session[0] || !o->labels.role[0] || !o->n_instances || !o->program[0])
        usage_error("spawn needs --session, --role, at least one --instance and -- PROGRAM");
    if (o->wait_exit && o->n_instances != 1)
        usage_error("spawn: --wait exit takes exactly one --instance");
    if (o->timeout_s <= 0)
        usage_error("spawn: --timeout must be positive");
    if (o->stdout_path && o->n_instances != 1)
        usage_error("spawn: --stdout takes exactly one --instance");
    if (o->stderr_too && !o->stdout_path)
        usage_error("spawn: --stderr-too needs --stdout FILE");
    if (o->log_dir && o->stdout_path)
        usage_error("spawn: --log-dir and --stdout both name where the output goes; give one");
    if (o->log_dir && make_dirs(o->log_dir) < 0)
        usage_error("spawn: cannot create --log-dir %s: %s", o->log_dir, strerror(errno));
    if (o->start_at_ns < 0)
        usage_error("spawn: --start-at must be a CLOCK_REALTIME time in nanoseconds");
}

static int cmd_spawn(int argc, char **argv)
{
    struct spawn_options o;
    parse_spawn(argc, argv, &o);
    /* For --wait exit the instance must come back to us when the middle
     * process exits, so that we can reap it and see its exit code. */
    if (o.wait_exit && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        warn_msg("cannot become a subreaper: %s", strerror(errno));
        return 1;
    }
    enum cgroup_kind cgroup = o.isolate ? choose_cgroup() : CG_NONE;
    o.cpu_control = choose_cpu_control(o.cpu_weight, o.cpu_cap, cgroup);
    if (o.cpu_control == CPU_MISSING) {
        printf("error\t%s\tcpu cap needs a writable cgroup cpu controller and found none (cgroup v2 with cpu "
               "enabled for " CGROUP_V2_ROOT "/" CGROUP_SUBTREE ", or v1 at " CGROUP_V1_CPU_ROOT ")\n",
               field(o.instances[0]));
        free(o.instances);
        return 1;
    }
    int status = 0;
    for (int i = 0; i < o.n_instances && status == 0; i++)
        status = spawn_one(&o, o.instances[i], cgroup) < 0;
    free(o.instances);
    return status;
}

/* ------------------------------------------------------------------ exec */

#define EXEC_RECORD "labtui-agent-exec"
#define RELAY_BUF 65536

/* What the exec'd process takes from the instance it runs in. */
struct exec_context {
    struct labels labels; /* the root's, plus this exec's token */
    cpu_set_t cpus;
    int nice;
    char cgroup_dir[PATH_MAX]; /* the instance's v2 or v1 pids cgroup; "" none */
    char cpu_dir[PATH_MAX];    /* its v1 cpu cgroup; "" none */
};

/* exec's one result: the last line of stderr, after a newline of its own. */
__attribute__((format(printf, 1, 2))) static void exec_record(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("\n" EXEC_RECORD "\t", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return; /* our reader is gone: the output has nowhere to go */
        buf += n;
        len -= (size_t)n;
    }
}

/* Copy what the pipe *from holds to the descriptor to; at end of file close
 * *from and set it to -1.  Returns whether anything was copied. */
static int relay(int *from, int to)
{
    static char buf[RELAY_BUF];
    ssize_t n;
    while ((n = read(*from, buf, sizeof buf)) < 0 && errno == EINTR)
        ;
    if (n < 0 && errno == EAGAIN)
        return 0;
    if (n <= 0) {
        close(*from);
        *from = -1;
        return 0;
    }
    write_all(to, buf, (size_t)n);
    return 1;
}

/* Relay what is left in a pipe without waiting for writers that may never close it. */
static void drain(int *from, int to)
{
    if (*from < 0)
        return;
    fcntl(*from, F_SETFL, fcntl(*from, F_GETFL) | O_NONBLOCK);
    while (*from >= 0 && relay(from, to))
        ;
    if (*from >= 0)
        close(*from);
}

/* Join the namespaces of pid that differ from ours (pid: for the children we fork). */
static int join_namespaces(pid_t pid, char *reason, size_t size)
{
    for (size_t i = 0; i < sizeof instance_namespaces / sizeof instance_namespaces[0]; i++) {
        char theirs_path[64], ours_path[64];
        struct stat theirs, ours;
        snprintf(theirs_path, sizeof theirs_path, "/proc/%d/ns/%s", (int)pid, instance_namespaces[i].name);
        snprintf(ours_path, sizeof ours_path, "/proc/self/ns/%s", instance_namespaces[i].name);
        int fd = open(theirs_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &theirs) < 0 || stat(ours_path, &ours) < 0) {
            snprintf(reason, size, "cannot open %s: %s", theirs_path, strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        int same = theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev;
        int joined = same || setns(fd, instance_namespaces[i].flag) == 0;
        int saved = errno;
        close(fd);
        if (!joined) {
            snprintf(reason, size, "cannot join the %s namespace of pid %d: %s", instance_namespaces[i].name,
                     (int)pid, strerror(saved));
            return -1;
        }
    }
    return 0;
}

/* Read what the exec'd process takes from the instance root t and join its
 * namespaces; -1 with reason when that fails or the root ended meanwhile. */
static int enter_instance(const struct target *t, const char *token, struct exec_context *c, char *reason,
                          size_t size)
{
    memset(c, 0, sizeof *c);
    c->labels = t->labels;
    snprintf(c->labels.exec, sizeof c->labels.exec, "%s", token);
    if (t->cgroup != CG_NONE)
        snprintf(c->cgroup_dir, sizeof c->cgroup_dir, "%s", t->cgroup_dir);
    cgroup_dir_for(CG_V1_CPU, &t->labels, c->cpu_dir, sizeof c->cpu_dir);
    if (access(c->cpu_dir, F_OK) < 0)
        c->cpu_dir[0] = '\0';
    if (sched_getaffinity(t->pid, sizeof c->cpus, &c->cpus) < 0) {
        snprintf(reason, size, "cannot read the CPU affinity of pid %d: %s", (int)t->pid, strerror(errno));
        return -1;
    }
    errno = 0;
    c->nice = getpriority(PRIO_PROCESS, (id_t)t->pid);
    if (c->nice == -1 && errno) {
        snprintf(reason, size, "cannot read the nice value of pid %d: %s", (int)t->pid, strerror(errno));
        return -1;
    }
    if (join_namespaces(t->pid, reason, size) < 0)
        return -1;
    if (!root_running(t)) { /* what we read may belong to a newcomer with the same pid */
        snprintf(reason, size, "instance %s is gone: pid %d exited", field(t->instance), (int)t->pid);
        return -1;
    }
    return 0;
}

/* The exec'd process: the instance's cgroups, nice value, CPUs and labels,
 * a session of its own, then exec.  Never returns. */
__attribute__((noreturn)) static void run_exec(const struct exec_context *c, char **program, int out, int err,
                                              int status_fd)
{
    default_signals();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        report_failure(status_fd, "prctl", errno);
    if (c->cgroup_dir[0] && join_cgroup(c->cgroup_dir) < 0)
        report_failure(status_fd, "join cgroup", errno);
    if (c->cpu_dir[0] && join_cgroup(c->cpu_dir) < 0)
        report_failure(status_fd, "join cpu cgroup", errno);
    if (getpriority(PRIO_PROCESS, 0) != c->nice && setpriority(PRIO_PROCESS, 0, c->nice) < 0)
        report_failure(status_fd, "setpriority", errno);
    if (sched_setaffinity(0, sizeof c->cpus, &c->cpus) < 0)
        report_failure(status_fd, "sched_setaffinity", errno);
    if (setsid() < 0)
        report_failure(status_fd, "setsid", errno);
    if (setenv("LABTUI_SESSION", c->labels.session, 1) < 0 || setenv("LABTUI_ROLE", c->labels.role, 1) < 0 ||
        setenv("LABTUI_INSTANCE", c->labels.instance, 1) < 0 || setenv("LABTUI_EXEC", c->labels.exec, 1) < 0)
        report_failure(status_fd, "setenv", errno);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0)
        report_failure(status_fd, "open /dev/null", errno);
    if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        report_failure(status_fd, "dup2", errno);
    execvp(program[0], program);
    report_failure(status_fd, "exec", errno);
}

/* SIGKILL what is left of an exec: its process group (pinned by the unreaped
 * leader) and every process carrying its token, each checked through a pidfd. */
static void kill_exec_leftovers(pid_t leader, const char *token)
{
    kill(-leader, SIGKILL);
    struct proc_table table = scan_labelled();
    for (size_t i = 0; i < table.len; i++) {
        pid_t pid = table.items[i].st.pid;
        struct labels now;
        if (strcmp(table.items[i].labels.exec, token) != 0)
            continue;
        int pidfd = open_pidfd(pid);
        if (read_labels(pid, &now) == 1 && strcmp(now.exec, token) == 0)
            signal_pidfd(pidfd, pid, SIGKILL);
        if (pidfd >= 0)
            close(pidfd);
    }
    free(table.items);
}

static int child_exited(pid_t child)
{
    siginfo_t info;
    info.si_pid = 0;
    return waitid(P_PID, (id_t)child, &info, WEXITED | WNOHANG | WNOWAIT) < 0 || info.si_pid != 0;
}

/* Relay the child's output until it exits or the deadline (CLOCK_MONOTONIC)
 * passes; returns 1 when it timed out. */
static int relay_until_exit(pid_t child, int *out, int *err, int64_t deadline)
{
    int pidfd = open_pidfd(child); /* wakes poll at the exit; without one, poll in short slices */
    int timed_out = 0;
    while (!child_exited(child)) {
        int64_t left_ms = (deadline - clock_ns(CLOCK_MONOTONIC)) / 1000000;
        if (left_ms < 0) {
            timed_out = 1;
            break;
        }
        struct pollfd fds[3] = {{*out, POLLIN, 0}, {*err, POLLIN, 0}, {pidfd, POLLIN, 0}};
        int wait_ms = (int)(left_ms + 1 < INT_MAX ? left_ms + 1 : INT_MAX);
        if (poll(fds, 3, pidfd >= 0 || wait_ms < 10 ? wait_ms : 10) < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            relay(out, 1);
        if (fds[1].revents)
            relay(err, 2);
    }
    if (pidfd >= 0)
        close(pidfd);
    return timed_out;
}

static int cmd_exec(int argc, char **argv)
{
    static const struct option options[] = {
        {"timeout", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    double timeout_s = 60.0;
    int opt;
    while ((opt = getopt_long(argc, argv, "+", options, NULL)) != -1) {
        if (opt != 't')
            usage_error("exec: unknown option");
        char *end;
        timeout_s = strtod(optarg, &end);
        if (end == optarg || *end || !(timeout_s > 0))
            usage_error("exec: --timeout takes a positive number of seconds, not %s", optarg);
    }
    if (argc - optind < 3 || strcmp(argv[optind + 1], "--") != 0)
        usage_error("exec needs PID:INSTANCE -- PROGRAM [ARGS...]");
    char **program = argv + optind + 2;
    struct target t;
    parse_target(argv[optind], &t);
    verify_target(&t);
    char reason[PATH_MAX + 128], token[64];
    struct exec_context c;
    snprintf(token, sizeof token, "%d.%lld", (int)getpid(), (long long)clock_ns(CLOCK_MONOTONIC));
    if (t.status == GONE)
        snprintf(reason, sizeof reason, "instance %s is gone: pid %d no longer runs", field(t.instance), (int)t.pid);
    else if (t.status == REFUSED)
        snprintf(reason, sizeof reason, "%s", t.reason);
    if (t.status != PENDING || enter_instance(&t, token, &c, reason, sizeof reason) < 0) {
        exec_record("error\t%s", reason);
        return 1;
    }
    int out[2], err[2], status[2];
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(status, O_CLOEXEC) < 0) {
        exec_record("error\tpipe: %s", strerror(errno));
        return 1;
    }
    int64_t start = clock_ns(CLOCK_MONOTONIC);
    pid_t child = fork();
    if (child == 0)
        run_exec(&c, program, out[1], err[1], status[1]);
    int fork_errno = errno;
    close(out[1]);
    close(err[1]);
    close(status[1]);
    struct report failed = {0};
    if (child > 0)
        while (read(status[0], &failed, sizeof failed) < 0 && errno == EINTR)
            ;
    close(status[0]);
    if (child < 0 || failed.kind == REPORT_FAILED) {
        if (child < 0 && fork_errno == ENOMEM) /* fork into a pid namespace whose init has exited */
            snprintf(reason, sizeof reason, "instance %s is gone: its pid namespace ended", field(t.instance));
        else if (child < 0)
            snprintf(reason, sizeof reason, "fork failed: %s", strerror(fork_errno));
        else if (strcmp(failed.step, "exec") == 0)
            snprintf(reason, sizeof reason, "cannot run %s: %s", field(program[0]), strerror(failed.err));
        else
            snprintf(reason, sizeof reason, "%s failed: %s", failed.step, strerror(failed.err));
        if (child > 0)
            waitpid(child, NULL, 0);
        exec_record("error\t%s", reason);
        return 1;
    }
    int timed_out = relay_until_exit(child, &out[0], &err[0], start + (int64_t)(timeout_s * 1e9));
    int64_t ended = clock_ns(CLOCK_MONOTONIC);
    if (timed_out)
        kill(child, SIGKILL); /* still unreaped: the pid is ours */
    kill_exec_leftovers(child, token);
    drain(&out[0], 1);
    drain(&err[0], 2);
    int wstatus;
    while (waitpid(child, &wstatus, 0) < 0 && errno == EINTR)
        ;
    if (timed_out) {
        exec_record("timeout\t%g\t%lld", timeout_s, (long long)(ended - start));
        return 1;
    }
    int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    exec_record("exit\t%d\t%lld", code, (long long)(ended - start));
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a record per line, even if we are killed midway */
    if (argc < 2)
        usage_error("no subcommand");
    const char *command = argv[1];
    if (strcmp(command, "spawn") == 0)
        return cmd_spawn(argc - 1, argv + 1);
    if (strcmp(command, "ps") == 0)
        return cmd_ps(argc - 1, argv + 1);
    if (strcmp(command, "kill") == 0)
        return cmd_kill(argc - 1, argv + 1);
    if (strcmp(command, "mem") == 0)
        return cmd_mem(argc - 1, argv + 1);
    if (strcmp(command, "exec") == 0)
        return cmd_exec(argc - 1, argv + 1);
    if (strcmp(command, "reap") == 0 && argc == 3) /* run_under_init's reaper, exec'd with the labels */
        reap_until((pid_t)atoi(argv[2]));
    usage_error("unknown subcommand %s", command);
}
