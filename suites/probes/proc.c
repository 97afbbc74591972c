/* proc: process creation, in the manner of lmbench's lat_proc and UnixBench's
 * spawn, execl and shell tests.
 *
 *   proc fork   [SECONDS] [pin]          lat_proc fork     -> fork_us
 *   proc exec   [SECONDS] [PROGRAM]      lat_proc exec     -> exec_us
 *   proc shell  [SECONDS] [PROGRAM]      lat_proc shell    -> shell_us
 *   proc spawn  [SECONDS] [pin]          UnixBench spawn   -> spawn_lps
 *   proc execl  [SECONDS]                UnixBench execl   -> execl_lps
 *   proc multi  [SECONDS] [N=1] [DIR]    UnixBench shellN  -> shell<N>_lpm
 *
 * fork: fork; the child calls exit() (the C library's, as lat_proc's child
 *   does); the parent waits for it.  Microseconds per round (lower is better).
 * exec: fork; the child closes stdout and execve()s PROGRAM with an empty
 *   environment; the parent waits.  lat_proc execs its own "hello", a small
 *   program linked as lat_proc is that writes one line to the closed stdout;
 *   the probe's default PROGRAM is itself run as such a hello ("--hello").
 * shell: fork; the child closes stdout and runs /bin/sh -c PROGRAM (the shell
 *   execs PROGRAM); the parent waits.  Microseconds per round.
 * spawn: fork; the child calls exit(0); the parent waits and checks the status.
 *   Rounds per second as UnixBench's Run scores it (count / elapsed), lps,
 *   higher is better.
 * execl: the probe execs itself, over and over, with no fork: each program
 *   counts one, and the one that finds SECONDS gone prints count / elapsed in
 *   lps (higher is better), as UnixBench's execl does.
 * multi: fork; the child execs a shell script that starts N copies of a second
 *   script in the background and waits for them; each copy sorts an 8.5 KB
 *   text file into a file, od's that into `sort -n -k 1` into a file, greps
 *   "the" out of it through tee into wc, and removes its files (the work of
 *   UnixBench's multi.sh and tst.sh; the input is this probe's own text of
 *   sort.src's size and line count).  The scripts and the text live in a fresh
 *   directory under DIR ($TMPDIR, else /tmp), the copies run there, and it is
 *   removed at the end.  Rounds per minute, as Run scores it (count /
 *   (elapsed / 60)): shell1_lpm, shell8_lpm, ... (higher is better).
 *
 * The _us figures are the median of the mean round times of 9 equal slices of
 * SECONDS (lmbench reports the median of 11 repetitions).  No process is pinned
 * by default; with "pin" (fork, spawn) parent and child run on one CPU, the
 * last this probe may use, and the metric is fork_pinned_us or
 * spawn_pinned_lps.
 *
 * Linking is part of what is measured: a dynamically linked process has the
 * loader's and the C library's mappings to copy at fork, to tear down at exit
 * and to set up at every exec.  labtui builds this probe statically on every
 * backend (process, docker's FROM scratch images, ...), so a native and a
 * container figure differ by the platform, not by the linker; the metric is
 * named for what it measures and the build is recorded in the benchmark name:
 * "proc" for the static build, "proc-dynamic" where it was linked dynamically
 * (a host without a static C library; the calibration against the dynamically
 * linked originals).  multi's figure is the shell's and the tools', not this
 * program's, and is always under "proc".
 *
 * With LABTUI_PROBE_COUNTS=1 in the environment the probe also writes one JSON
 * line of counts to stderr (rounds) for tests that check the definition. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLICES 9

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *slices)
{
    qsort(slices, SLICES, sizeof *slices, by_value);
    return slices[SLICES / 2];
}

static int pin_to_one_cpu(void)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
        return -1;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--)
        if (CPU_ISSET(cpu, &allowed)) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            return sched_setaffinity(0, sizeof one, &one);
        }
    return -1;
}

static void usage(void)
{
    fprintf(stderr, "usage: proc fork|spawn [SECONDS] [pin]\n"
                    "       proc exec|shell [SECONDS] [PROGRAM]\n"
                    "       proc execl [SECONDS]\n"
                    "       proc multi [SECONDS] [N=1] [DIR]\n");
    exit(2);
}

static void report_counts(long long rounds)
{
    if (getenv("LABTUI_PROBE_COUNTS"))
        fprintf(stderr, "{\"rounds\":%lld}\n", rounds);
}

/* One reading: the metric is STEM, "_pinned" when pinned, "_" UNIT, whatever the build; the benchmark is
 * "proc-dynamic" when this program's own linking shapes the figure and it was linked dynamically (a
 * dynamic loader was given to it: AT_BASE is not 0), else "proc". */
static void print_reading(const char *stem, int pinned, int linking_counts, double value, const char *unit,
                          const char *better)
{
    int is_dynamic = linking_counts && getauxval(AT_BASE) != 0;
    printf("{\"benchmark\":\"%s\",\"metric\":\"%s%s_%s\",\"value\":%.6g,\"unit\":\"%s\",\"better\":\"%s\"}\n",
           is_dynamic ? "proc-dynamic" : "proc", stem, pinned ? "_pinned" : "", unit, value, unit, better);
}

