/* filecreate: time to create, close and unlink a file, in the manner of
 * AIM9's creat-clo test and lmbench lat_fs.
 *
 *   filecreate [SECONDS] [DIR]      DIR default $TMPDIR or /tmp
 *
 * Prints the mean time per create+close+unlink in microseconds (lower is
 * better).  The file name carries the pid, so instances do not collide. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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
    const char *dir = argc > 2 ? argv[2] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096];
    /* mkstemp, not the pid: each instance may be pid 1 of its own namespace */
    snprintf(path, sizeof path, "%s/labtui-filecreate-XXXXXX", dir);
    int reserved = mkstemp(path);
    if (reserved < 0 || close(reserved) < 0 || unlink(path) < 0) {
        perror(path);
        return 1;
    }
    if (seconds <= 0) {
        fprintf(stderr, "usage: filecreate [SECONDS] [DIR]\n");
        return 2;
    }
    long long n = 0;
    double start = now_s(), elapsed;
    do {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || close(fd) < 0 || unlink(path) < 0) {
            perror(path);
            return 1;
        }
        n++;
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    printf("{\"benchmark\":\"filecreate\",\"metric\":\"create_close_us\",\"value\":%.6g,\"unit\":\"us\",\"better\":\"lower\"}\n",
           elapsed * 1e6 / (double)n);
    return 0;
}
