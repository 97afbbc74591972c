/* proc: process creation latency, in the manner of lmbench lat_proc and
 * UnixBench's execl / process creation / shell tests.
 *
 *   proc MODE [SECONDS]      MODE: fork exec shell
 *
 * fork: fork a child that exits at once, wait for it.  exec: fork, and the
 * child execs this program again with "--exit" (which exits at once).  shell:
 * fork, and the child runs /bin/sh -c true.  Prints the mean time per round in
 * microseconds (lower is better). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int round_trip(const char *mode, const char *self)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (!strcmp(mode, "exec"))
            execl(self, self, "--exit", (char *)NULL);
        else if (!strcmp(mode, "shell"))
            execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
        else
            _exit(0);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--exit"))
        return 0;
    const char *mode = argc > 1 ? argv[1] : "fork";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len < 0 || seconds <= 0 || (strcmp(mode, "fork") && strcmp(mode, "exec") && strcmp(mode, "shell"))) {
        fprintf(stderr, "usage: proc fork|exec|shell [SECONDS]\n");
        return 2;
    }
    self[len] = '\0';
    long long n = 0;
    double start = now_s(), elapsed;
    do {
        if (round_trip(mode, self) < 0) {
            fprintf(stderr, "proc: %s round failed\n", mode);
            return 1;
        }
        n++;
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    printf("{\"benchmark\":\"proc\",\"metric\":\"%s_us\",\"value\":%.6g,\"unit\":\"us\",\"better\":\"lower\"}\n",
           mode, elapsed * 1e6 / (double)n);
    return 0;
}
