/* labtui-runat: run a benchmark at a given moment and report when it really ran.
 *
 *   labtui-runat AT_NS -- PROGRAM [ARGS...]
 *   labtui-runat --now
 *
 * The first form sleeps until AT_NS (CLOCK_REALTIME nanoseconds since the
 * epoch; 0 means now), reads the clock (the start), forks and execs PROGRAM
 * (searched in PATH when it has no slash) with stdin, stdout and stderr
 * inherited, waits for it, reads the clock again (the end) and writes one
 * line on stderr:
 *
 *   labtui-runat<TAB>START_NS<TAB>END_NS<TAB>STATUS
 *
 * STATUS is the program's exit code, 128 + the signal that ended it, or 127
 * when it could not be executed.  labtui-runat exits with STATUS.  SIGTERM,
 * SIGINT and SIGHUP are passed on to the program; before it runs they end
 * labtui-runat (which may be a container's PID 1, where the default action
 * of SIGTERM would be to ignore it).  Where it may (root, CAP_SYS_NICE),
 * labtui-runat waits under SCHED_FIFO, so that on a busy host it runs the
 * moment its timer fires instead of queueing behind the benchmarks that
 * already started; the program runs under the policy labtui-runat was
 * started with.  Several
 * copies given the same AT_NS (in several zones or domains sharing a clock)
 * start together: this is the synchronized start of the concurrent
 * experiments, and the START_NS they report is how together they started.
 *
 * The second form prints the host's CLOCK_REALTIME in nanoseconds on stdout,
 * so the moment to start at is chosen on the clock that will be compared.
 *
 * Exit status 2: bad usage.  Builds on Linux and illumos (POSIX.1-2008). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static volatile sig_atomic_t child;

static void pass_on(int sig)
{
    if (child > 0)
        kill((pid_t)child, sig);
    else
        _exit(128 + sig);
}

static void pass_signals_on(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = pass_on;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGHUP, &action, NULL);
}

static int saved_policy = -1; /* the policy labtui-runat was started under, while it waits under SCHED_FIFO */
static struct sched_param saved_param;

/* Wait under SCHED_FIFO where allowed (best effort: unprivileged, the policy stays as it was). */
static void wake_first(void)
{
    int policy = sched_getscheduler(0);
    struct sched_param param = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
    if (policy < 0 || sched_getparam(0, &saved_param) != 0)
        return;
    if (sched_setscheduler(0, SCHED_FIFO, &param) == 0)
        saved_policy = policy;
}

/* The program runs under the policy labtui-runat was started under (an illumos zone's FSS, say). */
static void restore_policy(void)
{
    if (saved_policy >= 0)
        sched_setscheduler(0, saved_policy, &saved_param);
}

static int usage(void)
{
    fprintf(stderr, "usage: labtui-runat AT_NS -- PROGRAM [ARGS...]\n       labtui-runat --now\n");
    return 2;
}

static void sleep_until(long long at_ns)
{
    struct timespec at = {(time_t)(at_ns / 1000000000LL), (long)(at_ns % 1000000000LL)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--now")) {
        printf("%lld\n", now_ns());
        return 0;
    }
    if (argc < 4 || strcmp(argv[2], "--"))
        return usage();
    char *end;
    errno = 0;
    long long at_ns = strtoll(argv[1], &end, 10);
    if (errno || *end || at_ns < 0)
        return usage();
    pass_signals_on();
    if (at_ns > 0) {
        wake_first();
        sleep_until(at_ns);
    }
    long long start = now_ns();
    sigset_t signals, before;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    sigprocmask(SIG_BLOCK, &signals, &before); /* a signal during fork waits until child is set */
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "labtui-runat: fork: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        sigprocmask(SIG_SETMASK, &before, NULL);
        restore_policy();
        execvp(argv[3], argv + 3);
        fprintf(stderr, "labtui-runat: cannot execute %s: %s\n", argv[3], strerror(errno));
        _exit(127);
    }
    child = pid;
    sigprocmask(SIG_SETMASK, &before, NULL);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "labtui-runat: waitpid: %s\n", strerror(errno));
            return 127;
        }
    }
    sigprocmask(SIG_BLOCK, &signals, NULL); /* the pid is reaped: a late signal must not reach a reused one */
    child = -1;
    long long finish = now_ns();
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fflush(stdout);
    fprintf(stderr, "labtui-runat\t%lld\t%lld\t%d\n", start, finish, code);
    return code;
}
