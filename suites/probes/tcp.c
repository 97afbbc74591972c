/* tcp: TCP throughput over the loopback interface, in the manner of Iperf's TCP
 * bandwidth test (the VServer/Xen paper's Figure 5), sender and receiver in one instance.
 *
 *   tcp [SECONDS] [BYTES]     SECONDS default 1; BYTES per write, default 131072
 *
 * Listens on 127.0.0.1 at a port the kernel picks, connects to it, forks a
 * sender that writes BYTES-byte buffers for SECONDS, and counts the bytes it
 * receives until the sender closes.  Prints the received rate in MB/s (10^6 bytes per
 * second, Iperf's Mbits/sec / 8; higher is better).  Exits 1 when the loopback
 * interface is down or refuses the connection (a new network namespace). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int send_for(int fd, double seconds, long bytes)
{
    char *buf = calloc(1, (size_t)bytes);
    if (!buf)
        return 1;
    double end = now_s() + seconds;
    while (now_s() < end) {
        if (write(fd, buf, (size_t)bytes) < 0) {
            perror("tcp: write");
            return 1;
        }
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    long bytes = argc > 2 ? atol(argv[2]) : 131072;
    if (seconds <= 0 || bytes <= 0 || bytes > (1 << 24)) {
        fprintf(stderr, "usage: tcp [SECONDS] [BYTES 1-16777216]\n");
        return 2;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    int server = socket(AF_INET, SOCK_STREAM, 0);
    if (server < 0 || bind(server, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(server, 1) < 0
        || getsockname(server, (struct sockaddr *)&addr, &len) < 0) {
        perror("tcp: listen on 127.0.0.1");
        return 1;
    }
    /* connect before forking: the listen backlog completes it, and a loopback that is down
     * fails here at once instead of leaving accept() waiting */
    int client = socket(AF_INET, SOCK_STREAM, 0);
    if (client < 0 || connect(client, (struct sockaddr *)&addr, sizeof addr) < 0) {
        perror("tcp: connect to 127.0.0.1");
        return 1;
    }
    int fd = accept(server, NULL, NULL);
    if (fd < 0) {
        perror("tcp: accept");
        return 1;
    }
    pid_t sender = fork();
    if (sender < 0) {
        perror("tcp: fork");
        return 1;
    }
    if (sender == 0) {
        close(fd);
        _exit(send_for(client, seconds, bytes));
    }
    close(client);
    char *buf = malloc((size_t)bytes);
    double start = now_s(), received = 0;
    ssize_t got;
    while (buf && (got = read(fd, buf, (size_t)bytes)) > 0)
        received += (double)got;
    double elapsed = now_s() - start;
    int status = 0;
    waitpid(sender, &status, 0);
    if (!buf || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || received == 0 || elapsed <= 0) {
        fprintf(stderr, "tcp: the sender failed or nothing was received\n");
        return 1;
    }
    printf("{\"benchmark\":\"tcp\",\"metric\":\"tcp_mb_s\",\"value\":%.6g,\"unit\":\"MB/s\",\"better\":\"higher\"}\n",
           received / elapsed / 1e6);
    return 0;
}
