/* ctxsw: context switch time by pipe ping-pong between two processes, in the
 * manner of lmbench lat_ctx with no working set and UnixBench's "Pipe-based
 * Context Switching".
 *
 *   ctxsw [SECONDS]
 *
 * A token goes back and forth through two pipes; every round trip is two
 * switches.  Prints the mean time per switch in ns (lower is better), which
 * includes the pipe read and write. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int ping[2], pong[2];
    if (seconds <= 0 || pipe(ping) < 0 || pipe(pong) < 0) {
        fprintf(stderr, "usage: ctxsw [SECONDS]\n");
        return 2;
    }
    pid_t child = fork();
    if (child < 0)
        return 1;
    char token = 'x';
    if (child == 0) {
        close(ping[1]);
        close(pong[0]);
        while (read(ping[0], &token, 1) == 1)
            if (write(pong[1], &token, 1) != 1)
                break;
        _exit(0);
    }
    close(ping[0]);
    close(pong[1]);
    long long rounds = 0;
    double start = now_s(), elapsed;
    do {
        for (int i = 0; i < 64; i++)
            if (write(ping[1], &token, 1) != 1 || read(pong[0], &token, 1) != 1)
                return 1;
        rounds += 64;
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    close(ping[1]);
    waitpid(child, NULL, 0);
    printf("{\"benchmark\":\"ctxsw\",\"metric\":\"ctxsw_ns\",\"value\":%.6g,\"unit\":\"ns\",\"better\":\"lower\"}\n",
           elapsed * 1e9 / (double)(2 * rounds));
    return 0;
}
