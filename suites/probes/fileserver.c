/* fileserver: DBench-like file-server throughput of N clients.
 *
 *   fileserver [SECONDS] [CLIENTS] [DIR]      defaults: 1 s, 4 clients, $TMPDIR or /tmp
 *
 * DBench (study 004's Figure 6) replays a NetBench trace, a Windows file
 * server's operations, from N client processes and prints "Throughput X
 * MB/sec N clients": the bytes its clients read and wrote over the run.  This
 * probe has no trace.  Each client works in a directory of its own and repeats
 * a fixed transaction until the time is up: create a file, write 64 KB in
 * 4 KB writes, close; stat it; open it, read it back in 4 KB reads, close;
 * rename it; list the directory; unlink it.  The figure is the same kind as
 * DBench's (bytes read and written per second by all clients together,
 * MB = 10^6 bytes as dbench prints it), from a different operation mix, so it
 * compares systems, not labtui with a published DBench figure.
 *
 * Prints throughput_mb_s (MB/s, higher is better).  Every file and directory
 * the clients make is removed before the probe exits. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 4096
#define FILE_BYTES (64 * 1024)
#define MAX_CLIENTS 256
#define MAX_BASE 512 /* the directory given; client paths add at most 40 bytes */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(const char *what)
{
    perror(what);
    return -1;
}

/* One transaction in dir; adds the bytes written and read to *bytes. */
static int transaction(const char *dir, long long *bytes)
{
    static char buf[CHUNK];
    char path[MAX_BASE + 64], moved[MAX_BASE + 64];
    snprintf(path, sizeof path, "%s/file", dir);
    snprintf(moved, sizeof moved, "%s/file.done", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return fail(path);
    for (int done = 0; done < FILE_BYTES; done += CHUNK) {
        if (write(fd, buf, CHUNK) != CHUNK)
            return fail("write");
        *bytes += CHUNK;
    }
    if (close(fd) < 0)
        return fail("close");
    struct stat st;
    if (stat(path, &st) < 0)
        return fail(path);
    fd = open(path, O_RDONLY);
    if (fd < 0)
        return fail(path);
    ssize_t got;
    while ((got = read(fd, buf, CHUNK)) > 0)
        *bytes += got;
    if (got < 0 || close(fd) < 0)
        return fail("read");
    if (rename(path, moved) < 0)
        return fail(moved);
    DIR *listing = opendir(dir);
    if (listing == NULL)
        return fail(dir);
    while (readdir(listing) != NULL)
        ;
    closedir(listing);
    if (unlink(moved) < 0)
        return fail(moved);
    return 0;
}

/* A client: transactions in its own directory until `until`; writes its byte count to out. */
static int client(const char *dir, double until, int out)
{
    long long bytes = 0;
    int status = 0;
    do {
        if (transaction(dir, &bytes) < 0) {
            status = 1;
            break;
        }
    } while (now_s() < until);
    if (write(out, &bytes, sizeof bytes) != (ssize_t)sizeof bytes)
        status = 1;
    return status;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int clients = argc > 2 ? atoi(argv[2]) : 4;
    const char *base = argc > 3 ? argv[3] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (seconds <= 0 || clients < 1 || clients > MAX_CLIENTS || strlen(base) >= MAX_BASE - 40) {
        fprintf(stderr, "usage: fileserver [SECONDS] [CLIENTS 1-%d] [DIR (under %d bytes)]\n", MAX_CLIENTS,
                MAX_BASE - 40);
        return 2;
    }
    char root[MAX_BASE];
    /* mkdtemp, not the pid: each instance may be pid 1 of its own namespace */
    snprintf(root, sizeof root, "%s/labtui-fileserver-XXXXXX", base);
    if (mkdtemp(root) == NULL) {
        perror(root);
        return 1;
    }
    char dir[MAX_BASE + 32];
    int pipes[2];
    if (pipe(pipes) < 0) {
        perror("pipe");
        return 1;
    }
    pid_t pids[MAX_CLIENTS];
    double start = now_s(), until = start + seconds;
    int started = 0, status = 0;
    for (int i = 0; i < clients; i++) {
        snprintf(dir, sizeof dir, "%s/client%d", root, i);
        if (mkdir(dir, 0700) < 0) {
            perror(dir);
            status = 1;
            break;
        }
        pids[i] = fork();
        if (pids[i] < 0) {
            perror("fork");
            rmdir(dir);
            status = 1;
            break;
        }
        if (pids[i] == 0) {
            close(pipes[0]);
            _exit(client(dir, until, pipes[1]));
        }
        started++;
    }
    close(pipes[1]);
    long long total = 0, bytes;
    int reported = 0;
    while (read(pipes[0], &bytes, sizeof bytes) == (ssize_t)sizeof bytes) {
        total += bytes;
        reported++;
    }
    double elapsed = now_s() - start;
    for (int i = 0; i < started; i++) {
        int child;
        if (waitpid(pids[i], &child, 0) < 0 || !WIFEXITED(child) || WEXITSTATUS(child) != 0)
            status = 1;
        char leftover[MAX_BASE + 64];
        snprintf(dir, sizeof dir, "%s/client%d", root, i);
        snprintf(leftover, sizeof leftover, "%s/file", dir);
        unlink(leftover);
        snprintf(leftover, sizeof leftover, "%s/file.done", dir);
        unlink(leftover);
        rmdir(dir);
    }
    rmdir(root);
    if (status != 0 || reported != clients)
        return 1;
    printf("{\"benchmark\":\"fileserver\",\"metric\":\"throughput_mb_s\",\"value\":%.6g,\"unit\":\"MB/s\",\"better\":\"higher\"}\n",
           (double)total / elapsed / 1e6);
    return 0;
}