/* ---- one round of each mode ---- */

enum mode { FORK, SPAWN, EXEC, SHELL, MULTI };

struct job {
    enum mode mode;
    const char *program; /* exec, shell: what is exec'd; multi: the outer script */
    const char *copies;  /* multi: N */
    const char *dir;     /* multi: where the copies run */
    const char *arg;     /* exec: the program's one argument, if any */
};

static char self[4096];

static int round_trip(const struct job *job)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        switch (job->mode) {
        case FORK:
            exit(1); /* lat_proc's child: exit(1) */
        case SPAWN:
            exit(0); /* spawn's child: exit(0) */
        case EXEC: {
            char *const av[] = {(char *)job->program, (char *)job->arg, NULL}, *const env[] = {NULL};
            close(1);
            execve(job->program, av, env);
            _exit(127);
        }
        case SHELL:
            close(1);
            execl("/bin/sh", "sh", "-c", job->program, (char *)NULL);
            _exit(127);
        case MULTI:
            if (chdir(job->dir) < 0)
                _exit(126);
            execl(job->program, job->program, job->copies, (char *)NULL);
            _exit(127);
        }
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return -1;
    int want = job->mode == FORK ? 1 : 0;
    if (WEXITSTATUS(status) != want) {
        fprintf(stderr, "proc: child exited %d\n", WEXITSTATUS(status));
        return -1;
    }
    return 0;
}

/* Microseconds per round: the median of 9 slices. */
static int time_per_round(const struct job *job, double seconds, double *us)
{
    double slices[SLICES];
    long long total = 0;
    for (int s = 0; s < SLICES; s++) {
        long long n = 0;
        double start = now_s(), elapsed;
        do {
            if (round_trip(job) < 0)
                return -1;
            n++;
            elapsed = now_s() - start;
        } while (elapsed < seconds / SLICES);
        slices[s] = elapsed * 1e6 / (double)n;
        total += n;
    }
    report_counts(total);
    *us = median_of(slices);
    return 0;
}

/* Rounds per second over all of SECONDS, as Run scores a COUNT. */
static int rate(const struct job *job, double seconds, double *per_s)
{
    long long n = 0;
    double start = now_s(), elapsed;
    do {
        if (round_trip(job) < 0)
            return -1;
        n++;
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    report_counts(n);
    *per_s = (double)n / elapsed;
    return 0;
}

/* ---- execl: a chain of execs of this program ---- */

static int execl_link(int argc, char **argv)
{
    /* argv: self --execl SECONDS COUNT START_NS */
    if (argc != 5)
        usage();
    double seconds = atof(argv[2]);
    long long count = atoll(argv[3]) + 1, start_ns = atoll(argv[4]);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long now_ns = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
    double elapsed = (double)(now_ns - start_ns) * 1e-9;
    if (elapsed >= seconds) {
        report_counts(count);
        print_reading("execl", 0, 1, (double)count / elapsed, "lps", "higher");
        return 0;
    }
    char count_s[24], start_s[24];
    snprintf(count_s, sizeof count_s, "%lld", count);
    snprintf(start_s, sizeof start_s, "%lld", start_ns);
    execl(self, self, "--execl", argv[2], count_s, start_s, (char *)NULL);
    perror("proc: execl");
    return 1;
}

static int execl_start(const char *seconds)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    char start_s[24];
    snprintf(start_s, sizeof start_s, "%lld", (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
    fflush(stdout);
    execl(self, self, "--execl", seconds, "0", start_s, (char *)NULL);
    perror("proc: execl");
    return 1;
}

/* ---- multi: the shell scripts ---- */

static int write_file(const char *path, const char *text, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0)
        return -1;
    int ok = write(fd, text, len) == (ssize_t)len;
    return close(fd) == 0 && ok ? 0 : -1;
}

/* 362 lines, about 8.5 KB of words (sort.src's size and line count); some lines hold "the". */
static size_t make_text(char *buf, size_t cap)
{
    static const char *words[] = {"the", "cd", "echo", "then", "fi", "if", "export", "PATH", "HOME", "test",
                                  "kill", "while", "do", "done", "case", "esac", "for", "in", "set", "shift",
                                  "other", "there", "ls", "rm", "mkdir", "umask", "read", "$1", "pwd", "exit"};
    unsigned seed = 12345;
    size_t len = 0;
    for (int line = 0; line < 362 && len + 64 < cap; line++) {
        int target = 6 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 35; /* mean about 23 chars */
        int used = 0;
        while (used < target && len + 16 < cap) {
            const char *w = words[((seed = seed * 1103515245u + 12345u) >> 16) % (sizeof words / sizeof *words)];
            len += (size_t)snprintf(buf + len, cap - len, used ? " %s" : "%s", w);
            used += (int)strlen(w) + (used ? 1 : 0);
        }
        buf[len++] = '\n';
    }
    return len;
}

static int multi(double seconds, const char *copies, const char *parent)
{
    char dir[4096], outer[4200], inner[4200], input[4200], text[12000];
    /* mkdtemp, not the pid: instances in their own pid namespaces all have the same small pids */
    snprintf(dir, sizeof dir, "%s/labtui-proc-XXXXXX", parent);
    if (mkdtemp(dir) == NULL) {
        perror(dir);
        return 1;
    }
    snprintf(outer, sizeof outer, "%s/multi.sh", dir);
    snprintf(inner, sizeof inner, "%s/one.sh", dir);
    snprintf(input, sizeof input, "%s/input.txt", dir);
    char outer_text[8800], inner_text[512];
    /* The outer script: N copies of the inner one in the background, then wait. */
    snprintf(outer_text, sizeof outer_text,
             "#!/bin/sh\n"
             "n=0\n"
             "while [ $n -lt $1 ]; do\n"
             "\t/bin/sh %s input.txt &\n"
             "\tn=$(($n + 1))\n"
             "done\n"
             "wait\n",
             inner);
    /* One copy: sort, od | sort -n -k 1, grep | tee | wc, each into files named by its pid; then rm them. */
    snprintf(inner_text, sizeof inner_text,
             "#!/bin/sh\n"
             "sort < \"$1\" > sorted.$$\n"
             "od sorted.$$ | sort -n -k 1 > dump.$$\n"
             "grep the sorted.$$ | tee found.$$ | wc > count.$$\n"
             "rm sorted.$$ dump.$$ found.$$ count.$$\n");
    size_t text_len = make_text(text, sizeof text);
    if (write_file(outer, outer_text, strlen(outer_text), 0700) < 0 ||
        write_file(inner, inner_text, strlen(inner_text), 0600) < 0 || write_file(input, text, text_len, 0600) < 0) {
        perror(dir);
        return 1;
    }
    struct job job = {MULTI, outer, copies, dir, NULL};
    double per_s = 0;
    int failed = rate(&job, seconds, &per_s);
    unlink(outer);
    unlink(inner);
    unlink(input);
    rmdir(dir);
    if (failed)
        return 1;
    char stem[32];
    snprintf(stem, sizeof stem, "shell%d", atoi(copies));
    print_reading(stem, 0, 0, per_s * 60.0, "lpm", "higher");
    return 0;
}

int main(int argc, char **argv)
{
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len < 0) {
        perror("readlink /proc/self/exe");
        return 1;
    }
    self[len] = '\0';
    if (argc > 1 && !strcmp(argv[1], "--hello")) /* lat_proc's hello: exec and shell run it by default */
        return write(1, "Hello world\n", 12) == 12 ? 0 : 0;
    if (argc > 1 && !strcmp(argv[1], "--execl"))
        return execl_link(argc, argv);
    if (argc < 2)
        usage();
    const char *mode = argv[1];
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    if (seconds <= 0)
        usage();
    double value;

    if (!strcmp(mode, "fork") || !strcmp(mode, "spawn")) {
        int pinned = argc == 4 && !strcmp(argv[3], "pin");
        if (argc > 4 || (argc == 4 && !pinned))
            usage();
        if (pinned && pin_to_one_cpu() < 0) {
            perror("sched_setaffinity");
            return 1;
        }
        if (!strcmp(mode, "fork")) {
            struct job job = {FORK, NULL, NULL, NULL, NULL};
            if (time_per_round(&job, seconds, &value) < 0)
                return 1;
            print_reading("fork", pinned, 1, value, "us", "lower");
        } else {
            struct job job = {SPAWN, NULL, NULL, NULL, NULL};
            if (rate(&job, seconds, &value) < 0)
                return 1;
            print_reading("spawn", pinned, 1, value, "lps", "higher");
        }
        return 0;
    }
    if (!strcmp(mode, "exec") || !strcmp(mode, "shell")) {
        if (argc > 4)
            usage();
        int is_exec = !strcmp(mode, "exec");
        const char *program = argc > 3 ? argv[3] : NULL;
        char hello[4200];
        if (program == NULL) { /* this program, as lat_proc's hello */
            snprintf(hello, sizeof hello, "'%s' --hello", self);
            program = is_exec ? self : hello;
        } else if (access(program, X_OK) != 0) {
            fprintf(stderr, "proc: %s is not an executable program\n", program);
            return 2;
        }
        struct job job = {is_exec ? EXEC : SHELL, program, NULL, NULL, argc <= 3 && is_exec ? "--hello" : NULL};
        if (time_per_round(&job, seconds, &value) < 0)
            return 1;
        print_reading(mode, 0, 1, value, "us", "lower");
        return 0;
    }
    if (!strcmp(mode, "execl")) {
        if (argc > 3)
            usage();
        return execl_start(argc > 2 ? argv[2] : "1");
    }
    if (!strcmp(mode, "multi")) {
        if (argc > 5)
            usage();
        const char *copies = argc > 3 ? argv[3] : "1";
        if (atoi(copies) < 1 || atoi(copies) > 1000)
            usage();
        const char *dir = argc > 4 ? argv[4] : getenv("TMPDIR");
        return multi(seconds, copies, dir && *dir ? dir : "/tmp");
    }
    usage();
    return 2;
}
